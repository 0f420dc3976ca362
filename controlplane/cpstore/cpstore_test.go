package cpstore_test

import (
	"context"
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
		db, err := store.Open(ctx, url)
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
