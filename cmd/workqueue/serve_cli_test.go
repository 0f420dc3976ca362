package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServe starts the built binary's serve with args in dir and
// returns it with a channel of its log lines (stderr).
func startServe(t *testing.T, dir string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WORKQUEUE_CONFIG=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines
}

// logUntil reads log lines until one contains each of want, and returns
// the lines read; it fails if the log ends first or a minute passes.
func logUntil(t *testing.T, lines <-chan string, want ...string) string {
	t.Helper()
	var read strings.Builder
	deadline := time.After(time.Minute)
	for len(want) > 0 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the log ended without %q:\n%s", want, read.String())
			}
			read.WriteString(line + "\n")
			for i := 0; i < len(want); i++ {
				if strings.Contains(line, want[i]) {
					want = append(want[:i], want[i+1:]...)
					i--
				}
			}
		case <-deadline:
			t.Fatalf("no %q in a minute:\n%s", want, read.String())
		}
	}
	return read.String()
}

// Zero-config serve says at start that it processes nothing, what to
// configure, and how to use the admin token it wrote (issue 29, trap 4).
func TestZeroConfigServeSaysItProcessesNothingAndHowToUseItsToken(t *testing.T) {
	dir := t.TempDir()
	cmd, lines := startServe(t, dir, "--listen", "127.0.0.1:0")
	log := logUntil(t, lines, "this instance processes no items", "export WORKQUEUE_TOKEN=$(cat workqueue-admin.token)")
	for _, want := range []string{"configure them", "workqueue.example.yaml", "/ui/", "workqueue login < workqueue-admin.token"} {
		if !strings.Contains(log, want) {
			t.Errorf("the start log does not say %q:\n%s", want, log)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v", err)
	}
}

// serve on a busy port fails before it makes anything (issue 29, trap
// 5): no database, no admin token file, no audit directory; the error
// names the address and exits 3.
func TestServeOnABusyPortFailsBeforeCreatingAnything(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	cmd := exec.Command(binary(t), "serve", "--listen", busy.Addr().String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WORKQUEUE_CONFIG=")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitTransport || !strings.Contains(string(out), "address already in use") {
		t.Errorf("exit %d (%v), want %d naming the busy address:\n%s", code, err, exitTransport, out)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Errorf("serve left %s behind", e.Name())
	}
}
