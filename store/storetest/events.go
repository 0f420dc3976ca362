package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
)

func events(t *testing.T, open func(t *testing.T) wq.Store) {
	// DDR-34: a delivery's insert and the loop's exit decision take the
	// item's lock, in one order for all items. Without it a delivery for
	// several items and a batch of exits lock the items' rows in other
	// orders and deadlock (PostgreSQL aborts one of them: a webhook
	// answered 500, an exit retried), and an exit can slip between an
	// event's insert and its wake-up.
	t.Run("a delivery for an item that ended stores no event and leaves the item ended and asleep", func(t *testing.T) {
		s := open(t)
		ended, active := create(t, s, wq.NewItem{}), create(t, s, wq.NewItem{})
		l := claim(t, s, ended.ID, T0)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted, Reason: "merged"}, T0); err != nil {
			t.Fatal(err)
		}
		before := get(t, s, ended.ID)
		// The webhook resolved the item while it was active; the terminal
		// write committed before the insert.
		d, err := s.InsertDelivery(ctx, "gitea", "late", []wq.Event{
			{ItemID: ended.ID, EventType: "e", Body: json.RawMessage(`{}`)}, {ItemID: active.ID, EventType: "e", Body: json.RawMessage(`{}`)}}, T0)
		if err != nil || d.Duplicate || d.Stored != 1 || d.Ended != 1 {
			t.Fatalf("InsertDelivery = %+v, %v; want one stored and one for an ended item", d, err)
		}
		got := get(t, s, ended.ID)
		if got.Actionable || got.Revision != before.Revision || got.Phase != wq.PhaseCompleted {
			t.Errorf("the ended item after a late delivery: actionable %v revision %d→%d phase %s", got.Actionable, before.Revision, got.Revision, got.Phase)
		}
		if ev, err := s.NextEvent(ctx, ended.ID); err != nil || ev != nil {
			t.Errorf("an orphan event is pending for the ended item: %+v, %v", ev, err)
		}
		if ev, err := s.NextEvent(ctx, active.ID); err != nil || ev == nil || !get(t, s, active.ID).Actionable {
			t.Errorf("the active item's event: %+v, %v", ev, err)
		}
	})

	t.Run("deliveries for many items racing a batch of exits deadlock nothing and lose no event", func(t *testing.T) {
		s := open(t)
		const items, rounds = 8, 60
		var ids []wq.ItemID
		for range items {
			ids = append(ids, create(t, s, wq.NewItem{}).ID)
		}
		now := T0
		for round := range rounds {
			now = now.Add(2 * time.Minute) // every lease of the round before has expired
			leases := make([]wq.Lease, items)
			seen := make([]int64, items)
			for i, id := range ids {
				leases[i] = claim(t, s, id, now)
				seen[i] = get(t, s, id).Revision
			}
			// The delivery names the items in one order, the exits come in
			// the other.
			evs := make([]wq.Event, items)
			for i := range ids {
				evs[i] = wq.Event{ItemID: ids[(i+round)%items], Source: "race", EventType: "e", DeliveryID: fmt.Sprintf("d%d", round),
					Body: json.RawMessage(`{}`), ReceivedAt: now}
			}
			var wg sync.WaitGroup
			errs := make(chan error, items+1)
			start := make(chan struct{})
			wg.Go(func() {
				<-start
				if _, err := s.InsertDelivery(ctx, "race", fmt.Sprintf("d%d", round), evs, now); err != nil {
					errs <- fmt.Errorf("InsertDelivery: %w", err)
				}
			})
			for i := range ids {
				j := items - 1 - i
				wg.Go(func() {
					<-start
					if _, err := s.FinishProcessing(ctx, leases[j], seen[j], now); err != nil {
						errs <- fmt.Errorf("FinishProcessing %d: %w", j, err)
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("round %d: %v", round, err)
			}
			// Every item has its event, and an item with an event pending is
			// actionable: none was left asleep with work to do.
			for i, id := range ids {
				it := get(t, s, id)
				ev, err := s.NextEvent(ctx, id)
				if err != nil || ev == nil {
					t.Fatalf("round %d item %d: no pending event (%v)", round, i, err)
				}
				if !it.Actionable {
					t.Fatalf("round %d item %d: an event is pending and the item is not actionable", round, i)
				}
			}
			// Drain the events, so that the next round's exits can succeed.
			now = now.Add(2 * time.Minute)
			for _, id := range ids {
				l := claim(t, s, id, now)
				for {
					ev, err := s.NextEvent(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if ev == nil {
						break
					}
					if _, err := s.ApplyEvent(ctx, l, ev, wq.EventResult{}, now); err != nil {
						t.Fatal(err)
					}
				}
				if exited, err := s.FinishProcessing(ctx, l, get(t, s, id).Revision, now); err != nil || !exited {
					t.Fatalf("drain: exited %v, %v", exited, err)
				}
			}
		}
	})

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
		d, err := s.InsertDelivery(ctx, "gitea", "d-1", events, T0)
		dup := d.Duplicate
		if err != nil || dup || d.Stored != len(events) {
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
		d, err = s.InsertDelivery(ctx, "gitea", "d-1", events, T0.Add(time.Minute))
		dup = d.Duplicate
		if err != nil || !dup || d.Stored != 0 {
			t.Fatalf("redelivery: duplicate %v, %v", dup, err)
		}
		if ev, _ := s.NextEvent(ctx, a.ID); ev != nil {
			t.Errorf("a redelivery stored an event again: %+v", ev)
		}
		if d, err := s.InsertDelivery(ctx, "gitlab", "d-1", events[:1], T0); err != nil || d.Duplicate {
			dup := d.Duplicate
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
		if d, _ := s.InsertDelivery(ctx, "gitea", "d-0", ev, T0.Add(3*time.Hour)); d.Duplicate {
			t.Error("a pruned delivery is still remembered")
		}
		if d, _ := s.InsertDelivery(ctx, "gitea", "d-1", ev, T0.Add(3*time.Hour)); !d.Duplicate {
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
		newest := insert("newest", T0.Add(2*time.Hour))
		// An event that arrived before the terminal write, still pending.
		if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "s", EventType: "late", DeliveryID: "late", Body: []byte(`{}`), EventTS: T0.Add(3 * time.Hour), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		out, err = s.ApplyEvent(ctx, l, newest, wq.EventResult{Phase: wq.PhaseCompleted, Reason: "merged"}, T0)
		if err != nil || !out.PhaseApplied || out.OldPhase != wq.PhaseActive || out.NewPhase != wq.PhaseCompleted {
			t.Fatalf("newest event: %+v %v", out, err)
		}
		// The terminal write let go of the lease: nothing more is written
		// under it, and a terminal item accepts nothing more (DDR-37); the
		// events still pending are dropped and returned for the audit.
		if got := get(t, s, it.ID); got.LeaseOwner != "" || !got.LeasedUntil.IsZero() {
			t.Errorf("a completed item still shows a lease: owner %q until %v", got.LeaseOwner, got.LeasedUntil)
		}
		late, _ := s.NextEvent(ctx, it.ID)
		if late == nil || late.EventType != "late" {
			t.Fatalf("the pending event after the terminal write: %+v", late)
		}
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
