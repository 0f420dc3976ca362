package cpstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore/cpstoretest"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/store"
)

var T0 = cpstoretest.T0

// TestConformance runs the control plane store's conformance suite on
// both drivers.
func TestConformance(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		cpstoretest.Run(t, func(t *testing.T) controlplane.Store { return testdb.ControlPlane(t, kind) })
	})
}

// TestMigrations: the chain is the control plane's own, applied once, and
// counted by the driver as current.
func TestMigrations(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		url := testdb.URL(t, kind)
		testdb.ControlPlaneURL(t, url) // migrates
		db, err := testdb.Drivers.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := cpstore.New(db); err != nil {
			t.Fatal(err)
		}
		if applied, err := db.Migrate(ctx); err != nil || len(applied) != 0 {
			t.Fatalf("second migration applied %v, %v", applied, err)
		}
		applied, latest, err := db.SchemaVersion(ctx)
		if err != nil || applied != latest {
			t.Fatalf("schema version %d of %d, %v", applied, latest, err)
		}
		if _, err := cpstore.New(db); err == nil {
			t.Error("the chain registered twice")
		}
	})
}

// TestNewRefusesAnotherDriver: a store the package does not know is an
// error, not a panic.
func TestNewRefusesAnotherDriver(t *testing.T) {
	if _, err := cpstore.New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// TestStaleTerminalLock: a terminal lock that outlived its lease (no
// Store method leaves one; an older version or a hand edit might) still
// holds the work against other sessions, as Candidates says, and is
// replaced when its own session is assigned again.
func TestStaleTerminalLock(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		s := testdb.ControlPlane(t, kind)
		f := &cpstoretest.F{T: t, S: s, Ctx: context.Background()}
		f.Sessions(controlplane.RoleMerger, "m1", "m2")
		w := f.Work(1, func(w *controlplane.Work) { w.Kind = controlplane.KindPR })
		g := f.MustAssign("m1", w, true, T0, T0.Add(time.Hour))
		if err := cpstore.Exec(s, `UPDATE cp_leases SET state = 'released' WHERE id = ?`, g.L.ID); err != nil {
			t.Fatal(err)
		}
		if l, _, k := f.Holders(w.ID, T0); l != "" || k != "m1" {
			t.Errorf("candidate: lease %q, lock of %q", l, k)
		}
		_, err := f.Assign("m2", w, true, T0, T0.Add(time.Hour))
		cpstoretest.WantIs(t, err, controlplane.ErrWorkHeld)
		g2 := f.MustAssign("m1", w, true, T0, T0.Add(time.Hour))
		if l, _, k := f.Holders(w.ID, T0); l != g2.L.ID || k != "m1" {
			t.Errorf("after the owner's new assignment: lease %q, lock of %q", l, k)
		}
	})
}

// TestAssignRace is hard rule 2's acceptance test: 20 sessions ask for
// the only open work item at once; exactly one gets it and 19 are told it
// is held, 20 rounds in a row.
func TestAssignRace(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		race(t, []controlplane.Store{testdb.ControlPlane(t, kind)}, 20)
	})
}

// TestAssignRaceTwoProcesses is the same race run by two serve processes
// on one PostgreSQL database (two pools), 10 sessions on each.
func TestAssignRaceTwoProcesses(t *testing.T) {
	url := testdb.URL(t, store.KindPostgres)
	race(t, []controlplane.Store{testdb.ControlPlaneURL(t, url), testdb.ControlPlaneURL(t, url)}, 10)
}

func race(t *testing.T, stores []controlplane.Store, perStore int) {
	ctx := context.Background()
	n := len(stores) * perStore
	for i := range n {
		s := controlplane.Session{ID: fmt.Sprintf("s%d", i), Identity: "agent", Role: controlplane.RoleAuthor, CreatedAt: T0, HeartbeatAt: T0}
		if err := stores[0].CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 20 {
		now := T0.Add(time.Duration(round) * time.Minute)
		w := controlplane.Work{ID: fmt.Sprintf("w%d", round), WorkKey: controlplane.WorkKey{Forge: "gitea", Repo: "o/r",
			Kind: controlplane.KindIssue, Number: int64(round + 1)}, State: controlplane.StateOpen, UpdatedAt: now}
		if err := stores[0].UpsertWork(ctx, []controlplane.Work{w}, now); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			s := stores[i%len(stores)]
			wg.Go(func() {
				session, id := fmt.Sprintf("s%d", i), fmt.Sprintf("%d-%d", round, i)
				a := controlplane.Assignment{ID: "a" + id, SessionID: session, WorkID: w.ID, LeaseID: "l" + id,
					AllowedActions: []controlplane.Action{controlplane.ActPush}, CreatedAt: now}
				l := controlplane.Lease{ID: "l" + id, WorkID: w.ID, SessionID: session, AssignmentID: a.ID, State: controlplane.LeaseActive,
					CreatedAt: now, HeartbeatAt: now, ExpiresAt: now.Add(time.Hour)}
				<-start
				errs[i] = s.Assign(ctx, a, l, controlplane.Event{Actor: "agent"}, now)
			})
		}
		close(start)
		wg.Wait()
		won, held := 0, 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, controlplane.ErrWorkHeld):
				held++
			default:
				t.Errorf("round %d, session %d: %v", round, i, err)
			}
		}
		if won != 1 || held != n-1 {
			t.Fatalf("round %d: %d assigned, %d held, want 1 and %d", round, won, held, n-1)
		}
		leases, err := stores[len(stores)-1].ListLeases(ctx, controlplane.LeaseFilter{WorkID: w.ID, All: true})
		if err != nil || len(leases) != 1 {
			t.Fatalf("round %d: leases of the work: %+v, %v", round, leases, err)
		}
		// Close it, so that the next round's is the only open work item.
		w.State, w.UpdatedAt = controlplane.StateClosed, now.Add(time.Second)
		if err := stores[0].UpsertWork(ctx, []controlplane.Work{w}, now); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEndSessionRace: a session that ends while it is being assigned
// never keeps an active lease: either the assignment is refused, or the
// end releases it. On two pools, as two serve processes would.
func TestEndSessionRace(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		url := testdb.URL(t, kind)
		stores := []controlplane.Store{testdb.ControlPlaneURL(t, url), testdb.ControlPlaneURL(t, url)}
		ctx := context.Background()
		for round := range 50 {
			id := fmt.Sprintf("%d", round)
			if err := stores[0].CreateSession(ctx, controlplane.Session{ID: "s" + id, Identity: "agent", Role: controlplane.RoleAuthor,
				CreatedAt: T0, HeartbeatAt: T0}); err != nil {
				t.Fatal(err)
			}
			w := controlplane.Work{ID: "w" + id, WorkKey: controlplane.WorkKey{Forge: "gitea", Repo: "o/r", Kind: controlplane.KindIssue,
				Number: int64(round + 1)}, State: controlplane.StateOpen, UpdatedAt: T0}
			if err := stores[0].UpsertWork(ctx, []controlplane.Work{w}, T0); err != nil {
				t.Fatal(err)
			}
			a := controlplane.Assignment{ID: "a" + id, SessionID: "s" + id, WorkID: w.ID, LeaseID: "l" + id, CreatedAt: T0}
			l := controlplane.Lease{ID: "l" + id, WorkID: w.ID, SessionID: "s" + id, AssignmentID: a.ID, State: controlplane.LeaseActive,
				CreatedAt: T0, HeartbeatAt: T0, ExpiresAt: T0.Add(time.Hour)}
			start := make(chan struct{})
			var wg sync.WaitGroup
			var assignErr, endErr error
			wg.Go(func() { <-start; assignErr = stores[0].Assign(ctx, a, l, controlplane.Event{}, T0) })
			wg.Go(func() { <-start; _, endErr = stores[1].EndSession(ctx, "s"+id, controlplane.Event{}, T0) })
			close(start)
			wg.Wait()
			if endErr != nil {
				t.Fatal(endErr)
			}
			active, err := stores[0].ListLeases(ctx, controlplane.LeaseFilter{SessionID: "s" + id})
			if err != nil {
				t.Fatal(err)
			}
			if len(active) != 0 {
				t.Fatalf("round %d: the ended session holds %+v (assign: %v)", round, active, assignErr)
			}
		}
	})
}
