package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/budget"
)

func TestOperationElidesEveryNameAndNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/api/v1/repos/team/app/pulls", "POST repos/{}/pulls"},
		{"GET", "/api/v1/repos/team/app/pulls/42", "GET repos/{}/pulls/{}"},
		{"POST", "/api/v1/repos/team/app/pulls/42/merge", "POST repos/{}/pulls/{}/merge"},
		{"GET", "/gitea/api/v1/repos/team/app/contents/dir/secret%2Fname.txt", "GET repos/{}/contents/{}"},
		{"GET", "/api/v1/repos/team/app/compare/main...workqueue/x", "GET repos/{}/compare/{}"},
		{"PUT", "/api/v4/projects/team%2Fapp/merge_requests/7/merge", "PUT projects/{}/merge_requests/{}/merge"},
		{"GET", "/api/v4/projects/team%2Fapp/repository/files/a%2Fb.txt/raw", "GET projects/{}/repository/files/{}"},
		{"GET", "/api/v4/projects/12/jobs/99/trace", "GET projects/{}/jobs/{}/trace"},
		{"GET", "/api/v1/version", "GET version"},
		{"GET", "/team/app.git/info/refs", "GET other"},
		{"BREW", "/api/v1/user", "OTHER user"},
	} {
		if got := Operation(tc.method, tc.path); got != tc.want {
			t.Errorf("Operation(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestANilMetricsDoesNothing(t *testing.T) {
	t.Parallel()
	var m *Metrics
	m.Executed("mr", "ensure_mr", OutcomeSucceeded, time.Second)
	m.DimensionCleared("mr", "needs_mr", time.Second)
	m.EventApplied("mr", time.Second)
	m.Swept(time.Second, 3, nil)
	m.LeaseLost("mr")
	m.JWKSFetched("ok")
	m.WebhookDelivery("gitea", DeliveryStored)
	m.Allocated("assigned")
	m.GateRefused("not_owner")
	m.AuditWritten("s3")
	m.AuditFailed("s3")
	m.AuditDropped("s3", 2)
	m.AuthThrottled()
	m.WatchItems(nil, nil, nil)
	m.ItemType(wq.ItemType{Name: "mr"})
	m.Forges("gitea")
	m.HookChecks([]string{"ok"}, "gitea")
	m.ControlPlane([]string{"assigned"}, []string{"not_owner"}, []string{"active"})
	m.WatchForgeBudget("gitea", budget.New(budget.Options{}))
	m.BudgetWaited("gitea", "foreground", time.Second)
	m.BudgetRefused("gitea", "foreground", budget.RefusedPaused)
	m.BudgetPaused("gitea")
	if rt := m.ForgeTransport("gitea", "gitea", http.DefaultTransport); rt != http.DefaultTransport {
		t.Errorf("a nil Metrics wraps the transport: %T", rt)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("a nil Metrics serves %d, want 404", rec.Code)
	}
}

// exposition scrapes m.
func exposition(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d", rec.Code)
	}
	return rec.Body.String()
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, "\n"+l+"\n") {
			t.Errorf("missing %q", l)
		}
	}
}

func TestTypedMethodsMoveTheirSeries(t *testing.T) {
	t.Parallel()
	m := New()
	m.Executed("mr", "ensure_mr", OutcomeSucceeded, 2*time.Second)
	m.Executed("mr", "ensure_mr", OutcomeTransient, time.Second)
	m.DimensionCleared("mr", "needs_mr", 90*time.Second)
	m.EventApplied("mr", 30*time.Millisecond)
	m.Swept(time.Millisecond, 4, errors.New("down"))
	m.LeaseLost("mr")
	m.JWKSFetched("error")
	m.WebhookDelivery("gitea", DeliveryDuplicate)
	m.Allocated("assigned")
	m.GateRefused("head_moved")
	m.AuditWritten("s3")
	m.AuditFailed("s3")
	m.AuditDropped("s3", 5)
	m.AuthThrottled()
	m.AuthThrottled()
	m.AuthGlobalThrottled()
	wantLines(t, exposition(t, m),
		`workqueue_executions_total{action="ensure_mr",item_type="mr",outcome="succeeded"} 1`,
		`workqueue_executions_total{action="ensure_mr",item_type="mr",outcome="transient"} 1`,
		`workqueue_execution_duration_seconds_sum{action="ensure_mr",item_type="mr",outcome="succeeded"} 2`,
		`workqueue_dimension_true_duration_seconds_bucket{dimension="needs_mr",item_type="mr",le="300"} 1`,
		`workqueue_dimension_true_duration_seconds_bucket{dimension="needs_mr",item_type="mr",le="60"} 0`,
		`workqueue_event_lag_seconds_count{item_type="mr"} 1`,
		`workqueue_sweep_duration_seconds_count 1`,
		`workqueue_sweep_items_found_total 4`,
		`workqueue_sweep_errors_total 1`,
		`workqueue_lease_losses_total{item_type="mr"} 1`,
		`workqueue_jwks_fetches_total{outcome="error"} 1`,
		`workqueue_webhook_deliveries_total{forge="gitea",outcome="duplicate"} 1`,
		`workqueue_cp_allocations_total{outcome="assigned"} 1`,
		`workqueue_cp_gate_refusals_total{reason="head_moved"} 1`,
		`workqueue_audit_entries_written_total{sink="s3"} 1`,
		`workqueue_audit_write_failures_total{sink="s3"} 1`,
		`workqueue_audit_entries_dropped_total{sink="s3"} 5`,
		`workqueue_auth_throttled_total 2`,
		`workqueue_auth_global_throttled_total 1`,
	)
}

func TestForgeTransportCountsByOperationAndStatusClass(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/merge") {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	defer srv.Close()
	m := New()
	c := &http.Client{Transport: m.ForgeTransport("main", "gitea", nil)}
	for _, path := range []string{"/api/v1/repos/a/b/pulls/1", "/api/v1/repos/c/d/pulls/2", "/api/v1/repos/a/b/pulls/1/merge"} {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	dead := &http.Client{Transport: m.ForgeTransport("main", "gitea", nil)}
	if _, err := dead.Get("http://127.0.0.1:1/api/v1/version"); err == nil {
		t.Fatal("a request to a closed port succeeded")
	}
	body := exposition(t, m)
	wantLines(t, body,
		`workqueue_forge_requests_total{forge="main",kind="gitea",operation="GET repos/{}/pulls/{}",status="2xx"} 2`,
		`workqueue_forge_requests_total{forge="main",kind="gitea",operation="GET repos/{}/pulls/{}/merge",status="4xx"} 1`,
		`workqueue_forge_requests_total{forge="main",kind="gitea",operation="GET version",status="error"} 1`,
		`workqueue_forge_request_duration_seconds_count{forge="main",kind="gitea",operation="GET repos/{}/pulls/{}"} 2`,
	)
	if strings.Contains(body, "a/b") {
		t.Error("a repository path reached a label")
	}
}

// fakeCounter counts how often it is read and fails on request.
type fakeCounter struct {
	reads int
	fail  bool
	now   time.Time
}

func (f *fakeCounter) CountItems(ctx context.Context, now time.Time) (wq.ItemCounts, error) {
	f.reads++
	if f.fail {
		return wq.ItemCounts{}, errors.New("database down")
	}
	return wq.ItemCounts{
		Phases:     []wq.PhaseCount{{ItemType: "mr", Phase: wq.PhaseCompleted, Count: 7}},
		Actionable: []wq.ActionableCount{{ItemType: "mr", Count: 2, Oldest: f.now.Add(-90 * time.Second)}},
	}, nil
}

func TestItemCountsAreReadAtScrapeAtMostEvery15s(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	counter := &fakeCounter{now: now}
	m := New()
	m.WatchItems(counter, func() time.Time { return now }, nil)
	want := []string{
		`workqueue_items{item_type="mr",phase="completed"} 7`,
		`workqueue_items_actionable{item_type="mr"} 2`,
		`workqueue_items_oldest_actionable_age_seconds{item_type="mr"} 90`,
	}
	wantLines(t, exposition(t, m), want...)
	counter.fail = true
	wantLines(t, exposition(t, m), want...)
	if counter.reads != 1 {
		t.Errorf("two scrapes within 15s read the store %d times, want 1", counter.reads)
	}
}

// TestEveryDocumentedFamilyIsOnTheFirstScrape: an alert on a family that
// has no series never fires, so every family of docs/metrics.md with a
// known label set is on a fresh process's first scrape, at zero: the
// backlog, executions, dimensions and events of every registered item
// type, the deliveries, hook checks and budgets of every configured
// forge, and the control plane's closed sets. (cmd/workqueue's
// TestEveryDocumentedFamilyIsOnServesFirstScrape checks the whole table
// against a serve.)
func TestEveryDocumentedFamilyIsOnTheFirstScrape(t *testing.T) {
	t.Parallel()
	m := New()
	m.ItemTypes("example")
	m.ItemType(wq.ItemType{Name: "mr", Dimensions: []string{"needs_mr", "needs_reconcile"},
		Executors: map[string]wq.Executor{"ensure_mr": nil, "reconcile_mr": nil}})
	m.WatchItems(emptyCounter{}, nil, nil)
	m.Forges("lab")
	m.HookChecks([]string{"ok", "broken"}, "lab")
	m.ControlPlane([]string{"assigned", "wait"}, []string{"head_moved"}, []string{"active", "expired"})
	m.WatchControlPlane(func(context.Context) (ControlPlaneCounts, error) {
		return ControlPlaneCounts{LeasesByState: map[string]int64{"active": 2}}, nil
	}, nil)
	m.WatchForgeBudget("lab", budget.New(budget.Options{PerMinute: 600}))
	wantLines(t, exposition(t, m),
		`workqueue_audit_entries_written_total{sink="s3"} 0`,
		`workqueue_audit_write_failures_total{sink="dir"} 0`,
		`workqueue_audit_entries_dropped_total{sink="s3"} 0`,
		`workqueue_jwks_fetches_total{outcome="ok"} 0`,
		`workqueue_jwks_fetches_total{outcome="error"} 0`,
		`workqueue_lease_losses_total{item_type="mr"} 0`,
		`workqueue_lease_losses_total{item_type="example"} 0`,
		`workqueue_metrics_store_errors_total{source="items"} 0`,
		`workqueue_metrics_store_errors_total{source="control_plane"} 0`,
		`workqueue_items_actionable{item_type="mr"} 0`,
		`workqueue_items_oldest_actionable_age_seconds{item_type="example"} 0`,
		`workqueue_items{item_type="mr",phase="active"} 0`,
		`workqueue_executions_total{action="ensure_mr",item_type="mr",outcome="lease_lost"} 0`,
		`workqueue_executions_total{action="reconcile_mr",item_type="mr",outcome="succeeded"} 0`,
		`workqueue_execution_duration_seconds_count{action="reconcile_mr",item_type="mr",outcome="succeeded"} 0`,
		`workqueue_dimension_true_duration_seconds_count{dimension="needs_reconcile",item_type="mr"} 0`,
		`workqueue_event_lag_seconds_count{item_type="mr"} 0`,
		`workqueue_webhook_deliveries_total{forge="lab",outcome="stored"} 0`,
		`workqueue_webhook_deliveries_total{forge="unknown",outcome="unknown_forge"} 0`,
		`workqueue_webhook_checks_total{forge="lab",outcome="broken"} 0`,
		`workqueue_webhook_broken_projects{forge="lab"} 0`,
		`workqueue_cp_allocations_total{outcome="wait"} 0`,
		`workqueue_cp_allocations_total{outcome="error"} 0`,
		`workqueue_cp_gate_refusals_total{reason="head_moved"} 0`,
		`workqueue_cp_leases{state="active"} 2`,
		`workqueue_cp_leases{state="expired"} 0`,
		`workqueue_forge_budget_requests_per_minute{forge="lab"} 600`,
		`workqueue_forge_budget_tokens{forge="lab"} 30`,
		`workqueue_forge_budget_paused_until_seconds{forge="lab"} 0`,
		`workqueue_forge_budget_pauses_total{forge="lab"} 0`,
		`workqueue_forge_budget_wait_seconds_count{forge="lab",priority="background"} 0`,
		`workqueue_forge_budget_refusals_total{forge="lab",priority="foreground",reason="deadline"} 0`,
	)
}

// A forge's budget is read when scraped: its ceiling, its tokens (+Inf
// without a ceiling) and the end of a pause; what it did to requests is
// counted as it happens.
func TestTheBudgetsStateIsReadWhenScraped(t *testing.T) {
	t.Parallel()
	m := New()
	clock := clockwork.NewFakeClockAt(time.Unix(1_800_000_000, 0))
	forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer forge.Close()
	b := budget.New(budget.Options{Forge: "lab", Clock: clock, Metrics: m})
	m.WatchForgeBudget("lab", b)
	client := &http.Client{Transport: b.Transport(m.ForgeTransport("lab", "gitlab", nil))}
	for range 3 {
		resp, err := client.Get(forge.URL + "/api/v4/projects")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	wantLines(t, exposition(t, m),
		`workqueue_forge_budget_requests_per_minute{forge="lab"} 0`,
		`workqueue_forge_budget_tokens{forge="lab"} +Inf`,
		`workqueue_forge_budget_paused_until_seconds{forge="lab"} 1.80000003e+09`,
		`workqueue_forge_budget_pauses_total{forge="lab"} 1`,
		`workqueue_forge_budget_wait_seconds_count{forge="lab",priority="foreground"} 1`,
		`workqueue_forge_budget_refusals_total{forge="lab",priority="foreground",reason="paused"} 2`,
		// Only the request sent is a forge request.
		`workqueue_forge_requests_total{forge="lab",kind="gitlab",operation="GET projects",status="4xx"} 1`,
	)
}

type emptyCounter struct{}

func (emptyCounter) CountItems(context.Context, time.Time) (wq.ItemCounts, error) {
	return wq.ItemCounts{}, nil
}

// TestAnOpenMetricsScrapeGetsOpenMetrics: docs/metrics.md promises
// OpenMetrics to a scraper that asks for it.
func TestAnOpenMetricsScrapeGetsOpenMetrics(t *testing.T) {
	t.Parallel()
	m := New()
	for accept, want := range map[string]string{
		"application/openmetrics-text; version=1.0.0; charset=utf-8,text/plain;version=0.0.4;q=0.5": "application/openmetrics-text",
		"text/plain": "text/plain; version=0.0.4",
	} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, req)
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, want) {
			t.Errorf("Accept %s: Content-Type %q, want %s", accept, ct, want)
		}
		if strings.HasPrefix(want, "application/openmetrics") && !strings.HasSuffix(rec.Body.String(), "# EOF\n") {
			t.Errorf("an OpenMetrics exposition ends with # EOF; got …%s", rec.Body.String()[max(0, rec.Body.Len()-40):])
		}
	}
}
