package metrics

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/workqueue-dev/workqueue/forge/budget"
)

// Each forge's budget (forge/budget): its state read at scrape time, and
// what it did to requests counted as it happens.

var (
	budgetCeilingDesc = prometheus.NewDesc("workqueue_forge_budget_requests_per_minute",
		"The forge's ceiling of requests in any minute, all callers together (forges[].requests_per_minute; 0: none).",
		[]string{"forge"}, nil)
	budgetTokensDesc = prometheus.NewDesc("workqueue_forge_budget_tokens",
		"Requests to the forge that may go at once before the ceiling makes the next one wait (+Inf without a ceiling).",
		[]string{"forge"}, nil)
	budgetPausedDesc = prometheus.NewDesc("workqueue_forge_budget_paused_until_seconds",
		"Unix time at which the pause the forge's rate limit put on every caller ends (0: not paused).",
		[]string{"forge"}, nil)
)

// budgetCollector reports the state of every watched budget.
type budgetCollector struct {
	mu      sync.Mutex
	budgets map[string]interface{ State() budget.State }
}

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- budgetCeilingDesc
	ch <- budgetTokensDesc
	ch <- budgetPausedDesc
}

func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	forges := make([]string, 0, len(c.budgets))
	for f := range c.budgets {
		forges = append(forges, f)
	}
	budgets := c.budgets
	c.mu.Unlock()
	slices.Sort(forges)
	for _, f := range forges {
		s := budgets[f].State()
		tokens := s.Tokens
		if s.PerMinute == 0 {
			tokens = math.Inf(1)
		}
		paused := 0.0
		if !s.PausedUntil.IsZero() {
			paused = float64(s.PausedUntil.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(budgetCeilingDesc, prometheus.GaugeValue, float64(s.PerMinute), f)
		ch <- prometheus.MustNewConstMetric(budgetTokensDesc, prometheus.GaugeValue, tokens, f)
		ch <- prometheus.MustNewConstMetric(budgetPausedDesc, prometheus.GaugeValue, paused, f)
	}
}

// WatchForgeBudget reports the budget of the configured forge from the
// first scrape: its state (read at scrape time), and its waits,
// refusals and pauses at zero until the budget reports them.
func (m *Metrics) WatchForgeBudget(forge string, b interface{ State() budget.State }) {
	if m == nil || b == nil {
		return
	}
	m.budgets.mu.Lock()
	m.budgets.budgets[forge] = b
	m.budgets.mu.Unlock()
	for _, p := range budget.Priorities {
		m.budgetWaits.WithLabelValues(forge, p.String())
		for _, reason := range budget.RefusalReasons {
			m.budgetRefusals.WithLabelValues(forge, p.String(), reason)
		}
	}
	m.budgetPauses.WithLabelValues(forge)
}

// BudgetWaited observes how long a request to the forge waited for its
// turn under the budget before it was sent (budget.Metrics).
func (m *Metrics) BudgetWaited(forge, priority string, d time.Duration) {
	if m == nil {
		return
	}
	m.budgetWaits.WithLabelValues(forge, priority).Observe(max(d, 0).Seconds())
}

// BudgetRefused counts a request the budget answered itself, without
// sending it (budget.Metrics).
func (m *Metrics) BudgetRefused(forge, priority, reason string) {
	if m == nil {
		return
	}
	m.budgetRefusals.WithLabelValues(forge, priority, reason).Inc()
}

// BudgetPaused counts an answer of the forge that paused every caller
// (budget.Metrics).
func (m *Metrics) BudgetPaused(forge string) {
	if m == nil {
		return
	}
	m.budgetPauses.WithLabelValues(forge).Inc()
}
