package api

import "time"

// Lease is a session's exclusive hold on one work item.
type Lease struct {
	ID           string     `json:"id"`
	WorkID       string     `json:"work_id"`       // the work it holds
	SessionID    string     `json:"session_id"`    // the session holding it
	AssignmentID string     `json:"assignment_id"` // what the session may do with the work
	State        LeaseState `json:"state"`
	CreatedAt    time.Time  `json:"created_at"`
	HeartbeatAt  time.Time  `json:"heartbeat_at"`            // the owner's last heartbeat
	ExpiresAt    time.Time  `json:"expires_at"`              // it holds until then unless heartbeated
	EndedAt      time.Time  `json:"ended_at,omitzero"`       // released, expired, abandoned or reclaimed at
	WorktreePath string     `json:"worktree_path,omitempty"` // where the owner works, as it said when adopting
	HeadSHA      string     `json:"head_sha,omitempty"`      // the head the owner declared
	// Provenance of an adoption or reclaim.
	AdoptedFromSessionID string `json:"adopted_from_session_id,omitempty"`
	AdoptedBySessionID   string `json:"adopted_by_session_id,omitempty"`
}

// LeaseList is GET /api/v1/leases (and the list_leases tool's answer).
type LeaseList struct {
	Leases []Lease `json:"leases" jsonschema:"the leases"`
}

// ExpiredLeases is POST /api/v1/leases/expire: the leases the call marked
// expired (and the expire_leases tool's answer).
type ExpiredLeases struct {
	Expired []Lease `json:"expired" jsonschema:"the leases this call marked expired"`
}

// LeaseView is a lease with its freshness and the safe next action for
// the caller.
type LeaseView struct {
	Lease
	Freshness      Freshness `json:"freshness"`
	SafeNextAction string    `json:"safe_next_action"`
}

// Freshness says how a lease stands now.
type Freshness struct {
	Live      bool          `json:"live"`
	ExpiresIn time.Duration `json:"expires_in_ns"` // negative once expired
	SinceBeat time.Duration `json:"since_heartbeat_ns"`
}

// LeaseRequest is the body of a lease's lifecycle call (POST
// /api/v1/leases/{id}/heartbeat, adopt, release, abandon, reclaim): the
// session acting, and what the call takes of the rest.
type LeaseRequest struct {
	SessionID    string        `json:"session_id"`
	HeadSHA      string        `json:"head_sha,omitempty"`      // heartbeat: the head the session believes is pinned (checked); adopt: its worktree's (recorded)
	WorktreePath string        `json:"worktree_path,omitempty"` // adopt: where the session resumes
	Proof        *AbandonProof `json:"proof,omitempty"`         // abandon
}

// AbandonProof is why an abandoned lease's holder is gone; every claim
// must be true, and each is recorded.
type AbandonProof struct {
	DeadProcess        bool `json:"dead_process,omitempty" jsonschema:"the holder's process is gone"`
	MissingWorktree    bool `json:"missing_worktree,omitempty" jsonschema:"the holder's worktree is gone"`
	NoLiveMutationRisk bool `json:"no_live_mutation_risk,omitempty" jsonschema:"nothing can still write to the forge for the holder"`
	NoOpenPR           bool `json:"no_open_pr,omitempty" jsonschema:"no open pull request carries the holder's work"`
	OperatorAuthorized bool `json:"operator_authorized,omitempty" jsonschema:"an operator authorized it (admin tokens only)"`
}
