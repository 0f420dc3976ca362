package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/internal/eventually"
)

// BenchmarkWebhookMergeLatency measures, over 200 merges on the real
// Gitea, the time from the forge's merge call returning to the item being
// completed through the webhook (sweep and reconcile an hour away). Run:
// scripts/test bench -benchtime 1x -bench WebhookMergeLatency ./cmd/workqueue/
func BenchmarkWebhookMergeLatency(b *testing.B) {
	const merges = 200
	for b.Loop() {
		b.StopTimer()
		w := startHooked(b)
		ctx := context.Background()
		b.StartTimer()
		// One pull request at a time: with many open against main, every
		// merge makes Gitea recheck them all, which measures its queue, not
		// the webhook path.
		var latencies []time.Duration
		for i := range merges {
			id, number := w.openPR(fmt.Sprintf("workqueue/bench-%d", i))
			eventually.True(b, 30*time.Second, fmt.Sprintf("merge #%d", number), func() (bool, any) {
				got, _ := w.forge.GetMergeRequest(ctx, w.repo, number)
				return got != nil && got.Mergeable && w.forge.MergeMergeRequest(ctx, w.repo, number, got.HeadSHA) == nil, got
			})
			merged := time.Now()
			// Every 5 ms: what is measured is how soon the item completes.
			eventually.TrueEvery(b, 30*time.Second, 5*time.Millisecond, "item "+id+" completed", func() (bool, any) {
				_, item, _ := w.do("GET", "/api/v1/items/"+id, w.tokens["read"], nil)
				return item["phase"] == "completed", item
			})
			latencies = append(latencies, time.Since(merged))
		}
		slices.Sort(latencies)
		p := func(q float64) time.Duration { return latencies[int(q*float64(len(latencies)-1))] }
		b.ReportMetric(float64(p(0.50).Milliseconds()), "p50-ms")
		b.ReportMetric(float64(p(0.99).Milliseconds()), "p99-ms")
		b.ReportMetric(float64(latencies[len(latencies)-1].Milliseconds()), "max-ms")
	}
}
