package metrics

import (
	"maps"
	"slices"

	wq "github.com/workqueue-dev/workqueue"
)

// Every family whose label values are known when the process starts is
// on the first scrape, at zero: an alert on a rate or an increase sees no
// series, and so never fires, until the first event would have made it.
// The values come from what the process registered and configured (item
// types with their actions and dimensions, forges) and from closed sets
// (outcomes, reasons, states). Histograms of executions are made for the
// succeeded outcome only: their other outcomes are counted by
// workqueue_executions_total from the start, and the scrape stays small.

// ExecutionOutcomes are the outcomes of an executed action (Executed).
var ExecutionOutcomes = []string{OutcomeSucceeded, OutcomeFailed, OutcomeTransient, OutcomeSuperseded, OutcomeLeaseLost}

// deliveryOutcomes are the outcomes of a delivery to a configured forge;
// DeliveryUnknownForge goes with the forge "unknown" alone.
var deliveryOutcomes = []string{DeliveryStored, DeliveryDuplicate, DeliveryIgnored, DeliveryRefusedSignature, DeliveryInvalid, DeliveryError}

// ItemType names an item type this process registered with its engine:
// its executions (every action and outcome), their durations, the time
// each of its dimensions is true, its events' lag, its lease losses, its
// queue sizes and backlog are reported from the first scrape, at zero.
func (m *Metrics) ItemType(t wq.ItemType) {
	if m == nil {
		return
	}
	m.ItemTypes(t.Name)
	m.eventLag.WithLabelValues(t.Name)
	for _, action := range slices.Sorted(maps.Keys(t.Executors)) {
		for _, outcome := range ExecutionOutcomes {
			m.executions.WithLabelValues(t.Name, action, outcome)
		}
		m.executionSeconds.WithLabelValues(t.Name, action, OutcomeSucceeded)
	}
	for _, d := range t.Dimensions {
		m.dimensionTrue.WithLabelValues(t.Name, d)
	}
}

// Forges names the configured forges: the webhook deliveries to each, by
// outcome, are reported from the first scrape (those to a forge of no
// configured name always are).
func (m *Metrics) Forges(names ...string) {
	if m == nil {
		return
	}
	for _, f := range names {
		for _, outcome := range deliveryOutcomes {
			m.webhookDeliveries.WithLabelValues(f, outcome)
		}
	}
}

// HookChecks names the forges whose projects' webhooks serve checks, and
// the checks' outcomes: their counts are reported from the first scrape,
// and their broken projects at 0 until the first check says otherwise.
func (m *Metrics) HookChecks(outcomes []string, forges ...string) {
	if m == nil {
		return
	}
	for _, f := range forges {
		for _, outcome := range outcomes {
			m.webhookChecks.WithLabelValues(f, outcome)
		}
		m.webhookBroken.WithLabelValues(f)
	}
}

// ControlPlane names the control plane's closed sets: its allocations'
// outcomes ("error" besides), its gate's refusal reasons and its leases'
// states, reported from the first scrape.
func (m *Metrics) ControlPlane(outcomes, gateReasons, leaseStates []string) {
	if m == nil {
		return
	}
	for _, o := range append(slices.Clone(outcomes), "error") {
		m.allocations.WithLabelValues(o)
	}
	for _, r := range gateReasons {
		m.gateRefusals.WithLabelValues(r)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range leaseStates {
		if !slices.Contains(m.leaseStates, s) {
			m.leaseStates = append(m.leaseStates, s)
		}
	}
}

// knownLeaseStates is a copy of what ControlPlane named.
func (m *Metrics) knownLeaseStates() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.leaseStates)
}
