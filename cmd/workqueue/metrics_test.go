package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
)

// TestMetricsMoveAfterAMergeRequestMergesOnGitea runs serve against the
// real Gitea, has a person merge the pull request of a submitted change
// (the webhook completes the item) and reads /metrics on both listeners.
func TestMetricsMoveAfterAMergeRequestMergesOnGitea(t *testing.T) {
	t.Setenv("WQ_TEST_HOOK_SECRET", hookSecret)
	metricsToken, metricsHash, _ := auth.NewToken()
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	w := startAPI(t, "", func(c *config.Config) {
		// Like startHooked: the webhook, not the sweep or a reconcile,
		// completes the item.
		c.Processing.SweepInterval = config.Duration(time.Hour)
		mrtype.In(c).ReconcileInterval = config.Duration(time.Hour)
		mrtype.In(c).EmptyCheckInterval = config.Duration(time.Hour)
		c.Projects[0].AutoMerge = false
		c.Forges[0].WebhookSecretEnv = "WQ_TEST_HOOK_SECRET"
		c.Auth.Tokens = append(c.Auth.Tokens, config.Token{Name: "prometheus", SHA256: metricsHash, Permissions: []string{"metrics"}})
		c.Metrics.Listen = metricsAddr
	})
	srv := testgitea.Get(t)
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	owner, name, _ := strings.Cut(w.repo, "/")
	if _, _, err := c.CreateRepoHook(owner, name, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: true, Events: []string{"pull_request"},
		Config: map[string]string{"url": w.base + "/webhooks/gitea", "content_type": "json", "secret": hookSecret}}); err != nil {
		t.Fatal(err)
	}

	id, number := w.openPR("workqueue/metrics")
	w.personMerges(number)
	item := w.waitItem(id, "completion by webhook", func(it map[string]any) bool { return it["phase"] != "active" })
	if item["phase"] != "completed" {
		t.Fatalf("item %s/%s, want completed", item["phase"], item["reason"])
	}

	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {w.tokens["read"], http.StatusForbidden}} {
		if status, _ := scrape(t, w.base, tc.token); status != tc.want {
			t.Errorf("GET /metrics with token %t: %d, want %d", tc.token != "", status, tc.want)
		}
	}
	status, body := scrape(t, w.base, metricsToken)
	if status != http.StatusOK {
		t.Fatalf("GET /metrics with the metrics token: %d\n%s", status, body)
	}
	got := parseExposition(t, body)
	for _, want := range []struct {
		series  string // name{label="value",...}, labels a subset of the series'
		atLeast float64
	}{
		{`workqueue_executions_total{item_type="mr",action="ensure_mr",outcome="succeeded"}`, 1},
		{`workqueue_execution_duration_seconds_count{item_type="mr",action="ensure_mr"}`, 1},
		{`workqueue_forge_requests_total{forge="gitea",kind="gitea",operation="POST repos/{}/pulls",status="2xx"}`, 1},
		{`workqueue_forge_request_duration_seconds_count{forge="gitea",kind="gitea"}`, 3},
		{`workqueue_webhook_deliveries_total{forge="gitea",outcome="stored"}`, 2}, // opened, then merged
		{`workqueue_items{item_type="mr",phase="completed"}`, 1},
		{`workqueue_event_lag_seconds_count{item_type="mr"}`, 2},
		{`workqueue_dimension_true_duration_seconds_count{item_type="mr",dimension="needs_mr"}`, 1},
		{`workqueue_sweep_duration_seconds_count`, 1},
	} {
		if v := got.sum(want.series); v < want.atLeast {
			t.Errorf("%s = %v, want at least %v", want.series, v, want.atLeast)
		}
	}
	if v := got.sum(`workqueue_items{item_type="mr",phase="active"}`); v != 0 {
		t.Errorf("active mr items = %v, want 0", v)
	}
	for _, secret := range []string{id, w.repo, "workqueue/metrics"} {
		if strings.Contains(body, secret) {
			t.Errorf("the exposition names %q: labels must stay bounded", secret)
		}
	}

	// metrics.listen serves the same without a token.
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || parseExposition(t, string(plain)).sum(`workqueue_webhook_deliveries_total{outcome="stored"}`) < 2 {
		t.Errorf("metrics.listen: %d\n%s", resp.StatusCode, plain)
	}
}

func scrape(t *testing.T, base, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// exposition is a scrape's samples: series name with labels → value.
type exposition map[string]float64

// parseExposition reads Prometheus's text format, samples only.
func parseExposition(t *testing.T, body string) exposition {
	t.Helper()
	out := exposition{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// sum adds the samples of the series' name whose labels include every
// label of series.
func (e exposition) sum(series string) float64 {
	name, labels, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
	var total float64
	for s, v := range e {
		n, have, _ := strings.Cut(strings.TrimSuffix(s, "}"), "{")
		if n != name {
			continue
		}
		match := true
		for l := range strings.SplitSeq(labels, ",") {
			if l != "" && !strings.Contains(","+have+",", ","+l+",") {
				match = false
			}
		}
		if match {
			total += v
		}
	}
	return total
}
