package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the binary the tests built: each run would otherwise
// leave some 50 MB in the temporary directory (issue 29).
func TestMain(m *testing.M) {
	// bench engine --instances starts this binary as its instances
	// (os.Executable): the test binary runs the command line then.
	if len(os.Args) > 2 && os.Args[1] == "bench" && os.Args[2] == benchInstanceCommand {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// binary builds workqueue once per test run, into a directory TestMain
// removes.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "workqueue-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "workqueue")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// serveProcess starts `workqueue serve --config cfg` and returns it with
// its captured log.
func serveProcess(t *testing.T, cfg string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	cmd := exec.Command(binary(t), "serve", "--config", cfg)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, &log
}

// waitFor polls the items until cond holds for the tally, or fails after
// timeout. It polls because the process under test is another process.
func waitFor(t *testing.T, s wq.Store, ids []wq.ItemID, timeout time.Duration, what string, cond func(completed, leased int) bool) (int, int) {
	t.Helper()
	tally := eventually.Value(t, timeout, what, func() ([2]int, bool) {
		// An item is held while it has a lease owner: a killed process
		// leaves its owner in place until another claims the item, so the
		// count does not depend on how long this poll takes.
		var completedLeased [2]int
		for _, id := range ids {
			it, err := s.GetItem(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if it.Phase == wq.PhaseCompleted {
				completedLeased[0]++
			} else if it.LeaseOwner != "" {
				completedLeased[1]++
			}
		}
		return completedLeased, cond(completedLeased[0], completedLeased[1])
	})
	return tally[0], tally[1]
}

func TestServeKilledMidProcessingLosesNoItem(t *testing.T) {
	const items, steps = 100, 5
	for _, kind := range testdb.Kinds {
		t.Run(kind, func(t *testing.T) {
			url := testdb.URL(t, kind)
			s := testdb.OpenURL(t, url)
			ids := make([]wq.ItemID, items)
			for i := range ids {
				it, err := s.CreateItem(context.Background(), example.New(steps), time.Now())
				if err != nil {
					t.Fatal(err)
				}
				ids[i] = it.ID
			}
			cfg := filepath.Join(t.TempDir(), "workqueue.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf(`
database: %q
listen: 127.0.0.1:0
handled_types: [example]
processing: {workers: 4, lease: 2s, sweep_interval: 200ms}
example: {step_delay: 20ms}
`, url)), 0o600)

			first, log := serveProcess(t, cfg)
			waitFor(t, s, ids, 30*time.Second, "items mid-processing", func(completed, leased int) bool {
				return completed >= 5 && leased >= 1 && completed < items
			})
			first.Process.Signal(syscall.SIGKILL)
			first.Wait()
			completed, leased := waitFor(t, s, ids, time.Second, "the kill", func(int, int) bool { return true })
			if leased == 0 || completed == items {
				t.Fatalf("the kill left %d completed and %d leased; the test needs items mid-processing\n%s", completed, leased, log)
			}
			t.Logf("killed with %d completed and %d held under lease", completed, leased)

			second, log2 := serveProcess(t, cfg)
			waitFor(t, s, ids, 60*time.Second, "every item completed after restart", func(completed, _ int) bool {
				return completed == items
			})
			for _, id := range ids {
				it, _ := s.GetItem(context.Background(), id)
				if it.Phase != wq.PhaseCompleted || it.Reason != "done" || it.Actionable || len(it.Dimensions) != steps {
					t.Fatalf("item %s: %+v", id, it)
				}
				for k, d := range it.Dimensions {
					if d.Status != wq.StatusFalse {
						t.Fatalf("item %s: step %s never ran", id, k.Variant)
					}
				}
			}
			second.Process.Signal(syscall.SIGTERM)
			if err := second.Wait(); err != nil {
				t.Errorf("serve after SIGTERM: %v\n%s", err, log2)
			}
		})
	}
}
