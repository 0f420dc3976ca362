package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/cobra"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/internal/machinecpu"
	"github.com/workqueue-dev/workqueue/internal/peakrss"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/seam"
)

func newBenchCommand(w *world) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the engine's burn-down, the submit API's load and allocation on a database",
		Long: `Measure this build on a database: how fast the engine works through due
items, how fast the HTTP API takes submissions, and how long the control
plane takes to allocate work to an agent session. Each subcommand prints
its figures and the process's peak resident memory (VmHWM, reset when the
measured phase starts; Linux only, 0 elsewhere); engine and submit also
print the machine's busy CPU time per 1,000 items or requests (all
processes: this one, the database server, the kernel; from /proc/stat).

Both write into the database they are given: use a scratch database, or
leave --database out for a temporary SQLite file that is removed at the
end. Progress goes to stderr; -o json prints the figures as one JSON
object on stdout. scripts/bench runs River's burn-down and this one on the
same PostgreSQL and prints the ratio.`,
		Example: `  workqueue bench engine
  workqueue bench engine --database "$TEST_DATABASE_URL" --items 20000 --workers 100 -o json
  workqueue bench submit --requests 20000 --clients 16`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().String("database", "",
		"database URL: sqlite:///abs/path.db, sqlite:relative.db or postgres://… (default: a temporary SQLite file)")
	var output string
	addOutputFlag(cmd.PersistentFlags(), &output)
	cmd.PersistentFlags().String("cpuprofile", "", "write a CPU profile of the measured phase to this file (go tool pprof reads it)")
	cmd.PersistentFlags().String("memprofile", "", "write the allocations made during the measured phase to this file (go tool pprof reads it)")
	cmd.AddCommand(newBenchEngineCommand(w), newBenchSubmitCommand(w), newBenchAllocateCommand(w),
		newBenchEngineInstanceCommand(w), newBenchHostileCommand(w))
	return cmd
}

func newBenchEngineCommand(w *world) *cobra.Command {
	var (
		items, workers, instances, claimBatch int
		actionTime                            time.Duration
	)
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Burn down N no-op items with M workers and print items/s",
		Long: `Seed N items of a bench-only item type, start one engine with M workers
that handles only that type, and time it from start until every item has
had its one no-op action and its exit decision written: per item a claim,
the action's fenced write and the exit, as for any item type. The decider
asks for the action while the item's needs_act dimension is unset and
for nothing once the action has set it false (the workload of
BenchmarkThroughput in engine/). It prints items/s, the elapsed time,
the peak RSS of the process during the burn-down, and the CPU time the
whole machine spent per 1,000 items (this process, the database, the
kernel) with the engine's own part of it.

With --instances K it runs K engines as K processes of this binary, as
K instances of serve would run, all on the one database: compare their
items/s with --instances 1 (one instance run the same way, a process of
its own started and stopped by this one) for the scale-out factor.
Without the flag the engine runs in this process. The peak RSS it
prints is the largest instance's (-o json lists each). Every instance
records the span of each execution on the machine's monotonic clock, and
the executions of one item that overlapped in time, across instances,
are counted; it must print 0 (the run fails on any other sign that an
item was worked twice). With --instances K, --cpuprofile and --memprofile
name no file of their own: instance i writes FILE.i, from go to idle.

With --action-time D each action waits D before its write, as an action
that calls a forge waits for the forge: the instances are then limited
by their workers, not by the database, and a second instance shows what
it adds on a database with headroom.

The type exists only inside this command; serve never registers it. The
engine runs with the product's processing defaults (workers from
--workers); audit entries are discarded, so that the figure is the
engine's and the database's. The items stay in the database, idle.`,
		Example: `  workqueue bench engine
  workqueue bench engine --database "$TEST_DATABASE_URL" --items 20000 --workers 100`,
		Args: cobra.NoArgs,
		RunE: withBench(w, func(cmd *cobra.Command, b *bench) error {
			if items < 1 || workers < 1 || instances < 1 {
				return errors.New("--items, --workers and --instances must be at least 1")
			}
			if claimBatch < 1 || claimBatch > 1000 {
				return usageError{fmt.Errorf("--claim-batch: want 1 to 1000 (processing.claim_batch), got %d", claimBatch)}
			}
			if err := checkActionTime(actionTime); err != nil {
				return err
			}
			// --instances, even 1: each instance a process of its own, which
			// writes its own profiles (engineInstances): FILE.i, not FILE.
			processes := cmd.Flags().Changed("instances")
			if processes {
				b.dropProfileFiles()
			}
			b.claimBatch, b.actionTime = claimBatch, actionTime
			r, err := b.engine(cmd.Context(), items, workers, instances, processes)
			if err != nil {
				return err
			}
			on := fmt.Sprintf("%d workers", r.Workers)
			if processes {
				on = fmt.Sprintf("%d instances of %d workers, %d overlapping executions", r.Instances, r.Workers, r.OverlappingExecutions)
			}
			return b.print(r, fmt.Sprintf("engine burn-down on %s: %d items, %s, %.2fs: %.0f items/s; peak RSS %.1f MiB; "+
				"%.1f ms of CPU per 1,000 items, %.1f of them the engine's",
				r.Database, r.Items, on, r.ElapsedSeconds, r.ItemsPerSecond, mib(r.PeakRSSBytes), r.CPUMsPer1000, r.ProcessCPUMsPer1000))
		}),
	}
	cmd.Flags().IntVar(&items, "items", 20_000, "items to burn down")
	cmd.Flags().IntVar(&workers, "workers", config.Default().Processing.Workers, "engine workers (processing.workers), per instance")
	cmd.Flags().IntVar(&instances, "instances", 1, "engines sharing the database, each a process of its own (without the flag: one engine, in this process)")
	cmd.Flags().IntVar(&claimBatch, "claim-batch", config.Default().Processing.ClaimBatch,
		"items claimed in one statement (processing.claim_batch)")
	cmd.Flags().DurationVar(&actionTime, "action-time", 0,
		"how long each action takes before its write, as a forge call would (0: a no-op, the engine's own cost; at most 10s)")
	return cmd
}

// maxActionTime bounds --action-time at a slow forge call's time: it
// catches a unit mistaken (20s for 20ms), and keeps every action well
// inside processing's lease and item deadline (60 s each by default).
const maxActionTime = 10 * time.Second

// checkActionTime validates --action-time.
func checkActionTime(d time.Duration) error {
	if d < 0 || d > maxActionTime {
		return usageError{fmt.Errorf("--action-time: want 0 to %v, got %v", maxActionTime, d)}
	}
	return nil
}

func newBenchSubmitCommand(w *world) *cobra.Command {
	var requests, clients int
	cmd := &cobra.Command{
		Use:   "submit",
		Short: "Send K small merge request submissions over HTTP and print requests/s and latency",
		Long: `Start the service in this process on the database (listening on a free
loopback port, with handled_types empty, so that submissions are only
queued and nothing calls a forge), then send K small valid submissions
of the mr type to POST /api/v1/items from C concurrent clients with a
submit token, each for a branch of its own so that each creates an item.
It prints requests/s, the p50 and p99 latency, the number of errors
(transport errors and answers other than 2xx) and the peak RSS of the
process, which holds both the service and the clients.

The service runs with the product's defaults (metrics on, audit to the
log, which is discarded below warnings) and one configured forge and
project that exist only to accept the submissions.`,
		Example: `  workqueue bench submit
  workqueue bench submit --database "$TEST_DATABASE_URL" --requests 20000 --clients 16 -o json`,
		Args: cobra.NoArgs,
		RunE: withBench(w, func(cmd *cobra.Command, b *bench) error {
			if requests < 1 || clients < 1 {
				return errors.New("--requests and --clients must be at least 1")
			}
			r, err := b.submit(cmd.Context(), requests, clients)
			if err != nil {
				return err
			}
			return b.print(r, fmt.Sprintf("submit API on %s: %d requests, %d clients, %.2fs: %.0f requests/s, p50 %.2f ms, p99 %.2f ms, %d errors; peak RSS %.1f MiB",
				r.Database, r.Requests, r.Clients, r.ElapsedSeconds, r.RequestsPerSecond, r.P50Millis, r.P99Millis, r.Errors, mib(r.PeakRSSBytes)))
		}),
	}
	cmd.Flags().IntVar(&requests, "requests", 20_000, "submissions to send")
	cmd.Flags().IntVar(&clients, "clients", 16, "concurrent HTTP clients")
	return cmd
}

// bench is one bench subcommand's run: its database (a temporary SQLite
// file unless one was given), its output and its progress writer.
type bench struct {
	world    *world // what the program links
	url      string
	kind     string
	tempDir  string // removed by close; "" when the database was given
	format   string // table, json or yaml
	out      io.Writer
	progress io.Writer
	// bench engine's knobs
	claimBatch int
	// actionTime is how long each action takes before its write, as a
	// call to a forge would: 0, a no-op.
	actionTime time.Duration
	cpuProfile *os.File // nil: no profile
	memProfile *os.File // nil: no profile
	// The profiles' paths: bench engine --instances K has instance i
	// write path.i instead of the parent writing path.
	cpuProfilePath, memProfilePath string
}

// withBench is a bench subcommand's RunE: run with the bench its flags
// make (newBench) in w, closed when run returns.
func withBench(w *world, run func(cmd *cobra.Command, b *bench) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		b, err := newBench(cmd, w)
		if err != nil {
			return err
		}
		defer b.close()
		return run(cmd, b)
	}
}

func newBench(cmd *cobra.Command, w *world) (*bench, error) {
	// The progress lines and the processes' log share the writer, from
	// the bench's goroutine and the service's alike: one at a time.
	b := &bench{out: cmd.OutOrStdout(), progress: &lockedWriter{w: cmd.ErrOrStderr()}, world: w}
	b.format, _ = cmd.Flags().GetString("output")
	if err := checkOutput(&b.format); err != nil {
		return nil, err
	}
	b.url, _ = cmd.Flags().GetString("database")
	if b.url == "" {
		dir, err := os.MkdirTemp("", "workqueue-bench-")
		if err != nil {
			return nil, err
		}
		b.tempDir = dir
		b.url = "sqlite://" + filepath.Join(dir, "bench.db")
	}
	var err error
	if b.kind, _, err = store.ParseURL(b.url); err != nil {
		b.close()
		return nil, err
	}
	// Profiles' files are made now, so that a path that cannot be written
	// fails before the seeding.
	for _, p := range []struct {
		flag string
		dst  **os.File
		path *string
	}{{"cpuprofile", &b.cpuProfile, &b.cpuProfilePath}, {"memprofile", &b.memProfile, &b.memProfilePath}} {
		path, _ := cmd.Flags().GetString(p.flag)
		if path == "" {
			continue
		}
		f, err := os.Create(path)
		if err != nil {
			b.close()
			return nil, fmt.Errorf("--%s: %w", p.flag, err)
		}
		*p.dst, *p.path = f, path
	}
	return b, nil
}

func (b *bench) close() {
	if b.tempDir != "" {
		os.RemoveAll(b.tempDir)
	}
	for _, f := range []*os.File{b.cpuProfile, b.memProfile} {
		if f != nil {
			f.Close()
		}
	}
}

// dropProfileFiles removes the profiles' files newBench made, keeping
// their paths: bench engine --instances has its instances write them.
func (b *bench) dropProfileFiles() {
	for _, f := range []**os.File{&b.cpuProfile, &b.memProfile} {
		if *f != nil {
			(*f).Close()
			os.Remove((*f).Name())
			*f = nil
		}
	}
}

// measured is what every bench reads around its measured phase.
type measured struct {
	elapsed time.Duration
	peakRSS int64
	busy    time.Duration // the machine's CPU, all processes (machinecpu)
	process time.Duration // this process's CPU
}

// measure starts the measured phase: the profiles asked for, the peak
// RSS reset, the clocks read. The function it returns ends it.
func (b *bench) measure() (end func() measured, err error) {
	if err := b.startProfiles(); err != nil {
		return nil, err
	}
	// What the setup (seeding, migrations) left behind is given back
	// first, so that the peak is the measured phase's own.
	debug.FreeOSMemory()
	peakrss.Reset()
	busy, process, start := machinecpu.Busy(), machinecpu.Process(), time.Now()
	var once sync.Once
	var m measured
	return func() measured {
		once.Do(func() {
			m = measured{elapsed: time.Since(start), peakRSS: peakrss.Peak(), busy: machinecpu.Busy() - busy,
				process: machinecpu.Process() - process}
			b.stopProfiles()
		})
		return m
	}, nil
}

// startProfiles starts the profiles asked for, at the measured phase's
// start.
func (b *bench) startProfiles() error {
	if b.cpuProfile != nil {
		if err := pprof.StartCPUProfile(b.cpuProfile); err != nil {
			return err
		}
	}
	if b.memProfile != nil {
		// One sample per 4 KiB allocated (the default is per 512 KiB),
		// from here on: the profile is of the measured phase, not of the
		// seeding.
		runtime.MemProfileRate = 4096
	}
	return nil
}

// stopProfiles ends the profiles startProfiles started and writes them.
func (b *bench) stopProfiles() {
	if b.cpuProfile != nil {
		pprof.StopCPUProfile()
	}
	if b.memProfile != nil {
		runtime.GC()
		_ = pprof.Lookup("allocs").WriteTo(b.memProfile, 0)
	}
}

// print writes r as JSON or YAML, or text for people, as asked.
func (b *bench) print(r any, text string) error {
	return printOutput(b.out, b.format, r, func(w io.Writer) { fmt.Fprintln(w, text) })
}

// log is what the bench's service and engine log: warnings and errors
// only, to the progress writer, so that a failure shows and the figures
// do not pay for info lines.
// lockedWriter writes to w one Write at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (b *bench) log() *slog.Logger {
	return slog.New(slog.NewTextHandler(b.progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// engineResult is what bench engine measured.
type engineResult struct {
	Benchmark      string  `json:"benchmark"` // "engine"
	Database       string  `json:"database"`  // sqlite or postgres
	Items          int     `json:"items"`
	Workers        int     `json:"workers"` // per instance
	Instances      int     `json:"instances"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	ItemsPerSecond float64 `json:"items_per_second"` // all instances together
	PeakRSSBytes   int64   `json:"peak_rss_bytes"`   // the largest instance's
	// InstancePeakRSSBytes is each instance's peak with --instances K.
	InstancePeakRSSBytes []int64 `json:"instance_peak_rss_bytes,omitempty"`
	// CPUMsPer1000 is the machine's busy CPU time during the burn-down
	// (this process, the database server, the kernel: machinecpu), in
	// milliseconds per 1,000 items.
	CPUMsPer1000 float64 `json:"cpu_ms_per_1000"`
	// ProcessCPUMsPer1000 is the part of it the engines' own processes
	// spent (user and system), so that the rest is the database's and the
	// kernel's.
	ProcessCPUMsPer1000 float64 `json:"process_cpu_ms_per_1000"`
	// SteadyItemsPerSecond (--instances only) is the rate from the moment
	// the instances together had acted on a tenth of the items to the
	// end: what they sustain once their processes, heaps and connections
	// have started, which a burn-down of a second or two is a large part
	// of, and a part that grows with the number of processes.
	SteadyItemsPerSecond float64 `json:"steady_items_per_second,omitempty"`
	// OverlappingExecutions counts executions of an item that began while
	// another execution of it was running (in any instance): zero unless
	// the leases failed to fence.
	OverlappingExecutions int64 `json:"overlapping_executions"`
}

// benchItemType names the bench-only item type.
const benchItemType = "bench"

// benchType is an item type with one no-op action: the decider asks for
// "act" until needs_act is false, and "act" sets it false. It is
// registered only by bench engine. rec sees every execution.
func benchType(rec *overlapRecorder, actionTime time.Duration) wq.ItemType {
	return wq.ItemType{
		Name: benchItemType,
		Decide: func(it *wq.Item, now time.Time) string {
			if it.Dimensions.Needs("needs_act", "", now) {
				return "act"
			}
			return ""
		},
		Executors: map[string]wq.Executor{"act": func(ctx context.Context, x *wq.Execution) error {
			defer rec.enter(x.Item.ID)()
			if actionTime > 0 {
				t := time.NewTimer(actionTime)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				}
			}
			return x.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{
				{DimensionKey: wq.DimensionKey{Dimension: "needs_act"}, Status: wq.StatusFalse}}})
		}},
	}
}

// overlapRecorder counts executions of one item that ran at the same
// time in the process's engine: the fenced leases must keep it at zero.
// With clock set it also records every execution's span on that clock
// (machineNanos: the machine's), for bench engine --instances to compare
// across processes.
type overlapRecorder struct {
	mu         sync.Mutex
	running    map[wq.ItemID]int
	overlaps   int64
	clock      func() int64 // nil: no spans kept
	executions []execution
}

// enter records that an execution of id starts; the function it returns
// records its end.
func (r *overlapRecorder) enter(id wq.ItemID) (exit func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running[id]++; r.running[id] > 1 {
		r.overlaps++
	}
	var start int64
	if r.clock != nil {
		start = r.clock()
	}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.running[id]--; r.running[id] == 0 {
			delete(r.running, id)
		}
		if r.clock != nil {
			r.executions = append(r.executions, execution{ID: id, Start: start, End: r.clock()})
		}
	}
}

// engine runs the burn-down: in this process, or with processes in that
// many instances of their own.
func (b *bench) engine(ctx context.Context, items, workers, instances int, processes bool) (engineResult, error) {
	if processes || instances > 1 {
		return b.engineInstances(ctx, items, workers, instances)
	}
	all, err := b.world.openStores(ctx, b.url)
	if err != nil {
		return engineResult{}, err
	}
	defer all.queue.Close()
	if err := b.seedEngine(ctx, all.queue, items); err != nil {
		return engineResult{}, err
	}
	rec := &overlapRecorder{running: map[wq.ItemID]int{}}
	e, err := b.newBenchEngine(ctx, all.queue, workers, 0, rec)
	if err != nil {
		return engineResult{}, err
	}
	fmt.Fprintf(b.progress, "burning down with %d workers\n", workers)
	end, err := b.measure()
	if err != nil {
		return engineResult{}, err
	}
	defer end()
	start := time.Now()
	if err := e.Start(ctx); err != nil {
		return engineResult{}, err
	}
	defer e.Stop(context.WithoutCancel(ctx))
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	lastReport := start
	for e.Stats().ActionsExecuted < int64(items) {
		select {
		case <-ctx.Done():
			return engineResult{}, ctx.Err()
		case now := <-tick.C:
			if now.Sub(lastReport) >= 2*time.Second {
				lastReport = now
				b.reportBurnDown(e.Stats().ActionsExecuted, items, now.Sub(start))
			}
		}
	}
	if err := e.WaitIdle(ctx); err != nil { // the last exits come after the last actions
		return engineResult{}, err
	}
	m := end()
	if err := checkBurnDown(e.Stats(), items); err != nil {
		return engineResult{}, err
	}
	return engineResult{Benchmark: "engine", Database: b.kind, Items: items, Workers: workers, Instances: 1,
		ElapsedSeconds: m.elapsed.Seconds(), ItemsPerSecond: float64(items) / m.elapsed.Seconds(), PeakRSSBytes: m.peakRSS,
		CPUMsPer1000: machinecpu.PerThousand(m.busy, items), ProcessCPUMsPer1000: machinecpu.PerThousand(m.process, items),
		OverlappingExecutions: rec.overlaps}, nil
}

// seedEngine migrates the database and seeds the burn-down's items.
func (b *bench) seedEngine(ctx context.Context, s wq.Store, items int) error {
	if _, err := s.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Fprintf(b.progress, "seeding %d %s items on %s\n", items, benchItemType, b.kind)
	return seedBenchItems(ctx, s, items, time.Now())
}

// newBenchEngine is the engine of instance index: the product's
// processing defaults, workers and the claim batch from the flags, only
// the bench type, audit discarded.
//
// The store's connections are opened and warmed first (seam.Warmer), as
// a long-running instance's are: otherwise the burn-down pays for
// starting the server's backends, once per connection, so twice as
// often with two instances.
func (b *bench) newBenchEngine(ctx context.Context, s wq.Store, workers, index int, rec *overlapRecorder) (*engine.Engine, error) {
	if w, ok := s.(seam.Warmer); ok {
		if err := w.Warm(ctx); err != nil {
			return nil, fmt.Errorf("warm the connections: %w", err)
		}
	}
	cfg := config.Default()
	cfg.HandledTypes = []string{benchItemType}
	cfg.Processing.Workers = workers
	cfg.Processing.ClaimBatch = b.claimBatch
	ecfg := engineConfig(cfg)
	ecfg.Owner = fmt.Sprintf("%s/bench%d", ecfg.Owner, index)
	e, err := engine.New(ecfg, s, clockwork.NewRealClock(), discardAudit{}, b.log())
	if err != nil {
		return nil, err
	}
	e.Register(benchType(rec, b.actionTime))
	return e, nil
}

func (b *bench) reportBurnDown(done int64, items int, elapsed time.Duration) {
	fmt.Fprintf(b.progress, "%d/%d items acted on (%.0f/s)\n", done, items, float64(done)/elapsed.Seconds())
}

// checkBurnDown fails a burn-down whose engines did not act exactly once
// on every item, exit every item and fail nothing.
func checkBurnDown(total engine.Stats, items int) error {
	if total.ActionsExecuted != int64(items) || total.ActionsFailed != 0 || total.ItemsExited < int64(items) {
		return fmt.Errorf("engine stats %+v: want exactly %d actions, as many exits and no failure", total, items)
	}
	return nil
}

// seedBenchItems inserts n actionable bench items, many to a transaction
// (the store API commits one per item, which on SQLite with
// synchronous=FULL costs a sync each), through the drivers' store seam;
// several transactions at once where writes do not run one at a time.
func seedBenchItems(ctx context.Context, s wq.Store, n int, now time.Time) error {
	const perTx = 1000
	insert := func(ctx context.Context, count int) error {
		if d, ok := s.(seam.Driver); ok {
			return d.Write(ctx, func(tx seam.Tx) error {
				for range count {
					if err := tx.InsertItem(ctx, &wq.NewItem{ItemType: benchItemType}, now); err != nil {
						return err
					}
				}
				return nil
			})
		}
		for range count {
			if _, err := s.CreateItem(ctx, wq.NewItem{ItemType: benchItemType}, now); err != nil {
				return err
			}
		}
		return nil
	}
	parallel := 1
	if d, ok := s.(seam.Driver); ok && !d.Dialect().SerialWrites {
		parallel = 4
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range parallel {
		wg.Go(func() {
			for {
				start := int(next.Add(perTx)) - perTx
				if start >= n {
					return
				}
				if err := insert(ctx, min(perTx, n-start)); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("seed bench items: %w", err) })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	// Statistics, as autovacuum would have gathered them long before a
	// real queue held this many items: without them the planner guesses a
	// handful of active items and walks them all to claim 32.
	return analyzeBenchTables(ctx, s)
}

// analyzeBenchTables updates the planner's statistics of the queue's
// tables.
func analyzeBenchTables(ctx context.Context, s wq.Store) error {
	if a, ok := s.(seam.Analyzer); ok {
		return a.Analyze(ctx)
	}
	return nil
}

// discardAudit drops audit entries: bench engine measures the engine.
type discardAudit struct{}

func (discardAudit) WriteAudit(context.Context, wq.AuditEntry) error { return nil }

// submitResult is what bench submit measured.
type submitResult struct {
	Benchmark         string  `json:"benchmark"` // "submit"
	Database          string  `json:"database"`  // sqlite or postgres
	Requests          int     `json:"requests"`
	Clients           int     `json:"clients"`
	ElapsedSeconds    float64 `json:"elapsed_seconds"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	P50Millis         float64 `json:"p50_ms"`
	P99Millis         float64 `json:"p99_ms"`
	Errors            int64   `json:"errors"`
	FirstError        string  `json:"first_error,omitempty"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes"`
	CPUMsPer1000      float64 `json:"cpu_ms_per_1000"` // the machine's busy CPU per 1,000 requests
}

// benchForge and benchProject are the forge and project the bench's
// service is configured with; nothing ever calls the forge.
const (
	benchForge   = "bench"
	benchProject = "bench/submit"
)

func (b *bench) submit(ctx context.Context, requests, clients int) (submitResult, error) {
	dir, err := os.MkdirTemp("", "workqueue-bench-submit-")
	if err != nil {
		return submitResult{}, err
	}
	defer os.RemoveAll(dir)
	forgeToken := filepath.Join(dir, "forge.token")
	if err := os.WriteFile(forgeToken, []byte("unused\n"), 0o600); err != nil {
		return submitResult{}, err
	}
	token, hash, err := auth.NewToken()
	if err != nil {
		return submitResult{}, err
	}
	cfg := config.Default()
	cfg.Database = b.url
	cfg.Listen = "127.0.0.1:0"
	cfg.HandledTypes = nil // queue only: no engine work, no forge call
	cfg.Log.Level = "warn"
	// A discard port: the forge is configured for the project's sake and
	// never called.
	cfg.Forges = []config.Forge{{Name: benchForge, Kind: wq.ForgeGitea, URL: "http://127.0.0.1:9", TokenFile: forgeToken}}
	cfg.Projects = []config.Project{{Match: benchProject, Forge: benchForge}}
	cfg.Auth.Tokens = []config.Token{{Name: "bench-submit", SHA256: hash, Permissions: []string{string(auth.Submit)}}}
	cfg.Limits.SubmissionsPerHour = 1_000_000 // one identity submits the whole run: no budget of a person's
	if err := cfg.Validate(b.world.known()); err != nil {
		return submitResult{}, fmt.Errorf("bench config: %w", err)
	}
	m := newMainIn(b.world, cfg, b.log())
	if err := m.Run(ctx); err != nil {
		m.Close()
		return submitResult{}, err
	}
	defer m.Close()
	endpoint := "http://" + m.Addr() + "/api/v1/items"
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()

	// Each submission names a branch of its own, so that each creates an
	// item; the run's start time keeps a second run on the same database
	// from resubmitting the first run's items.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	latencies := make([]time.Duration, requests)
	var (
		next, errs, sent atomic.Int64
		firstErr         atomic.Value
		wg               sync.WaitGroup
	)
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	fmt.Fprintf(b.progress, "sending %d submissions with %d clients on %s\n", requests, clients, b.kind)
	end, err := b.measure()
	if err != nil {
		return submitResult{}, err
	}
	defer end()
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= requests || ctx.Err() != nil {
					return
				}
				body := fmt.Sprintf(`{"item_type":%q,"forge":%q,"project":%q,"source_branch":"workqueue/bench-%s-%d","target_branch":"main",`+
					`"title":"Bench %d","file_actions":[{"action":"create","file_path":"bench.txt","content":"bench\n"}]}`,
					mr.ItemType, benchForge, benchProject, run, i, i)
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
				if err != nil {
					fail(err)
					continue
				}
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					latencies[i] = time.Since(t0)
					fail(err)
					sent.Add(1)
					continue
				}
				answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				latencies[i] = time.Since(t0)
				sent.Add(1)
				if resp.StatusCode/100 != 2 {
					fail(fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(answer))))
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case now := <-tick.C:
			n := sent.Load()
			fmt.Fprintf(b.progress, "%d/%d submissions answered (%.0f/s), %d errors\n", n, requests, float64(n)/now.Sub(start).Seconds(), errs.Load())
		}
	}
	got := end()
	if err := ctx.Err(); err != nil {
		return submitResult{}, err
	}
	slices.Sort(latencies)
	r := submitResult{Benchmark: "submit", Database: b.kind, Requests: requests, Clients: clients,
		ElapsedSeconds: got.elapsed.Seconds(), RequestsPerSecond: float64(requests) / got.elapsed.Seconds(),
		P50Millis: millis(percentile(latencies, 50)), P99Millis: millis(percentile(latencies, 99)),
		Errors: errs.Load(), PeakRSSBytes: got.peakRSS, CPUMsPer1000: machinecpu.PerThousand(got.busy, requests)}
	if first, ok := firstErr.Load().(string); ok {
		r.FirstError = first
	}
	return r, nil
}

// percentile returns the p-th percentile of sorted by the nearest-rank
// method.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*p + 99) / 100 // ceil(len·p/100)
	return sorted[max(rank, 1)-1]
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }
