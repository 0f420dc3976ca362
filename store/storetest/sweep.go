package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
)

// sweep: what the sweep finds.
func sweep(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("the sweep finds exactly the due items", func(t *testing.T) {
		s := open(t)
		idle := func(typ string, dims ...wq.DimensionUpdate) *wq.Item {
			t.Helper()
			it := create(t, s, wq.NewItem{ItemType: typ, Dimensions: dims})
			l := claim(t, s, it.ID, T0)
			if exited, err := s.FinishProcessing(ctx, l, it.Revision, T0); err != nil || !exited {
				t.Fatalf("idle: %v %v", exited, err)
			}
			return it
		}
		deferred := func(at time.Time) wq.DimensionUpdate {
			return wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: "needs_reconcile"}, Status: wq.StatusTrue, PendingUntil: at}
		}
		now := T0.Add(10 * time.Minute)
		actionable := create(t, s, wq.NewItem{})
		_ = idle("test")
		withEvent := idle("test")
		if _, err := deliver(t, s, wq.Event{ItemID: withEvent.ID, Source: "s", EventType: "e", DeliveryID: "d", Body: []byte(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		// An event marks the item actionable too; make it idle again to see the event path alone.
		dueDim := idle("test", deferred(now.Add(-time.Second)))
		_ = idle("test", deferred(now.Add(time.Second)))
		_ = create(t, s, wq.NewItem{ItemType: "other"})
		leased := create(t, s, wq.NewItem{})
		_, _ = s.ClaimItem(ctx, leased.ID, "w", now, time.Minute)
		expired := create(t, s, wq.NewItem{})
		_, _ = s.ClaimItem(ctx, expired.ID, "w", T0, time.Minute)
		backoff := create(t, s, wq.NewItem{})
		bl := claim(t, s, backoff.ID, T0)
		if _, err := s.RecordFailure(ctx, bl, wq.Failure{Error: "x", RetryAfter: now.Add(time.Minute)}, T0); err != nil {
			t.Fatal(err)
		}
		_ = s.ReleaseLease(ctx, bl)
		failed := create(t, s, wq.NewItem{})
		fl := claim(t, s, failed.ID, T0)
		if _, err := s.RecordFailure(ctx, fl, wq.Failure{Error: "x", Fail: true}, T0); err != nil {
			t.Fatal(err)
		}
		_ = s.ReleaseLease(ctx, fl)

		ids, err := s.DueItems(ctx, []string{"test"}, now, 100)
		if err != nil {
			t.Fatal(err)
		}
		got := map[wq.ItemID]bool{}
		for _, id := range ids {
			got[id] = true
		}
		want := map[wq.ItemID]bool{actionable.ID: true, withEvent.ID: true, dueDim.ID: true, expired.ID: true}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("DueItems (-want +got):\n%s", diff)
		}
		if ids, _ := s.DueItems(ctx, []string{"test"}, now, 2); len(ids) != 2 {
			t.Errorf("limit 2 returned %d", len(ids))
		}
		if ids, _ := s.DueItems(ctx, nil, now, 100); len(ids) != 0 {
			t.Errorf("no handled types returned %d items (DDR-25)", len(ids))
		}
	})
}
