package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// lastWrites: an action's last write with the exit decision folded in
// (Store.ApplyAndFinish) keeps every guarantee the write and the exit
// make apart: the lease fence, the revision fence, and no event left
// asleep.
func lastWrites(t *testing.T, open func(t *testing.T) wq.Store) {
	done := func(rev int64) wq.Change {
		return wq.Change{Last: true, SeenRevision: rev, Dimensions: []wq.DimensionUpdate{
			{DimensionKey: wq.DimensionKey{Dimension: "needs_act"}, Status: wq.StatusFalse}}}
	}
	acted := func(t *testing.T, s wq.Store, id wq.ItemID) bool {
		t.Helper()
		d, ok := get(t, s, id).Dimensions[wq.DimensionKey{Dimension: "needs_act"}]
		return ok && d.Status == wq.StatusFalse
	}

	t.Run("with nothing pending the write exits: written, asleep, lease released", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l := claim(t, s, it.ID, T0)
		exited, err := s.ApplyAndFinish(ctx, l, done(it.Revision), T0)
		if err != nil || !exited {
			t.Fatalf("ApplyAndFinish = %v, %v; want exited", exited, err)
		}
		got := get(t, s, it.ID)
		if !acted(t, s, it.ID) || got.Actionable {
			t.Errorf("after the exit: acted %v, actionable %v", acted(t, s, it.ID), got.Actionable)
		}
		due, err := s.DueItems(ctx, []string{"test"}, T0.Add(time.Hour), 10)
		if err != nil || len(due) != 0 {
			t.Errorf("DueItems after the exit = %v, %v; want none", due, err)
		}
		// Released: claimable at once by another worker, and the old
		// lease writes nothing more.
		if _, err := s.ClaimItem(ctx, it.ID, "worker-2", T0, time.Minute); err != nil {
			t.Errorf("claim after the exit: %v", err)
		}
		if err := s.ExtendLease(ctx, &l, T0, time.Minute); !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("the exited lease still extends: %v", err)
		}
	})

	t.Run("an event pending at the seen revision keeps the lease: written, not exited", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "gitea", EventType: "e", DeliveryID: "d1", Body: json.RawMessage(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		l := claim(t, s, it.ID, T0)
		exited, err := s.ApplyAndFinish(ctx, l, done(get(t, s, it.ID).Revision), T0)
		if err != nil || exited {
			t.Fatalf("ApplyAndFinish = %v, %v; want written without the exit", exited, err)
		}
		if !acted(t, s, it.ID) || !get(t, s, it.ID).Actionable {
			t.Errorf("acted %v, actionable %v; want both", acted(t, s, it.ID), get(t, s, it.ID).Actionable)
		}
		if err := s.ExtendLease(ctx, &l, T0, time.Minute); err != nil {
			t.Errorf("the lease no longer holds: %v", err)
		}
	})

	t.Run("work enqueued since the load supersedes the write and the exit", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l := claim(t, s, it.ID, T0)
		if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "gitea", EventType: "e", DeliveryID: "d1", Body: json.RawMessage(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		exited, err := s.ApplyAndFinish(ctx, l, done(it.Revision), T0)
		if !errors.Is(err, wq.ErrSuperseded) || exited {
			t.Fatalf("ApplyAndFinish = %v, %v; want ErrSuperseded", exited, err)
		}
		if acted(t, s, it.ID) || !get(t, s, it.ID).Actionable {
			t.Errorf("a superseded write: acted %v, actionable %v", acted(t, s, it.ID), get(t, s, it.ID).Actionable)
		}
		if err := s.ExtendLease(ctx, &l, T0, time.Minute); err != nil {
			t.Errorf("the lease no longer holds: %v", err)
		}
	})

	t.Run("a lost lease writes nothing and exits nothing", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		stale := claim(t, s, it.ID, T0)
		holder := claim(t, s, it.ID, T0.Add(2*time.Minute)) // the stale lease expired
		exited, err := s.ApplyAndFinish(ctx, stale, done(it.Revision), T0.Add(2*time.Minute))
		if !errors.Is(err, wq.ErrLeaseLost) || exited {
			t.Fatalf("ApplyAndFinish under a lost lease = %v, %v; want ErrLeaseLost", exited, err)
		}
		if acted(t, s, it.ID) || !get(t, s, it.ID).Actionable {
			t.Errorf("a refused write: acted %v, actionable %v", acted(t, s, it.ID), get(t, s, it.ID).Actionable)
		}
		if err := s.ExtendLease(ctx, &holder, T0.Add(2*time.Minute), time.Minute); err != nil {
			t.Errorf("the holder's lease: %v", err)
		}
	})

	t.Run("a change that is not an action's last write of dimensions is refused", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l := claim(t, s, it.ID, T0)
		for name, c := range map[string]wq.Change{
			"not last":    {SeenRevision: it.Revision, Dimensions: done(0).Dimensions},
			"no revision": {Last: true, Dimensions: done(0).Dimensions},
			"a phase":     {Last: true, SeenRevision: it.Revision, Phase: wq.PhaseCompleted},
			"an error":    {Last: true, SeenRevision: it.Revision, Error: "boom"},
		} {
			if _, err := s.ApplyAndFinish(ctx, l, c, T0); wq.ErrorCode(err) != wq.EINVALID {
				t.Errorf("%s: %v, want EINVALID", name, err)
			}
		}
		if got := get(t, s, it.ID); acted(t, s, it.ID) || got.Phase != wq.PhaseActive || !got.Actionable {
			t.Errorf("refused changes wrote: %+v", got)
		}
	})

	t.Run("deliveries racing last writes leave no item asleep with an event pending", func(t *testing.T) {
		s := open(t)
		const items, rounds = 6, 30
		var ids []wq.ItemID
		for range items {
			ids = append(ids, create(t, s, wq.NewItem{}).ID)
		}
		now := T0
		for round := range rounds {
			now = now.Add(2 * time.Minute)
			leases := make([]wq.Lease, items)
			seen := make([]int64, items)
			for i, id := range ids {
				leases[i] = claim(t, s, id, now)
				seen[i] = get(t, s, id).Revision
			}
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
					if _, err := s.ApplyAndFinish(ctx, leases[j], done(seen[j]), now); err != nil && !errors.Is(err, wq.ErrSuperseded) {
						errs <- fmt.Errorf("ApplyAndFinish %d: %w", j, err)
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("round %d: %v", round, err)
			}
			for i, id := range ids {
				ev, err := s.NextEvent(ctx, id)
				if err != nil || ev == nil {
					t.Fatalf("round %d item %d: no pending event (%v)", round, i, err)
				}
				if !get(t, s, id).Actionable {
					t.Fatalf("round %d item %d: an event is pending and the item is asleep", round, i)
				}
			}
			// Drain, so that the next round starts from sleeping items.
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
}
