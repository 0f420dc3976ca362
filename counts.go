package workqueue

import (
	"context"
	"time"
)

// ItemCounts are the queue's sizes at one time, for metrics.
type ItemCounts struct {
	// Phases counts items by type and phase.
	Phases []PhaseCount
	// Actionable counts, by type, the active items flagged actionable
	// that are not backing off (retry_after unset or passed): the backlog
	// the workers have to take, with its oldest member.
	Actionable []ActionableCount
}

// PhaseCount is how many items of a type are in a phase.
type PhaseCount struct {
	ItemType string
	Phase    Phase
	Count    int64
}

// ActionableCount is the actionable backlog of one item type.
type ActionableCount struct {
	ItemType string
	Count    int64
	// Oldest is the least updated_at among them: the time the oldest has
	// waited since its last write.
	Oldest time.Time
}

// ItemCounter is a Store that counts its items (both drivers are). The
// counts group over indexes (work_items_type_phase, the sweep's partial
// index), so one call costs a scan of those indexes, never of item
// details; callers bound how often they ask.
type ItemCounter interface {
	// CountItems counts the items as of now. Errors: EUNAVAILABLE, EINTERNAL.
	CountItems(ctx context.Context, now time.Time) (ItemCounts, error)
}
