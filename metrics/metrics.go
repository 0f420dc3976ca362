package metrics

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/workqueue-dev/workqueue/forge/budget"
)

// Metrics owns the process's registry and every collector. Every method
// is safe on a nil *Metrics (metrics off): it does nothing.
type Metrics struct {
	reg *prometheus.Registry

	executions        *prometheus.CounterVec
	executionSeconds  *prometheus.HistogramVec
	dimensionTrue     *prometheus.HistogramVec
	eventLag          *prometheus.HistogramVec
	sweepSeconds      prometheus.Histogram
	sweepItems        prometheus.Counter
	sweepErrors       prometheus.Counter
	leaseLosses       *prometheus.CounterVec
	forgeRequests     *prometheus.CounterVec
	forgeSeconds      *prometheus.HistogramVec
	jwksFetches       *prometheus.CounterVec
	webhookDeliveries *prometheus.CounterVec
	webhookChecks     *prometheus.CounterVec
	webhookBroken     *prometheus.GaugeVec
	allocations       *prometheus.CounterVec
	gateRefusals      *prometheus.CounterVec
	auditWritten      *prometheus.CounterVec
	auditFailed       *prometheus.CounterVec
	auditDropped      *prometheus.CounterVec
	storeErrors       *prometheus.CounterVec
	authThrottled     prometheus.Counter
	authGlobal        prometheus.Counter
	budgetWaits       *prometheus.HistogramVec
	budgetRefusals    *prometheus.CounterVec
	budgetPauses      *prometheus.CounterVec
	budgets           *budgetCollector // the forges' budgets (WatchForgeBudget)

	mu          sync.Mutex
	itemTypes   []string // ItemTypes: reported with zeros before any item of theirs exists
	leaseStates []string // ControlPlane: reported with zeros before any lease is in them
}

// Execution outcomes (Executed).
const (
	OutcomeSucceeded  = "succeeded"  // the action returned no error
	OutcomeFailed     = "failed"     // an error that counts as an attempt (or fails the item)
	OutcomeTransient  = "transient"  // an error expected to pass (network, 5xx, 429)
	OutcomeSuperseded = "superseded" // newer work arrived; the write was dropped
	OutcomeLeaseLost  = "lease_lost" // another worker owns the item now
)

// Webhook delivery outcomes (WebhookDelivery).
const (
	DeliveryStored           = "stored"            // an event was stored for an item
	DeliveryDuplicate        = "duplicate"         // the delivery was stored before
	DeliveryIgnored          = "ignored"           // verified, but no active item is concerned (or the event is not read)
	DeliveryRefusedSignature = "refused_signature" // bad signature or token
	DeliveryInvalid          = "invalid"           // malformed
	DeliveryUnknownForge     = "unknown_forge"     // no forge of that name (forge label "unknown")
	DeliveryError            = "error"             // anything else (the store failed)
)

// New returns metrics on a registry of their own (not Prometheus's global
// default), with the Go runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := factory{reg}
	m := &Metrics{
		reg: reg,
		executions: f.counter("workqueue_executions_total",
			"Actions executed, by item type, action and outcome (succeeded, failed, transient, superseded, lease_lost).",
			"item_type", "action", "outcome"),
		executionSeconds: f.histogram("workqueue_execution_duration_seconds",
			"How long an action's executor ran, by item type, action and outcome.",
			forgeBuckets, "item_type", "action", "outcome"),
		dimensionTrue: f.histogram("workqueue_dimension_true_duration_seconds",
			"Time a dimension spent true (its action needed) before a write set it false, by item type and dimension; measured from the row's last write as true, or the item's creation for a missing row.",
			longBuckets, "item_type", "dimension"),
		eventLag: f.histogram("workqueue_event_lag_seconds",
			"Time from a webhook delivery's receipt to its event being applied to the item, by item type.",
			forgeBuckets, "item_type"),
		sweepSeconds: f.plainHistogram("workqueue_sweep_duration_seconds",
			"How long one sweep's query for due items took.", prometheus.DefBuckets),
		sweepItems: f.plainCounter("workqueue_sweep_items_found_total",
			"Due items the sweep found and handed to the workers."),
		sweepErrors: f.plainCounter("workqueue_sweep_errors_total", "Sweeps that failed."),
		leaseLosses: f.counter("workqueue_lease_losses_total",
			"Item loops that found their lease lost (a heartbeat or a fenced write refused), by item type.", "item_type"),
		forgeRequests: f.counter("workqueue_forge_requests_total",
			"HTTP requests to forges, by configured forge, kind, operation (method and API path with names elided) and status class (2xx..5xx, error).",
			"forge", "kind", "operation", "status"),
		forgeSeconds: f.histogram("workqueue_forge_request_duration_seconds",
			"Latency of HTTP requests to forges, to the response headers, by forge, kind and operation.",
			forgeBuckets, "forge", "kind", "operation"),
		jwksFetches: f.counter("workqueue_jwks_fetches_total",
			"Fetches of an issuer's JSON Web Key Set, by outcome (ok, error).", "outcome"),
		webhookDeliveries: f.counter("workqueue_webhook_deliveries_total",
			"Webhook deliveries, by forge and outcome (stored, duplicate, ignored, refused_signature, invalid, unknown_forge, error).",
			"forge", "outcome"),
		webhookChecks: f.counter("workqueue_webhook_checks_total",
			"Checks of a project's webhook by serve (hooks.check_interval), by forge and outcome (ok, repaired, broken: found wrong and not repaired, error: the forge did not answer).",
			"forge", "outcome"),
		webhookBroken: f.gauge("workqueue_webhook_broken_projects",
			"Projects whose webhook the last check found wrong and left so (hooks.repair off, or the repair failed), by forge.", "forge"),
		allocations: f.counter("workqueue_cp_allocations_total",
			"Control plane allocation answers, by outcome (assigned, preview, wait, no_safe_work, error).", "outcome"),
		gateRefusals: f.counter("workqueue_cp_gate_refusals_total",
			"Gate checks that refused a mutation, by reason.", "reason"),
		auditWritten: f.counter("workqueue_audit_entries_written_total",
			"Audit entries a sink accepted, by sink.", "sink"),
		auditFailed: f.counter("workqueue_audit_write_failures_total",
			"Audit sink writes that failed (entries kept for a retry or dropped), by sink.", "sink"),
		auditDropped: f.counter("workqueue_audit_entries_dropped_total",
			"Audit entries a sink gave up on and lost, by sink.", "sink"),
		storeErrors: f.counter("workqueue_metrics_store_errors_total",
			"Scrape-time store counts that failed (the last values are kept), by source (items, control_plane).", "source"),
		authThrottled: f.plainCounter("workqueue_auth_throttled_total",
			"Failed authentication attempts answered 429 because their network prefix, or all addresses together, failed too often (auth.failure_limit, auth.failure_global_limit)."),
		authGlobal: f.plainCounter("workqueue_auth_global_throttled_total",
			"Failed authentication attempts answered 429 while the failures of all addresses together were past their budget (auth.failure_global_limit)."),
		budgetWaits: f.histogram("workqueue_forge_budget_wait_seconds",
			"How long requests to a forge waited for their turn under its budget before being sent, by forge and priority (foreground: writes and the reads an event or a caller waits for; background: periodic sweeps).",
			forgeBuckets, "forge", "priority"),
		budgetRefusals: f.counter("workqueue_forge_budget_refusals_total",
			"Requests to a forge that its budget answered 429 itself, without sending them, by forge, priority and reason (paused: the forge's rate limit is in force; deadline: the request's turn under the ceiling came after its deadline).",
			"forge", "priority", "reason"),
		budgetPauses: f.counter("workqueue_forge_budget_pauses_total",
			"Answers of a forge that paused every caller of it until its reset (a 429, or RateLimit-Remaining: 0), by forge.", "forge"),
		budgets: &budgetCollector{budgets: map[string]interface{ State() budget.State }{}},
	}
	reg.MustRegister(m.budgets)
	// Every family with a known label set is on the first scrape, at
	// zero: an alert on a rate or an increase sees no series, and so never
	// fires, until the first event would have created it.
	for _, outcome := range []string{"ok", "error"} {
		m.jwksFetches.WithLabelValues(outcome)
	}
	for _, source := range []string{"items", "control_plane"} {
		m.storeErrors.WithLabelValues(source)
	}
	for _, sink := range AuditSinks {
		m.auditWritten.WithLabelValues(sink)
		m.auditFailed.WithLabelValues(sink)
		m.auditDropped.WithLabelValues(sink)
	}
	m.webhookDeliveries.WithLabelValues("unknown", DeliveryUnknownForge)
	return m
}

// AuditSinks are the audit sinks' names (audit.ArchiveOptions.Name), the
// sink label's values.
var AuditSinks = []string{"s3", "dir"}

// ItemTypes names the item types this process registered: their lease
// losses, queue sizes and backlog are reported (at zero) from the first
// scrape, before any item of theirs exists.
func (m *Metrics) ItemTypes(types ...string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range types {
		if !slices.Contains(m.itemTypes, t) {
			m.itemTypes = append(m.itemTypes, t)
			m.leaseLosses.WithLabelValues(t)
		}
	}
}

// knownItemTypes is a copy of what ItemTypes named.
func (m *Metrics) knownItemTypes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.itemTypes)
}

// Bucket sets in seconds. forgeBuckets suit calls and actions (5ms..60s);
// longBuckets suit waits that span CI runs and reviews (1s..2d).
var (
	forgeBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	longBuckets  = []float64{1, 5, 15, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 48 * 3600}
)

// factory makes collectors registered on one registry.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) plainCounter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}

func (f factory) plainHistogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

// Registerer is where other parts of the process register metrics of
// their own (an item type's, itemtype.Env.Metrics); nil for nil m.
func (m *Metrics) Registerer() prometheus.Registerer {
	if m == nil {
		return nil
	}
	return m.reg
}

// Handler serves the registry in Prometheus's text (or OpenMetrics)
// format. A nil *Metrics serves 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	// EnableOpenMetrics: a scrape that asks for OpenMetrics (Accept:
	// application/openmetrics-text) gets it; others get the text format.
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, MaxRequestsInFlight: 4, Timeout: 30 * time.Second,
		EnableOpenMetrics: true})
}

// Executed counts one executed action and observes how long it ran.
func (m *Metrics) Executed(itemType, action, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.executions.WithLabelValues(itemType, action, outcome).Inc()
	m.executionSeconds.WithLabelValues(itemType, action, outcome).Observe(d.Seconds())
}

// DimensionCleared observes how long a dimension was true before a write
// set it false.
func (m *Metrics) DimensionCleared(itemType, dimension string, d time.Duration) {
	if m == nil || d < 0 {
		return
	}
	m.dimensionTrue.WithLabelValues(itemType, dimension).Observe(d.Seconds())
}

// EventApplied observes the lag from a delivery's receipt to its event
// being applied.
func (m *Metrics) EventApplied(itemType string, lag time.Duration) {
	if m == nil {
		return
	}
	m.eventLag.WithLabelValues(itemType).Observe(max(lag, 0).Seconds())
}

// Swept observes one sweep: how long its query took and how many due
// items it found; err counts a failed sweep.
func (m *Metrics) Swept(d time.Duration, found int, err error) {
	if m == nil {
		return
	}
	m.sweepSeconds.Observe(d.Seconds())
	m.sweepItems.Add(float64(found))
	if err != nil {
		m.sweepErrors.Inc()
	}
}

// LeaseLost counts an item loop that lost its lease.
func (m *Metrics) LeaseLost(itemType string) {
	if m == nil {
		return
	}
	m.leaseLosses.WithLabelValues(itemType).Inc()
}

// JWKSFetched counts one fetch of an issuer's keys; outcome is "ok" or
// "error".
func (m *Metrics) JWKSFetched(outcome string) {
	if m == nil {
		return
	}
	m.jwksFetches.WithLabelValues(outcome).Inc()
}

// WebhookDelivery counts one webhook delivery to the named forge (a
// configured name, or "unknown") with its outcome (the Delivery*
// constants).
func (m *Metrics) WebhookDelivery(forge, outcome string) {
	if m == nil {
		return
	}
	m.webhookDeliveries.WithLabelValues(forge, outcome).Inc()
}

// WebhookChecked counts one check of a project's webhook with its
// outcome (ok, repaired, broken, error).
func (m *Metrics) WebhookChecked(forge, outcome string) {
	if m == nil {
		return
	}
	m.webhookChecks.WithLabelValues(forge, outcome).Inc()
}

// WebhooksBroken sets how many projects of a forge the last check left
// with a wrong webhook.
func (m *Metrics) WebhooksBroken(forge string, n int) {
	if m == nil {
		return
	}
	m.webhookBroken.WithLabelValues(forge).Set(float64(n))
}

// Allocated counts one control plane allocation answer.
func (m *Metrics) Allocated(outcome string) {
	if m == nil {
		return
	}
	m.allocations.WithLabelValues(outcome).Inc()
}

// GateRefused counts one gate refusal by its stable reason.
func (m *Metrics) GateRefused(reason string) {
	if m == nil {
		return
	}
	m.gateRefusals.WithLabelValues(reason).Inc()
}

// AuditWritten counts an audit entry the named sink ("log", "dir", "s3")
// accepted.
func (m *Metrics) AuditWritten(sink string) {
	if m == nil {
		return
	}
	m.auditWritten.WithLabelValues(sink).Inc()
}

// AuditFailed counts a failed write of the named sink (the entries may
// still be retried).
func (m *Metrics) AuditFailed(sink string) {
	if m == nil {
		return
	}
	m.auditFailed.WithLabelValues(sink).Inc()
}

// AuditDropped counts n audit entries the named sink gave up on.
func (m *Metrics) AuditDropped(sink string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.auditDropped.WithLabelValues(sink).Add(float64(n))
}

// AuthThrottled counts one failed authentication attempt answered 429
// because its prefix, or all addresses, failed too often
// (auth.FailureLimiter).
func (m *Metrics) AuthThrottled() {
	if m == nil {
		return
	}
	m.authThrottled.Inc()
}

// AuthGlobalThrottled counts one failed authentication attempt answered
// 429 while the global failure budget was spent (auth.FailureLimiter).
func (m *Metrics) AuthGlobalThrottled() {
	if m == nil {
		return
	}
	m.authGlobal.Inc()
}

// statusClass is a response's status class, or "error" without one.
func statusClass(resp *http.Response, err error) string {
	if err != nil || resp == nil {
		return "error"
	}
	return strconv.Itoa(resp.StatusCode/100) + "xx"
}
