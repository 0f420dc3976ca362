// Package storetest is the conformance suite every store driver passes
// (the pattern of River's riverdrivertest), one file per area: items
// (items.go: creating, finding, migrating), leases (leases.go), batch
// claims (claims.go), events and deliveries (events.go), retry, cancel and
// listing (admin.go), the sweep (sweep.go), counts (counts.go), writes
// made together (together.go), and the registries every driver keeps:
// handlers (handlers.go), secrets (secrets.go), session revocations
// (sessions.go), history (history.go).
// seam.go checks the extension seam the stores of item types build on
// (store/seam.Driver). Add a store method, add its test to its area in the
// same change.
package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
)

// T0 is the suite's fixed "now"; tests move time from it explicitly.
var T0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// Run runs the suite. open returns a new, migrated, empty store.
func Run(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("items", func(t *testing.T) { items(t, open) })
	t.Run("leases", func(t *testing.T) { leases(t, open) })
	t.Run("batch claims", func(t *testing.T) { batchClaims(t, open) })
	t.Run("events", func(t *testing.T) { events(t, open) })
	t.Run("admin", func(t *testing.T) { admin(t, open) })
	t.Run("sweep", func(t *testing.T) { sweep(t, open) })
	t.Run("counts", func(t *testing.T) { counts(t, open) })
	t.Run("writes together", func(t *testing.T) { together(t, open) })
	t.Run("handlers", func(t *testing.T) { handlers(t, open) })
	t.Run("secrets", func(t *testing.T) { secrets(t, open) })
	t.Run("session revocations", func(t *testing.T) { sessionRevocations(t, open) })
	t.Run("history", func(t *testing.T) { history(t, open) })
	t.Run("seam", func(t *testing.T) { seamArea(t, open) })
	t.Run("last writes", func(t *testing.T) { lastWrites(t, open) })
}

// ctx is the suite's context.
var ctx = context.Background()

func create(t *testing.T, s wq.Store, n wq.NewItem) *wq.Item {
	t.Helper()
	if n.ItemType == "" {
		n.ItemType = "test"
	}
	it, err := s.CreateItem(ctx, n, T0)
	if err != nil {
		t.Fatalf("CreateItem: %v", err)
	}
	return it
}

// deliver stores ev as a delivery of its own: inserted is false when
// its delivery was stored before.
func deliver(t *testing.T, s wq.Store, ev wq.Event) (inserted bool, err error) {
	t.Helper()
	d, err := s.InsertDelivery(ctx, ev.Source, ev.DeliveryID, []wq.Event{ev}, ev.ReceivedAt)
	return err == nil && !d.Duplicate, err
}

func claim(t *testing.T, s wq.Store, id wq.ItemID, now time.Time) wq.Lease {
	t.Helper()
	l, err := s.ClaimItem(ctx, id, "worker-1", now, time.Minute)
	if err != nil {
		t.Fatalf("ClaimItem: %v", err)
	}
	return l
}

func get(t *testing.T, s wq.Store, id wq.ItemID) *wq.Item {
	t.Helper()
	it, err := s.GetItem(ctx, id)
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	return it
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := wq.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
}
