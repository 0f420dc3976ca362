package main

// bench engine --instances K runs K engines as K processes of this
// binary (the hidden "bench engine-instance"), as K instances of serve
// would run: each with its own Go runtime, heap, connections and SQLite
// writer, so that the scale-out factor and each instance's peak memory
// are what a deployment of K instances would see. The parent seeds the
// items, starts the instances and tells them when to start and when
// every item has been acted on; each instance reports its counts, its
// statistics once idle and the span of every execution on the machine's
// monotonic clock, which the parent compares across instances.
//
// The protocol is lines, instance to parent on its stdout:
//
//	ready                 set up; waiting for go
//	acted N               N actions executed so far (sent when N changes)
//	idle {JSON}           nothing queued or running after stop: statistics, peak RSS
//	executions [JSON]     every execution's item and span; then the instance exits
//
// and parent to instance on its stdin: "go", then "stop". An instance
// whose stdin ends before stop gives up, so that none outlives a parent
// that died.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/internal/machinecpu"
	"github.com/workqueue-dev/workqueue/internal/peakrss"
)

// benchInstanceCommand is the hidden subcommand of bench that runs one
// instance of bench engine --instances.
const benchInstanceCommand = "engine-instance"

// execution is one run of the bench type's action, on the machine's
// monotonic clock (machineNanos).
type execution struct {
	ID    wq.ItemID `json:"id"`
	Start int64     `json:"start"`
	End   int64     `json:"end"`
}

// instanceReport is what an instance says once idle.
type instanceReport struct {
	Actions      int64 `json:"actions"`
	Failures     int64 `json:"failures"`
	Exits        int64 `json:"exits"`
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// CPUNanos is the instance's own CPU time from "go" to idle.
	CPUNanos int64 `json:"cpu_nanos"`
}

func newBenchEngineInstanceCommand(w *world) *cobra.Command {
	var workers, claimBatch, index int
	var actionTime time.Duration
	cmd := &cobra.Command{
		Use:    benchInstanceCommand,
		Short:  "One instance of bench engine --instances, which starts it and talks to it on stdin and stdout",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url, _ := cmd.Flags().GetString("database"); url == "" {
				return usageError{errors.New("--database: required (the database bench engine seeded)")}
			}
			if workers < 1 || index < 0 || claimBatch < 1 || claimBatch > 1000 {
				return usageError{fmt.Errorf("--workers %d, --claim-batch %d, --instance %d: want at least 1, 1 to 1000 and at least 0",
					workers, claimBatch, index)}
			}
			b, err := newBench(cmd, w)
			if err != nil {
				return err
			}
			defer b.close()
			if err := checkActionTime(actionTime); err != nil {
				return err
			}
			b.claimBatch, b.actionTime = claimBatch, actionTime
			return b.engineInstance(cmd.Context(), cmd.InOrStdin(), workers, index)
		},
	}
	cmd.Flags().IntVar(&workers, "workers", 1, "engine workers")
	cmd.Flags().IntVar(&claimBatch, "claim-batch", 1, "items claimed in one statement")
	cmd.Flags().IntVar(&index, "instance", 0, "the instance's number, part of its lease owner")
	cmd.Flags().DurationVar(&actionTime, "action-time", 0, "how long each action takes before its write")
	return cmd
}

// engineInstance is one instance's side of the protocol.
func (b *bench) engineInstance(ctx context.Context, in io.Reader, workers, index int) error {
	all, err := b.world.openStores(ctx, b.url)
	if err != nil {
		return err
	}
	defer all.queue.Close()
	rec := &overlapRecorder{running: map[wq.ItemID]int{}, clock: machineNanos}
	e, err := b.newBenchEngine(ctx, all.queue, workers, index, rec)
	if err != nil {
		return err
	}
	orders := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			orders <- sc.Text()
		}
		close(orders)
	}()
	say := func(format string, args ...any) error {
		_, err := fmt.Fprintf(b.out, format+"\n", args...)
		return err
	}
	next := func(want string) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case o, ok := <-orders:
			if !ok {
				return fmt.Errorf("stdin ended before %q", want)
			}
			if o != want {
				return fmt.Errorf("got %q, want %q", o, want)
			}
			return nil
		}
	}

	debug.FreeOSMemory()
	peakrss.Reset()
	if err := say("ready"); err != nil {
		return err
	}
	if err := next("go"); err != nil {
		return err
	}
	cpu := machinecpu.Process()
	if err := b.startProfiles(); err != nil {
		return err
	}
	if err := e.Start(ctx); err != nil {
		return err
	}
	defer e.Stop(context.WithoutCancel(ctx))
	stopped := make(chan error, 1)
	go func() { stopped <- next("stop") }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	told := int64(-1)
	for running := true; running; {
		select {
		case err := <-stopped:
			if err != nil {
				return err
			}
			running = false
		case <-tick.C:
		}
		if n := e.Stats().ActionsExecuted; n != told {
			if err := say("acted %d", n); err != nil {
				return err
			}
			told = n
		}
	}
	if err := e.WaitIdle(ctx); err != nil {
		return err
	}
	b.stopProfiles()
	st := e.Stats()
	report, _ := json.Marshal(instanceReport{Actions: st.ActionsExecuted, Failures: st.ActionsFailed,
		Exits: st.ItemsExited, PeakRSSBytes: peakrss.Peak(), CPUNanos: int64(machinecpu.Process() - cpu)})
	if err := say("idle %s", report); err != nil {
		return err
	}
	e.Stop(context.WithoutCancel(ctx))
	rec.mu.Lock()
	executions, err := json.Marshal(rec.executions)
	rec.mu.Unlock()
	if err != nil {
		return err
	}
	return say("executions %s", executions)
}

// benchInstance is the parent's handle on one instance.
type benchInstance struct {
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	ready      bool
	acted      int64
	report     *instanceReport
	executions []execution
	done       bool // its executions arrived
}

// instanceLine is a line an instance said, or the end of what it says
// (eof, with the read's error if it was not the end of its output).
type instanceLine struct {
	from int
	text string
	eof  bool
	err  error
}

// engineInstances runs bench engine with instances processes.
func (b *bench) engineInstances(ctx context.Context, items, workers, instances int) (_ engineResult, err error) {
	all, err := b.world.openStores(ctx, b.url)
	if err != nil {
		return engineResult{}, err
	}
	err = b.seedEngine(ctx, all.queue, items)
	all.queue.Close()
	if err != nil {
		return engineResult{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return engineResult{}, fmt.Errorf("find this binary to start its instances: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lines := make(chan instanceLine)
	quit := make(chan struct{}) // closed when nothing reads lines any more
	var readers sync.WaitGroup
	procs := make([]*benchInstance, instances)
	defer func() {
		if err != nil {
			cancel() // kills the instances
		}
		for _, p := range procs {
			if p != nil {
				p.stdin.Close()
			}
		}
		close(quit)
		readers.Wait() // a pipe is read to its end before Wait closes it
		for _, p := range procs {
			if p == nil {
				continue
			}
			if werr := p.cmd.Wait(); werr != nil && err == nil {
				err = fmt.Errorf("instance %d: %w", slices.Index(procs, p), werr)
			}
		}
	}()
	for i := range procs {
		args := []string{"bench", benchInstanceCommand, "--database", b.url,
			"--workers", strconv.Itoa(workers), "--claim-batch", strconv.Itoa(b.claimBatch), "--instance", strconv.Itoa(i),
			"--action-time", b.actionTime.String()}
		for _, p := range [...]struct{ flag, path string }{{"--cpuprofile", b.cpuProfilePath}, {"--memprofile", b.memProfilePath}} {
			if p.path != "" {
				args = append(args, p.flag, fmt.Sprintf("%s.%d", p.path, i))
			}
		}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stderr = b.progress
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return engineResult{}, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return engineResult{}, err
		}
		if err := cmd.Start(); err != nil {
			return engineResult{}, fmt.Errorf("start instance %d: %w", i, err)
		}
		procs[i] = &benchInstance{cmd: cmd, stdin: stdin}
		readers.Go(func() { readInstance(i, stdout, lines, quit) })
	}
	tell := func(order string) error {
		for i, p := range procs {
			if _, err := io.WriteString(p.stdin, order+"\n"); err != nil {
				return fmt.Errorf("instance %d: %w", i, err)
			}
		}
		return nil
	}

	var (
		end        func() measured
		m          measured
		start      time.Time
		lastReport time.Time
		stopped    bool
		// tenth is when the instances together had acted on a tenth of
		// the items, and on how many (steadyRate).
		tenth     time.Time
		tenthDone int64
	)
	count := func(f func(p *benchInstance) bool) (n int) {
		for _, p := range procs {
			if f(p) {
				n++
			}
		}
		return n
	}
	for count(func(p *benchInstance) bool { return p.done }) < instances {
		var l instanceLine
		select {
		case <-ctx.Done():
			return engineResult{}, ctx.Err()
		case l = <-lines:
		}
		p := procs[l.from]
		if l.eof {
			if p.done && l.err == nil {
				continue // it said all it had to say
			}
			if l.err != nil {
				return engineResult{}, fmt.Errorf("instance %d: %w", l.from, l.err)
			}
			return engineResult{}, fmt.Errorf("instance %d ended before it reported its executions", l.from)
		}
		word, rest, _ := strings.Cut(l.text, " ")
		switch {
		case word == "ready" && !p.ready:
			p.ready = true
			if count(func(p *benchInstance) bool { return p.ready }) == instances {
				fmt.Fprintf(b.progress, "burning down with %d instances of %d workers\n", instances, workers)
				if end, err = b.measure(); err != nil {
					return engineResult{}, err
				}
				start = time.Now()
				lastReport = start
				if err := tell("go"); err != nil {
					return engineResult{}, err
				}
			}
		case word == "acted" && end != nil && !stopped:
			n, err := strconv.ParseInt(rest, 10, 64)
			if err != nil || n < p.acted {
				return engineResult{}, fmt.Errorf("instance %d: %q: want a count that does not go down", l.from, l.text)
			}
			p.acted = n
			var done int64
			for _, p := range procs {
				done += p.acted
			}
			now := time.Now()
			if tenth.IsZero() && done*10 >= int64(items) {
				tenth, tenthDone = now, done
			}
			if now.Sub(lastReport) >= 2*time.Second {
				lastReport = now
				b.reportBurnDown(done, items, now.Sub(start))
			}
			if done >= int64(items) {
				stopped = true
				if err := tell("stop"); err != nil {
					return engineResult{}, err
				}
			}
		case word == "acted" && stopped:
			// a count sent before the instance read stop
		case word == "idle" && stopped && p.report == nil:
			p.report = new(instanceReport)
			if err := json.Unmarshal([]byte(rest), p.report); err != nil {
				return engineResult{}, fmt.Errorf("instance %d: idle: %w", l.from, err)
			}
			if count(func(p *benchInstance) bool { return p.report != nil }) == instances {
				m = end() // the last exits come after the last actions
			}
		case word == "executions" && p.report != nil && !p.done:
			if err := json.Unmarshal([]byte(rest), &p.executions); err != nil {
				return engineResult{}, fmt.Errorf("instance %d: executions: %w", l.from, err)
			}
			p.done = true
		default:
			return engineResult{}, fmt.Errorf("instance %d said %.80q out of turn", l.from, l.text)
		}
	}

	var (
		total      engine.Stats
		executions []execution
		peaks      = make([]int64, instances)
		cpu        time.Duration
	)
	for i, p := range procs {
		total.ActionsExecuted += p.report.Actions
		total.ActionsFailed += p.report.Failures
		total.ItemsExited += p.report.Exits
		peaks[i] = p.report.PeakRSSBytes
		cpu += time.Duration(p.report.CPUNanos)
		executions = append(executions, p.executions...)
	}
	if err := checkBurnDown(total, items); err != nil {
		return engineResult{}, err
	}
	if len(executions) != items {
		return engineResult{}, fmt.Errorf("the instances recorded %d executions, want %d", len(executions), items)
	}
	return engineResult{Benchmark: "engine", Database: b.kind, Items: items, Workers: workers, Instances: instances,
		ElapsedSeconds: m.elapsed.Seconds(), ItemsPerSecond: float64(items) / m.elapsed.Seconds(),
		PeakRSSBytes: slices.Max(peaks), InstancePeakRSSBytes: peaks,
		CPUMsPer1000: machinecpu.PerThousand(m.busy, items), ProcessCPUMsPer1000: machinecpu.PerThousand(cpu, items),
		SteadyItemsPerSecond:  steadyRate(int64(items)-tenthDone, start.Add(m.elapsed).Sub(tenth)),
		OverlappingExecutions: countOverlaps(executions)}, nil
}

// steadyRate is n items over d, or 0 when either is not positive: the
// tenth was reached only by the run's last progress report.
func steadyRate(n int64, d time.Duration) float64 {
	if d <= 0 || n <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// readInstance sends what instance i says, line by line, then its end,
// until quit is closed; then it reads the rest to the end.
func readInstance(i int, r io.Reader, lines chan<- instanceLine, quit <-chan struct{}) {
	br := bufio.NewReader(r)
	for {
		text, err := br.ReadString('\n')
		l := instanceLine{from: i, text: strings.TrimSuffix(text, "\n")}
		if err != nil {
			l = instanceLine{from: i, eof: true}
			if !errors.Is(err, io.EOF) {
				l.err = err
			}
		}
		select {
		case lines <- l:
		case <-quit:
			io.Copy(io.Discard, r)
			return
		}
		if l.eof {
			return
		}
	}
}

// countOverlaps counts executions that began while another execution of
// the same item was running, in any instance: overlapRecorder's count,
// across processes.
func countOverlaps(executions []execution) (n int64) {
	slices.SortFunc(executions, func(a, b execution) int {
		if c := bytes.Compare(a.ID[:], b.ID[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.Start, b.Start)
	})
	var runningUntil int64 // the latest end of the item's executions so far
	for i, x := range executions {
		if i == 0 || x.ID != executions[i-1].ID {
			runningUntil = x.End
			continue
		}
		if x.Start < runningUntil {
			n++
		}
		runningUntil = max(runningUntil, x.End)
	}
	return n
}
