package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/internal/peakrss"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// BenchmarkThroughput burns down 20,000 items of a type whose decider asks
// for one no-op action and then for none, with one engine at default
// settings. Run it with -benchtime 1x (scripts/test bench -benchtime 1x
// -bench Throughput ./engine/). It reports items/s and the process's peak
// resident memory during the burn-down.
func BenchmarkThroughput(b *testing.B) {
	for _, kind := range testdb.Kinds {
		b.Run(kind, func(b *testing.B) { benchmarkThroughput(b, kind, 20_000) })
	}
}

func benchmarkThroughput(b *testing.B, kind string, items int) {
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		url := testdb.URL(b, kind)
		s := testdb.OpenURL(b, url)
		testdb.SeedItems(b, url, testdb.Seed{ItemType: "test", Count: items, Actionable: true, Now: time.Now()})
		cfg := engine.DefaultConfig()
		cfg.HandledTypes = []string{"test"}
		e, err := engine.New(cfg, s.Queue, clockwork.NewRealClock(), &discard{}, testkit.Quiet())
		if err != nil {
			b.Fatal(err)
		}
		e.Register(oneAction(func(ctx context.Context, x *wq.Execution) error { return markActed(ctx, x) }))
		peakrss.Reset()
		b.StartTimer()

		start := time.Now()
		if err := e.Start(ctx); err != nil {
			b.Fatal(err)
		}
		for e.Stats().ActionsExecuted < int64(items) {
			time.Sleep(5 * time.Millisecond)
		}
		if err := e.WaitIdle(ctx); err != nil { // the last exits after the last actions
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		e.Stop(ctx)
		if st := e.Stats(); st.ActionsExecuted != int64(items) || st.ActionsFailed != 0 {
			b.Fatalf("stats %+v, want exactly %d actions and no failure", st, items)
		}
		b.ReportMetric(float64(items)/elapsed.Seconds(), "items/s")
		b.ReportMetric(float64(peakrss.Peak())/(1<<20), "peak-RSS-MiB")
		b.StartTimer()
	}
}

type discard struct{}

func (*discard) WriteAudit(context.Context, wq.AuditEntry) error { return nil }
