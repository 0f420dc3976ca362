package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

var serverInLog = regexp.MustCompile(`server=(http://127\.0\.0\.1:\d+)`)

// The README's path, in order (issue 55): zero-config serve makes an
// admin token in its directory; serve --config workqueue.example.yaml
// in the same directory (its secrets set to dummy values, no forge
// running) starts and accepts that token, as whoami shows; and git
// ignores everything serve wrote there.
func TestTheExampleConfigAcceptsTheAdminTokenZeroConfigServeMade(t *testing.T) {
	dir := t.TempDir()
	first, lines := startServe(t, dir, "--listen", "127.0.0.1:0")
	logUntil(t, lines, "export WORKQUEUE_TOKEN=$(cat workqueue-admin.token)")
	first.Process.Signal(syscall.SIGTERM)
	if err := first.Wait(); err != nil {
		t.Fatalf("zero-config serve after SIGTERM: %v", err)
	}
	token, err := os.ReadFile(filepath.Join(dir, "workqueue-admin.token"))
	if err != nil {
		t.Fatal(err)
	}

	example, err := os.ReadFile("../../workqueue.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workqueue.example.yaml"), example, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WORKQUEUE_GITEA_TOKEN", "dummy-token")
	t.Setenv("WORKQUEUE_GITEA_WEBHOOK_SECRET", "dummy-secret")
	second, lines := startServe(t, dir, "--config", "workqueue.example.yaml", "--listen", "127.0.0.1:0")
	log := logUntil(t, lines, "workqueue login < workqueue-admin.token")
	m := serverInLog.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no server address in the start log:\n%s", log)
	}
	for _, unwanted := range []string{"warning", "placeholder host"} {
		if strings.Contains(log, unwanted) {
			t.Errorf("the example's start log says %q:\n%s", unwanted, log)
		}
	}
	out, stderr, code := runBinary(t, []string{"WORKQUEUE_URL=" + m[1], "WORKQUEUE_TOKEN=" + strings.TrimSpace(string(token)), "WORKQUEUE_CONFIG="}, "", "whoami")
	if code != exitOK || !strings.Contains(out, "admin") {
		t.Errorf("whoami with the first step's token against the example config: exit %d\n%s%s", code, out, stderr)
	}
	second.Process.Signal(syscall.SIGTERM)
	second.Wait()

	// Everything serve wrote in its working directory is ignored by git.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	patterns := gitignorePatterns(t)
	for _, e := range entries {
		if e.Name() == "workqueue.example.yaml" {
			continue
		}
		if !ignored(patterns, e.Name()) {
			t.Errorf("serve wrote %s, which .gitignore does not ignore (patterns %q)", e.Name(), patterns)
		}
	}
}

// gitignorePatterns are the repository's top-level .gitignore lines.
func gitignorePatterns(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// ignored says whether a name at the repository's top level matches one
// of the patterns (the subset of gitignore's syntax the file uses).
func ignored(patterns []string, name string) bool {
	for _, p := range patterns {
		p = strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/")
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}
