package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
)

// items: creating, finding and migrating.
func items(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("migrate applied twice changes nothing the second time", func(t *testing.T) {
		s := open(t)
		applied, err := s.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 0 {
			t.Errorf("second Migrate applied %v, want nothing", applied)
		}
		got, latest, err := s.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != latest || got < 1 {
			t.Errorf("SchemaVersion = %d, latest %d; want equal and >= 1", got, latest)
		}
		if err := s.Ping(ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})

	t.Run("a created item is active, actionable and has its dimensions", func(t *testing.T) {
		s := open(t)
		detail := json.RawMessage(`{"k":"v"}`)
		it := create(t, s, wq.NewItem{ItemType: "test", IdempotencyKey: "k1", CallerIdentity: "alice", ContentHash: "h",
			Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x", Variant: "a"}, Status: wq.StatusTrue,
				PendingUntil: T0.Add(time.Hour), Detail: detail}}})
		want := &wq.Item{ID: it.ID, ItemType: "test", Phase: wq.PhaseActive, Actionable: true, Revision: 1, IdempotencyKey: "k1",
			Generation: 1, CallerIdentity: "alice", ContentHash: "h", CreatedAt: T0, UpdatedAt: T0,
			Dimensions: wq.Dimensions{{Dimension: "needs_x", Variant: "a"}: {Status: wq.StatusTrue, PendingUntil: T0.Add(time.Hour), Detail: detail, UpdatedAt: T0}}}
		if diff := cmp.Diff(want, get(t, s, it.ID), cmp.Comparer(jsonEqual)); diff != "" {
			t.Errorf("GetItem (-want +got):\n%s", diff)
		}
	})

	t.Run("a missing item is not found", func(t *testing.T) {
		s := open(t)
		_, err := s.GetItem(ctx, wq.NewItemID())
		wantCode(t, err, wq.ENOTFOUND)
		_, err = s.ClaimItem(ctx, wq.NewItemID(), "w", T0, time.Minute)
		wantCode(t, err, wq.ENOTFOUND)
		_, err = deliver(t, s, wq.Event{ItemID: wq.NewItemID(), Source: "s", EventType: "e", DeliveryID: "d", Body: []byte(`{}`), ReceivedAt: T0})
		wantCode(t, err, wq.ENOTFOUND)
	})

	t.Run("an idempotency key is unique among items not completed or cancelled", func(t *testing.T) {
		s := open(t)
		first := create(t, s, wq.NewItem{IdempotencyKey: "key:p:b"})
		_, err := s.CreateItem(ctx, wq.NewItem{ItemType: "test", IdempotencyKey: "key:p:b"}, T0)
		wantCode(t, err, wq.ECONFLICT)
		l := claim(t, s, first.ID, T0)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted}, T0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateItem(ctx, wq.NewItem{ItemType: "test", IdempotencyKey: "key:p:b", Generation: 2}, T0); err != nil {
			t.Errorf("create after completion: %v", err)
		}
	})
}
