package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/postgres"
)

// Instances sharing the database sweep their own shares of the ready
// set: two live instances find disjoint halves that make up the whole,
// one whose share has nothing due finds the others', and an instance
// gone for longer than a few minutes has no share any more.
func TestInstancesSweepTheirOwnShareOfTheReadySetFirst(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	now := time.Now()
	var all []wq.ItemID
	for range 200 {
		it, err := pg.CreateItem(ctx, wq.NewItem{ItemType: "test"}, now)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, it.ID)
	}
	// share is what the store splits on: the id's last byte, among the
	// live instances in name order.
	share := func(id wq.ItemID, shares int) int { return int(id[15]) % shares }
	due := func(instance string, limit int) []wq.ItemID {
		t.Helper()
		ids, err := pg.DueItemsOf(ctx, instance, []string{"test"}, now, limit)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	sorted := func(ids []wq.ItemID) []wq.ItemID {
		return slices.SortedFunc(slices.Values(ids), func(a, b wq.ItemID) int { return slices.Compare(a[:], b[:]) })
	}

	// Alone, or asked for no instance, the whole ready set is the share.
	if got := due("a", 1000); !slices.Equal(sorted(got), sorted(all)) {
		t.Fatalf("instance a alone found %d of %d items", len(got), len(all))
	}
	for _, instance := range []string{"a", "b"} {
		if err := pg.RecordHandlers(ctx, instance, []string{"test"}, now); err != nil {
			t.Fatal(err)
		}
	}
	a, b := due("a", 1000), due("b", 1000)
	for i, ids := range [][]wq.ItemID{a, b} {
		for _, id := range ids {
			if share(id, 2) != i {
				t.Errorf("instance %d found %v, of share %d", i, id, share(id, 2))
			}
		}
	}
	if !slices.Equal(sorted(append(slices.Clone(a), b...)), sorted(all)) {
		t.Errorf("a's %d and b's %d items do not make up the %d due", len(a), len(b), len(all))
	}
	if got := due("a", 10); len(got) != 10 || slices.ContainsFunc(got, func(id wq.ItemID) bool { return share(id, 2) != 0 }) {
		t.Errorf("a asked for 10 found %d, not all of its own share", len(got))
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
