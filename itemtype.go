package workqueue

import (
	"context"
	"time"
)

// Decider picks the single next action for an item from its current state
// (DDR-4, DDR-5): "" means nothing to do. It is pure: it reads item and
// now, nothing else. Dimensions whose pending_until is after now count as
// satisfied (see Dimensions.Needs).
type Decider func(item *Item, now time.Time) string

// Executor performs one action for an item and applies the resulting
// state itself, through x.Writer (DDR-15). Returning an error counts a
// failure (DDR-14); wrap ErrPermanent to fail the item at once.
type Executor func(ctx context.Context, x *Execution) error

// Execution is what an executor works with.
type Execution struct {
	Item   *Item     // the item as loaded for this decision, with dimensions
	Action string    // the action being executed
	Now    time.Time // the engine clock's time when the action started
	Writer ItemWriter
	// Lease is the lease the execution runs under, for the item type's own
	// fenced store writes (its detail table); they must return
	// ErrLeaseLost when it no longer holds.
	Lease Lease
}

// ItemWriter applies state changes to one item under the caller's lease.
// Every call is fenced: it returns ErrLeaseLost once the lease was taken
// over, and the executor must then stop.
type ItemWriter interface {
	Apply(ctx context.Context, c Change) error
}

// EventHandler interprets a pending event for an item. It only reads
// (DDR-33): its result is applied by the generic layer.
type EventHandler func(ctx context.Context, item *Item, ev *Event) (EventResult, error)

// ItemType is everything the engine needs to process one kind of item. It
// is registered once at start; the engine never names a type.
type ItemType struct {
	Name          string
	Decide        Decider
	Executors     map[string]Executor     // by action name
	EventHandlers map[string]EventHandler // by event type; events of other types are dropped with an audit entry
	// CancelDimension, when set, makes cancelling an item a request the
	// type carries out itself (close what it opened, delete what it
	// made): cancelling an active or failed item sets this dimension to
	// true with a CancelRequest as its detail, the item stays (or becomes)
	// active, and the type's decider runs the action that winds it down
	// and moves it to cancelled. Without it, cancelling is immediate.
	CancelDimension string
}

// CancelRequest is the detail of an item type's CancelDimension: who
// asked for the cancel, and why.
type CancelRequest struct {
	Reason string `json:"reason"`
}
