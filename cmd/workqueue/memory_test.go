package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/peakrss"
)

// MemoryCeiling is the documented bound on serve's resident memory under
// hostile request bodies (docs/DESIGN.md, "Request bodies and memory"): what the bodies
// in flight may hold (64 MiB), their decoding, and the process itself.
const MemoryCeiling = 256 << 20

// Hostile bodies cannot take the process's memory (issue 28, defect 6):
// a serve process is sent, at once, submissions of the largest size made
// of millions of nulls in file_actions, millions of labels, one huge
// content string and deep nesting, twice over; each is refused, and the
// process's peak resident memory (VmHWM), read from /proc, stays under
// MemoryCeiling. Before the bounds one such body took it to 1.9 GiB.
func TestHostileBodiesKeepServeUnderItsMemoryCeiling(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs Linux's /proc to read the peak resident memory")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	tok, hash, _ := auth.NewToken()
	cfg := filepath.Join(t.TempDir(), "workqueue.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
database: sqlite://%s
listen: %s
handled_types: [mr]
forges: [{name: gitea, kind: gitea, url: "http://127.0.0.1:9", token_env: WQ_MEMORY_TEST_TOKEN}]
projects: [{match: "team/**", forge: gitea}]
auth: {tokens: [{name: bot, sha256: %q, permissions: [submit, read]}]}
`, filepath.Join(t.TempDir(), "wq.db"), addr, hash)), 0o600)
	t.Setenv("WQ_MEMORY_TEST_TOKEN", "unused")
	cmd, log := serveProcess(t, cfg)
	eventually.Value(t, 30*time.Second, "serve to listen", func() (bool, bool) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return true, err == nil && resp.StatusCode == http.StatusOK
	})
	const size = 31 << 20
	head := `{"item_type":"mr","forge":"gitea","project":"team/app","source_branch":"workqueue/m","target_branch":"main","title":"T",`
	fill := func(prefix, unit, suffix string) string {
		n := (size - len(head) - len(prefix) - len(suffix)) / len(unit)
		return head + prefix + strings.TrimSuffix(strings.Repeat(unit, n), ",") + suffix
	}
	bodies := map[string]string{
		"nulls":   fill(`"file_actions":[`, "null,", `]}`),
		"labels":  fill(`"file_actions":[],"labels":[`, `"x",`, `]}`),
		"content": fill(`"file_actions":[{"action":"create","file_path":"big.txt","content":"`, "a", `"}]}`),
		"nesting": head + `"file_actions":` + strings.Repeat("[", size/2-len(head)) + strings.Repeat("]", size/2-len(head)) + `}`,
	}
	before := peakrss.PeakOf(cmd.Process.Pid)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[string][]int{}
	for range 2 {
		for name, body := range bodies {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", "http://"+addr+"/api/v1/items", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				status := 0
				if err == nil {
					status = resp.StatusCode
					resp.Body.Close()
				}
				mu.Lock()
				statuses[name] = append(statuses[name], status)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for name, got := range statuses {
		for _, status := range got {
			if status != http.StatusUnprocessableEntity && status != http.StatusRequestEntityTooLarge && status != http.StatusServiceUnavailable {
				t.Errorf("%s: answered %d, want a refusal (422, 413, or 503 while others are handled)", name, status)
			}
		}
	}
	peak := peakrss.PeakOf(cmd.Process.Pid)
	t.Logf("serve's peak resident memory: %d MiB before, %d MiB after %d hostile bodies of %d MiB (ceiling %d MiB); answers %v",
		before>>20, peak>>20, 2*len(bodies), size>>20, MemoryCeiling>>20, statuses)
	if peak == 0 {
		t.Fatal("no VmHWM for serve in /proc")
	}
	if peak > MemoryCeiling {
		t.Errorf("serve's peak resident memory reached %d MiB, above the documented ceiling of %d MiB\n%s", peak>>20, MemoryCeiling>>20, log)
	}
}
