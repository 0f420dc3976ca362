package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
)

// events: events and webhook deliveries.
func events(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("an event is stored once per delivery, marks the item actionable and drains oldest first", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l := claim(t, s, it.ID, T0)
		if exited, err := s.FinishProcessing(ctx, l, it.Revision, T0); err != nil || !exited {
			t.Fatalf("FinishProcessing: %v %v", exited, err)
		}
		if get(t, s, it.ID).Actionable {
			t.Fatal("still actionable after a clean exit")
		}
		for i, d := range []string{"d1", "d2", "d1"} {
			ins, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "gitea", EventType: "merged", DeliveryID: d,
				Body: json.RawMessage(`{"n":1}`), EventTS: T0.Add(time.Duration(i) * time.Second), ReceivedAt: T0})
			if err != nil {
				t.Fatal(err)
			}
			if want := i < 2; ins != want {
				t.Errorf("event %d (%s): inserted %v, want %v", i, d, ins, want)
			}
		}
		got := get(t, s, it.ID)
		if !got.Actionable || got.Revision != 3 {
			t.Errorf("after two events: actionable %v revision %d", got.Actionable, got.Revision)
		}
		ev, err := s.NextEvent(ctx, it.ID)
		if err != nil || ev == nil {
			t.Fatalf("NextEvent: %v %v", ev, err)
		}
		want := &wq.Event{ID: ev.ID, ItemID: it.ID, Source: "gitea", EventType: "merged", DeliveryID: "d1",
			Body: json.RawMessage(`{"n": 1}`), EventTS: T0, ReceivedAt: T0}
		if diff := cmp.Diff(want, ev, cmp.Comparer(jsonEqual)); diff != "" {
			t.Errorf("NextEvent (-want +got):\n%s", diff)
		}
	})

	t.Run("a webhook delivery is stored once, for every item it concerns, even after it was applied", func(t *testing.T) {
		s := open(t)
		a, b := create(t, s, wq.NewItem{}), create(t, s, wq.NewItem{})
		for _, it := range []*wq.Item{a, b} {
			l := claim(t, s, it.ID, T0)
			if exited, err := s.FinishProcessing(ctx, l, it.Revision, T0); err != nil || !exited {
				t.Fatal(exited, err)
			}
		}
		events := []wq.Event{{ItemID: a.ID, EventType: "pull_request", Body: []byte(`{"n":1}`), EventTS: T0},
			{ItemID: b.ID, EventType: "pull_request", Body: []byte(`{"n":1}`), EventTS: T0}}
		dup, err := s.InsertDelivery(ctx, "gitea", "d-1", events, T0)
		if err != nil || dup {
			t.Fatalf("first delivery: duplicate %v, %v", dup, err)
		}
		for _, it := range []*wq.Item{a, b} {
			got := get(t, s, it.ID)
			ev, _ := s.NextEvent(ctx, it.ID)
			if !got.Actionable || got.Revision != it.Revision+1 || ev == nil || ev.Source != "gitea" || ev.DeliveryID != "d-1" || ev.EventType != "pull_request" {
				t.Errorf("item %s after the delivery: %+v, event %+v", it.ID, got, ev)
			}
			l := claim(t, s, it.ID, T0)
			if _, err := s.ApplyEvent(ctx, l, ev, wq.EventResult{}, T0); err != nil {
				t.Fatal(err)
			}
		}
		dup, err = s.InsertDelivery(ctx, "gitea", "d-1", events, T0.Add(time.Minute))
		if err != nil || !dup {
			t.Fatalf("redelivery: duplicate %v, %v", dup, err)
		}
		if ev, _ := s.NextEvent(ctx, a.ID); ev != nil {
			t.Errorf("a redelivery stored an event again: %+v", ev)
		}
		if dup, err := s.InsertDelivery(ctx, "gitlab", "d-1", events[:1], T0); err != nil || dup {
			t.Errorf("the same id from another source: duplicate %v, %v", dup, err)
		}
	})

	t.Run("pruned deliveries are forgotten, newer ones are not", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		ev := []wq.Event{{ItemID: it.ID, EventType: "e", Body: []byte(`{}`)}}
		for i, at := range []time.Time{T0, T0.Add(time.Hour), T0.Add(2 * time.Hour)} {
			if _, err := s.InsertDelivery(ctx, "gitea", fmt.Sprintf("d-%d", i), ev, at); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := s.PruneDeliveries(ctx, T0.Add(time.Hour)); err != nil || n != 1 {
			t.Fatalf("pruned %d, %v; want 1", n, err)
		}
		if dup, _ := s.InsertDelivery(ctx, "gitea", "d-0", ev, T0.Add(3*time.Hour)); dup {
			t.Error("a pruned delivery is still remembered")
		}
		if dup, _ := s.InsertDelivery(ctx, "gitea", "d-1", ev, T0.Add(3*time.Hour)); !dup {
			t.Error("a delivery received at the cut was forgotten")
		}
	})

	t.Run("applying an event changes phase unless stale, always upserts dimensions, and deletes it", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		insert := func(delivery string, at time.Time) *wq.Event {
			t.Helper()
			if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "s", EventType: "e", DeliveryID: delivery, Body: []byte(`{}`), EventTS: at, ReceivedAt: T0}); err != nil {
				t.Fatal(err)
			}
			ev, _ := s.NextEvent(ctx, it.ID)
			return ev
		}
		l := claim(t, s, it.ID, T0)
		dim := func(name string) []wq.DimensionUpdate {
			return []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: name}, Status: wq.StatusTrue}}
		}
		// A newer event sets last_event_at without a phase change.
		if _, err := s.ApplyEvent(ctx, l, insert("new", T0.Add(time.Hour)), wq.EventResult{Dimensions: dim("needs_a")}, T0); err != nil {
			t.Fatal(err)
		}
		// An older one may not change the phase but its dimensions apply (DDR-38).
		out, err := s.ApplyEvent(ctx, l, insert("old", T0), wq.EventResult{Phase: wq.PhaseCancelled, Dimensions: dim("needs_b")}, T0)
		if err != nil {
			t.Fatal(err)
		}
		if !out.Stale || out.PhaseApplied || out.NewPhase != wq.PhaseActive {
			t.Errorf("stale event: %+v", out)
		}
		got := get(t, s, it.ID)
		if got.Phase != wq.PhaseActive || !got.LastEventAt.Equal(T0.Add(time.Hour)) || len(got.Dimensions) != 2 {
			t.Errorf("after stale event: phase %s last %v dims %v", got.Phase, got.LastEventAt, got.Dimensions)
		}
		out, err = s.ApplyEvent(ctx, l, insert("newest", T0.Add(2*time.Hour)), wq.EventResult{Phase: wq.PhaseCompleted, Reason: "merged"}, T0)
		if err != nil || !out.PhaseApplied || out.OldPhase != wq.PhaseActive || out.NewPhase != wq.PhaseCompleted {
			t.Fatalf("newest event: %+v %v", out, err)
		}
		// The terminal write let go of the lease: nothing more is written
		// under it, and a terminal item accepts nothing more (DDR-37); its
		// late events are dropped and returned for the audit.
		if got := get(t, s, it.ID); got.LeaseOwner != "" || !got.LeasedUntil.IsZero() {
			t.Errorf("a completed item still shows a lease: owner %q until %v", got.LeaseOwner, got.LeasedUntil)
		}
		late := insert("late", T0.Add(3*time.Hour))
		out, err = s.ApplyEvent(ctx, l, late, wq.EventResult{Phase: wq.PhaseCancelled, Dimensions: dim("needs_c")}, T0)
		if !errors.Is(err, wq.ErrLeaseLost) || out.PhaseApplied {
			t.Fatalf("event under the completed item's old lease: %+v %v, want ErrLeaseLost", out, err)
		}
		dropped, err := s.DropEvents(ctx, it.ID)
		if err != nil || len(dropped) != 1 || dropped[0].ID != late.ID || dropped[0].EventType != late.EventType {
			t.Fatalf("DropEvents = %+v, %v; want the late event", dropped, err)
		}
		got = get(t, s, it.ID)
		if got.Phase != wq.PhaseCompleted || got.Reason != "merged" || len(got.Dimensions) != 2 {
			t.Errorf("terminal item changed: %+v", got)
		}
		if ev, _ := s.NextEvent(ctx, it.ID); ev != nil {
			t.Errorf("events left: %+v", ev)
		}
	})

	t.Run("events of an active item are never dropped", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "forge", EventType: "x", DeliveryID: "d1", Body: []byte(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		if dropped, err := s.DropEvents(ctx, it.ID); err != nil || len(dropped) != 0 {
			t.Errorf("DropEvents of an active item = %v, %v; want nothing", dropped, err)
		}
		if ev, _ := s.NextEvent(ctx, it.ID); ev == nil {
			t.Error("the active item's event is gone")
		}
	})
}
