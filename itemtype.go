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
	// Dimensions are the needs_* dimensions the type's items have
	// (optional): the metrics report each, at zero, from the first scrape,
	// before any item of the type has cleared one.
	Dimensions []string
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

// AssignmentGate is the control plane as an item type meets it (DESIGN
// section 9, "Assignments on the write path"): a change submitted for an
// assignment passes the gate at submission, and again before each forge
// write, so that a lease that expired or work that was closed meanwhile
// stops the item before anything is pushed. The control plane implements
// it with its own reads of the forge (controlplane.Service.AssignmentGate);
// an item type receives it and names no control plane.
type AssignmentGate interface {
	// Authorize says what caller's change to branch of project is for,
	// or refuses it: an *Error whose Reason is the gate's (head_moved,
	// lease_expired, work_terminal, not_owner, no_assignment…) when the
	// assignment does not allow it; any other error is transient.
	Authorize(ctx context.Context, caller, assignmentID, forge, project, branch string) (AssignmentGrant, error)
	// Pushed says that the service pushed head for the assignment.
	Pushed(ctx context.Context, caller, assignmentID, head string) error
	// Opened says that the service opened (or found) merge request
	// number, at head, for the assignment: its session wrote it.
	Opened(ctx context.Context, caller, assignmentID string, number int64, head string) error
}

// AssignmentGrant is what an allowed change is for.
type AssignmentGrant struct {
	// Issue is the issue an issue assignment is for: the merge request
	// closes it. 0 for a pull request assignment.
	Issue int64
	// Merge says whether the assignment allows merging: without it the
	// service never merges the change on its own.
	Merge bool
	// Push says the assignment allows pushing onto the merge request of
	// the change's very branch: its holder may change that branch's item
	// even when another identity submitted it.
	Push bool
}
