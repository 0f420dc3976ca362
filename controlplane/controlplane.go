// Package controlplane is the coordination half of workqueue (DESIGN
// section 9, seed 003): agent sessions ask for the next safe issue or pull
// request and get it under an exclusive lease; a gate checks lease, action,
// state and head before any mutation; leases have a full lifecycle. The
// control-plane database is the one coordination authority: file locks and
// comments are not.
//
// This file holds the domain; the allocator's routing and the gate are
// pure functions of it (allocate.go, gate.go); the Store seam (store.go)
// is implemented on both databases by controlplane/cpstore.
package controlplane

import (
	"encoding/json"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// The enumerations of the domain. Their values are stable: they are
// stored and they are the API's words.
type (
	// Role is what a session does.
	Role string
	// Kind is what a work item is on the forge. Only issues and pull
	// requests are assignable work (hard rule 1): monitoring incidents
	// become issues first.
	Kind string
	// State is a work item's state on the forge.
	State string
	// ReviewState is a pull request's review verdict.
	ReviewState string
	// LeaseState is where a lease is in its lifecycle. Only an active
	// lease whose expires_at is in the future holds its work; every other
	// state is history.
	LeaseState string
	// Action is a mutation an assignment may allow.
	Action string
)

// The values of the enumerations.
const (
	RoleAuthor   Role = "author"   // works issues into pull requests, answers requested changes
	RoleReviewer Role = "reviewer" // reviews pull requests others wrote
	RoleMerger   Role = "merger"   // merges approved, mergeable pull requests

	KindIssue Kind = "issue"
	KindPR    Kind = "pr"

	StateOpen   State = "open"
	StateMerged State = "merged"
	StateClosed State = "closed"

	ReviewNone             ReviewState = "none"
	ReviewApproved         ReviewState = "approved"
	ReviewChangesRequested ReviewState = "changes_requested"

	LeaseActive    LeaseState = "active"
	LeaseReleased  LeaseState = "released"
	LeaseExpired   LeaseState = "expired"
	LeaseAbandoned LeaseState = "abandoned"
	LeaseReclaimed LeaseState = "reclaimed"

	ActComment Action = "comment"
	ActPush    Action = "push"
	ActOpenPR  Action = "open_pr"
	ActReview  Action = "review"
	ActMerge   Action = "merge"
	ActClose   Action = "close"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleAuthor || r == RoleReviewer || r == RoleMerger }

// Valid reports whether a is a known action.
func (a Action) Valid() bool {
	switch a {
	case ActComment, ActPush, ActOpenPR, ActReview, ActMerge, ActClose:
		return true
	}
	return false
}

// Valid reports whether k is an assignable kind.
func (k Kind) Valid() bool { return k == KindIssue || k == KindPR }

// Terminal reports whether nothing more may be done to work in s.
func (s State) Terminal() bool { return s == StateMerged || s == StateClosed }

// Session is one agent session.
type Session struct {
	ID           string          `json:"id"`
	Identity     string          `json:"identity"` // the caller identity of the token that registered it
	Name         string          `json:"name,omitempty"`
	Role         Role            `json:"role"`
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	CreatedAt    time.Time       `json:"created_at"`
	HeartbeatAt  time.Time       `json:"heartbeat_at"`
	EndedAt      time.Time       `json:"ended_at,omitzero"`
}

// SessionStatus is how a session stands at a time.
type SessionStatus string

// Session statuses.
const (
	SessionActive SessionStatus = "active"
	SessionStale  SessionStatus = "stale" // no heartbeat for the session TTL
	SessionEnded  SessionStatus = "ended"
)

// Status is the session's status at now, given the session TTL.
func (s *Session) Status(now time.Time, ttl time.Duration) SessionStatus {
	switch {
	case !s.EndedAt.IsZero():
		return SessionEnded
	case now.Sub(s.HeartbeatAt) > ttl:
		return SessionStale
	}
	return SessionActive
}

// WorkKey names one issue or pull request.
type WorkKey struct {
	Forge  string `json:"forge"`
	Repo   string `json:"repo"`
	Kind   Kind   `json:"kind"`
	Number int64  `json:"number"`
}

// Work is one open (or recently finished) issue or pull request of the
// inventory, kept current by webhooks and a periodic sync.
type Work struct {
	ID string `json:"id"`
	WorkKey
	State        State       `json:"state"`
	Title        string      `json:"title"`
	Labels       []string    `json:"labels"`
	Author       string      `json:"author"`                  // the forge user who opened it
	HeadSHA      string      `json:"head_sha,omitempty"`      // pull requests
	ReviewState  ReviewState `json:"review_state,omitempty"`  // pull requests
	Mergeable    bool        `json:"mergeable"`               // pull requests
	LinkedIssues []int64     `json:"linked_issues,omitempty"` // issues a pull request closes
	// AuthorSession is the session that authored the pull request, when
	// one did (it opened it under an assignment).
	AuthorSession string    `json:"author_session,omitempty"`
	UpdatedAt     time.Time `json:"updated_at"` // the forge's
	SyncedAt      time.Time `json:"synced_at"`  // when the inventory last heard of it
}

// Lease is a session's exclusive hold on one work item.
type Lease struct {
	ID           string     `json:"id"`
	WorkID       string     `json:"work_id"`       // the work it holds
	SessionID    string     `json:"session_id"`    // the session holding it: the authority on who holds the work
	AssignmentID string     `json:"assignment_id"` // what the session may do with the work
	State        LeaseState `json:"state"`
	CreatedAt    time.Time  `json:"created_at"`
	HeartbeatAt  time.Time  `json:"heartbeat_at"`            // the owner's last heartbeat
	ExpiresAt    time.Time  `json:"expires_at"`              // it holds until then unless heartbeated
	EndedAt      time.Time  `json:"ended_at,omitzero"`       // released, expired, abandoned or reclaimed at
	WorktreePath string     `json:"worktree_path,omitempty"` // where the owner works, as it said when adopting
	HeadSHA      string     `json:"head_sha,omitempty"`      // the head the owner declared (its own push, or at adoption)
	// Provenance of an adoption or reclaim (hard rule 4 of #601).
	AdoptedFromSessionID string `json:"adopted_from_session_id,omitempty"`
	AdoptedBySessionID   string `json:"adopted_by_session_id,omitempty"`
}

// Live reports whether the lease holds its work at now.
func (l *Lease) Live(now time.Time) bool { return l.State == LeaseActive && now.Before(l.ExpiresAt) }

// Assignment is what a session was given to do with one work item.
type Assignment struct {
	ID              string    `json:"id"`
	SessionID       string    `json:"session_id"`
	WorkID          string    `json:"work_id"`
	LeaseID         string    `json:"lease_id"`
	AllowedActions  []Action  `json:"allowed_actions"`
	ExpectedHeadSHA string    `json:"expected_head_sha,omitempty"` // pull requests: the head it was assigned at (hard rule 4)
	Terminal        bool      `json:"terminal"`                    // on the terminal path: a terminal lock is held with it
	CreatedAt       time.Time `json:"created_at"`
}

// Event is one entry of the control plane's append-only log: every
// assignment, refusal, release, expiry, adoption, abandon and reclaim,
// with who and why.
type Event struct {
	ID           int64           `json:"id"`
	Time         time.Time       `json:"time"`
	Type         string          `json:"type"`
	Actor        string          `json:"actor"` // caller identity, or "system"
	SessionID    string          `json:"session_id,omitempty"`
	WorkID       string          `json:"work_id,omitempty"`
	LeaseID      string          `json:"lease_id,omitempty"`
	AssignmentID string          `json:"assignment_id,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	Detail       json.RawMessage `json:"detail,omitempty"`
}

// Event types.
const (
	EventAssigned  = "assigned"
	EventRefused   = "refused" // a gate refusal
	EventReleased  = "released"
	EventExpired   = "expired"
	EventAdopted   = "adopted"
	EventAbandoned = "abandoned"
	EventReclaimed = "reclaimed"
	EventHeartbeat = "heartbeat"
	EventSession   = "session" // registered or ended: Reason says which
)

// Errors of Store.Assign, as the allocator answers them.
var (
	// ErrWorkHeld: a live lease or another session's terminal lock holds
	// the work; the caller waits (hard rule 2).
	ErrWorkHeld = &wq.Error{Code: wq.ECONFLICT, Message: "work is held by another session"}
	// ErrWorkTerminal: the work was merged or closed (hard rule 3).
	ErrWorkTerminal = &wq.Error{Code: wq.ECONFLICT, Message: "work is merged or closed"}
)
