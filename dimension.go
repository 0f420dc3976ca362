package workqueue

import (
	"encoding/json"
	"time"
)

// Dimension status values (DDR-48). A dimension is a needs_* trigger: true
// means the action is needed, false that it is handled.
const (
	StatusTrue  = "true"
	StatusFalse = "false"
)

// DimensionKey names one dimension row of an item.
type DimensionKey struct {
	Dimension string // e.g. "needs_mr"
	Variant   string // "" for single-instance dimensions
}

// Dimension is one row of work_item_statuses.
type Dimension struct {
	Status       string          // StatusTrue or StatusFalse
	PendingUntil time.Time       // zero: not deferred
	Detail       json.RawMessage // nil or a JSON document
	UpdatedAt    time.Time
}

// DimensionUpdate upserts one dimension row.
type DimensionUpdate struct {
	DimensionKey
	Status       string
	PendingUntil time.Time
	Detail       json.RawMessage
}

// Dimensions are an item's dimension rows.
type Dimensions map[DimensionKey]Dimension

// Needs reports whether the item needs the dimension's action at now. A
// missing row means it does (DDR-48); a row whose pending_until is in the
// future counts as satisfied until then; otherwise the status decides
// (anything but "false" is needed).
func (d Dimensions) Needs(dimension, variant string, now time.Time) bool {
	row, ok := d[DimensionKey{dimension, variant}]
	if !ok {
		return true
	}
	if !row.PendingUntil.IsZero() && row.PendingUntil.After(now) {
		return false
	}
	return row.Status != StatusFalse
}
