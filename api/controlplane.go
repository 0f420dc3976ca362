package api

import (
	"encoding/json"
	"time"
)

// The control plane's words on the wire (controlplane's enumerations,
// whose values are stored and are the API's words: the same strings).
type (
	// Role is what a session does: author, reviewer or merger.
	Role string
	// Kind is what a work item is on the forge: issue or pr.
	Kind string
	// State is a work item's state on the forge: open, merged or closed.
	State string
	// ReviewState is a pull request's review verdict.
	ReviewState string
	// LeaseState is where a lease is in its lifecycle.
	LeaseState string
	// Action is a mutation an assignment may allow.
	Action string
	// SessionStatus is how a session stands now.
	SessionStatus string
	// Outcome is what an allocation answered.
	Outcome string
)

// The values of the control plane's words.
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

	SessionActive SessionStatus = "active"
	SessionStale  SessionStatus = "stale" // no heartbeat for the session TTL
	SessionEnded  SessionStatus = "ended"

	OutcomePreview    Outcome = "preview"      // a dry run: this would be assigned
	OutcomeAssigned   Outcome = "assigned"     // assigned under a new lease
	OutcomeWait       Outcome = "wait"         // work for this session exists, but another session holds it now
	OutcomeNoSafeWork Outcome = "no_safe_work" // nothing this session may take
)

// A review's verdicts (ActionRequest.Verdict).
const (
	VerdictApprove        = "approve"
	VerdictRequestChanges = "request_changes"
)

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

// SessionView is a session with its status now: the answer of every
// session route.
type SessionView struct {
	Session
	Status SessionStatus `json:"status"`
}

// SessionList is GET /api/v1/sessions.
type SessionList struct {
	Sessions []SessionView `json:"sessions"`
}

// SessionRequest is POST /api/v1/sessions: a session to start (and the
// start_session tool's input).
type SessionRequest struct {
	Role         Role            `json:"role" jsonschema:"author (works issues into pull requests and answers requested changes), reviewer (reviews pull requests others wrote) or merger (merges approved, mergeable pull requests)"`
	Name         string          `json:"name,omitempty" jsonschema:"a name people recognise, such as the host and the agent"`
	Capabilities json.RawMessage `json:"capabilities,omitempty" jsonschema:"what this session can do, as a JSON object of your choosing"`
}

// WorkKey names one issue or pull request.
type WorkKey struct {
	Forge  string `json:"forge"`
	Repo   string `json:"repo"`
	Kind   Kind   `json:"kind"`
	Number int64  `json:"number"`
}

// Work is one open (or recently finished) issue or pull request of the
// inventory.
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

// WorkList is GET /api/v1/work (and the list_work tool's answer).
type WorkList struct {
	Work []Work `json:"work" jsonschema:"the issues and pull requests, by forge, repository, kind and number"`
}

// SyncReport is POST /api/v1/work/sync: what one sync of the inventory
// did, per repository.
type SyncReport struct {
	Started  time.Time  `json:"started"`  // when the sync began listing
	Finished time.Time  `json:"finished"` // when the last repository was written
	Repos    []RepoSync `json:"repos"`    // in the order they were listed
}

// RepoSync is what a sync did for one repository; Err is set when its
// listing failed.
type RepoSync struct {
	Forge   string `json:"forge"`
	Repo    string `json:"repo"`
	Open    int    `json:"open"`
	Reread  int    `json:"reread"`
	Closed  int    `json:"closed"`
	Dropped bool   `json:"dropped,omitempty"`
	Err     string `json:"error,omitempty"`
}

// AllocationRequest is POST /api/v1/allocations (and the allocate_work
// tool's input).
type AllocationRequest struct {
	SessionID string `json:"session_id" jsonschema:"your session's id"`
	Repo      string `json:"repo,omitempty" jsonschema:"only repositories matching this glob, such as org/* or group/**"`
	Apply     bool   `json:"apply,omitempty" jsonschema:"true assigns the work under a lease; false (the default) is a dry run that writes nothing"`
}

// Allocation is the allocator's answer.
type Allocation struct {
	Outcome    Outcome         `json:"outcome"`
	Work       *Work           `json:"work,omitempty"`
	Lease      *LeaseRef       `json:"lease,omitempty"`
	Assignment *AssignmentRef  `json:"assignment,omitempty"`
	Candidates []CandidateSkip `json:"candidates"`
}

// LeaseRef names the lease an allocation took.
type LeaseRef struct {
	ID        string    `json:"id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// AssignmentRef is what the session was assigned.
type AssignmentRef struct {
	ID              string   `json:"id"`
	AllowedActions  []Action `json:"allowed_actions"`
	ExpectedHeadSHA string   `json:"expected_head_sha,omitempty"`
}

// CandidateSkip is a candidate passed over and why (a stable reason:
// terminal, foreign_lease, wrong_role, ...).
type CandidateSkip struct {
	Work   *Work  `json:"work"`
	Reason string `json:"reason"`
}

// GateRequest is POST /api/v1/gate: may this mutation pass now (and the
// check_gate tool's input)?
type GateRequest struct {
	SessionID    string `json:"session_id" jsonschema:"your session's id"`
	AssignmentID string `json:"assignment_id" jsonschema:"the assignment's id, as allocate_work or reclaim_lease answered it"`
	Action       Action `json:"action" jsonschema:"the mutation you are about to make: comment, push, open_pr, review, merge or close"`
	LiveHeadSHA  string `json:"live_head_sha,omitempty" jsonschema:"the pull request's head commit as you see it now, so that a moved head is refused"`
}

// Decision is the gate's answer; a refusal (Allowed false, with its
// reason) is an answer, not an error.
type Decision struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
	// HeadChecked says whether a head was compared: a head neither the
	// caller nor the inventory knows is "not checked", never a mismatch.
	HeadChecked bool `json:"head_checked"`
}
