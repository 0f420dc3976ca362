package controlplane_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// world is a Service on a real database with a clock the test moves.
type world struct {
	t     *testing.T
	ctx   context.Context
	clock *clockwork.FakeClock
	svc   *cp.Service
}

func newWorld(t *testing.T, kind string) *world {
	clock := clockwork.NewFakeClockAt(now)
	return &world{t: t, ctx: context.Background(), clock: clock,
		svc: &cp.Service{Store: testdb.ControlPlane(t, kind), Clock: clock, LeaseTTL: 10 * time.Minute, SessionTTL: time.Hour}}
}

func (w *world) work(items ...cp.Work) {
	w.t.Helper()
	if err := w.svc.Store.UpsertWork(w.ctx, items, w.clock.Now()); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) session(who string, role cp.Role) (cp.Caller, string) {
	w.t.Helper()
	c := cp.Caller{Identity: who}
	s, err := w.svc.RegisterSession(w.ctx, c, role, who, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	return c, s.ID
}

func (w *world) assign(c cp.Caller, session string) *cp.Allocation {
	w.t.Helper()
	a, err := w.svc.Allocate(w.ctx, c, session, "", true)
	if err != nil || a.Outcome != cp.OutcomeAssigned {
		w.t.Fatalf("allocate: %+v, %v", a, err)
	}
	return a
}

func openIssue(n int64) cp.Work {
	return cp.Work{ID: "issue-" + string(rune('0'+n)), WorkKey: cp.WorkKey{Forge: "f", Repo: "o/r", Kind: cp.KindIssue, Number: n},
		State: cp.StateOpen, Title: "t", UpdatedAt: now}
}

func openPR(n int64, head string) cp.Work {
	w := openIssue(n)
	w.ID, w.Kind, w.HeadSHA, w.ReviewState = "pr-"+string(rune('0'+n)), cp.KindPR, head, cp.ReviewChangesRequested
	return w
}

func reasonOf(err error) string {
	var e *wq.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func TestADryRunWritesNothing(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1), openIssue(2))
		c, s := w.session("alice", cp.RoleAuthor)
		eventsBefore, _ := w.svc.Store.ListEvents(w.ctx, cp.EventFilter{Limit: 500})
		a, err := w.svc.Allocate(w.ctx, c, s, "", false)
		if err != nil || a.Outcome != cp.OutcomePreview || a.Work == nil || a.Lease != nil || len(a.Candidates) != 1 {
			t.Fatalf("dry run: %+v, %v", a, err)
		}
		leases, _ := w.svc.Store.ListLeases(w.ctx, cp.LeaseFilter{All: true})
		events, _ := w.svc.Store.ListEvents(w.ctx, cp.EventFilter{Limit: 500})
		if len(leases) != 0 || len(events) != len(eventsBefore) {
			t.Errorf("a dry run wrote %d leases and %d events", len(leases), len(events)-len(eventsBefore))
		}
	})
}

// #601 hard rule 2: a live foreign lease is never stolen, through any verb.
func TestALiveForeignLeaseCannotBeStolen(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1))
		alice, as := w.session("alice", cp.RoleAuthor)
		bob, bs := w.session("bob", cp.RoleAuthor)
		lease := w.assign(alice, as).Lease.ID
		if _, err := w.svc.AdoptLease(w.ctx, bob, lease, bs, "/tmp/wt", ""); reasonOf(err) != cp.RefuseWaitForeignActive {
			t.Errorf("adopt: %v, want %s", err, cp.RefuseWaitForeignActive)
		}
		if _, err := w.svc.ReclaimLease(w.ctx, bob, lease, bs); reasonOf(err) != cp.RefuseWaitForeignActive {
			t.Errorf("reclaim: %v, want %s", err, cp.RefuseWaitForeignActive)
		}
		if _, err := w.svc.ReleaseLease(w.ctx, bob, lease, bs); reasonOf(err) != cp.RefuseNotOwner {
			t.Errorf("release: %v, want %s", err, cp.RefuseNotOwner)
		}
		if _, err := w.svc.HeartbeatLease(w.ctx, bob, lease, bs, ""); reasonOf(err) != cp.RefuseNotOwner {
			t.Errorf("heartbeat: %v, want %s", err, cp.RefuseNotOwner)
		}
		if v, err := w.svc.InspectLease(w.ctx, bob, lease, bs); err != nil || v.SafeNextAction != cp.NextWaitForeignActive {
			t.Errorf("inspect: %+v, %v, want %s", v, err, cp.NextWaitForeignActive)
		}
		if _, err := w.svc.Session(w.ctx, bob, as); wq.ErrorCode(err) != wq.ENOTFOUND {
			t.Errorf("bob read alice's session: %v", err)
		}
	})
}

// #601 hard rule 4: adopt and reclaim record where the lease came from.
func TestAdoptAndReclaimRecordProvenance(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1), openIssue(2))
		alice, first := w.session("alice", cp.RoleAuthor)
		lease := w.assign(alice, first).Lease.ID
		// Alice restarts: a new session of the same identity resumes.
		_, second := w.session("alice", cp.RoleAuthor)
		v, err := w.svc.AdoptLease(w.ctx, alice, lease, second, "/work/alice", "abc123")
		if err != nil {
			t.Fatal(err)
		}
		if v.SessionID != second || v.AdoptedFromSessionID != first || v.AdoptedBySessionID != second ||
			v.WorktreePath != "/work/alice" || v.HeadSHA != "abc123" || v.WorkID == "" || !v.Freshness.Live {
			t.Errorf("after adopt: %+v", v)
		}
		// Bob reclaims the lease once it expired.
		bob, bs := w.session("bob", cp.RoleAuthor)
		w.clock.Advance(11 * time.Minute)
		a, err := w.svc.ReclaimLease(w.ctx, bob, lease, bs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.svc.Store.GetLease(w.ctx, a.Lease.ID)
		if err != nil || got.SessionID != bs || got.AdoptedFromSessionID != second || got.AdoptedBySessionID != bs || got.WorkID != v.WorkID {
			t.Errorf("after reclaim: %+v, %v", got, err)
		}
		old, _ := w.svc.Store.GetLease(w.ctx, lease)
		if old.State != cp.LeaseReclaimed {
			t.Errorf("the reclaimed lease is %s", old.State)
		}
	})
}

// #601 hard rule 3 through the service: without the proof, nothing ends.
func TestAbandonWithoutProofLeavesTheLease(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1))
		alice, as := w.session("alice", cp.RoleAuthor)
		lease := w.assign(alice, as).Lease.ID
		if _, err := w.svc.AbandonLease(w.ctx, alice, lease, as, cp.AbandonProof{DeadProcess: true}); reasonOf(err) != cp.RefuseProof {
			t.Fatalf("abandon without no_live_mutation_risk: %v", err)
		}
		if l, _ := w.svc.Store.GetLease(w.ctx, lease); l.State != cp.LeaseActive {
			t.Fatalf("the lease is %s", l.State)
		}
		v, err := w.svc.AbandonLease(w.ctx, alice, lease, as, cp.AbandonProof{DeadProcess: true, NoLiveMutationRisk: true})
		if err != nil || v.State != cp.LeaseAbandoned {
			t.Fatalf("abandon with proof: %+v, %v", v, err)
		}
	})
}

// Hard rules 3 and 4 at the gate: the work's inventory state, fed by
// webhooks, refuses a held assignment once the work ended or its head
// moved; the owner's own declared push does not.
func TestTheGateFollowsTheInventory(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		pr := openPR(1, "h1")
		pr.AuthorSession = "" // set below
		alice, as := w.session("alice", cp.RoleAuthor)
		pr.AuthorSession = as
		w.work(pr)
		a := w.assign(alice, as)
		gate := func() cp.Decision {
			t.Helper()
			d, err := w.svc.Gate(w.ctx, alice, as, a.Assignment.ID, cp.ActPush, "")
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		if d := gate(); !d.Allowed || !d.HeadChecked {
			t.Fatalf("a fresh assignment: %+v", d)
		}
		w.clock.Advance(time.Second)
		pr.HeadSHA, pr.UpdatedAt = "h2", w.clock.Now() // someone pushed
		w.work(pr)
		if d := gate(); d.Reason != cp.GateHeadMoved {
			t.Fatalf("after a foreign push: %+v", d)
		}
		if _, err := w.svc.HeartbeatLease(w.ctx, alice, a.Lease.ID, as, "h2"); err != nil { // it was alice's own push
			t.Fatal(err)
		}
		if d := gate(); !d.Allowed {
			t.Fatalf("after the owner declared its push: %+v", d)
		}
		w.clock.Advance(time.Second)
		pr.State, pr.UpdatedAt = cp.StateMerged, w.clock.Now()
		w.work(pr)
		if d := gate(); d.Reason != cp.GateWorkTerminal {
			t.Fatalf("after the merge: %+v", d)
		}
		events, _ := w.svc.Store.ListEvents(w.ctx, cp.EventFilter{SessionID: as, Limit: 50})
		refused := 0
		for _, e := range events {
			if e.Type == cp.EventRefused {
				refused++
			}
		}
		if refused != 2 {
			t.Errorf("%d refusals in the event log, want 2", refused)
		}
	})
}

// A stale session gets no work.
func TestAStaleSessionGetsNoWork(t *testing.T) {
	w := newWorld(t, "sqlite")
	w.work(openIssue(1))
	c, s := w.session("alice", cp.RoleAuthor)
	w.clock.Advance(2 * time.Hour)
	if _, err := w.svc.Allocate(w.ctx, c, s, "", true); reasonOf(err) != "session_stale" {
		t.Fatalf("allocate on a stale session: %v", err)
	}
}
