package demotest

import (
	"bytes"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer collects the demo's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// processesMentioning returns the command lines of the live processes that
// name dir: the Gitea (its app.ini), the service (its configuration) and
// the builds of a demo whose files are under dir.
func processesMentioning(t *testing.T, dir string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 { // gone, or a zombie
			continue
		}
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, dir) {
			found = append(found, filepath.Base(filepath.Dir(p))+": "+cmd) // "pid: command line"
		}
	}
	return found
}

// groupMembers returns the running processes of process group pgid (a
// zombie is not running: where nothing reaps it, it stays).
func groupMembers(t *testing.T, pgid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		// pid (comm) state ppid pgrp ...
		fields := strings.Fields(s[strings.LastIndex(s, ")")+1:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			found = append(found, s[:strings.LastIndex(s, ")")+1])
		}
	}
	return found
}

// The demo's signal handling (issue 55): one SIGINT to the demo's process
// group, as a terminal's Ctrl-C sends it, during a step, stops everything
// the demo started, exits 130 without an error of the shell's, and runs
// nothing after that step. WORKQUEUE_DEMO_PAUSE holds the demo at the
// start of a step, inside the step's own process group, so that the signal
// lands there every time.
func TestDemoInterruptStopsEverything(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pause      string // the step the signal interrupts
		gitea      bool   // whether Gitea runs by then (it needs the cached binary)
		notReached string // the next step's line, which must not appear
	}{
		{pause: "gitea", notReached: "demo repository:"},
		{pause: "build", gitea: true, notReached: "starting workqueue serve"},
	} {
		t.Run(tc.pause, func(t *testing.T) {
			if tc.gitea {
				// scripts/test builds it (scripts/gitea start) before go
				// test runs; here it is only started from the cache.
				if out, err := exec.Command(filepath.Join(root, "scripts/gitea"), "path").CombinedOutput(); err != nil {
					if os.Getenv("CI") != "" {
						t.Fatalf("scripts/gitea path: %v: %s (scripts/test builds Gitea before the tests)", err, out)
					}
					t.Skipf("Gitea is not built (scripts/gitea build): %s", out)
				}
			}
			tmp := t.TempDir()
			// A SIGINT the demo inherits as ignored (go test started in the
			// background of a script) could not be trapped: while the demo
			// starts, this process handles SIGINT, so that the demo starts
			// with its default action whatever this process inherited.
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt)
			defer signal.Stop(sig)

			var out lockedBuffer
			cmd := exec.Command("bash", filepath.Join(root, "scripts/demo"))
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "WORKQUEUE_DEMO_PAUSE="+tc.pause)
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, as a terminal's job
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { // if the test fails half-way
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				for _, p := range processesMentioning(t, tmp) {
					if pid, err := strconv.Atoi(p[:strings.Index(p, ":")]); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})

			deadline := time.After(3 * time.Minute)
		wait:
			for !strings.Contains(out.String(), "== paused at "+tc.pause) {
				select {
				case err := <-done:
					t.Fatalf("the demo ended (%v) before its pause at %s:\n%s", err, tc.pause, out.String())
				case <-deadline:
					t.Fatalf("no pause at %s within 3 minutes:\n%s", tc.pause, out.String())
				case <-time.After(100 * time.Millisecond):
					continue wait
				}
			}
			if tc.gitea && !strings.Contains(strings.Join(processesMentioning(t, tmp), "\n"), "custom/conf/app.ini") {
				t.Fatalf("no Gitea running at the pause, nothing to stop:\n%s", out.String())
			}

			start := time.Now()
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
					t.Fatalf("exit: %v, want exit status 130:\n%s", err, out.String())
				}
			case <-time.After(time.Minute):
				t.Fatalf("the demo did not exit within a minute of one SIGINT:\n%s", out.String())
			}
			t.Logf("exited 130 %v after SIGINT", time.Since(start).Round(time.Millisecond))

			if left := processesMentioning(t, tmp); len(left) > 0 {
				t.Errorf("still running after the demo exited:\n%s", strings.Join(left, "\n"))
			}
			if left := groupMembers(t, cmd.Process.Pid); len(left) > 0 {
				t.Errorf("the demo's process group still has running processes: %v", left)
			}
			got := out.String()
			if strings.Contains(got, tc.notReached) {
				t.Errorf("the step after %s ran (%q):\n%s", tc.pause, tc.notReached, got)
			}
			// bash's "scripts/demo: line 12: ...", its job reports, Go's.
			if bad := regexp.MustCompile(`line [0-9]+:|Terminated|Killed|command not found|panic:|connection refused`).FindString(got); bad != "" {
				t.Errorf("the output has %q, a shell's or an internal error:\n%s", bad, got)
			}
			if !strings.Contains(got, "interrupted: stopping what the demo started") {
				t.Errorf("the demo did not say it was stopping:\n%s", got)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
				t.Errorf("the demo's directory was left behind: %v", entries)
			}
		})
	}
}

// The stop command a --keep run prints (scripts/demo stop DIR) stops
// exactly the demo's processes, found by their command lines: after Gitea
// restarted gracefully under a new pid (it does on SIGHUP), the new one,
// and it says which pid it stopped.
func TestDemoStopFindsRestartedGitea(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(root, "scripts/gitea"), "path").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("scripts/gitea path: %v: %s (scripts/test builds Gitea before the tests)", err, out)
		}
		t.Skipf("Gitea is not built (scripts/gitea build): %s", out)
	}
	dir := filepath.Join(t.TempDir(), "workqueue-demo.test")
	start := exec.Command(filepath.Join(root, "scripts/gitea"), "start", filepath.Join(dir, "gitea"))
	start.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // as the demo starts it
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("scripts/gitea start: %v\n%s", err, out)
	}
	gitea := func() []int {
		var pids []int
		for _, p := range processesMentioning(t, dir) {
			if pid, err := strconv.Atoi(p[:strings.Index(p, ":")]); err == nil && strings.Contains(p, "custom/conf/app.ini") {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	t.Cleanup(func() {
		for _, pid := range gitea() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	first := gitea()
	if len(first) != 1 {
		t.Fatalf("Gitea processes after the start: %v", first)
	}
	if err := syscall.Kill(first[0], syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var restarted []int
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		restarted = gitea()
		if len(restarted) == 1 && restarted[0] != first[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Gitea did not restart under a new pid after SIGHUP: before %v, now %v", first, restarted)
		}
	}

	out, err := exec.Command(filepath.Join(root, "scripts/demo"), "stop", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/demo stop: %v\n%s", err, out)
	}
	if want := "stopped the demo's Gitea (pid " + strconv.Itoa(restarted[0]) + ")"; !strings.Contains(string(out), want) {
		t.Errorf("scripts/demo stop said %q, want %q", out, want)
	}
	if left := processesMentioning(t, dir); len(left) > 0 {
		t.Errorf("still running after scripts/demo stop:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("scripts/demo stop left %s (stat: %v)", dir, err)
	}
}
