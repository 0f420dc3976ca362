package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
)

// runBench runs the CLI in process with stdout and stderr apart (bench
// prints its progress on stderr) and decodes stdout's JSON into v.
func runBench(t *testing.T, v any, args ...string) {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd := newRootCommand(&stdout, &stderr)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	if err := json.Unmarshal([]byte(stdout.String()), v); err != nil {
		t.Fatalf("%v: stdout is not one JSON object: %v\n%s", args, err, stdout.String())
	}
}

// countItems returns, for itemType on the database at url, how many
// items are in each phase and how many are still actionable.
func countItems(t *testing.T, url, itemType string) (phases map[wq.Phase]int64, actionable int64) {
	t.Helper()
	ctx := context.Background()
	s, err := assemble().drivers.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	counts, err := s.(wq.ItemCounter).CountItems(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	phases = map[wq.Phase]int64{}
	for _, c := range counts.Phases {
		if c.ItemType == itemType {
			phases[c.Phase] += c.Count
		}
	}
	for _, c := range counts.Actionable {
		if c.ItemType == itemType {
			actionable += c.Count
		}
	}
	return phases, actionable
}

func TestBenchEngineActsOnEveryItemAndLeavesNoneActionable(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		url := testdb.URL(t, kind)
		var got engineResult
		runBench(t, &got, "bench", "engine", "--database", url, "--items", "300", "--workers", "4", "-o", "json")
		if got.Benchmark != "engine" || got.Database != kind || got.Items != 300 || got.Workers != 4 {
			t.Errorf("result %+v: want the engine benchmark on %s with 300 items and 4 workers", got, kind)
		}
		if got.ElapsedSeconds <= 0 || got.ItemsPerSecond <= 0 || got.PeakRSSBytes <= 0 {
			t.Errorf("result %+v: want a positive duration, rate and peak RSS", got)
		}
		// Every item had its action and its exit: all active, none left
		// actionable for the sweep.
		phases, actionable := countItems(t, url, benchItemType)
		if diff := cmp.Diff(map[wq.Phase]int64{wq.PhaseActive: 300}, phases); diff != "" || actionable != 0 {
			t.Errorf("bench items by phase (-want +got):\n%s\nactionable: %d, want 0", diff, actionable)
		}
	})
}

// --action-time stands for a forge call: each action waits that long
// before its write, in this process and in every instance's, so that a
// burn-down is bounded by its workers. 12 items of 100 ms on 2 workers
// (in one engine, or one worker in each of two instances) cannot take
// less than 6 actions' time.
func TestBenchEngineActionsTakeTheActionTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"in this process", []string{"--workers", "2"}},
		{"in two instances", []string{"--workers", "1", "--instances", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := "sqlite://" + filepath.Join(t.TempDir(), "wq.db")
			var got engineResult
			runBench(t, &got, append([]string{"bench", "engine", "--database", url, "--items", "12", "--action-time", "100ms", "-o", "json"}, tc.args...)...)
			if got.OverlappingExecutions != 0 {
				t.Errorf("%d overlapping executions, want 0", got.OverlappingExecutions)
			}
			if got.ElapsedSeconds < 0.6 {
				t.Errorf("12 actions of 100 ms on 2 workers took %.3f s, want at least 0.6: the action time was not waited", got.ElapsedSeconds)
			}
			if phases, actionable := countItems(t, url, benchItemType); phases[wq.PhaseActive] != 12 || actionable != 0 {
				t.Errorf("bench items by phase %v, %d actionable: want 12 active and none actionable", phases, actionable)
			}
		})
	}
}

func TestBenchEngineRefusesAnActionTimeOutOfRange(t *testing.T) {
	t.Parallel()
	for _, d := range []string{"-1s", "11s", "2m", "soon"} {
		var stdout, stderr strings.Builder
		cmd := newRootCommand(&stdout, &stderr)
		cmd.SetArgs([]string{"bench", "engine", "--items", "1", "--action-time", d})
		err := cmd.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), "--action-time") || stdout.String() != "" {
			t.Errorf("--action-time %s: err %v, stdout %q; want a refusal naming --action-time before anything starts", d, err, stdout.String())
		}
	}
}

func TestBenchSubmitQueuesEverySubmissionWithoutProcessingIt(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		url := testdb.URL(t, kind)
		var got submitResult
		runBench(t, &got, "bench", "submit", "--database", url, "--requests", "200", "--clients", "4", "-o", "json")
		if got.Benchmark != "submit" || got.Database != kind || got.Requests != 200 || got.Clients != 4 {
			t.Errorf("result %+v: want the submit benchmark on %s with 200 requests and 4 clients", got, kind)
		}
		if got.Errors != 0 || got.FirstError != "" {
			t.Errorf("%d errors, the first: %s", got.Errors, got.FirstError)
		}
		if got.RequestsPerSecond <= 0 || got.P50Millis <= 0 || got.P99Millis < got.P50Millis || got.PeakRSSBytes <= 0 {
			t.Errorf("result %+v: want a positive rate and peak RSS, and 0 < p50 <= p99", got)
		}
		// Each submission made an item of its own, queued and untouched:
		// the bench's service handles no type.
		phases, actionable := countItems(t, url, mr.ItemType)
		if diff := cmp.Diff(map[wq.Phase]int64{wq.PhaseActive: 200}, phases); diff != "" || actionable != 200 {
			t.Errorf("mr items by phase (-want +got):\n%s\nactionable: %d, want 200", diff, actionable)
		}
	})
}

func TestBenchAllocateAssignsOneIssueAnApplyAndReportsLatencies(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		url := testdb.URL(t, kind)
		var got allocateResult
		runBench(t, &got, "bench", "allocate", "--database", url, "--work", "60", "--sessions", "5", "--calls", "20", "-o", "json")
		if got.Benchmark != "allocate" || got.Database != kind || got.Work != 60 || got.Sessions != 5 || got.Calls != 20 {
			t.Errorf("result %+v: want the allocate benchmark on %s with 60 issues, 5 sessions and 20 calls", got, kind)
		}
		if got.ApplyP50Millis <= 0 || got.ApplyP99Millis < got.ApplyP50Millis || got.DryRunP50Millis <= 0 ||
			got.DryRunP99Millis < got.DryRunP50Millis || got.PeakRSSBytes <= 0 {
			t.Errorf("result %+v: want 0 < p50 <= p99 for both kinds, and a peak RSS", got)
		}
		// Each apply took one issue under a lease of its own; dry runs took
		// none.
		all, err := assemble().openStores(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer all.queue.Close()
		held, err := all.cp.ListLeases(context.Background(), controlplane.LeaseFilter{})
		if err != nil {
			t.Fatal(err)
		}
		works := map[string]bool{}
		for _, l := range held {
			works[l.WorkID] = true
		}
		leases := len(works)
		if leases != 20 {
			t.Errorf("%d issues leased, want one per apply (20)", leases)
		}
	})
}

// bench hostile runs the honest work through every attack asked for and
// reports each honest call under each, and what the attack was answered;
// no honest call fails (its latencies are figures, not asserted here).
func TestBenchHostileReportsHonestCallsUnderEachAttack(t *testing.T) {
	var got hostileResult
	runBench(t, &got, "bench", "hostile", "--duration", "1s", "--agents", "2", "--attackers", "4",
		"--attack", "huge-length", "--attack", "write-loop", "-o", "json")
	if got.Benchmark != "hostile" || got.Agents != 2 || len(got.Attacks) != 2 ||
		got.Attacks[0].Attack != "huge-length" || got.Attacks[1].Attack != "write-loop" {
		t.Fatalf("result %+v: want huge-length then write-loop with 2 agents", got)
	}
	for _, a := range got.Attacks {
		if len(a.Honest) != 4 {
			t.Errorf("%s: %d kinds of honest call, want 4 (heartbeats, gate, submission)", a.Attack, len(a.Honest))
		}
		for _, c := range a.Honest {
			if c.Count == 0 || c.Failures != 0 || c.P99Millis < c.P50Millis {
				t.Errorf("%s: %s: %+v, want calls, none failed, p50 <= p99", a.Attack, c.Call, c)
			}
		}
	}
	if got.Attacks[1].Answers["201"] == 0 {
		t.Errorf("write-loop answered %v, want its submissions taken (201)", got.Attacks[1].Answers)
	}
	if got.Attacks[0].Answers["401"] == 0 {
		t.Errorf("huge-length answered %v, want the GitLab deliveries with a guessed token refused (401)", got.Attacks[0].Answers)
	}
}

func TestBenchAllocateRefusesMoreAppliesThanIssues(t *testing.T) {
	t.Parallel()
	if out, err := runCommand(t, "bench", "allocate", "--work", "5", "--calls", "6"); err == nil || !strings.Contains(err.Error(), "--calls") {
		t.Errorf("--calls beyond --work: %v\n%s", err, out)
	}
}

func TestBenchWithoutADatabaseRunsOnATemporarySQLiteFile(t *testing.T) {
	t.Parallel()
	out, err := runCommand(t, "bench", "engine", "--items", "50", "--workers", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "engine burn-down on sqlite: 50 items, 2 workers") || !strings.Contains(out, "items/s; peak RSS") ||
		!strings.Contains(out, "ms of CPU per 1,000 items") {
		t.Errorf("output does not give the figures:\n%s", out)
	}
}

func TestBenchRefusesAnUnknownOutputFormat(t *testing.T) {
	t.Parallel()
	if out, err := runCommand(t, "bench", "engine", "--items", "1", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("-o xml: %v\n%s", err, out)
	}
}

func TestBenchHelpExplainsItsFlags(t *testing.T) {
	t.Parallel()
	for args, flags := range map[string][]string{
		"bench --help":          {"engine", "submit", "--database", "--output"},
		"bench engine --help":   {"--items", "--workers", "--database", "peak"},
		"bench submit --help":   {"--requests", "--clients", "--database", "p99"},
		"bench allocate --help": {"--work", "--sessions", "--calls", "--database", "p99"},
		"bench hostile --help":  {"--duration", "--agents", "--attackers", "--attack", "slowloris", "p99"},
	} {
		out, err := runCommand(t, strings.Fields(args)...)
		if err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("%s: %v\n%s", args, err, out)
			continue
		}
		for _, f := range flags {
			if !strings.Contains(out, f) {
				t.Errorf("%s does not mention %s", args, f)
			}
		}
	}
}

// The bench type exists only inside bench engine: serve neither
// processes nor accepts it.
func TestServeDoesNotRegisterTheBenchType(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Database = "sqlite://" + filepath.Join(t.TempDir(), "wq.db")
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if types := m.Engine.Types(); slices.Contains(types, benchItemType) {
		t.Errorf("serve's engine knows %v, want no %q", types, benchItemType)
	}
}

func TestBenchEngineWithTwoInstancesWorksEachItemOnce(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		url := testdb.URL(t, kind)
		var got engineResult
		runBench(t, &got, "bench", "engine", "--database", url, "--items", "300", "--workers", "4", "--instances", "2", "-o", "json")
		if got.Instances != 2 || got.Items != 300 || got.OverlappingExecutions != 0 {
			t.Errorf("result %+v: want 2 instances, 300 items and no overlapping execution", got)
		}
		// Each instance was a process of its own, which reported its peak.
		if len(got.InstancePeakRSSBytes) != 2 || slices.Min(got.InstancePeakRSSBytes) <= 0 ||
			got.PeakRSSBytes != slices.Max(got.InstancePeakRSSBytes) {
			t.Errorf("peaks %d of instances %v: want two, the largest reported", got.PeakRSSBytes, got.InstancePeakRSSBytes)
		}
		// And its own CPU time, which the parent adds up.
		if got.ProcessCPUMsPer1000 <= 0 {
			t.Errorf("the instances' CPU per 1,000 items: %v, want their time reported", got.ProcessCPUMsPer1000)
		}
		// And the rate once a tenth of the items were acted on.
		if got.SteadyItemsPerSecond <= 0 {
			t.Errorf("steady rate %v items/s: want the rate after the first tenth reported", got.SteadyItemsPerSecond)
		}
		phases, actionable := countItems(t, url, benchItemType)
		if diff := cmp.Diff(map[wq.Phase]int64{wq.PhaseActive: 300}, phases); diff != "" || actionable != 0 {
			t.Errorf("bench items by phase (-want +got):\n%s\nactionable: %d, want 0", diff, actionable)
		}
	})
}

// --instances 1 runs the one instance as --instances 2 runs each, a
// process of its own, so that the scale-out factor compares instances
// measured the same way; without the flag the engine runs in-process.
func TestBenchEngineWithOneInstanceRunsItAsAProcessOfItsOwn(t *testing.T) {
	url := testdb.URL(t, store.KindSQLite)
	var got engineResult
	runBench(t, &got, "bench", "engine", "--database", url, "--items", "40", "--workers", "2", "--instances", "1", "-o", "json")
	if got.Instances != 1 || got.Items != 40 || got.OverlappingExecutions != 0 {
		t.Errorf("result %+v: want 1 instance, 40 items and no overlapping execution", got)
	}
	if len(got.InstancePeakRSSBytes) != 1 || got.InstancePeakRSSBytes[0] <= 0 {
		t.Errorf("peaks of instances %v: want the one instance's, which only a process of its own reports", got.InstancePeakRSSBytes)
	}
	var inProcess engineResult
	runBench(t, &inProcess, "bench", "engine", "--database", testdb.URL(t, store.KindSQLite), "--items", "40", "--workers", "2", "-o", "json")
	if inProcess.Instances != 1 || len(inProcess.InstancePeakRSSBytes) != 0 {
		t.Errorf("without --instances: %+v, want one engine in this process (no instance peaks)", inProcess)
	}
}

func TestOverlapRecorderCountsOnlyExecutionsOfOneItemAtOnce(t *testing.T) {
	t.Parallel()
	a, b := wq.NewItemID(), wq.NewItemID()
	for _, tt := range []struct {
		name string
		run  func(r *overlapRecorder)
		want int64
	}{
		{"one after the other do not overlap", func(r *overlapRecorder) { r.enter(a)(); r.enter(a)() }, 0},
		{"two items at once do not overlap", func(r *overlapRecorder) { exit := r.enter(a); r.enter(b)(); exit() }, 0},
		{"one item twice at once overlaps", func(r *overlapRecorder) { exit := r.enter(a); r.enter(a)(); exit() }, 1},
		{"one item three times at once overlaps twice", func(r *overlapRecorder) {
			x, y := r.enter(a), r.enter(a)
			r.enter(a)()
			y()
			x()
		}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var now int64
			r := &overlapRecorder{running: map[wq.ItemID]int{}, clock: func() int64 { now++; return now }}
			tt.run(r)
			if r.overlaps != tt.want || len(r.running) != 0 {
				t.Errorf("overlaps %d, want %d; still running %v", r.overlaps, tt.want, r.running)
			}
			// The spans it kept tell the same, as bench engine --instances
			// reads them across processes.
			if got := countOverlaps(r.executions); got != tt.want {
				t.Errorf("countOverlaps of the spans %v = %d, want %d", r.executions, got, tt.want)
			}
		})
	}
}

func TestCountOverlapsComparesOnlySpansOfOneItem(t *testing.T) {
	t.Parallel()
	a, b := wq.NewItemID(), wq.NewItemID()
	for _, tt := range []struct {
		name  string
		spans []execution
		want  int64
	}{
		{"none", nil, 0},
		{"one item, one after the other, touching", []execution{{a, 10, 20}, {a, 20, 30}}, 0},
		{"two items at the same time", []execution{{a, 10, 20}, {b, 10, 20}}, 0},
		{"one item in two instances at once, in any order", []execution{{a, 15, 25}, {b, 0, 100}, {a, 10, 20}}, 1},
		{"a long run covers two later ones", []execution{{a, 0, 100}, {a, 10, 20}, {a, 30, 40}}, 2},
		{"an overlap does not carry over to the next item", []execution{{a, 0, 100}, {b, 50, 60}, {a, 200, 300}}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := countOverlaps(slices.Clone(tt.spans)); got != tt.want {
				t.Errorf("countOverlaps(%v) = %d, want %d", tt.spans, got, tt.want)
			}
		})
	}
}

func TestABenchInstanceGivesUpWhenItsParentGoesAway(t *testing.T) {
	url := testdb.URL(t, "sqlite")
	var stdout, stderr strings.Builder
	cmd := newRootCommand(&stdout, &stderr)
	cmd.SetIn(strings.NewReader("")) // the parent's end of the pipe closed
	cmd.SetArgs([]string{"bench", benchInstanceCommand, "--database", url, "--workers", "2"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), `stdin ended before "go"`) {
			t.Errorf("err = %v, want stdin ended before \"go\"", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the instance still runs a minute after its stdin ended")
	}
	if stdout.String() != "ready\n" {
		t.Errorf("stdout %q, want only ready", stdout.String())
	}
}

func TestBenchEngineWithInstancesHasEachWriteItsOwnProfiles(t *testing.T) {
	url := testdb.URL(t, "sqlite")
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.out"), filepath.Join(dir, "mem.out")
	var got engineResult
	runBench(t, &got, "bench", "engine", "--database", url, "--items", "50", "--workers", "2", "--instances", "2",
		"--cpuprofile", cpu, "--memprofile", mem, "-o", "json")
	// Each instance is a process of its own: instance i wrote FILE.i, a
	// profile (gzipped, as pprof writes them), and the parent none.
	for _, path := range []string{cpu, mem} {
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want no file: the parent profiles nothing", path, err)
		}
		for i := range 2 {
			b, err := os.ReadFile(fmt.Sprintf("%s.%d", path, i))
			if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Errorf("instance %d's profile %s.%d: %d bytes, err %v; want a gzipped pprof profile", i, path, i, len(b), err)
			}
		}
	}
}

func TestABenchInstanceRefusesNonsenseFlags(t *testing.T) {
	t.Parallel()
	url := "sqlite://" + filepath.Join(t.TempDir(), "wq.db")
	for _, args := range [][]string{
		{"--workers", "0"}, {"--claim-batch", "0"}, {"--claim-batch", "1001"}, {"--instance", "-1"},
		{"--action-time", "-1ms"}, {"--action-time", "11s"},
	} {
		var stdout, stderr strings.Builder
		cmd := newRootCommand(&stdout, &stderr)
		cmd.SetIn(strings.NewReader(""))
		cmd.SetArgs(append([]string{"bench", benchInstanceCommand, "--database", url}, args...))
		err := cmd.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), args[0]) || stdout.String() != "" {
			t.Errorf("%v: err %v, stdout %q; want a refusal naming %s before anything starts", args, err, stdout.String(), args[0])
		}
	}
}
