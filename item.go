package workqueue

import (
	"time"

	"github.com/google/uuid"
)

// Phase is the coarse lifecycle of an item (DDR-2). Only active items are
// processed; the other three are terminal until a deliberate retry.
type Phase string

// The four phases.
const (
	PhaseActive    Phase = "active"
	PhaseCompleted Phase = "completed"
	PhaseFailed    Phase = "failed"
	PhaseCancelled Phase = "cancelled"
)

// Valid reports whether p is one of the four phases.
func (p Phase) Valid() bool {
	switch p {
	case PhaseActive, PhaseCompleted, PhaseFailed, PhaseCancelled:
		return true
	}
	return false
}

// Terminal reports whether p is completed, failed or cancelled.
func (p Phase) Terminal() bool { return p.Valid() && p != PhaseActive }

// ItemID identifies a work item. IDs are UUIDv7, so they sort by creation.
type ItemID = uuid.UUID

// NewItemID returns a new time-ordered item id.
func NewItemID() ItemID { return uuid.Must(uuid.NewV7()) }

// Item is a work item as stored in the generic table, with its dimensions.
type Item struct {
	ID          ItemID
	ItemType    string
	Phase       Phase
	Reason      string // why the item reached its phase (e.g. "empty_diff"); "" while active
	Actionable  bool   // see DDR-49: true while work is enqueued, false only on a clean exit
	LeasedUntil time.Time
	LeaseOwner  string
	Attempts    int // consecutive executor failures that were not transient (DDR-14)
	RetryAfter  time.Time
	// FailingSince is when the current run of consecutive failures began
	// (transient or not); zero after a success. A transient failure fails
	// the item once it is older than the engine's give-up time.
	FailingSince   time.Time
	Error          string
	IdempotencyKey string
	Generation     int
	CallerIdentity string
	ContentHash    string
	Scope
	LastEventAt time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
	FinishedAt  time.Time
	// Revision increases whenever work is enqueued for the item (creation,
	// event, content update, retry). The loop's exit is conditional on it
	// (see Store.FinishProcessing).
	Revision int64

	// Dimensions are the item's needs_* rows, keyed by dimension and variant.
	Dimensions Dimensions
}

// NewItem is what a caller asks the store to create. The item starts
// active and actionable (DDR-2, DDR-49).
type NewItem struct {
	ID             ItemID // zero: the store assigns one
	ItemType       string
	IdempotencyKey string // optional; unique among items not completed or cancelled (DDR-39)
	Generation     int
	CallerIdentity string
	ContentHash    string
	Scope                            // where the item acts, if anywhere
	Dimensions     []DimensionUpdate // initial dimension rows, if any
}

// Scope is where an item acts: one project of one forge, named as the
// configuration names them. Grants are per project, and listing filters by
// scope, whatever the item's type; the zero Scope acts nowhere.
type Scope struct {
	Forge   string
	Project string
}

// Change is a state change an executor or the engine applies under a lease.
// Zero fields mean "leave as is".
type Change struct {
	Phase      Phase  // new phase; terminal phases set finished_at
	Reason     string // recorded with a phase change
	Error      string // recorded error text; with Phase failed
	Dimensions []DimensionUpdate
	// SeenRevision, when not 0, makes the change conditional: it applies
	// only if the item's revision is still this one, that is, if no work
	// was enqueued (an event, a resubmission, a retry) since the writer
	// loaded the item. Otherwise nothing is written and the store returns
	// ErrSuperseded. The engine sets it on every executor write, so that
	// an executor can never overwrite what it did not see (such as
	// clear a needs_* row that a resubmission set during the forge call).
	SeenRevision int64
	// Last says this is the action's last write: the executor returns
	// right after it and acts no more (no forge call, no other write).
	// When the write sets dimensions only and leaves the item nothing to
	// do, the engine folds its exit decision into it (Store.ApplyAndFinish:
	// one transaction instead of two), so the lease may be released by
	// the time Apply returns. A write after a Last one is an error.
	Last bool
}

// ErrNotFoldable refuses a change Store.ApplyAndFinish cannot take.
var ErrNotFoldable = Errorf(EINVALID, "apply and finish: the change must be an action's last, dimensions only, under a seen revision")

// FoldsExit reports whether the exit decision can be folded into c
// (Store.ApplyAndFinish): it is an action's last write, of dimensions
// only, under a seen revision.
func (c Change) FoldsExit() bool {
	return c.Last && c.Phase == "" && c.Error == "" && c.SeenRevision != 0
}
