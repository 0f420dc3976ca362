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

// events: events and webhook deliveries.
// batchClaims tests ClaimItems, the claim the engine's producer makes for
// many queued items at once.
func batchClaims(t *testing.T, open func(t *testing.T) wq.Store) {
	claimIDs := func(cs []wq.Claim) []wq.ItemID {
		ids := []wq.ItemID{}
		for _, c := range cs {
			ids = append(ids, c.Lease.ItemID)
		}
		return ids
	}

	t.Run("a batch leases each claimable item under its own token, with its dimensions", func(t *testing.T) {
		s := open(t)
		needs := wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: "needs_x", Variant: "v"}, Status: wq.StatusTrue,
			Detail: json.RawMessage(`{"a":1}`), PendingUntil: T0.Add(time.Hour)}
		a := create(t, s, wq.NewItem{Dimensions: []wq.DimensionUpdate{needs}})
		b := create(t, s, wq.NewItem{})
		got, err := s.ClaimItems(ctx, []wq.ItemID{b.ID, a.ID, b.ID}, []string{"test"}, "worker-1", T0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]wq.ItemID{b.ID, a.ID}, claimIDs(got)); diff != "" {
			t.Fatalf("claimed (-want +got):\n%s", diff)
		}
		if got[0].Lease.Token == "" || got[0].Lease.Token == got[1].Lease.Token {
			t.Errorf("tokens %q and %q: want two distinct ones", got[0].Lease.Token, got[1].Lease.Token)
		}
		for _, c := range got {
			if c.Lease.Owner != "worker-1" || !c.Lease.Until.Equal(T0.Add(time.Minute)) {
				t.Errorf("lease %+v, want worker-1 until %v", c.Lease, T0.Add(time.Minute))
			}
			stored := get(t, s, c.Lease.ItemID)
			if diff := cmp.Diff(stored, c.Item); diff != "" {
				t.Errorf("claimed item differs from the stored one (-stored +claimed):\n%s", diff)
			}
			if stored.LeaseOwner != "worker-1" || !stored.LeasedUntil.Equal(c.Lease.Until) {
				t.Errorf("stored lease: owner %q until %v", stored.LeaseOwner, stored.LeasedUntil)
			}
			// Each lease fences its own item: a write under it succeeds.
			if err := s.RecordSuccess(ctx, c.Lease, T0); err != nil {
				t.Errorf("write under the batch's lease on %s: %v", c.Lease.ItemID, err)
			}
		}
		if d := got[1].Item.Dimensions[needs.DimensionKey]; d.Status != wq.StatusTrue || !d.PendingUntil.Equal(needs.PendingUntil) || !jsonEqual(d.Detail, needs.Detail) {
			t.Errorf("claimed dimensions %+v, want %+v", got[1].Item.Dimensions, needs)
		}
	})

	t.Run("a batch says which items had no pending event when claimed", func(t *testing.T) {
		s := open(t)
		quiet := create(t, s, wq.NewItem{})
		told := create(t, s, wq.NewItem{})
		if _, err := deliver(t, s, wq.Event{ItemID: told.ID, Source: "gitea", EventType: "push", DeliveryID: "d-told",
			Body: json.RawMessage(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		got, err := s.ClaimItems(ctx, []wq.ItemID{quiet.ID, told.ID}, []string{"test"}, "worker-1", T0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("claimed %d items, want 2", len(got))
		}
		// NoEvents may only be true when nothing is pending: a false
		// positive would skip an event until the next revision.
		if got[1].NoEvents {
			t.Error("an item with a pending event was claimed as having none")
		}
		if !got[0].NoEvents {
			t.Error("an item with no pending event was claimed as maybe having some")
		}
	})

	t.Run("a batch leaves out missing, terminal, leased and other types' items, and takes expired leases", func(t *testing.T) {
		s := open(t)
		due := create(t, s, wq.NewItem{})
		other := create(t, s, wq.NewItem{ItemType: "other"})
		done := create(t, s, wq.NewItem{})
		if _, err := s.CancelItem(ctx, done.ID, "test", T0); err != nil {
			t.Fatal(err)
		}
		held := create(t, s, wq.NewItem{})
		old := claim(t, s, held.ID, T0) // until T0+1m
		missing := wq.NewItemID()
		ids := []wq.ItemID{missing, done.ID, held.ID, other.ID, due.ID}

		got, err := s.ClaimItems(ctx, ids, []string{"test"}, "worker-2", T0.Add(30*time.Second), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]wq.ItemID{due.ID}, claimIDs(got)); diff != "" {
			t.Fatalf("claimed while the lease holds (-want +got):\n%s", diff)
		}
		if it := get(t, s, other.ID); it.LeaseOwner != "" {
			t.Errorf("an item of a type not asked for was leased by %q", it.LeaseOwner)
		}
		// Once its lease has expired, the held item is claimable, and the
		// old holder is fenced out.
		got, err = s.ClaimItems(ctx, ids, []string{"test", "other"}, "worker-3", T0.Add(61*time.Second), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]wq.ItemID{held.ID, other.ID}, claimIDs(got)); diff != "" {
			t.Fatalf("claimed after the lease expired (-want +got):\n%s", diff)
		}
		if err := s.RecordSuccess(ctx, old, T0); !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("write under the expired, reclaimed lease: %v, want ErrLeaseLost", err)
		}
		if got, err := s.ClaimItems(ctx, nil, []string{"test"}, "w", T0, time.Minute); err != nil || len(got) != 0 {
			t.Errorf("claim of no ids: %v, %v", got, err)
		}
	})

	t.Run("racing claimers never get the same item, and between them get them all", func(t *testing.T) {
		s := open(t)
		const items, claimers = 40, 4
		var ids []wq.ItemID
		for range items {
			ids = append(ids, create(t, s, wq.NewItem{}).ID)
		}
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			holder = map[wq.ItemID][]string{}
			start  = make(chan struct{})
		)
		for i := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("claimer-%d", i)
				<-start
				// Every claimer asks for every item, in batches of 8.
				for lo := 0; lo < items; lo += 8 {
					got, err := s.ClaimItems(ctx, ids[lo:lo+8], []string{"test"}, owner, T0, time.Minute)
					if err != nil {
						t.Errorf("%s: %v", owner, err)
						return
					}
					mu.Lock()
					for _, c := range got {
						holder[c.Lease.ItemID] = append(holder[c.Lease.ItemID], owner)
					}
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		for _, id := range ids {
			if len(holder[id]) != 1 {
				t.Errorf("item %s claimed by %v, want exactly one claimer", id, holder[id])
				continue
			}
			if got := get(t, s, id); got.LeaseOwner != holder[id][0] {
				t.Errorf("item %s leased by %q, but %q got the claim", id, got.LeaseOwner, holder[id][0])
			}
		}
	})

	t.Run("a lost lease in a batch fails only its own item's writes", func(t *testing.T) {
		s := open(t)
		var ids []wq.ItemID
		for range 3 {
			ids = append(ids, create(t, s, wq.NewItem{}).ID)
		}
		batch, err := s.ClaimItems(ctx, ids, []string{"test"}, "worker-1", T0, time.Minute)
		if err != nil || len(batch) != 3 {
			t.Fatalf("claim: %d claims, %v", len(batch), err)
		}
		// The middle item's lease expires and another worker takes it.
		if _, err := s.ClaimItem(ctx, ids[1], "worker-2", T0.Add(2*time.Minute), time.Minute); err != nil {
			t.Fatal(err)
		}
		dims := []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x"}, Status: wq.StatusFalse}}
		for i, c := range batch {
			_, err := s.ApplyChange(ctx, c.Lease, wq.Change{Dimensions: dims, SeenRevision: c.Item.Revision}, T0)
			if i == 1 {
				if !errors.Is(err, wq.ErrLeaseLost) {
					t.Errorf("write under the lost lease: %v, want ErrLeaseLost", err)
				}
				continue
			}
			if err != nil {
				t.Errorf("write under item %d's lease: %v", i, err)
			}
			if exited, err := s.FinishProcessing(ctx, c.Lease, c.Item.Revision, T0); err != nil || !exited {
				t.Errorf("exit of item %d: exited %v, %v", i, exited, err)
			}
		}
		if got := get(t, s, ids[1]); len(got.Dimensions) != 0 || got.LeaseOwner != "worker-2" {
			t.Errorf("the reclaimed item changed under the lost lease: %+v", got)
		}
	})
}
