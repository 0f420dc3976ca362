package postgres_test

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/postgres"
)

// Instances sharing the database sweep their own shares of the ready
// set first: two live instances find disjoint runs of ids that make up
// the whole, one whose share cannot fill the limit tops it up from the
// others' (all of them when its own has nothing due), and an instance
// gone for longer than a few minutes has no share any more.
func TestInstancesSweepTheirOwnShareOfTheReadySetFirst(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	now := time.Now()
	all := createItems(t, pg, 200, now)
	// share is what the store splits on: the ready set's span of ids, on
	// their leading 64 bits, cut in equal ranges, one for each live
	// instance in name order.
	first, last := slices.MinFunc(all, compareIDs), slices.MaxFunc(all, compareIDs)
	lead := func(id wq.ItemID) uint64 { return binary.BigEndian.Uint64(id[:8]) }
	share := func(id wq.ItemID, shares int) int {
		a, b := lead(first), lead(last)
		for s := shares - 1; s > 0; s-- {
			if lead(id) >= a+(b-a)/uint64(shares)*uint64(s) {
				return s
			}
		}
		return 0
	}
	due := func(instance string, limit int) []wq.ItemID {
		t.Helper()
		ids, err := pg.DueItemsOf(ctx, instance, []string{"test"}, now, limit)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	sorted := func(ids []wq.ItemID) []wq.ItemID { return slices.SortedFunc(slices.Values(ids), compareIDs) }

	// Alone, or asked for no instance, the whole ready set is the share.
	if got := due("a", 1000); !slices.Equal(sorted(got), sorted(all)) {
		t.Fatalf("instance a alone found %d of %d items", len(got), len(all))
	}
	recordInstances(t, pg, now, "a", "b")
	var a, b []wq.ItemID // each instance's own share
	for _, id := range all {
		if share(id, 2) == 0 {
			a = append(a, id)
		} else {
			b = append(b, id)
		}
	}
	// Each share is a run of neighbouring ids: every id of a's is below
	// every id of b's.
	if len(a) == 0 || len(b) == 0 || compareIDs(slices.MaxFunc(a, compareIDs), slices.MinFunc(b, compareIDs)) >= 0 {
		t.Fatalf("the shares hold %d and %d items, a's not all below b's", len(a), len(b))
	}
	// Asked for what their shares hold, each finds its own.
	if got := due("a", len(a)); !slices.Equal(sorted(got), sorted(a)) {
		t.Errorf("a asked for its share's %d found %d, %d of them its own", len(a), len(got), countOf(got, a))
	}
	if got := due("b", len(b)); !slices.Equal(sorted(got), sorted(b)) {
		t.Errorf("b asked for its share's %d found %d, %d of them its own", len(b), len(got), countOf(got, b))
	}
	if got := due("a", 10); len(got) != 10 || countOf(got, a) != 10 {
		t.Errorf("a asked for 10 found %d, %d of them its own share", len(got), countOf(got, a))
	}
	// Asked for more than its share holds, an instance finds its own
	// first, then the others' up to the limit.
	got := due("a", 1000)
	if !slices.Equal(sorted(got), sorted(all)) || !slices.Equal(sorted(got[:len(a)]), sorted(a)) {
		t.Errorf("a asked for 1000 found %d of %d, its own share first: %v", len(got), len(all), countOf(got[:min(len(a), len(got))], a) == len(a))
	}
	if got := due("a", len(a)+5); len(got) != len(a)+5 || countOf(got, b) != 5 {
		t.Errorf("a asked for 5 more than its share found %d, %d of them b's", len(got), countOf(got, b))
	}
	// Nothing of b's share due (leased): b finds a's.
	if _, err := pg.ClaimItems(ctx, b, []string{"test"}, "b", now, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := due("b", 1000); !slices.Equal(sorted(got), sorted(a)) {
		t.Errorf("b, its own share leased, found %d items, want a's %d", len(got), len(a))
	}
	// b last recorded longer ago than the shares last: a's share is all
	// that is due again.
	if err := pg.RecordHandlers(ctx, "b", []string{"test"}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := due("a", 1000); !slices.Equal(sorted(got), sorted(a)) {
		t.Errorf("a, b gone, found %d items, want the %d not leased", len(got), len(a))
	}
}

// createItems creates n items of type test at now, in the order of their
// ids.
func createItems(t *testing.T, pg *postgres.Store, n int, now time.Time) []wq.ItemID {
	t.Helper()
	ids := make([]wq.ItemID, n)
	for i := range ids {
		it, err := pg.CreateItem(context.Background(), wq.NewItem{ItemType: "test"}, now)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = it.ID
	}
	slices.SortFunc(ids, compareIDs)
	return ids
}

// recordInstances says that each of instances handled type test at now,
// so that each has a share of the ready set.
func recordInstances(t *testing.T, pg *postgres.Store, now time.Time, instances ...string) {
	t.Helper()
	for _, instance := range instances {
		if err := pg.RecordHandlers(context.Background(), instance, []string{"test"}, now); err != nil {
			t.Fatal(err)
		}
	}
}

func compareIDs(a, b wq.ItemID) int { return slices.Compare(a[:], b[:]) }

// countOf is how many of ids are in of.
func countOf(ids, of []wq.ItemID) int {
	n := 0
	for _, id := range ids {
		if slices.Contains(of, id) {
			n++
		}
	}
	return n
}
