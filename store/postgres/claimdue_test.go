package postgres_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/postgres"
)

// A claim of due items leases what a sweep would have found on the
// ready path and a claim by id would then have leased: actionable active
// items of the types, not leased, with no retry pending or their retry
// due. It passes over the rest, and over an item whose ready row says
// otherwise than the item (the lock re-checks the item itself), and
// returns each claim as ClaimItems does: the lease, the item with its
// dimensions, whether an event was pending.
func TestAClaimOfDueItemsLeasesOnlyItemsThatAreDueAndFree(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	now := time.Now().UTC().Truncate(time.Microsecond)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := postgres.Pool(pg).Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	create := func(itemType string) wq.ItemID {
		t.Helper()
		it, err := pg.CreateItem(ctx, wq.NewItem{ItemType: itemType}, now)
		if err != nil {
			t.Fatal(err)
		}
		return it.ID
	}
	ready, withDims, withEvent, retryDue := create("test"), create("test"), create("test"), create("test")
	leased, retryLater, done, other, idle := create("test"), create("test"), create("test"), create("other"), create("test")
	if _, err := pg.ClaimItem(ctx, leased, "someone", now, time.Minute); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE work_items SET retry_after = $2 WHERE id = $1`, retryDue, now.Add(-time.Second))
	exec(`UPDATE work_items SET retry_after = $2 WHERE id = $1`, retryLater, now.Add(time.Hour))
	exec(`UPDATE work_items SET phase = 'completed', actionable = false WHERE id = $1`, done)
	// Not actionable, yet with a ready row, as a claim reading the ready
	// set just before the item's exit committed would see it.
	// (An exit deletes the ready row itself; this update leaves it.)
	exec(`UPDATE work_items SET actionable = false WHERE id = $1`, idle)
	defer exec(`DELETE FROM work_item_ready WHERE id = $1`, idle)
	exec(`INSERT INTO work_item_statuses (work_item_id, dimension, variant, status, updated_at) VALUES ($1, 'needs_act', '', 'true', $2)`, withDims, now)
	if _, err := pg.InsertDelivery(ctx, "test", "d1", []wq.Event{{ItemID: withEvent, EventType: "push", Body: []byte(`{}`)}}, now); err != nil {
		t.Fatal(err)
	}

	claims, err := pg.ClaimDueItems(ctx, "me", []string{"test"}, "me", now, time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.SortedFunc(slices.Values([]wq.ItemID{ready, withDims, withEvent, retryDue}), compareIDs)
	var got []wq.ItemID
	for _, c := range claims {
		got = append(got, c.Lease.ItemID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("claimed %v in that order; want %v (the due, free items, by id), not leased %v, retry later %v, done %v, other %v, idle %v",
			got, want, leased, retryLater, done, other, idle)
	}
	for _, c := range claims {
		if c.Lease.Token == "" || c.Lease.Owner != "me" || !c.Lease.Until.Equal(now.Add(time.Minute)) || c.Item == nil || c.Item.ID != c.Lease.ItemID {
			t.Errorf("claim %+v: want a token, owner me, until now+1m, and its item", c.Lease)
			continue
		}
		it, err := pg.GetItem(ctx, c.Lease.ItemID)
		if err != nil {
			t.Fatal(err)
		}
		if it.LeaseOwner != "me" || !it.LeasedUntil.Equal(c.Lease.Until) {
			t.Errorf("item %s: lease owner %q until %v after the claim", it.ID, it.LeaseOwner, it.LeasedUntil)
		}
		if err := pg.ExtendLease(ctx, &c.Lease, now, time.Minute); err != nil {
			t.Errorf("item %s: the claim's token does not hold the lease: %v", it.ID, err)
		}
		wantDims := 0
		if c.Lease.ItemID == withDims {
			wantDims = 1
		}
		if len(c.Item.Dimensions) != wantDims || (wantDims == 1 && c.Item.Dimensions[wq.DimensionKey{Dimension: "needs_act"}].Status != wq.StatusTrue) {
			t.Errorf("item %s claimed with dimensions %v; want %d", it.ID, c.Item.Dimensions, wantDims)
		}
		if c.NoEvents != (c.Lease.ItemID != withEvent) {
			t.Errorf("item %s claimed with NoEvents %v", it.ID, c.NoEvents)
		}
	}
	if it, err := pg.GetItem(ctx, leased); err != nil || it.LeaseOwner != "someone" {
		t.Errorf("the item leased before: owner %q, %v; want someone's lease kept", it.LeaseOwner, err)
	}
	if again, err := pg.ClaimDueItems(ctx, "me", []string{"test"}, "me", now, time.Minute, 100); err != nil || len(again) != 0 {
		t.Errorf("a second claim got %d items, %v; want none", len(again), err)
	}
	// A lease that ran out is free again.
	later, err := pg.ClaimDueItems(ctx, "me", []string{"test"}, "me", now.Add(2*time.Minute), time.Minute, 100)
	if err != nil || len(later) != len(want)+1 {
		t.Errorf("after the leases ran out a claim got %d items, %v; want %d", len(later), err, len(want)+1)
	}
}

// Claims of due items, asked for a few at a time, take every due item
// once, and claims racing on other connections never lease one item
// twice, whichever instance's share they start from.
func TestRacingClaimsOfDueItemsLeaseEveryItemOnce(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t, store.KindPostgres)
	pg := testdb.OpenURL(t, url).Queue.(*postgres.Store)
	now := time.Now()
	all := createItems(t, pg, 300, now)
	recordInstances(t, pg, now, "a", "b")
	var (
		mu      sync.Mutex
		claimed = map[wq.ItemID]string{}
		twice   []string
		wg      sync.WaitGroup
	)
	for i := range 6 {
		instance := []string{"a", "b"}[i%2]
		s := testdb.OpenURL(t, url).Queue.(*postgres.Store) // a pool of its own, as another process has
		wg.Go(func() {
			for {
				claims, err := s.ClaimDueItems(ctx, instance, []string{"test"}, fmt.Sprintf("%s%d", instance, i), now, time.Minute, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(claims) == 0 {
					return
				}
				mu.Lock()
				for _, c := range claims {
					if by, ok := claimed[c.Lease.ItemID]; ok {
						twice = append(twice, fmt.Sprintf("%s by %s and %s", c.Lease.ItemID, by, c.Lease.Owner))
					}
					claimed[c.Lease.ItemID] = c.Lease.Owner
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(twice) > 0 {
		t.Errorf("%d items claimed twice: %v", len(twice), twice)
	}
	for _, id := range all {
		if _, ok := claimed[id]; !ok {
			t.Errorf("item %s never claimed", id)
		}
	}
}

// An instance's claims of due items take its own share of the ready set
// first, as its sweeps do, and the others' once its own is short.
func TestAClaimOfDueItemsTakesItsOwnShareFirst(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	now := time.Now()
	all := createItems(t, pg, 100, now)
	recordInstances(t, pg, now, "a", "b")
	// The sweep's split, which share_test pins down: a's share is the
	// lower half of the ready set's span, on the ids' leading 64 bits.
	first, last := slices.MinFunc(all, compareIDs), slices.MaxFunc(all, compareIDs)
	lead := func(id wq.ItemID) uint64 { return binary.BigEndian.Uint64(id[:8]) }
	var a []wq.ItemID
	for _, id := range all {
		if lead(id) < lead(first)+(lead(last)-lead(first))/2 {
			a = append(a, id)
		}
	}
	var taken []wq.ItemID
	for {
		claims, err := pg.ClaimDueItems(ctx, "a", []string{"test"}, "a", now, time.Minute, 9)
		if err != nil {
			t.Fatal(err)
		}
		if len(claims) == 0 {
			break
		}
		for _, c := range claims {
			taken = append(taken, c.Lease.ItemID)
		}
	}
	if !slices.Equal(slices.SortedFunc(slices.Values(taken), compareIDs), all) {
		t.Fatalf("a's claims took %d of %d items", len(taken), len(all))
	}
	if n := countOf(taken[:len(a)], a); n != len(a) {
		t.Errorf("a's first %d claimed items hold %d of the %d of its share", len(a), n, len(a))
	}
}
