package api

import "github.com/workqueue-dev/workqueue/cptype"

// LeaseList is GET /api/v1/leases (and the list_leases tool's answer).
type LeaseList struct {
	Leases []cptype.Lease `json:"leases" jsonschema:"the leases"`
}

// ExpiredLeases is POST /api/v1/leases/expire: the leases the call marked
// expired (and the expire_leases tool's answer).
type ExpiredLeases struct {
	Expired []cptype.Lease `json:"expired" jsonschema:"the leases this call marked expired"`
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
