package engine

import wq "github.com/workqueue-dev/workqueue"

// SetCrashAfterEventApplied makes a worker die (return at once, keeping its
// lease) right after it applied and deleted an event, when die says so.
func (e *Engine) SetCrashAfterEventApplied(die func(id wq.ItemID) bool) {
	e.faults.afterEventApplied = die
}

// PauseHeartbeats stops the engine's heartbeats, as if its process were
// paused or partitioned away from the database.
func (e *Engine) PauseHeartbeats() { e.faults.heartbeatPaused.Store(true) }

// Stopping reports whether Stop has begun.
func (e *Engine) Stopping() bool { return e.stopping.Load() }
