package controlplane_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// actionForge is a forge for the gated actions: pull requests' live
// heads (under mu), and every write recorded.
type actionForge struct {
	wq.Forge // nil: any other method panics
	mu       sync.Mutex
	heads    map[int64]string
	writes   testkit.Record
}

func (f *actionForge) GetMergeRequest(_ context.Context, _ string, n int64) (*wq.MergeRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &wq.MergeRequest{Number: n, HeadSHA: f.heads[n], State: wq.MergeRequestOpen}, nil
}

func (f *actionForge) record(format string, args ...any) {
	f.writes.Add(fmt.Sprintf(format, args...))
}

func (f *actionForge) CommentOnWork(_ context.Context, _, kind string, n int64, body string) (int64, error) {
	f.record("comment %s %d %s", kind, n, body)
	return 99, nil
}

func (f *actionForge) ReviewPullRequest(_ context.Context, _ string, n int64, verdict, _, head string) error {
	f.record("review %d %s at %s", n, verdict, head)
	return nil
}

func (f *actionForge) MergeMergeRequest(_ context.Context, _ string, n int64, head string) error {
	f.record("merge %d at %s", n, head)
	return nil
}

func (f *actionForge) CloseIssue(_ context.Context, _ string, n int64) error {
	f.record("close %d", n)
	return nil
}

func (f *actionForge) written() []string { return f.writes.Lines() }

// Through the service only: a reviewer approves, a merger is then handed
// the pull request and merges it pinned to its head; the author may not
// review its own; a merge whose head moved is refused and not made.
func TestReviewThenMergeThroughTheGate(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		forge := &actionForge{heads: map[int64]string{5: "1111111"}}
		w.svc.Forges = map[string]wq.Forge{"f": forge}
		_, as := w.session("alice", cp.RoleAuthor)
		pr := openPR(5, "1111111")
		pr.ReviewState, pr.AuthorSession, pr.Mergeable = cp.ReviewNone, as, true
		w.work(pr)
		reviewer, rs := w.session("rob", cp.RoleReviewer)
		merger, ms := w.session("meg", cp.RoleMerger)

		held := w.assign(reviewer, rs)
		act := func(c cp.Caller, session string, a *cp.Allocation, action cp.Action, verdict, body string) (*cp.ActionResult, error) {
			return w.svc.Act(w.ctx, c, cp.ActionRequest{SessionID: session, AssignmentID: a.Assignment.ID, Action: action, Verdict: verdict, Body: body})
		}
		if _, err := act(reviewer, rs, held, cp.ActReview, "maybe", ""); wq.ErrorCode(err) != wq.EINVALID {
			t.Errorf("a verdict that is none: %v", err)
		}
		res, err := act(reviewer, rs, held, cp.ActReview, cp.VerdictApprove, "Looks right.")
		if err != nil || !res.Released || res.Work.ReviewState != cp.ReviewApproved {
			t.Fatalf("approve: %+v, %v", res, err)
		}

		// The merger is handed it; someone pushes before the merge.
		toMerge := w.assign(merger, ms)
		if toMerge.Work.Number != 5 {
			t.Fatalf("the merger was handed %+v", toMerge.Work)
		}
		forge.mu.Lock()
		forge.heads[5] = "2222222"
		forge.mu.Unlock()
		_, err = act(merger, ms, toMerge, cp.ActMerge, "", "")
		wantReason(t, err, cp.GateHeadMoved)
		forge.mu.Lock()
		forge.heads[5] = "1111111"
		forge.mu.Unlock()
		res, err = act(merger, ms, toMerge, cp.ActMerge, "", "")
		if err != nil || res.Work.State != cp.StateMerged || !res.Released {
			t.Fatalf("merge: %+v, %v", res, err)
		}
		want := []string{"review 5 approved at 1111111", "merge 5 at 1111111"}
		if got := forge.written(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("forge writes %q, want %q", got, want)
		}
		if actions := w.countEvents(cp.EventFilter{WorkID: pr.ID}, cp.EventAction); actions != 2 {
			t.Errorf("%d actions logged, want the review and the merge", actions)
		}
	})
}

func TestAnAuthorMayNotReviewItsOwnPullRequest(t *testing.T) {
	w := newWorld(t, "sqlite")
	forge := &actionForge{heads: map[int64]string{4: "1111111"}}
	w.svc.Forges = map[string]wq.Forge{"f": forge}
	alice, s := w.session("alice", cp.RoleAuthor)
	pr := openPR(4, "1111111")
	pr.AuthorSession = s
	w.work(pr)
	a := w.assign(alice, s) // changes requested: its author's, to push
	_, err := w.svc.Act(w.ctx, alice, cp.ActionRequest{SessionID: s, AssignmentID: a.Assignment.ID, Action: cp.ActReview, Verdict: cp.VerdictApprove})
	wantReason(t, err, cp.ActionOwnPullRequest)
	_, err = w.svc.Act(w.ctx, alice, cp.ActionRequest{SessionID: s, AssignmentID: a.Assignment.ID, Action: cp.ActMerge})
	wantReason(t, err, cp.GateActionNotAllowed)
	res, err := w.svc.Act(w.ctx, alice, cp.ActionRequest{SessionID: s, AssignmentID: a.Assignment.ID, Action: cp.ActComment, Body: "On it."})
	if err != nil || res.CommentID != 99 || res.Released {
		t.Errorf("a comment: %+v, %v", res, err)
	}
	if got := forge.written(); len(got) != 1 || got[0] != "comment pr 4 On it." {
		t.Errorf("forge writes %q, want the comment only", got)
	}
}

// An author may close the issue it holds (already fixed, a duplicate):
// the issue is closed on the forge, the lease released, the work terminal.
func TestAnAuthorClosesTheIssueItHolds(t *testing.T) {
	w := newWorld(t, "sqlite")
	forge := &actionForge{}
	w.svc.Forges = map[string]wq.Forge{"f": forge}
	w.work(openIssue(3))
	alice, s := w.session("alice", cp.RoleAuthor)
	a := w.assign(alice, s)
	res, err := w.svc.Act(w.ctx, alice, cp.ActionRequest{SessionID: s, AssignmentID: a.Assignment.ID, Action: cp.ActClose})
	if err != nil || !res.Released || res.Work.State != cp.StateClosed {
		t.Fatalf("close: %+v, %v", res, err)
	}
	if got := forge.written(); len(got) != 1 || got[0] != "close 3" {
		t.Errorf("forge writes %q, want the close", got)
	}
	_, err = w.svc.Act(w.ctx, alice, cp.ActionRequest{SessionID: s, AssignmentID: a.Assignment.ID, Action: cp.ActComment, Body: "again"})
	wantReason(t, err, cp.GateLeaseExpired)
}
