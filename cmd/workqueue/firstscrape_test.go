package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// documentedFamilies are the metric families docs/metrics.md's table
// names.
func documentedFamilies(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(workqueue_[a-z_]+)` \\|")
	var out []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		out = append(out, m[1])
	}
	if len(out) < 20 {
		t.Fatalf("docs/metrics.md's table names %d families: the pattern no longer reads it", len(out))
	}
	return out
}

// Every family docs/metrics.md names is on the first scrape of a serve
// with what the families are about configured (two item types, a forge
// whose webhooks are checked, the control plane), at zero, so that an
// alert on any of them has a series to fire on from the start (issue 53,
// point 5); the scrape stays bounded, every workqueue family on it is
// documented, and promtool finds nothing to say about it.
func TestEveryDocumentedFamilyIsOnServesFirstScrape(t *testing.T) {
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	srv.CreateProject("g/p")
	t.Setenv("WQ_TEST_GITLAB_TOKEN", srv.Token)
	t.Setenv("WQ_TEST_GL_HOOK_SECRET", glHookSecret)
	doc := fmt.Sprintf(`listen: 127.0.0.1:0
database: %q
public_url: http://127.0.0.1:1
handled_types: [mr, example]
metrics: {listen: "127.0.0.1:%d"}
forges: [{name: lab, kind: gitlab, url: %q, token_env: WQ_TEST_GITLAB_TOKEN, webhook_secret_env: WQ_TEST_GL_HOOK_SECRET, requests_per_minute: 600}]
projects: [{match: g/p, forge: lab}]
`, "sqlite://"+filepath.Join(t.TempDir(), "wq.db"), freePort(t), srv.URL)
	cfg, err := config.Parse(strings.NewReader(doc), assemble().known())
	if err != nil {
		t.Fatalf("config: %v\n%s", err, doc)
	}
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })

	resp, err := http.Get("http://" + m.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the first scrape: %d\n%s", resp.StatusCode, body)
	}
	scraped := map[string]bool{}
	samples := 0
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			scraped[strings.Fields(name)[0]] = true
		} else if strings.HasPrefix(line, "workqueue_") {
			samples++
		}
	}
	documented := documentedFamilies(t)
	for _, family := range documented {
		if !scraped[family] {
			t.Errorf("%s is not on the first scrape", family)
		}
	}
	for family := range scraped {
		if strings.HasPrefix(family, "workqueue_") && !slices.Contains(documented, family) {
			t.Errorf("%s is on the scrape but not in docs/metrics.md", family)
		}
	}
	// Bounded: the series grow with the item types' actions and
	// dimensions and the forges, never with items, projects or requests.
	t.Logf("the first scrape: %d workqueue samples in %d families, %d bytes", samples, len(scraped), len(body))
	if samples > 2000 {
		t.Errorf("the first scrape has %d workqueue samples, want at most 2000", samples)
	}
	for _, want := range []string{
		`workqueue_executions_total{action="ensure_mr",item_type="mr",outcome="transient"} 0`,
		`workqueue_dimension_true_duration_seconds_count{dimension="needs_reconcile",item_type="mr"} 0`,
		`workqueue_event_lag_seconds_count{item_type="example"} 0`,
		`workqueue_webhook_deliveries_total{forge="lab",outcome="refused_signature"} 0`,
		`workqueue_webhook_deliveries_total{forge="unknown",outcome="unknown_forge"} 0`,
		`workqueue_webhook_checks_total{forge="lab",outcome="broken"} 0`,
		`workqueue_cp_allocations_total{outcome="no_safe_work"} 0`,
		`workqueue_cp_gate_refusals_total{reason="head_moved"} 0`,
		`workqueue_cp_leases{state="reclaimed"} 0`,
		`workqueue_forge_budget_requests_per_minute{forge="lab"} 600`,
		`workqueue_forge_budget_refusals_total{forge="lab",priority="background",reason="paused"} 0`,
		`workqueue_forge_budget_paused_until_seconds{forge="lab"} 0`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("the first scrape lacks %s", want)
		}
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool is not installed (Debian's prometheus package; scripts/interop installs it): the exposition's lint is skipped")
		return
	}
	lint := exec.Command(promtool, "check", "metrics")
	lint.Stdin = strings.NewReader(string(body))
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
