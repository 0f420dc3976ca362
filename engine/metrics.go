package engine

import "time"

// Metrics receives what the engine measures (package metrics implements
// it; a nil *metrics.Metrics does nothing). Calls never block.
type Metrics interface {
	// Executed: one action ran for d with an outcome (succeeded, failed,
	// transient, superseded, lease_lost).
	Executed(itemType, action, outcome string, d time.Duration)
	// DimensionCleared: a write set a dimension false after it had been
	// true for d.
	DimensionCleared(itemType, dimension string, d time.Duration)
	// EventApplied: an event was applied lag after its delivery arrived.
	EventApplied(itemType string, lag time.Duration)
	// Swept: one sweep's query took d and found found due items.
	Swept(d time.Duration, found int, err error)
	// LeaseLost: an item loop lost its lease.
	LeaseLost(itemType string)
}

// noMetrics is the engine's Metrics until SetMetrics.
type noMetrics struct{}

func (noMetrics) Executed(string, string, string, time.Duration) {}
func (noMetrics) DimensionCleared(string, string, time.Duration) {}
func (noMetrics) EventApplied(string, time.Duration)             {}
func (noMetrics) Swept(time.Duration, int, error)                {}
func (noMetrics) LeaseLost(string)                               {}

// SetMetrics makes the engine report to m; call it before Start.
func (e *Engine) SetMetrics(m Metrics) {
	if e.started.Load() {
		panic("engine: SetMetrics after Start")
	}
	if m == nil {
		m = noMetrics{}
	}
	e.metrics = m
}
