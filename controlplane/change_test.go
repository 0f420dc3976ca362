package controlplane_test

import (
	"context"
	"errors"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// prOnForge is a pull request as the forge has it now.
type prOnForge struct{ branch, head string }

func (p *prOnForge) read(context.Context, string, string, int64) (string, string, error) {
	return p.branch, p.head, nil
}

func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	var e *wq.Error
	if !errors.As(err, &e) || e.Code != wq.ECONFLICT || e.Reason != reason {
		t.Fatalf("want a conflict with reason %s, got %v", reason, err)
	}
}

func TestAChangeForAnIssueAssignmentOpensAPullRequestAndNothingElse(t *testing.T) {
	w := newWorld(t, "sqlite")
	w.work(openIssue(1))
	alice, s := w.session("alice", cp.RoleAuthor)
	a := w.assign(alice, s)
	req := cp.ChangeRequest{AssignmentID: a.Assignment.ID, Forge: "f", Repo: "o/r", Branch: "workqueue/fix-1"}
	g, err := w.svc.AuthorizeChange(w.ctx, alice, req)
	if err != nil || g.Action != cp.ActOpenPR || g.Merge || g.Work.Number != 1 || g.SessionID != s {
		t.Fatalf("issue assignment: %+v, %v", g, err)
	}
	other := req
	other.Repo = "o/elsewhere"
	_, err = w.svc.AuthorizeChange(w.ctx, alice, other)
	wantReason(t, err, cp.ChangeOtherRepo)
	bob, _ := w.session("bob", cp.RoleAuthor)
	_, err = w.svc.AuthorizeChange(w.ctx, bob, req)
	wantReason(t, err, cp.GateNotOwner)
	missing := req
	missing.AssignmentID = "0190a0a0-0000-7000-8000-000000000000"
	_, err = w.svc.AuthorizeChange(w.ctx, alice, missing)
	wantReason(t, err, cp.GateNoAssignment)

	// The lease runs out (no heartbeat) between submission and push.
	w.clock.Advance(11 * time.Minute)
	_, err = w.svc.AuthorizeChange(w.ctx, alice, req)
	wantReason(t, err, cp.GateLeaseExpired)
}

func TestAChangeForAPullRequestGoesOntoItsBranchAtThePinnedHead(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		alice, s := w.session("alice", cp.RoleAuthor)
		pr := openPR(4, "1111111")
		pr.AuthorSession = s
		w.work(pr)
		a := w.assign(alice, s) // changes requested: back to its author
		forge := &prOnForge{branch: "workqueue/fix-4", head: "1111111"}
		req := cp.ChangeRequest{AssignmentID: a.Assignment.ID, Forge: "f", Repo: "o/r", Branch: "workqueue/fix-4", PullRequest: forge.read}
		g, err := w.svc.AuthorizeChange(w.ctx, alice, req)
		if err != nil || g.Action != cp.ActPush {
			t.Fatalf("pull request assignment at its head: %+v, %v", g, err)
		}
		elsewhere := req
		elsewhere.Branch = "workqueue/other"
		_, err = w.svc.AuthorizeChange(w.ctx, alice, elsewhere)
		wantReason(t, err, cp.ChangeOtherBranch)

		// The service pushes for its owner: the lease declares the head,
		// and the next change goes on top of it.
		if err := w.svc.ChangePushed(w.ctx, alice, a.Assignment.ID, "2222222"); err != nil {
			t.Fatal(err)
		}
		forge.head = "2222222"
		if _, err := w.svc.AuthorizeChange(w.ctx, alice, req); err != nil {
			t.Fatalf("after the service's own push: %v", err)
		}
		// Someone else pushes: refused, head_moved.
		forge.head = "3333333"
		_, err = w.svc.AuthorizeChange(w.ctx, alice, req)
		wantReason(t, err, cp.GateHeadMoved)
	})
}

// The pull request the service opened for an issue assignment is its
// session's for good, recorded when the service opened it (before or
// after the forge's webhook), never because a pull request says
// "Closes #N": a person's pull request closing the held issue is nobody's
// to push, and requested changes on the service's come back to its
// author after the issue's lease ended.
func TestThePullRequestOpenedForAnAssignmentIsItsSessionsForGood(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		for _, webhookFirst := range []bool{false, true} {
			w := newWorld(t, kind)
			w.work(openIssue(1))
			alice, s := w.session("alice", cp.RoleAuthor)
			a := w.assign(alice, s)
			inv := &cp.Inventory{Store: w.svc.Store, Repos: []cp.RepoMatch{{Forge: "f", Match: "o/*"}}, Clock: w.clock}
			deliver := func(pr wq.WorkInfo) {
				t.Helper()
				if _, err := inv.Apply(w.ctx, "f", &forge.Delivery{Project: "o/r", Work: &pr}); err != nil {
					t.Fatal(err)
				}
			}
			ours := wq.WorkInfo{Kind: wq.WorkPR, Number: 2, State: wq.MergeRequestOpen, Title: "Fix 1", Author: "workqueue", HeadSHA: "abc1234",
				ReviewState: wq.ReviewNone, LinkedIssues: []int64{1}, UpdatedAt: now}
			theirs := ours
			theirs.Number, theirs.Author, theirs.HeadSHA = 3, "mallory", "def5678"
			deliver(theirs) // a person's pull request, saying "Closes #1"
			if webhookFirst {
				deliver(ours)
			}
			if err := w.svc.ChangeOpened(w.ctx, alice, a.Assignment.ID, 2, "abc1234"); err != nil {
				t.Fatal(err)
			}
			if !webhookFirst {
				deliver(ours)
			}
			if _, err := w.svc.ReleaseLease(w.ctx, alice, a.Lease.ID, s); err != nil {
				t.Fatal(err)
			}
			for _, pr := range []*wq.WorkInfo{&ours, &theirs} {
				pr.ReviewState, pr.UpdatedAt = wq.ReviewChangesRequested, now.Add(time.Minute)
				deliver(*pr)
			}
			for n, want := range map[int64]string{2: s, 3: ""} {
				got, err := w.svc.Store.FindWork(w.ctx, cp.WorkKey{Forge: "f", Repo: "o/r", Kind: cp.KindPR, Number: n})
				if err != nil || got.AuthorSession != want {
					t.Fatalf("webhook first %v: #%d's author session: %+v, %v; want %q", webhookFirst, n, got, err, want)
				}
			}
			next, err := w.svc.Allocate(w.ctx, alice, s, "", true)
			if err != nil || next.Outcome != cp.OutcomeAssigned || next.Work.Number != 2 {
				t.Errorf("webhook first %v: changes requested go back to the author: %+v, %v", webhookFirst, next, err)
			}
			if again, err := w.svc.Allocate(w.ctx, alice, s, "", false); err != nil || again.Outcome != cp.OutcomeNoSafeWork {
				t.Errorf("webhook first %v: the person's pull request was offered: %+v, %v", webhookFirst, again, err)
			}
		}
	})
}
