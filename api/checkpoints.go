package api

import (
	"encoding/json"
	"time"
)

// Checkpoint is a session's resume state for one work unit (a
// session-level checkpoint has WorkNumber 0 and an empty WorkKind): the
// body of PUT /api/v1/checkpoints, by the row's column names (its times
// and schema version are the server's), and every checkpoint answered.
type Checkpoint struct {
	SchemaVersion int `json:"checkpoint_schema_version"`
	// Identity.
	SessionID        string `json:"session_id"`
	ProviderIdentity string `json:"provider_identity"`
	Role             Role   `json:"role"`
	Forge            string `json:"forge"`
	Repo             string `json:"repo"`
	// Work unit.
	WorkKind     Kind   `json:"work_kind"`
	WorkNumber   int64  `json:"work_number"`
	WorktreePath string `json:"worktree_path"`
	Branch       string `json:"branch"`
	HeadSHA      string `json:"head_sha"`
	// Ownership.
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	LeaseID      string          `json:"lease_id"`
	AssignmentID string          `json:"assignment_id"`
	// Progress.
	WorkflowStage       string          `json:"workflow_stage"`
	LastCompletedAction string          `json:"last_completed_action"`
	CurrentOperation    string          `json:"current_operation"`
	PendingMutation     json.RawMessage `json:"pending_mutation,omitempty"`
	// Recovery.
	Evidence             json.RawMessage `json:"evidence,omitempty"`
	Blocker              string          `json:"blocker"`
	NextValidAction      string          `json:"next_valid_action"`
	RecoveryInstructions string          `json:"recovery_instructions"`
	// Bookkeeping.
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CheckpointList is GET /api/v1/checkpoints (and the list_checkpoints
// tool's answer), newest first.
type CheckpointList struct {
	Checkpoints []Checkpoint `json:"checkpoints" jsonschema:"the checkpoints, newest first"`
}

// CheckpointKey names one checkpoint (and is the get_checkpoint tool's
// input).
type CheckpointKey struct {
	SessionID  string `json:"session_id" jsonschema:"the session's id"`
	Forge      string `json:"forge" jsonschema:"the configured forge's name"`
	Repo       string `json:"repo" jsonschema:"the repository's full path"`
	WorkKind   Kind   `json:"work_kind,omitempty" jsonschema:"issue or pr; leave out for the session's own checkpoint"`
	WorkNumber int64  `json:"work_number,omitempty" jsonschema:"the issue or pull request number; leave out (0) for the session's own"`
}

// CheckpointReconcileRequest is POST /api/v1/checkpoints/reconcile (and
// the reconcile_checkpoint tool's input): a checkpoint and, optionally,
// the live head.
type CheckpointReconcileRequest struct {
	CheckpointKey
	HeadSHA *string `json:"head_sha,omitempty" jsonschema:"your worktree's head commit now (default: a pull request's head from the inventory)"`
}

// CheckpointReconcile is a stored checkpoint and what it means now.
type CheckpointReconcile struct {
	Checkpoint *Checkpoint `json:"checkpoint"`
	Diagnosis
	// HeadSource says where the live head came from: "caller" (the
	// session's worktree), "inventory" (the pull request's head as the
	// forge last told us) or "" (not checked).
	HeadSource string `json:"head_source"`
}

// Diagnosis is what a stored checkpoint means against the live state;
// ReconcileAction says what to do: resume, reinspect, reacquire or
// nothing_to_do.
type Diagnosis struct {
	Stale           bool   `json:"stale"`
	HeadMismatch    bool   `json:"head_mismatch"`
	LeaseMismatch   bool   `json:"lease_mismatch"`
	HeadChecked     bool   `json:"head_checked"`
	LeaseChecked    bool   `json:"lease_checked"`
	ReconcileAction string `json:"reconcile_action"`
	Reason          string `json:"reason,omitempty"`
}
