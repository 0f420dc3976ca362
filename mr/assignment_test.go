package mr_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
)

// fakeGate is the control plane's gate as the mr type meets it: it
// grants, or refuses with a reason, and records what it was told.
type fakeGate struct {
	mu     sync.Mutex
	grant  mr.AssignmentGrant
	refuse string // a reason: every Authorize refuses with it
	asked  []string
	pushed []string
	opened []int64
}

func (g *fakeGate) Authorize(_ context.Context, caller, assignmentID, forge, project, branch string) (mr.AssignmentGrant, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, strings.Join([]string{caller, assignmentID, forge, project, branch}, " "))
	if g.refuse != "" {
		return mr.AssignmentGrant{}, &wq.Error{Code: wq.ECONFLICT, Reason: g.refuse, Message: g.refuse + ": refused"}
	}
	return g.grant, nil
}

func (g *fakeGate) Pushed(_ context.Context, _, _, head string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pushed = append(g.pushed, head)
	return nil
}

func (g *fakeGate) Opened(_ context.Context, _, _ string, number int64, _ string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.opened = append(g.opened, number)
	return nil
}

func (g *fakeGate) set(refuse string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refuse = refuse
}

func TestASubmissionForAnAssignmentPassesTheGateAndClosesItsIssue(t *testing.T) {
	ctx := context.Background()
	s := testdb.Open(t, store.KindSQLite)
	gate := &fakeGate{grant: mr.AssignmentGrant{Issue: 7}}
	api := mr.API(mr.APIOptions{Store: s, Project: func(string, string) (mr.Project, bool) { return project, true }, Assignments: gate})
	submit := func(body string) (*wq.Item, error) {
		t.Helper()
		sub, err := api.Decode([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		it, _, err := api.Submit(ctx, sub, wq.Submitter{Identity: "alice"}, t0)
		return it, err
	}
	const base = `{"item_type": "mr", "forge": "gitea", "project": "o/r", "source_branch": "wq/fix-7", "target_branch": "main",
		"title": "Fix 7", "description": "Rounds the totals.", "assignment_id": "a1",
		"file_actions": [{"action": "create", "file_path": "a.txt", "content": "a"}]`
	it, err := submit(base + `}`)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.GetMRDetail(ctx, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Description != "Rounds the totals.\n\nCloses #7" || d.AutoMerge || d.AssignmentID != "a1" {
		t.Errorf("stored: description %q, auto_merge %t, assignment %q; want the issue closed, no auto-merge, the assignment kept",
			d.Description, d.AutoMerge, d.AssignmentID)
	}
	if want := "alice a1 gitea o/r wq/fix-7"; len(gate.asked) != 1 || gate.asked[0] != want {
		t.Errorf("the gate was asked %q, want once %q", gate.asked, want)
	}

	if _, err := submit(strings.Replace(base, "wq/fix-7", "wq/fix-7b", 1) + `, "auto_merge": true}`); wq.ErrorCode(err) != wq.EINVALID ||
		!strings.HasPrefix(wq.ErrorMessage(err), "auto_merge:") {
		t.Errorf("auto_merge without a merge assignment: %v", err)
	}
	gate.set("head_moved")
	_, err = submit(strings.Replace(base, "wq/fix-7", "wq/fix-8", 1) + `}`)
	var refused *wq.Error
	if !errors.As(err, &refused) || refused.Reason != "head_moved" {
		t.Errorf("a refused assignment: %v, want head_moved", err)
	}
	if it, _, _ := s.FindMRItem(ctx, "gitea", "o/r", "wq/fix-8"); it != nil {
		t.Errorf("a refused submission stored item %s", it.ID)
	}
	none := mr.API(mr.APIOptions{Store: s, Project: func(string, string) (mr.Project, bool) { return project, true }})
	sub, _ := none.Decode([]byte(base + `}`))
	if _, _, err := none.Submit(ctx, sub, wq.Submitter{Identity: "alice"}, t0); wq.ErrorCode(err) != wq.EUNAVAILABLE {
		t.Errorf("an assignment on an instance without a control plane: %v", err)
	}
}

func TestEnsureMRPassesTheGateBeforeEveryForgeWrite(t *testing.T) {
	t.Run("allowed: the push is declared", func(t *testing.T) {
		gate := &fakeGate{}
		h := newHarness(t, mr.Options{Assignments: gate})
		sub := submission("a\n")
		sub.AssignmentID, sub.AutoMerge = "a1", new(bool)
		it := h.submit(sub)
		_, d := h.get(it.ID)
		if d.MRNumber == 0 || len(gate.pushed) != 1 || gate.pushed[0] != d.HeadSHA {
			t.Fatalf("merge request %d, pushes declared %v (head %s)", d.MRNumber, gate.pushed, d.HeadSHA)
		}
		if len(gate.asked) != 2 {
			t.Errorf("the gate was asked %d times, want before the push and before the merge request", len(gate.asked))
		}
	})
	t.Run("refused: cancelled with the gate's reason, nothing written", func(t *testing.T) {
		gate := &fakeGate{refuse: "lease_expired"}
		h := newHarness(t, mr.Options{Assignments: gate})
		sub := submission("a\n")
		sub.AssignmentID = "a1"
		it := h.submit(sub)
		got, _ := h.get(it.ID)
		wantEnded(t, got, wq.PhaseCancelled, "lease_expired")
		if n := h.forge.count("CommitFiles") + h.forge.count("CreateMergeRequest"); n != 0 {
			t.Errorf("%d forge writes after the gate refused", n)
		}
		h.wantBranchGone(sub.SourceBranch, "after the refusal")
	})
}

// An unfinished item belongs to the identity that created it (issue 25):
// another identity's submission for its branch is refused with reason
// owner_conflict and changes nothing, whether it names no assignment or
// an issue assignment of its own; an admin, or the holder of an
// assignment allowing push on that branch's pull request, may change it,
// and the item is then theirs.
func TestAnotherCallersItemIsNotRewritten(t *testing.T) {
	forEachDB(t, func(t *testing.T, s mr.Store, ws wq.Store) {
		ctx := context.Background()
		gate := &fakeGate{}
		api := mr.API(mr.APIOptions{Store: s, Project: func(string, string) (mr.Project, bool) { return project, true }, Assignments: gate})
		submit := func(by wq.Submitter, content, assignment string) (*wq.Item, wq.SubmitResult, error) {
			t.Helper()
			body := `{"item_type": "mr", "forge": "gitea", "project": "o/r", "source_branch": "wq/fix-7", "target_branch": "main",
				"title": "Fix 7 by ` + by.Identity + `", "assignment_id": "` + assignment + `",
				"file_actions": [{"action": "create", "file_path": "a.txt", "content": "` + content + `"}]}`
			sub, err := api.Decode([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			return api.Submit(ctx, sub, by, t0)
		}
		first, _, err := submit(wq.Submitter{Identity: "alice"}, "alice's", "")
		if err != nil {
			t.Fatal(err)
		}
		gate.grant = mr.AssignmentGrant{Issue: 9} // mallory's own issue assignment
		for _, assignment := range []string{"", "mallory-issue"} {
			_, _, err := submit(wq.Submitter{Identity: "mallory"}, "mallory's", assignment)
			if wq.ErrorCode(err) != wq.ECONFLICT || wq.ErrorReason(err) != wq.ReasonOwnerConflict || !strings.Contains(wq.ErrorMessage(err), "alice") {
				t.Errorf("assignment %q: another identity's submission: %v, want a conflict naming the owner", assignment, err)
			}
		}
		d, _ := s.GetMRDetail(ctx, first.ID)
		if it, _ := ws.GetItem(ctx, first.ID); it.Revision != first.Revision || it.CallerIdentity != "alice" || d.Title != "Fix 7 by alice" || d.AssignmentID != "" {
			t.Fatalf("the refused submissions changed the item: %+v, %+v", it, d)
		}
		if _, result, err := submit(wq.Submitter{Identity: "alice"}, "alice's v2", ""); err != nil || result != mr.ResultUpdated {
			t.Errorf("the owner's own resubmission: %q, %v", result, err)
		}
		gate.grant = mr.AssignmentGrant{Push: true}
		it, result, err := submit(wq.Submitter{Identity: "bob"}, "bob's", "bob-push")
		if err != nil || result != mr.ResultUpdated || it.CallerIdentity != "bob" {
			t.Errorf("a push assignment's holder: %q, %+v, %v; want it updated and bob's", result, it, err)
		}
		it, result, err = submit(wq.Submitter{Identity: "ops", Admin: true}, "ops'", "")
		if err != nil || result != mr.ResultUpdated || it.CallerIdentity != "ops" {
			t.Errorf("an admin: %q, %+v, %v; want it updated and the admin's", result, it, err)
		}
	})
}
