package controlplane_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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
	// closes are the issues a merge of each pull request closes (as the
	// forge does for "Closes #N"); closed the issues closed so far.
	closes map[int64][]int64
	closed map[int64]bool
	// mergeErr, when set, is the forge's answer to a merge; duringMerge,
	// when set, runs while the forge merges (a delivery landing then).
	mergeErr    error
	duringMerge func()
	// mergeable is what the forge says of each pull request's
	// mergeability when read (GetWork): true when absent.
	mergeable map[int64]bool
	// verdicts are the pull requests' review verdicts, as
	// ReviewPullRequest leaves them: approved when absent; one given at a
	// head (verdictAt) counts only while the pull request is at it.
	verdicts  map[int64]string
	verdictAt map[int64]string
}

func (f *actionForge) GetWork(_ context.Context, _, kind string, n int64) (*wq.WorkInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info := &wq.WorkInfo{Kind: kind, Number: n, State: wq.MergeRequestOpen, Title: "t", UpdatedAt: now}
	if kind == string(cp.KindPR) {
		mergeable, ok := f.mergeable[n]
		verdict, judged := f.verdicts[n]
		if !judged {
			verdict = wq.ReviewApproved
		}
		if at, ok := f.verdictAt[n]; ok && at != f.heads[n] {
			verdict = wq.ReviewNone
		}
		info.HeadSHA, info.Mergeable, info.ReviewState = f.heads[n], mergeable || !ok, verdict
	}
	if f.closed[n] {
		info.State, info.UpdatedAt = wq.MergeRequestClosed, now.Add(time.Minute)
	}
	return info, nil
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
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.verdicts == nil {
		f.verdicts = map[int64]string{}
	}
	if f.verdictAt == nil {
		f.verdictAt = map[int64]string{}
	}
	f.verdicts[n], f.verdictAt[n] = verdict, head
	return nil
}

func (f *actionForge) MergeMergeRequest(_ context.Context, _ string, n int64, head string) error {
	if f.duringMerge != nil {
		f.duringMerge()
	}
	if f.mergeErr != nil {
		return f.mergeErr
	}
	f.record("merge %d at %s", n, head)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, i := range f.closes[n] {
		if f.closed == nil {
			f.closed = map[int64]bool{}
		}
		f.closed[i] = true
	}
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
		forge := &actionForge{heads: map[int64]string{5: "1111111"}, verdicts: map[int64]string{5: wq.ReviewNone}}
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
		// The moved head ended the merger's right to merge, and the
		// approval was for the old head: nothing is left to merge.
		if l, _ := w.svc.Store.GetLease(w.ctx, toMerge.Lease.ID); l.State == cp.LeaseActive {
			t.Errorf("the merger's lease is still %s after the head moved", l.State)
		}
		if dry, err := w.svc.Allocate(w.ctx, merger, ms, "", true); err != nil || dry.Outcome != cp.OutcomeNoSafeWork {
			t.Fatalf("after a push past the approval the merger is offered %+v, %v", dry, err)
		}
		// The push is undone: the approved head is back, and so is the merge.
		forge.mu.Lock()
		forge.heads[5] = "1111111"
		forge.mu.Unlock()
		w.clock.Advance(time.Second)
		pr.HeadSHA, pr.ReviewState, pr.UpdatedAt = "1111111", cp.ReviewApproved, w.clock.Now() // as the forge's event says
		w.work(pr)
		toMerge = w.assign(merger, ms)
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
	forge := &actionForge{heads: map[int64]string{4: "1111111"}, verdicts: map[int64]string{4: wq.ReviewChangesRequested}}
	w.svc.Forges = map[string]wq.Forge{"f": forge}
	alice, s := w.session("alice", cp.RoleAuthor)
	pr := openPR(4, "1111111")
	pr.AuthorSession = s
	w.work(pr)
	a := w.assign(alice, s) // changes requested: its author's, to push
	_, err := w.svc.Act(w.ctx, alice, cp.ActionRequest{SessionID: s, AssignmentID: a.Assignment.ID, Action: cp.ActReview, Verdict: cp.VerdictApprove})
	wantReason(t, err, cp.ActionOwnPullRequest)
	_, err = w.svc.Act(w.ctx, alice, cp.ActionRequest{SessionID: s, AssignmentID: a.Assignment.ID, Action: cp.ActMerge})
	wantReason(t, err, cp.ActionOwnPullRequest)
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

// A merge closes the issues its pull request closes, on the forge at
// once; the inventory knows it before the merger's lease goes, so that no
// author is handed the finished issue while the forge's webhook is on
// its way. An issue the forge left open stays offered.
func TestAnIssueAMergeClosedIsNotHandedOutAgain(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		forge := &actionForge{heads: map[int64]string{5: "1111111"}, closes: map[int64][]int64{5: {1}}}
		w.svc.Forges = map[string]wq.Forge{"f": forge}
		pr := openPR(5, "1111111")
		pr.ReviewState, pr.Mergeable, pr.LinkedIssues = cp.ReviewApproved, true, []int64{1, 2}
		w.work(openIssue(1), openIssue(2), pr)
		merger, ms := w.session("meg", cp.RoleMerger)
		a := w.assign(merger, ms)
		if _, err := w.svc.Act(w.ctx, merger, cp.ActionRequest{SessionID: ms, AssignmentID: a.Assignment.ID, Action: cp.ActMerge}); err != nil {
			t.Fatal(err)
		}
		for n, want := range map[int64]cp.State{1: cp.StateClosed, 2: cp.StateOpen} {
			got, err := w.svc.Store.FindWork(w.ctx, cp.WorkKey{Forge: "f", Repo: "o/r", Kind: cp.KindIssue, Number: n})
			if err != nil || got.State != want {
				t.Errorf("issue %d: %+v, %v; want %s", n, got, err, want)
			}
		}
		author, as := w.session("alice", cp.RoleAuthor)
		if got := w.assign(author, as); got.Work.Number != 2 {
			t.Errorf("the author was handed %s %d, want issue 2, the one still open", got.Work.Kind, got.Work.Number)
		}
	})
}

// A delivery may land while the forge merges (the review's webhook, late):
// the merge is written over it, not dropped as older, and a delivery from
// before the merge arriving later does not open the pull request again.
func TestAMergeHoldsAgainstDeliveriesDuringAndAfterIt(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		forge := &actionForge{heads: map[int64]string{5: "1111111"}}
		w.svc.Forges = map[string]wq.Forge{"f": forge}
		pr := openPR(5, "1111111")
		pr.ReviewState, pr.Mergeable = cp.ReviewApproved, true
		w.work(pr)
		late := pr
		late.UpdatedAt, late.Title = now.Add(time.Second), "retitled before the merge"
		forge.duringMerge = func() { w.work(late) }
		merger, ms := w.session("meg", cp.RoleMerger)
		a := w.assign(merger, ms)
		res, err := w.svc.Act(w.ctx, merger, cp.ActionRequest{SessionID: ms, AssignmentID: a.Assignment.ID, Action: cp.ActMerge})
		if err != nil || res.Work.State != cp.StateMerged {
			t.Fatalf("merge: %+v, %v", res, err)
		}
		later := late
		later.UpdatedAt = now.Add(time.Minute)
		w.work(later)
		got, err := w.svc.Store.FindWork(w.ctx, pr.WorkKey)
		if err != nil || got.State != cp.StateMerged || got.Title != late.Title {
			t.Errorf("stored %+v, %v; want merged, with the title the delivery during the merge gave", got, err)
		}
	})
}

// Gitea refuses a merge while it checks mergeability and says nothing
// when the check ends. A refused merge marks the pull request not
// mergeable, so no merger is handed it again at once; Settle reads it
// back and hands it on when the forge says it can merge, though the
// forge's updated time did not move.
func TestARefusedMergeWaitsForTheForgeToSayItCanMerge(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		forge := &actionForge{heads: map[int64]string{5: "1111111"},
			mergeErr: &wq.ForgeError{Kind: wq.ForgeUnprocessable, Status: 405, Op: "merge", Message: "Please try again later"}}
		w.svc.Forges = map[string]wq.Forge{"f": forge}
		pr := openPR(5, "1111111")
		pr.ReviewState, pr.Mergeable = cp.ReviewApproved, true
		w.work(pr)
		merger, ms := w.session("meg", cp.RoleMerger)
		a := w.assign(merger, ms)
		_, err := w.svc.Act(w.ctx, merger, cp.ActionRequest{SessionID: ms, AssignmentID: a.Assignment.ID, Action: cp.ActMerge})
		wantReason(t, err, cp.ActionForgeRefused)
		forge.mu.Lock()
		forge.mergeable = map[int64]bool{5: false} // it was still checking, and says so now
		forge.mu.Unlock()
		if _, err := w.svc.ReleaseLease(w.ctx, merger, a.Lease.ID, ms); err != nil {
			t.Fatal(err)
		}
		dry, err := w.svc.Allocate(w.ctx, merger, ms, "", false)
		if err != nil || dry.Outcome != cp.OutcomeNoSafeWork {
			t.Fatalf("after a refused merge the merger is offered %+v, %v", dry, err)
		}

		inv := &cp.Inventory{Store: w.svc.Store, Forges: w.svc.Forges, Clock: w.clock}
		if n, err := inv.Settle(w.ctx); err != nil || n != 0 {
			t.Errorf("settle while the forge still checks: %d changed, %v", n, err)
		}
		forge.mu.Lock()
		forge.mergeable[5], forge.mergeErr = true, nil
		forge.mu.Unlock()
		if n, err := inv.Settle(w.ctx); err != nil || n != 1 {
			t.Errorf("settle once the forge can merge: %d changed, %v", n, err)
		}
		if got := w.assign(merger, ms); got.Work.Number != 5 {
			t.Errorf("the merger was handed %+v", got.Work)
		}
	})
}

// queueAll is a merge train that takes every merge.
type queueAll struct{ got []int64 }

func (q *queueAll) QueueMerge(_ context.Context, _, _ string, n int64, _, _ string, _ time.Time) (bool, error) {
	q.got = append(q.got, n)
	return true, nil
}

// A merger's merge in a project with a merge train joins the train: the
// forge merges nothing, the pull request stays open in the inventory, and
// the merger's lease ends.
func TestAMergersMergeGoesThroughTheTrain(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		forge := &actionForge{heads: map[int64]string{5: "1111111"}}
		w.svc.Forges = map[string]wq.Forge{"f": forge}
		train := &queueAll{}
		w.svc.MergeQueue = train
		pr := openPR(5, "1111111")
		pr.ReviewState, pr.Mergeable = cp.ReviewApproved, true
		w.work(pr)
		merger, ms := w.session("meg", cp.RoleMerger)
		a := w.assign(merger, ms)
		res, err := w.svc.Act(w.ctx, merger, cp.ActionRequest{SessionID: ms, AssignmentID: a.Assignment.ID, Action: cp.ActMerge})
		if err != nil || !res.Queued || !res.Released {
			t.Fatalf("merge: %+v, %v; want queued and released", res, err)
		}
		if len(train.got) != 1 || train.got[0] != 5 {
			t.Errorf("the train got %v, want #5", train.got)
		}
		if got := forge.writes.Lines(); len(got) != 0 {
			t.Errorf("the forge was written: %v", got)
		}
		if got, err := w.svc.Store.FindWork(w.ctx, pr.WorkKey); err != nil || got.State != cp.StateOpen {
			t.Errorf("the pull request is %+v, %v; want open until the train merges it", got, err)
		}
	})
}
