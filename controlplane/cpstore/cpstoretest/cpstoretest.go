// Package cpstoretest is the conformance suite of controlplane.Store.
// Every implementation runs it: controlplane/cpstore on SQLite and on
// PostgreSQL. Time is driven from a fixed T0; nothing sleeps.
//
// One file per area: sessions (sessions.go), counts (counts.go), work
// and its candidates (work.go), assignments and terminal locks
// (assign.go), leases (leases.go), events (events.go), checkpoints
// (checkpoints.go); incidents.go is the incident link store's suite. The
// fixture every area drives the store through is in fixture.go.
package cpstoretest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
)

// T0 is the suite's fixed "now"; tests move time from it explicitly.
var T0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// Run runs the suite; open returns a new, empty store for each test.
func Run(t *testing.T, open func(t *testing.T) controlplane.Store) {
	for _, area := range []struct {
		name string
		run  func(t *testing.T, open func(t *testing.T) *F)
	}{
		{"sessions", sessions},
		{"end session", endSession},
		{"counts", counts},
		{"upsert work", upsertWork},
		{"list work", listWork},
		{"candidates", candidates},
		{"assign", assign},
		{"terminal lock", terminalLock},
		{"update lease", updateLease},
		{"reclaim", reclaim},
		{"expire leases", expireLeases},
		{"list leases", listLeases},
		{"events", events},
		{"checkpoints", checkpoints},
	} {
		t.Run(area.name, func(t *testing.T) {
			area.run(t, func(t *testing.T) *F { return &F{T: t, S: open(t), Ctx: context.Background()} })
		})
	}
}

// WantCode fails unless err carries code.
func WantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := wq.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

// WantIs fails unless errors.Is(err, target).
func WantIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

// Diff compares stored values: times by instant, JSON by meaning (a
// database may reformat a document).
func Diff(want, got any) string {
	return cmp.Diff(want, got, cmp.Comparer(func(a, b json.RawMessage) bool {
		if len(a) == 0 || len(b) == 0 {
			return len(a) == len(b)
		}
		var x, y any
		return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
	}))
}

// wantRefused fails unless err is target (or, for a nil target, carries
// ECONFLICT) and g's assignment and lease were not written.
func wantRefused(t *testing.T, f *F, err, target error, g Grant) {
	t.Helper()
	if target != nil {
		WantIs(t, err, target)
	}
	WantCode(t, err, wq.ECONFLICT)
	_, err = f.S.GetAssignment(f.Ctx, g.A.ID)
	WantCode(t, err, wq.ENOTFOUND)
	_, err = f.S.GetLease(f.Ctx, g.L.ID)
	WantCode(t, err, wq.ENOTFOUND)
}

func wantDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}
