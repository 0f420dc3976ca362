package controlplane

import (
	"context"
	"time"
)

// Candidate is a work item as the allocator sees it: the work, and who
// holds it now. The work is the store's own copy of the open work,
// shared by every call: read it, never change it (copying 5,000 of them
// into each call's candidates was a third of an allocation's CPU).
type Candidate struct {
	*Work
	// LeaseID and LeaseSession name the live lease on the work, if any
	// (active and not past its expiry at the time asked).
	LeaseID      string
	LeaseSession string
	// LockSession is the session holding the work's terminal lock, if
	// any: the work is on its way to being merged by that session.
	LockSession string
	// AuthorIdentity and LeaseIdentity are the identities of the
	// sessions AuthorSession and LeaseSession name, filled by the
	// service (the store leaves them ""): an identity is one actor.
	AuthorIdentity string
	LeaseIdentity  string
	// AwaitsPerson says the approved pull request's protected paths still
	// wait for the approval of an identity that may submit there: it is
	// on the review route, for such a caller's reviewers (filled by the
	// service, see Service.ReviewLabel).
	AwaitsPerson bool
}

// IdentityReader is what a Store may add to read many sessions'
// identities at once (the store leaves out a session it does not have):
// the allocator then makes one read where it made one per session.
type IdentityReader interface {
	SessionIdentities(ctx context.Context, ids []string) (map[string]string, error)
}

// WorkFilter selects work for ListWork. Zero fields do not filter.
type WorkFilter struct {
	Forge string
	Repo  string // exact
	Kind  Kind
	State State
	Limit int    // at most this many (the store caps it at 500)
	After string // cursor: only work after the item with this ID, in key order
}

// LeaseFilter selects leases for ListLeases.
type LeaseFilter struct {
	SessionID string
	WorkID    string
	Repo      string
	// All includes ended leases; otherwise only active ones (which may
	// be past their expiry until ExpireLeases marks them).
	All   bool
	Limit int
}

// EventFilter selects events for ListEvents, newest first.
type EventFilter struct {
	SessionID string
	WorkID    string
	LeaseID   string
	Limit     int
}

// CheckpointFilter selects checkpoints for ListCheckpoints, newest
// first. Zero fields do not filter, but for WorkNumber, which filters
// when HasNumber.
type CheckpointFilter struct {
	SessionID  string
	Identity   string // only checkpoints of this identity's sessions
	Forge      string
	Repo       string
	WorkKind   Kind
	WorkNumber int64
	HasNumber  bool
	Limit      int
}

// Store is the control plane's persistence. controlplane/cpstore
// implements it on SQLite and PostgreSQL, and both pass the conformance
// suite in controlplane/cpstore/cpstoretest. Every method that decides
// takes now from the caller, so that tests drive time with a clock.
//
// Errors carry the codes of the root package: ENOTFOUND for a missing
// row; ECONFLICT when a conditional write found the row changed (see
// each method); ErrWorkHeld and ErrWorkTerminal from Assign.
type Store interface {
	// CreateSession inserts s (ID set by the caller).
	CreateSession(ctx context.Context, s Session) error
	// GetSession returns one session. ENOTFOUND.
	GetSession(ctx context.Context, id string) (*Session, error)
	// ListSessions returns sessions newest first; identity "" lists all.
	ListSessions(ctx context.Context, identity string, limit int) ([]Session, error)
	// HeartbeatSession sets heartbeat_at of a session that has not ended.
	// ENOTFOUND; ECONFLICT if it ended.
	HeartbeatSession(ctx context.Context, id string, now time.Time) error
	// EndSession ends a session and releases its active leases (their
	// terminal locks with them), appending ev once for the session and an
	// EventReleased per lease, in one transaction. It returns the leases
	// it released. ENOTFOUND; ECONFLICT if it already ended.
	EndSession(ctx context.Context, id string, ev Event, now time.Time) ([]Lease, error)

	// UpsertWork inserts or updates work by WorkKey (the ID of an
	// existing row is kept; a new row gets w.ID), setting synced_at to
	// now. A row whose stored updated_at is newer than w's is left as it
	// is, synced_at included: a late webhook or an old page of a sync
	// never moves state back. An empty AuthorSession keeps the stored
	// one (a sync does not know which session wrote a pull request). A
	// merged pull request is never written again: merged is for good.
	UpsertWork(ctx context.Context, w []Work, now time.Time) error
	// ReviseWork changes the stored work of key as change says (change
	// reports whether it changed anything), reading and writing the row
	// in one transaction, so that a change made on the forge by the
	// service itself (a merge, a close, a verdict) holds against what the
	// forge said in the meantime. The row's forge updated time moves on
	// to the changed one, or by a microsecond, the least the store keeps,
	// when that is not later: what the forge said before is older, and
	// the forge's next change still applies. It
	// returns the row as stored after the change. ENOTFOUND.
	ReviseWork(ctx context.Context, key WorkKey, change func(*Work) bool, now time.Time) (*Work, error)
	// GetWork returns one work item by ID. ENOTFOUND.
	GetWork(ctx context.Context, id string) (*Work, error)
	// FindWork returns the work item with the key. ENOTFOUND.
	FindWork(ctx context.Context, key WorkKey) (*Work, error)
	// ListWork returns work ordered by (forge, repo, kind, number).
	ListWork(ctx context.Context, f WorkFilter) ([]Work, error)
	// Candidates returns every open work item with who holds it at now
	// (its live lease, its terminal lock). It may keep the open work in
	// memory between calls while no write changed it; who holds what is
	// read on every call. Assign re-checks what it takes, so a holder
	// that came after the read loses the race there.
	Candidates(ctx context.Context, now time.Time) ([]Candidate, error)

	// Assign creates a and l (and a terminal lock when a.Terminal) and
	// appends ev, in one transaction (hard rule 2), after checking, in
	// that transaction, that the work is still open (else
	// ErrWorkTerminal) and that no live lease or another session's
	// terminal lock holds it (else ErrWorkHeld). Active leases of the
	// work that are past their expiry are marked expired first.
	// ENOTFOUND for a missing session or work; ECONFLICT for an ended
	// session.
	Assign(ctx context.Context, a Assignment, l Lease, ev Event, now time.Time) error
	// GetAssignment returns one assignment. ENOTFOUND.
	GetAssignment(ctx context.Context, id string) (*Assignment, error)

	// GetLease returns one lease. ENOTFOUND.
	GetLease(ctx context.Context, id string) (*Lease, error)
	// ListLeases returns leases newest first.
	ListLeases(ctx context.Context, f LeaseFilter) ([]Lease, error)
	// UpdateLease writes l over the stored lease if the stored one is
	// still in state from and held by session from.SessionID (a
	// compare-and-set: the service decides, the store refuses a decision
	// made on a lease that changed meanwhile), removes the work's
	// terminal lock when l is no longer active (and moves it with the
	// lease to an adopting session), and appends ev.
	// ECONFLICT if the lease changed; ENOTFOUND.
	UpdateLease(ctx context.Context, from, l Lease, ev Event) error
	// Reclaim ends old as reclaimed and assigns a and l in its place, in
	// one transaction, if old is still as given (ECONFLICT otherwise),
	// no longer live (ErrWorkHeld: a live lease is never taken) and the
	// work is still open (ErrWorkTerminal).
	Reclaim(ctx context.Context, old Lease, a Assignment, l Lease, ev Event, now time.Time) error
	// ExpireLeases marks expired exactly the active leases whose
	// expires_at is at or before now, removes their terminal locks,
	// appends an EventExpired for each, and returns them.
	ExpireLeases(ctx context.Context, now time.Time) ([]Lease, error)

	// AppendEvent appends an event (a gate refusal, a heartbeat).
	AppendEvent(ctx context.Context, ev Event) error
	// ListEvents returns events newest first.
	ListEvents(ctx context.Context, f EventFilter) ([]Event, error)

	// PutCheckpoint inserts c or replaces the row with its key, keeping
	// the stored created_at; updated_at becomes now. It returns the row
	// as stored. ENOTFOUND for a missing session.
	PutCheckpoint(ctx context.Context, c Checkpoint, now time.Time) (*Checkpoint, error)
	// GetCheckpoint returns one checkpoint. ENOTFOUND.
	GetCheckpoint(ctx context.Context, key CheckpointKey) (*Checkpoint, error)
	// ListCheckpoints returns checkpoints newest first.
	ListCheckpoints(ctx context.Context, f CheckpointFilter) ([]Checkpoint, error)
}
