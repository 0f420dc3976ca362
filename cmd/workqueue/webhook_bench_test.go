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
		type open struct {
			id     string
			number int64
		}
		var prs []open
		for i := range merges {
			id, n := w.openPR(fmt.Sprintf("wq/bench-%d", i))
			prs = append(prs, open{id, n})
		}
		b.StartTimer()
		var latencies []time.Duration
		for _, pr := range prs {
			for deadline := time.Now().Add(30 * time.Second); ; {
				got, _ := w.forge.GetMergeRequest(ctx, w.repo, pr.number)
				if got != nil && got.Mergeable && w.forge.MergeMergeRequest(ctx, w.repo, pr.number, got.HeadSHA) == nil {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("could not merge #%d", pr.number)
				}
				time.Sleep(20 * time.Millisecond)
			}
			merged := time.Now()
			for {
				_, item, _ := w.do("GET", "/api/v1/items/"+pr.id, w.tokens["read"], nil)
				if item["phase"] == "completed" {
					break
				}
				if time.Since(merged) > 30*time.Second {
					b.Fatalf("item %s not completed: %v", pr.id, item)
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
