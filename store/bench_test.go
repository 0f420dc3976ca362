package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// BenchmarkSweep measures one sweep query over many idle items and 10 due
// ones. Its cost must follow the due items, not the idle ones: compare
// the idle=10000 and idle=100000 rows.
func BenchmarkSweep(b *testing.B) {
	for _, kind := range testdb.Kinds {
		for _, idle := range []int{10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/idle=%d", kind, idle), func(b *testing.B) {
				benchmarkSweep(b, kind, idle)
			})
		}
	}
}

func benchmarkSweep(b *testing.B, kind string, idle int) {
	ctx := context.Background()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	url := testdb.URL(b, kind)
	s := testdb.OpenURL(b, url)
	// Idle items: active, not actionable, their reconcile deferred 30 min,
	// as merge requests waiting for CI are.
	testdb.SeedItems(b, url, testdb.Seed{ItemType: "mr", Count: idle, PendingUntil: now.Add(30 * time.Minute), Now: now})
	// Ten due items, over the three discovery paths.
	for i := range 10 {
		n := wq.NewItem{ItemType: "mr"}
		if i >= 4 {
			n.Dimensions = []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_reconcile"}, Status: wq.StatusTrue, PendingUntil: now.Add(-time.Minute)}}
		}
		it, err := s.CreateItem(ctx, n, now.Add(-time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		if i >= 4 { // make it idle: only its expired pending_until or an event makes it due
			l, _ := s.ClaimItem(ctx, it.ID, "seed", now.Add(-time.Hour), time.Minute)
			if ok, err := s.FinishProcessing(ctx, l, it.Revision, now.Add(-time.Hour)); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
		if i >= 7 {
			if _, err := s.InsertDelivery(ctx, "bench", it.ID.String(), []wq.Event{{ItemID: it.ID, EventType: "e", Body: []byte(`{}`)}}, now); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		ids, err := s.DueItems(ctx, []string{"mr"}, now, 1000)
		if err != nil {
			b.Fatal(err)
		}
		if len(ids) != 10 {
			b.Fatalf("sweep found %d due items, want 10", len(ids))
		}
	}
}
