// Package controlplane is the coordination half of workqueue (DESIGN
// section 9, seed 003): agent sessions ask for the next safe issue or pull
// request and get it under an exclusive lease; a gate checks lease, action,
// state and head before any mutation; leases have a full lifecycle. The
// control-plane database is the one coordination authority: file locks and
// comments are not.
//
// This file holds the domain (its value types are package cptype's,
// shared with the wire); the allocator's routing and the gate are
// pure functions of it (allocate.go, gate.go); the Store seam (store.go)
// is implemented on both databases by controlplane/cpstore.
package controlplane

import (
	"encoding/json"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/cptype"
)

// The control plane's value types are declared once, in package cptype,
// which the wire package (api) shares; these names are aliases of them,
// kept while the domain's many call sites move (issue 52, point 5). New
// code may name either.
type (
	Role          = cptype.Role
	Kind          = cptype.Kind
	State         = cptype.State
	ReviewState   = cptype.ReviewState
	LeaseState    = cptype.LeaseState
	Action        = cptype.Action
	SessionStatus = cptype.SessionStatus
	Outcome       = cptype.Outcome

	Session       = cptype.Session
	SessionView   = cptype.SessionView
	WorkKey       = cptype.WorkKey
	Work          = cptype.Work
	SyncReport    = cptype.SyncReport
	RepoSync      = cptype.RepoSync
	Allocation    = cptype.Allocation
	LeaseRef      = cptype.LeaseRef
	AssignmentRef = cptype.AssignmentRef
	CandidateSkip = cptype.CandidateSkip
	Decision      = cptype.Decision
	ActionRequest = cptype.ActionRequest
	ActionResult  = cptype.ActionResult
	Lease         = cptype.Lease
	LeaseView     = cptype.LeaseView
	Freshness     = cptype.Freshness

	Checkpoint          = cptype.Checkpoint
	CheckpointKey       = cptype.CheckpointKey
	Diagnosis           = cptype.Diagnosis
	CheckpointReconcile = cptype.CheckpointReconcile
)

// The values of the enumerations, as cptype declares them.
const (
	RoleAuthor   = cptype.RoleAuthor
	RoleReviewer = cptype.RoleReviewer
	RoleMerger   = cptype.RoleMerger

	KindIssue = cptype.KindIssue
	KindPR    = cptype.KindPR

	StateOpen   = cptype.StateOpen
	StateMerged = cptype.StateMerged
	StateClosed = cptype.StateClosed

	ReviewNone             = cptype.ReviewNone
	ReviewApproved         = cptype.ReviewApproved
	ReviewChangesRequested = cptype.ReviewChangesRequested

	LeaseActive    = cptype.LeaseActive
	LeaseReleased  = cptype.LeaseReleased
	LeaseExpired   = cptype.LeaseExpired
	LeaseAbandoned = cptype.LeaseAbandoned
	LeaseReclaimed = cptype.LeaseReclaimed

	ActComment = cptype.ActComment
	ActPush    = cptype.ActPush
	ActOpenPR  = cptype.ActOpenPR
	ActReview  = cptype.ActReview
	ActMerge   = cptype.ActMerge
	ActClose   = cptype.ActClose

	SessionActive = cptype.SessionActive
	SessionStale  = cptype.SessionStale
	SessionEnded  = cptype.SessionEnded

	OutcomePreview    = cptype.OutcomePreview
	OutcomeAssigned   = cptype.OutcomeAssigned
	OutcomeWait       = cptype.OutcomeWait
	OutcomeNoSafeWork = cptype.OutcomeNoSafeWork

	VerdictApprove        = cptype.VerdictApprove
	VerdictRequestChanges = cptype.VerdictRequestChanges
)

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
