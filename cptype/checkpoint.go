package cptype

import (
	"encoding/json"
	"strings"
	"time"
)

// Checkpoint is a session's durable resume state for one work unit (a
// session-level checkpoint has WorkNumber 0 and an empty WorkKind): one
// current row per (forge, repo, session, work kind, work number),
// upserted (#660). It is the body of PUT /api/v1/checkpoints, by the
// row's column names (its times and schema version are the server's),
// and every checkpoint answered.
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
	WorkflowStage       string          `json:"workflow_stage"`             // where in its workflow the session is
	LastCompletedAction string          `json:"last_completed_action"`      // what it finished last
	CurrentOperation    string          `json:"current_operation"`          // what it was doing when it wrote this
	PendingMutation     json.RawMessage `json:"pending_mutation,omitempty"` // a mutation begun and not confirmed
	// Recovery.
	Evidence             json.RawMessage `json:"evidence,omitempty"`    // what the session saw (redacted)
	Blocker              string          `json:"blocker"`               // what stops it, if anything
	NextValidAction      string          `json:"next_valid_action"`     // what a resumed session may do next
	RecoveryInstructions string          `json:"recovery_instructions"` // how to resume, in words
	// Bookkeeping.
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Key is c's row key.
func (c Checkpoint) Key() CheckpointKey {
	return CheckpointKey{Forge: c.Forge, Repo: c.Repo, SessionID: c.SessionID, WorkKind: c.WorkKind, WorkNumber: c.WorkNumber}
}

// Missing lists the fields a drain write needs that c lacks (hard rule 4
// of #660): a checkpoint that could not resume the work must not end a
// drain. Empty when complete.
func (c *Checkpoint) Missing() []string {
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"session_id", c.SessionID}, {"role", string(c.Role)}, {"workflow_stage", c.WorkflowStage},
		{"next_valid_action", c.NextValidAction}, {"recovery_instructions", c.RecoveryInstructions},
	} {
		if strings.TrimSpace(f.value) == "" {
			missing = append(missing, f.name)
		}
	}
	return missing
}

// CheckpointKey names one checkpoint: a session's state for one work
// unit (WorkKind "" and WorkNumber 0 for the session itself). It is the
// get_checkpoint tool's input.
type CheckpointKey struct {
	SessionID  string `json:"session_id" jsonschema:"the session's id"`
	Forge      string `json:"forge" jsonschema:"the configured forge's name"`
	Repo       string `json:"repo" jsonschema:"the repository's full path"`
	WorkKind   Kind   `json:"work_kind,omitempty" jsonschema:"issue or pr; leave out for the session's own checkpoint"`
	WorkNumber int64  `json:"work_number,omitempty" jsonschema:"the issue or pull request number; leave out (0) for the session's own"`
}

// Diagnosis is what a stored checkpoint means against the live state:
// the caller decides what to do; nothing is restored (hard rule 2).
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

// CheckpointReconcile is a stored checkpoint and what it means now.
type CheckpointReconcile struct {
	Checkpoint *Checkpoint `json:"checkpoint"`
	Diagnosis
	// HeadSource says where the live head came from: "caller" (the
	// session's worktree), "inventory" (the pull request's head as the
	// forge last told us) or "" (not checked).
	HeadSource string `json:"head_source"`
}
