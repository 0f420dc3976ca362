package controlplane

import (
	"encoding/json"
	"strings"
	"time"
)

// CheckpointSchemaVersion is the field set a checkpoint is written under,
// stored with each row so that a reader knows which it holds.
const CheckpointSchemaVersion = 1

// MaxCheckpointText bounds every free-text field of a checkpoint, and
// MaxCheckpointJSON every JSON one: a checkpoint holds resume state, never
// a transcript (hard rule 5 of #660).
const (
	MaxCheckpointText = 4 << 10
	MaxCheckpointJSON = 16 << 10
)

// Checkpoint is a session's durable resume state for one work unit (a
// session-level checkpoint has WorkNumber 0 and an empty WorkKind): one
// current row per (forge, repo, session, work kind, work number),
// upserted (#660).
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
func (c *Checkpoint) Key() CheckpointKey {
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

// LiveState is what the caller knows now of a checkpoint's work: nil
// pointers were not checked.
type LiveState struct {
	HeadSHA *string // the worktree's or the forge's head
	// Lease is the checkpoint's lease as the store has it now; LeaseGone
	// says it was looked up and does not exist.
	Lease     *Lease
	LeaseGone bool
	Now       time.Time
}

// Diagnosis is what a stored checkpoint means against the live state:
// the caller decides what to do; nothing is restored (hard rule 2).
type Diagnosis struct {
	Stale           bool   `json:"stale"`
	HeadMismatch    bool   `json:"head_mismatch"`
	LeaseMismatch   bool   `json:"lease_mismatch"`
	HeadChecked     bool   `json:"head_checked"`
	LeaseChecked    bool   `json:"lease_checked"`
	ReconcileAction string `json:"reconcile_action"`
	Reason          string `json:"reason,omitempty"`
}

// Reconcile actions.
const (
	ReconcileResume   = "resume"        // the checkpoint matches what was checked: continue from next_valid_action
	ReconcileReadHead = "reinspect"     // the head moved: inspect the work again before any mutation
	ReconcileReclaim  = "reacquire"     // the lease is gone, ended or another's: allocate or adopt first
	ReconcileNothing  = "nothing_to_do" // no lease was held and nothing checked disagrees
)

// Reconcile diagnoses checkpoint c against live (hard rules 2 and 3 of
// #660): a head that differs, or a lease that is gone, ended, expired or
// held by another session, makes it stale; an input not checked never
// does.
func Reconcile(c *Checkpoint, live LiveState) Diagnosis {
	var d Diagnosis
	if live.HeadSHA != nil && c.HeadSHA != "" {
		d.HeadChecked = true
		d.HeadMismatch = *live.HeadSHA != c.HeadSHA
	}
	if c.LeaseID != "" && (live.Lease != nil || live.LeaseGone) {
		d.LeaseChecked = true
		switch l := live.Lease; {
		case live.LeaseGone || l == nil:
			d.LeaseMismatch, d.Reason = true, "the lease no longer exists"
		case l.SessionID != c.SessionID:
			d.LeaseMismatch, d.Reason = true, "the lease is held by session "+l.SessionID
		case !l.Live(live.Now):
			d.LeaseMismatch, d.Reason = true, "the lease is "+string(l.State)+" or past its expiry"
		}
	}
	d.Stale = d.HeadMismatch || d.LeaseMismatch
	switch {
	case d.LeaseMismatch:
		d.ReconcileAction = ReconcileReclaim
	case d.HeadMismatch:
		d.ReconcileAction, d.Reason = ReconcileReadHead, "the head moved from "+c.HeadSHA+" to "+*live.HeadSHA
	case c.LeaseID == "" && !d.HeadChecked:
		d.ReconcileAction = ReconcileNothing
	default:
		d.ReconcileAction = ReconcileResume
	}
	return d
}
