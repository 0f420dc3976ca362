package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
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
			for deadline := time.Now().Add(30 * time.Second); ; {
				got, _ := w.forge.GetMergeRequest(ctx, w.repo, number)
				if got != nil && got.Mergeable && w.forge.MergeMergeRequest(ctx, w.repo, number, got.HeadSHA) == nil {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("could not merge #%d", number)
				}
				time.Sleep(20 * time.Millisecond)
			}
			merged := time.Now()
			for {
				_, item, _ := w.do("GET", "/api/v1/items/"+id, w.tokens["read"], nil)
				if item["phase"] == "completed" {
					break
				}
				if time.Since(merged) > 30*time.Second {
					b.Fatalf("item %s not completed: %v", id, item)
				}
				time.Sleep(5 * time.Millisecond)
			}
			latencies = append(latencies, time.Since(merged))
		}
		slices.Sort(latencies)
		p := func(q float64) time.Duration { return latencies[int(q*float64(len(latencies)-1))] }
		b.ReportMetric(float64(p(0.50).Milliseconds()), "p50-ms")
		b.ReportMetric(float64(p(0.99).Milliseconds()), "p99-ms")
		b.ReportMetric(float64(latencies[len(latencies)-1].Milliseconds()), "max-ms")
	}
}
