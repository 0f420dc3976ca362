package workqueue

import (
	"context"
	"time"
)

// Failure is an executor failure recorded under a lease.
type Failure struct {
	Error      string
	RetryAfter time.Time // when the item may be tried again
	Fail       bool      // fail the item now (max attempts reached, permanent error, unknown action, given up)
	// Transient failures do not count toward attempts; they start (or
	// continue) the failing_since run like any failure.
	Transient bool
	// Held parks the item without failing it: the engine held it before
	// its action (its creator is frozen). Neither attempts nor the
	// failing_since run move, so that a long hold never counts toward
	// giving up; RetryAfter is when the engine looks again.
	Held bool
}

// ItemFilter selects items for ListItems. Zero fields do not filter.
type ItemFilter struct {
	ItemType string
	Phase    Phase
	Forge    string // items that act on this forge
	Project  string // items that act on this project
	Before   ItemID // cursor: only items older than this one
	Limit    int    // at most this many (the store caps it)
}

// MaxListLimit caps ItemFilter.Limit.
const MaxListLimit = 500

// Store is the seam between the generic layer and a database. Both drivers
// (store/sqlite, store/postgres) pass the conformance suite in
// store/storetest. Every method takes the time to use as now, so that one
// transaction sees one timestamp and tests drive time.
//
// Errors carry the codes of error.go: ENOTFOUND for a missing item,
// ECONFLICT for a uniqueness violation, ErrLeaseLost for a fenced write
// whose lease token no longer matches, ErrNotClaimable for a claim that
// cannot be had, EUNAVAILABLE when the database cannot be reached.
type Store interface {
	// CreateItem inserts an active, actionable item with its initial
	// dimensions. ECONFLICT if its idempotency key is held by another item
	// that is not completed or cancelled.
	CreateItem(ctx context.Context, n NewItem, now time.Time) (*Item, error)

	// GetItem returns the item with its dimensions. ENOTFOUND.
	GetItem(ctx context.Context, id ItemID) (*Item, error)

	// ClaimItem leases an active item that is not leased (or whose lease
	// expired) until now+d, under a new token. ErrNotClaimable otherwise;
	// ENOTFOUND if it does not exist.
	ClaimItem(ctx context.Context, id ItemID, owner string, now time.Time, d time.Duration) (Lease, error)

	// ClaimItems is ClaimItem for many items in one transaction (one
	// statement on PostgreSQL): each of ids that is of one of types,
	// active, and not leased (or whose lease expired) is leased until
	// now+d under a token of its own, and returned with its dimensions as
	// the claim left them, in the order of ids. An id that cannot be had
	// (missing, terminal, leased, of another type, or being claimed by a
	// concurrent claimer) is left out, which is not an error: two racing
	// claimers never both get an item. Like ClaimItem it does not look at
	// retry_after; the caller's ids are the due ones. EUNAVAILABLE.
	ClaimItems(ctx context.Context, ids []ItemID, types []string, owner string, now time.Time, d time.Duration) ([]Claim, error)

	// ExtendLease moves the lease's end to now+d. ErrLeaseLost.
	ExtendLease(ctx context.Context, l *Lease, now time.Time, d time.Duration) error

	// ReleaseLease clears the lease if the token still holds; a lost lease
	// is not an error (there is nothing left to release).
	ReleaseLease(ctx context.Context, l Lease) error

	// ApplyChange applies c under the lease and returns the phase before
	// it. Reaching a terminal phase sets finished_at, clears the
	// dimensions' pending_until and clears the lease, so a terminal item
	// never shows a worker's lease; the writer's later fenced writes get
	// ErrLeaseLost (it drops the item's events with DropEvents). With c.SeenRevision set and the revision moved,
	// nothing changes: ErrSuperseded. ErrLeaseLost.
	ApplyChange(ctx context.Context, l Lease, c Change, now time.Time) (old Phase, err error)

	// RecordSuccess resets attempts, failing_since, retry_after and error
	// after a successful action (DDR-14). ErrLeaseLost.
	RecordSuccess(ctx context.Context, l Lease, now time.Time) error

	// RecordFailure increments attempts (unless f.Transient), sets
	// failing_since if it is not set, retry_after and error; with f.Fail it
	// also moves the item to failed (see ApplyChange for what a terminal
	// phase clears). It returns the new attempts. ErrLeaseLost.
	RecordFailure(ctx context.Context, l Lease, f Failure, now time.Time) (attempts int, err error)

	// InsertDelivery stores one webhook delivery's events, one per item it
	// concerns, in one transaction: each event marks its item actionable
	// under the per-item lock, in the transaction that stores it (DDR-34,
	// DDR-49). A delivery whose (source, delivery id) was stored before
	// stores nothing and is Duplicate, even after its events were
	// processed. An event for an item that is no longer active (a terminal
	// write won the race with the delivery) is not stored and leaves the
	// item as it is: an ended item takes no events (DDR-37), and nothing
	// would ever drain it. ENOTFOUND if an event's item does not exist.
	InsertDelivery(ctx context.Context, source, deliveryID string, events []Event, now time.Time) (Delivery, error)

	// PruneDeliveries forgets the deliveries received before before: a
	// redelivery of one of them would be stored again. It returns how
	// many it forgot.
	PruneDeliveries(ctx context.Context, before time.Time) (int64, error)

	// DropEvents deletes and returns the pending events of an item that is
	// completed, failed or cancelled (a terminal item takes no events,
	// DDR-37), so that they can be audited as ignored. For an active item
	// it deletes nothing. ENOTFOUND never: a missing item has no events.
	DropEvents(ctx context.Context, id ItemID) ([]Event, error)

	// NextEvent returns the item's oldest pending event, or nil.
	NextEvent(ctx context.Context, id ItemID) (*Event, error)

	// ApplyEvent applies a handler's result for ev and deletes ev, in one
	// transaction under the lease (DDR-33, DDR-37, DDR-38): nothing changes
	// unless the item is active; dimensions are upserted; the phase changes
	// only if the event is not older than last_event_at. ErrLeaseLost.
	ApplyEvent(ctx context.Context, l Lease, ev *Event, r EventResult, now time.Time) (AppliedEvent, error)

	// FinishProcessing is the loop's exit decision (DDR-49). Under the
	// per-item lock: if no event is pending and no work was enqueued since
	// the item was loaded at revision seen, it sets actionable = false,
	// releases the lease and returns true. Otherwise it changes nothing and
	// returns false: the loop must go on. ErrLeaseLost.
	FinishProcessing(ctx context.Context, l Lease, seen int64, now time.Time) (exited bool, err error)

	// ApplyAndFinish is an action's last write and the exit decision on
	// the state it leaves, in one transaction (Change.Last): c sets
	// dimensions only, under the lease and c.SeenRevision as ApplyChange
	// writes them (ErrLeaseLost, ErrSuperseded: nothing written). Once
	// written, under the per-item lock, if no event is pending and the
	// revision is still c.SeenRevision, it sets actionable = false and
	// releases the lease, as FinishProcessing does, and returns true;
	// otherwise the lease stays held and the loop goes on.
	ApplyAndFinish(ctx context.Context, l Lease, c Change, now time.Time) (exited bool, err error)

	// DueItems returns up to limit items of the given types that the sweep
	// should process: active, not leased, and either actionable and past
	// retry_after, or with a pending event, or with a needs_* row (status
	// true) whose pending_until has passed and past retry_after. Its cost
	// grows with the number of due items, not of all items.
	DueItems(ctx context.Context, types []string, now time.Time, limit int) ([]ItemID, error)

	// ListItems returns items newest first, without their dimensions.
	ListItems(ctx context.Context, f ItemFilter) ([]*Item, error)

	// RetryItem makes a failed or cancelled item active and actionable
	// again with a clean slate (attempts, error, backoff) and upserts dims,
	// the rows the item type resets on retry (DDR-49). ECONFLICT if the
	// item is active or completed, or a newer generation holds its
	// idempotency key; ENOTFOUND.
	RetryItem(ctx context.Context, id ItemID, dims []DimensionUpdate, now time.Time) (*Item, error)

	// RequestCancel hands the cancel of an active or failed item to its
	// type (ItemType.CancelDimension): the item becomes (or stays) active
	// and actionable with a clean slate and dims upserted, and its
	// revision moves, so that a worker holding it decides again; its
	// lease is kept. ECONFLICT if it is completed or cancelled; ENOTFOUND.
	RequestCancel(ctx context.Context, id ItemID, dims []DimensionUpdate, now time.Time) (*Item, error)

	// CancelItem cancels an active or failed item with reason and clears
	// its lease, which fences out a worker that holds it. ECONFLICT if it
	// is already completed or cancelled; ENOTFOUND.
	CancelItem(ctx context.Context, id ItemID, reason string, now time.Time) (*Item, error)

	// Migrate applies the embedded migrations not yet recorded, each in its
	// own transaction, and returns the versions it applied. Safe to run
	// concurrently from several processes.
	Migrate(ctx context.Context) (applied []int, err error)

	// SchemaVersion returns the newest applied migration and the newest
	// embedded one; they are equal when the schema is current.
	SchemaVersion(ctx context.Context) (applied, latest int, err error)

	// Ping checks that the database answers. EUNAVAILABLE.
	Ping(ctx context.Context) error

	// Close releases the store's connections.
	Close() error
}

// The registries below and beside Store (HandlerRegistry, HistoryStore,
// SecretStore, ItemCounter) are separate interfaces so that a caller asks
// for only what it uses, but every driver keeps them all: the drivers'
// seam (store/seam.Driver) embeds them, and the conformance suite
// store/storetest checks each on both drivers. WakeupListener alone is
// optional.

// HandlerRegistry records which instances handle which item types. The
// engine records its handled types at its sweeps, at most every half sweep
// interval; the API flags a
// submission of a type that no instance has handled since a while ago,
// which would otherwise wait without a word. Every driver implements it.
type HandlerRegistry interface {
	// RecordHandlers says that instance handled types at now.
	RecordHandlers(ctx context.Context, instance string, types []string, now time.Time) error
	// LastHandled is the latest time any instance recorded itemType; the
	// zero time if none ever did.
	LastHandled(ctx context.Context, itemType string) (time.Time, error)
}

// SharedSweeper is implemented by stores that several instances share
// (PostgreSQL): DueItemsOf is DueItems for one instance, which finds its
// own share of the due items first and the others' only when its own
// holds fewer than limit, so that instances sweeping at once do not
// queue, and then claim from each other, the same items. The shares are
// split among the instances that recorded their handled types lately
// (HandlerRegistry), so every due item is still found by whichever
// instance sweeps: a share is a preference, never an exclusion. It is
// optional: the engine calls DueItems where it is not there.
type SharedSweeper interface {
	DueItemsOf(ctx context.Context, instance string, types []string, now time.Time, limit int) ([]ItemID, error)
}

// DueClaimer is implemented by stores whose claim can find its own items
// (PostgreSQL): ClaimDueItems leases up to limit of the actionable items
// of types that are due at now (ready, or their retry due) and not
// leased, and returns them as ClaimItems does, the instance's share of
// the ready set first (SharedSweeper). It is the sweep's ready path and
// the claim in one statement: an engine burning down a backlog claims
// from it directly instead of sweeping ids and claiming them by id,
// which read every item twice. Pending events and deferred dimensions
// are still the sweep's. Two racing claimers never both get an item.
// It is optional: the engine sweeps and claims by id where it is not
// there.
type DueClaimer interface {
	ClaimDueItems(ctx context.Context, instance string, types []string, owner string, now time.Time, d time.Duration, limit int) ([]Claim, error)
}

// WakeupListener is implemented by stores that several instances share
// (PostgreSQL): ListenWakeups calls ready once it is subscribed, then wake
// for every item some instance enqueued work for, until ctx ends or the
// connection fails. Every write that marks an item actionable sends the
// wake-up in its own transaction, so it is heard only once committed.
// It is optional: a store that one process owns (SQLite) has nobody to
// wake.
type WakeupListener interface {
	ListenWakeups(ctx context.Context, ready func(), wake func(itemType string, id ItemID)) error
}
