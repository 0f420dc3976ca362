package controlplane_test

import (
	"testing"
	"time"

	cp "github.com/workqueue-dev/workqueue/controlplane"
)

// held is a gate input that passes: session s holds a live lease on an
// open pull request at head "h1", assigned to push and comment.
func held() cp.GateInput {
	s := session("s", cp.RoleAuthor)
	return cp.GateInput{
		SessionID:  "s",
		Session:    s,
		Assignment: &cp.Assignment{ID: "a", SessionID: "s", WorkID: "w", LeaseID: "l", AllowedActions: []cp.Action{cp.ActPush, cp.ActComment}, ExpectedHeadSHA: "h1"},
		Lease:      &cp.Lease{ID: "l", WorkID: "w", SessionID: "s", AssignmentID: "a", State: cp.LeaseActive, ExpiresAt: now.Add(time.Minute)},
		Work:       &cp.Work{ID: "w", WorkKey: cp.WorkKey{Kind: cp.KindPR, Number: 1}, State: cp.StateOpen, HeadSHA: "h1"},
		Action:     cp.ActPush,
		Now:        now,
	}
}

func TestGateRefusesEveryDoubtWithItsReason(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(*cp.GateInput)
		reason string
	}{
		{"a held assignment passes", func(*cp.GateInput) {}, ""},
		{"no assignment", func(in *cp.GateInput) { in.Assignment = nil }, cp.GateNoAssignment},
		{"no lease", func(in *cp.GateInput) { in.Lease = nil }, cp.GateNoAssignment},
		{"no work", func(in *cp.GateInput) { in.Work = nil }, cp.GateNoAssignment},
		{"no session", func(in *cp.GateInput) { in.Session = nil }, cp.GateNoAssignment},
		{"a lease of another assignment", func(in *cp.GateInput) { in.Lease.ID = "other" }, cp.GateNoAssignment},
		{"another session's lease", func(in *cp.GateInput) { in.Lease.SessionID = "t" }, cp.GateNotOwner},
		{"an ended session", func(in *cp.GateInput) { in.Session.EndedAt = now }, cp.GateNotOwner},
		{"the lease expired at this instant", func(in *cp.GateInput) { in.Lease.ExpiresAt = now }, cp.GateLeaseExpired},
		{"the lease was released", func(in *cp.GateInput) { in.Lease.State = cp.LeaseReleased }, cp.GateLeaseExpired},
		{"an action the assignment does not allow", func(in *cp.GateInput) { in.Action = cp.ActMerge }, cp.GateActionNotAllowed},
		{"merged work", func(in *cp.GateInput) { in.Work.State = cp.StateMerged }, cp.GateWorkTerminal},
		{"closed work", func(in *cp.GateInput) { in.Work.State = cp.StateClosed }, cp.GateWorkTerminal},
		{"the inventory saw someone push", func(in *cp.GateInput) { in.Work.HeadSHA = "h2" }, cp.GateHeadMoved},
		{"the caller sees another head", func(in *cp.GateInput) { in.LiveHead = "h2" }, cp.GateHeadMoved},
		{"a head read from the forge wins over the inventory's", func(in *cp.GateInput) { in.Work.HeadSHA, in.LiveHead, in.LiveFromForge = "h2", "h1", true }, ""},
		{"a caller's claimed head never outweighs the inventory's", func(in *cp.GateInput) { in.Work.HeadSHA, in.LiveHead = "h2", "h1" }, cp.GateHeadMoved},
		{"a caller's claimed head that moved is refused", func(in *cp.GateInput) { in.LiveHead = "h9" }, cp.GateHeadMoved},
		{"a head nobody knows is not checked", func(in *cp.GateInput) { in.Work.HeadSHA = "" }, ""},
		{"the service's push for the owner is the expected head", func(in *cp.GateInput) { in.Lease.HeadSHA, in.Work.HeadSHA = "h2", "h2" }, ""},
		{"an issue has no head to check", func(in *cp.GateInput) { in.Work.Kind, in.Work.HeadSHA = cp.KindIssue, "x" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := held()
			tc.edit(&in)
			got := cp.Check(in)
			if got.Allowed != (tc.reason == "") || got.Reason != tc.reason {
				t.Errorf("gate %+v, want reason %q", got, tc.reason)
			}
		})
	}
}

func TestInspectSaysTheSafeNextAction(t *testing.T) {
	owner := session("o", cp.RoleAuthor)
	sameIdentity := &cp.Session{ID: "o2", Identity: owner.Identity}
	stranger := session("x", cp.RoleAuthor)
	live := func() *cp.Lease {
		return &cp.Lease{ID: "l", SessionID: "o", State: cp.LeaseActive, HeartbeatAt: now, ExpiresAt: now.Add(10 * time.Minute)}
	}
	for _, tc := range []struct {
		name   string
		lease  func(*cp.Lease)
		caller *cp.Session
		want   string
	}{
		{"the owner with time left continues", nil, owner, cp.NextContinue},
		{"the owner near the end heartbeats", func(l *cp.Lease) { l.ExpiresAt = now.Add(time.Minute) }, owner, cp.NextHeartbeat},
		{"the owner's identity in a new session waits while the owner is live", nil, sameIdentity, cp.NextWaitForeignActive},
		{"the owner's identity in a new session adopts from a quiet owner", func(l *cp.Lease) { l.HeartbeatAt = now.Add(-2 * time.Hour) }, sameIdentity, cp.NextAdopt},
		{"a stranger waits on a live lease", nil, stranger, cp.NextWaitForeignActive},
		{"anyone may reclaim an expired lease", func(l *cp.Lease) { l.ExpiresAt = now }, stranger, cp.NextReclaim},
		{"an ended lease leaves allocating", func(l *cp.Lease) { l.State = cp.LeaseReleased }, owner, cp.NextAllocate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := live()
			if tc.lease != nil {
				tc.lease(l)
			}
			o := *owner
			if l.HeartbeatAt.Before(now.Add(-time.Hour)) {
				o.HeartbeatAt = l.HeartbeatAt // the owner went quiet with its lease
			}
			if _, got := cp.Inspect(l, &o, tc.caller, now, 2*time.Minute, time.Hour); got != tc.want {
				t.Errorf("safe next action %q, want %q", got, tc.want)
			}
		})
	}
}

// #601 hard rule 2: a live foreign lease is never stolen; the session
// holding it resumes it, another session of its identity adopts it only
// from a quiet holder, and an expired one may be adopted by anyone (the
// service then checks the role's routing).
func TestAdoptionNeverStealsALiveForeignLease(t *testing.T) {
	owner := session("o", cp.RoleAuthor)
	l := &cp.Lease{ID: "l", SessionID: "o", State: cp.LeaseActive, ExpiresAt: now.Add(time.Minute)}
	sibling := &cp.Session{ID: "o2", Identity: owner.Identity}
	for _, quiet := range []bool{false, true} {
		if got := cp.Adoption(l, owner, session("x", cp.RoleAuthor), now, quiet); got != cp.RefuseWaitForeignActive {
			t.Errorf("a stranger adopting a live lease (holder quiet %v): %q, want %q", quiet, got, cp.RefuseWaitForeignActive)
		}
		if got := cp.Adoption(l, nil, session("x", cp.RoleAuthor), now, quiet); got != cp.RefuseWaitForeignActive {
			t.Errorf("a live lease of an unknown session (holder quiet %v): %q, want %q", quiet, got, cp.RefuseWaitForeignActive)
		}
		if got := cp.Adoption(l, owner, owner, now, quiet); got != "" {
			t.Errorf("the holding session resuming: %q, want allowed", got)
		}
	}
	if got := cp.Adoption(l, owner, sibling, now, false); got != cp.RefuseWaitForeignActive {
		t.Errorf("another session of the owner's identity taking a live holder's lease: %q, want %q", got, cp.RefuseWaitForeignActive)
	}
	if got := cp.Adoption(l, owner, sibling, now, true); got != "" {
		t.Errorf("another session of the owner's identity adopting from a quiet holder: %q, want allowed", got)
	}
	l.ExpiresAt = now
	if got := cp.Adoption(l, owner, session("x", cp.RoleAuthor), now, false); got != "" {
		t.Errorf("adopting an expired lease: %q, want allowed", got)
	}
	l.State = cp.LeaseReleased
	if got := cp.Adoption(l, owner, owner, now, true); got != cp.RefuseNotActive {
		t.Errorf("adopting a released lease: %q, want %q", got, cp.RefuseNotActive)
	}
}

// #601 hard rule 3, case by case.
func TestAbandonNeedsItsProof(t *testing.T) {
	l := &cp.Lease{ID: "l", SessionID: "o", State: cp.LeaseActive, ExpiresAt: now.Add(time.Minute)}
	for _, tc := range []struct {
		name   string
		caller string
		admin  bool
		proof  cp.AbandonProof
		ok     bool
		live   bool // the holder heartbeated within the session TTL
		openPR bool // the inventory holds an open pull request for the work
	}{
		{"own: dead process, no risk", "o", false, cp.AbandonProof{DeadProcess: true, NoLiveMutationRisk: true}, true, false, false},
		{"own: missing worktree, no risk", "o", false, cp.AbandonProof{MissingWorktree: true, NoLiveMutationRisk: true}, true, false, false},
		{"own: risk not ruled out", "o", false, cp.AbandonProof{DeadProcess: true, MissingWorktree: true}, false, false, false},
		{"own: neither dead nor missing", "o", false, cp.AbandonProof{NoLiveMutationRisk: true, NoOpenPR: true}, false, false, false},
		{"foreign: operator authorized by an admin", "x", true, cp.AbandonProof{DeadProcess: true, NoLiveMutationRisk: true, OperatorAuthorized: true}, true, false, false},
		{"foreign: operator authorized claimed by a non-admin", "x", false, cp.AbandonProof{DeadProcess: true, NoLiveMutationRisk: true, OperatorAuthorized: true}, false, false, false},
		{"foreign: the full proof", "x", false, cp.AbandonProof{DeadProcess: true, MissingWorktree: true, NoOpenPR: true, NoLiveMutationRisk: true}, true, false, false},
		{"foreign: the full proof but an open pull request", "x", false, cp.AbandonProof{DeadProcess: true, MissingWorktree: true, NoLiveMutationRisk: true}, false, false, false},
		{"foreign: the full proof while the holder heartbeats", "x", false, cp.AbandonProof{DeadProcess: true, MissingWorktree: true, NoOpenPR: true, NoLiveMutationRisk: true}, false, true, false},
		{"foreign: no_open_pr the inventory contradicts", "x", false, cp.AbandonProof{DeadProcess: true, MissingWorktree: true, NoOpenPR: true, NoLiveMutationRisk: true}, false, false, true},
		{"own: no_open_pr the inventory contradicts", "o", false, cp.AbandonProof{DeadProcess: true, NoOpenPR: true, NoLiveMutationRisk: true}, false, false, true},
		{"foreign: an admin's operator authorization while the holder heartbeats", "x", true, cp.AbandonProof{DeadProcess: true, NoLiveMutationRisk: true, OperatorAuthorized: true}, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cp.Abandonment(l, tc.caller, tc.admin, tc.proof, !tc.live, tc.openPR)
			if (got == "") != tc.ok {
				t.Errorf("%q, want allowed %v", got, tc.ok)
			}
		})
	}
}
