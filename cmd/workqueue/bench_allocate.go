package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/workqueue-dev/workqueue/controlplane"
)

func newBenchAllocateCommand(w *world) *cobra.Command {
	var work, sessions, calls int
	cmd := &cobra.Command{
		Use:   "allocate",
		Short: "Time the control plane's allocation over W open issues and S agent sessions",
		Long: `Fill the control plane's work inventory with W open issues (in 50
repositories), register S author sessions, then time C allocations of
each kind, one after another, the sessions taking turns: dry runs first
(the choice, nothing taken), then applies (each takes one issue under a
lease, so later applies choose among what is left). It prints the p50 and
p99 latency of each kind and the peak RSS, the figures
BenchmarkAllocate in controlplane/ reports, through the same service and
store serve runs (allocations reach them over the REST API and MCP).

It writes into the database it is given: use a scratch database, or
leave --database out for a temporary SQLite file.`,
		Example: `  workqueue bench allocate
  workqueue bench allocate --database "$TEST_DATABASE_URL" --work 5000 --sessions 100 -o json`,
		Args: cobra.NoArgs,
		RunE: withBench(w, func(cmd *cobra.Command, b *bench) error {
			if work < 1 || sessions < 1 || calls < 1 {
				return errors.New("--work, --sessions and --calls must be at least 1")
			}
			if calls > work {
				return usageError{fmt.Errorf("--calls: at most --work (%d), since every apply takes one issue; got %d", work, calls)}
			}
			r, err := b.allocate(cmd.Context(), work, sessions, calls)
			if err != nil {
				return err
			}
			return b.print(r, fmt.Sprintf("allocation on %s: %d open issues, %d sessions: dry run p50 %.2f ms, p99 %.2f ms; apply p50 %.2f ms, p99 %.2f ms; peak RSS %.1f MiB",
				r.Database, r.Work, r.Sessions, r.DryRunP50Millis, r.DryRunP99Millis, r.ApplyP50Millis, r.ApplyP99Millis, mib(r.PeakRSSBytes)))
		}),
	}
	cmd.Flags().IntVar(&work, "work", 5_000, "open issues in the inventory")
	cmd.Flags().IntVar(&sessions, "sessions", 100, "author sessions taking turns")
	cmd.Flags().IntVar(&calls, "calls", 200, "allocations timed of each kind (dry run, apply)")
	return cmd
}

// allocateResult is what bench allocate measured.
type allocateResult struct {
	Benchmark       string  `json:"benchmark"` // "allocate"
	Database        string  `json:"database"`  // sqlite or postgres
	Work            int     `json:"work"`
	Sessions        int     `json:"sessions"`
	Calls           int     `json:"calls"` // of each kind
	DryRunP50Millis float64 `json:"dryrun_p50_ms"`
	DryRunP99Millis float64 `json:"dryrun_p99_ms"`
	ApplyP50Millis  float64 `json:"apply_p50_ms"`
	ApplyP99Millis  float64 `json:"apply_p99_ms"`
	PeakRSSBytes    int64   `json:"peak_rss_bytes"`
}

func (b *bench) allocate(ctx context.Context, work, sessions, calls int) (allocateResult, error) {
	all, err := b.world.openStores(ctx, b.url)
	if err != nil {
		return allocateResult{}, err
	}
	defer all.queue.Close()
	if _, err := all.queue.Migrate(ctx); err != nil {
		return allocateResult{}, fmt.Errorf("migrate: %w", err)
	}
	svc := &controlplane.Service{Store: all.cp, LeaseTTL: time.Hour, SessionTTL: time.Hour}
	now := time.Now()
	fmt.Fprintf(b.progress, "filling the inventory with %d open issues on %s\n", work, b.kind)
	inventory := make([]controlplane.Work, work)
	for i := range inventory {
		inventory[i] = controlplane.Work{ID: fmt.Sprint("bench-", i), WorkKey: controlplane.WorkKey{Forge: "bench", Repo: fmt.Sprintf("org/r%02d", i%50),
			Kind: controlplane.KindIssue, Number: int64(i + 1)}, State: controlplane.StateOpen, Title: "A piece of work", Labels: []string{"bug"},
			UpdatedAt: now.Add(-time.Duration(i) * time.Second)}
	}
	if err := svc.Store.UpsertWork(ctx, inventory, now); err != nil {
		return allocateResult{}, err
	}
	caller := controlplane.Caller{Identity: "bench"}
	ids := make([]string, sessions)
	for i := range ids {
		s, err := svc.RegisterSession(ctx, caller, controlplane.RoleAuthor, fmt.Sprint("bench-", i), nil)
		if err != nil {
			return allocateResult{}, err
		}
		ids[i] = s.ID
	}
	end, err := b.measure()
	if err != nil {
		return allocateResult{}, err
	}
	defer end()
	timed := func(apply bool) (p50, p99 float64, err error) {
		want := map[bool]controlplane.Outcome{false: controlplane.OutcomePreview, true: controlplane.OutcomeAssigned}[apply]
		lat := make([]time.Duration, 0, calls)
		for i := range calls {
			start := time.Now()
			a, err := svc.Allocate(ctx, caller, ids[i%len(ids)], "", apply)
			if err != nil {
				return 0, 0, err
			}
			lat = append(lat, time.Since(start))
			if a.Outcome != want {
				return 0, 0, fmt.Errorf("allocation %d (apply %v): outcome %s, want %s", i, apply, a.Outcome, want)
			}
		}
		slices.Sort(lat)
		return millis(percentile(lat, 50)), millis(percentile(lat, 99)), nil
	}
	fmt.Fprintf(b.progress, "timing %d dry runs and %d applies with %d sessions\n", calls, calls, sessions)
	r := allocateResult{Benchmark: "allocate", Database: b.kind, Work: work, Sessions: sessions, Calls: calls}
	if r.DryRunP50Millis, r.DryRunP99Millis, err = timed(false); err != nil {
		return allocateResult{}, err
	}
	if r.ApplyP50Millis, r.ApplyP99Millis, err = timed(true); err != nil {
		return allocateResult{}, err
	}
	r.PeakRSSBytes = end().peakRSS
	return r, nil
}
