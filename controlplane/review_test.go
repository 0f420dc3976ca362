package controlplane_test

import (
	"slices"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// A pull request whose protected paths wait for a person (the review
// label): an agent's approval does not hand it to a merger, a merge
// through the gate is refused, and once an identity that may submit
// there approved its head, it merges (issue 48).
func TestAProtectedChangeMergesOnlyAfterAPersonApprovedItsHead(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.svc.ReviewLabel = "workqueue-review"
		forge := &actionForge{heads: map[int64]string{6: "1111111"}, verdicts: map[int64]string{6: wq.ReviewNone}}
		w.svc.Forges = map[string]wq.Forge{"f": forge}
		_, as := w.session("alice", cp.RoleAuthor)
		pr := openPR(6, "1111111")
		pr.ReviewState, pr.AuthorSession, pr.Mergeable = cp.ReviewNone, as, true
		w.work(pr)
		agent, rs := w.session("rob", cp.RoleReviewer)
		merger, ms := w.session("meg", cp.RoleMerger)
		person, ps := w.session("lead", cp.RoleReviewer)
		person.MaySubmit = func(string) bool { return true }
		act := func(c cp.Caller, session string, a *cp.Allocation, action cp.Action, verdict string) (*cp.ActionResult, error) {
			return w.svc.Act(w.ctx, c, cp.ActionRequest{SessionID: session, AssignmentID: a.Assignment.ID, Action: action, Verdict: verdict})
		}

		// An agent approves while the label is not yet known; the merger
		// is handed it, then the label arrives: the merge is refused.
		if _, err := act(agent, rs, w.assign(agent, rs), cp.ActReview, cp.VerdictApprove); err != nil {
			t.Fatal(err)
		}
		toMerge := w.assign(merger, ms)
		w.clock.Advance(time.Second)
		pr.ReviewState, pr.Labels, pr.UpdatedAt = cp.ReviewApproved, []string{"workqueue-review"}, w.clock.Now() // as the forge's event says
		w.work(pr)
		_, err := act(merger, ms, toMerge, cp.ActMerge, "")
		wantReason(t, err, cp.ActionReviewRequired)
		if slices.ContainsFunc(forge.written(), func(s string) bool { return s == "merge 6 at 1111111" }) {
			t.Fatal("the forge merged it")
		}
		w.svc.ReleaseLease(w.ctx, merger, toMerge.Lease.ID, ms)

		// The merger is not handed it again; a person's reviewer is.
		dry, err := w.svc.Allocate(w.ctx, merger, ms, "", false)
		if err != nil || dry.Outcome != cp.OutcomeNoSafeWork || len(dry.Candidates) != 1 || dry.Candidates[0].Reason != cp.SkipAwaitsPerson {
			t.Fatalf("the merger after an agent's approval: %+v, %v", dry, err)
		}
		if dry, err := w.svc.Allocate(w.ctx, agent, rs, "", false); err != nil || dry.Outcome == cp.OutcomePreview {
			t.Fatalf("an agent reviewer is handed it again: %+v, %v", dry, err)
		}
		if _, err := act(person, ps, w.assign(person, ps), cp.ActReview, cp.VerdictApprove); err != nil {
			t.Fatalf("the person's approval: %v", err)
		}
		res, err := act(merger, ms, w.assign(merger, ms), cp.ActMerge, "")
		if err != nil || res.Work.State != cp.StateMerged {
			t.Fatalf("the merge after the person's approval: %+v, %v", res, err)
		}
	})
}
