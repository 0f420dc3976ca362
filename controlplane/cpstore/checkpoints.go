package cpstore

import (
	"context"
	"fmt"
	"time"

	"github.com/workqueue-dev/workqueue/controlplane"
)

const checkpointCols = `forge, repo, session_id, work_kind, work_number, checkpoint_schema_version,
	provider_identity, role, worktree_path, branch, head_sha, capabilities, lease_id, assignment_id,
	workflow_stage, last_completed_action, current_operation, pending_mutation,
	evidence, blocker, next_valid_action, recovery_instructions, status, created_at, updated_at`

// checkpointUpdate is every column an upsert replaces: all but the key
// and created_at.
const checkpointUpdate = `checkpoint_schema_version = excluded.checkpoint_schema_version,
	provider_identity = excluded.provider_identity, role = excluded.role,
	worktree_path = excluded.worktree_path, branch = excluded.branch, head_sha = excluded.head_sha,
	capabilities = excluded.capabilities, lease_id = excluded.lease_id, assignment_id = excluded.assignment_id,
	workflow_stage = excluded.workflow_stage, last_completed_action = excluded.last_completed_action,
	current_operation = excluded.current_operation, pending_mutation = excluded.pending_mutation,
	evidence = excluded.evidence, blocker = excluded.blocker, next_valid_action = excluded.next_valid_action,
	recovery_instructions = excluded.recovery_instructions, status = excluded.status, updated_at = excluded.updated_at`

func scanCheckpoint(r row) (controlplane.Checkpoint, error) {
	var c controlplane.Checkpoint
	var kind, role string
	var caps, pending, evidence jsonCol
	err := r.Scan(&c.Forge, &c.Repo, &c.SessionID, &kind, &c.WorkNumber, &c.SchemaVersion,
		&c.ProviderIdentity, &role, &c.WorktreePath, &c.Branch, &c.HeadSHA, &caps, &c.LeaseID, &c.AssignmentID,
		&c.WorkflowStage, &c.LastCompletedAction, &c.CurrentOperation, &pending,
		&evidence, &c.Blocker, &c.NextValidAction, &c.RecoveryInstructions, &c.Status,
		(*timeCol)(&c.CreatedAt), (*timeCol)(&c.UpdatedAt))
	c.WorkKind, c.Role = controlplane.Kind(kind), controlplane.Role(role)
	c.Capabilities, c.PendingMutation, c.Evidence = rawOrNil(caps), rawOrNil(pending), rawOrNil(evidence)
	return c, err
}

// PutCheckpoint upserts c by its key.
func (s *store) PutCheckpoint(ctx context.Context, c controlplane.Checkpoint, now time.Time) (*controlplane.Checkpoint, error) {
	docs := make([]any, 3)
	for i, d := range []struct {
		name string
		doc  []byte
	}{{"capabilities", c.Capabilities}, {"pending_mutation", c.PendingMutation}, {"evidence", c.Evidence}} {
		v, err := rawJSON(d.name, d.doc)
		if err != nil {
			return nil, err
		}
		docs[i] = v
	}
	var out controlplane.Checkpoint
	err := s.write(ctx, func(cn conn) error {
		var err error
		out, err = scanCheckpoint(cn.queryRow(ctx, `INSERT INTO cp_checkpoints (`+checkpointCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (forge, repo, session_id, work_kind, work_number) DO UPDATE SET `+checkpointUpdate+`
			RETURNING `+checkpointCols,
			c.Forge, c.Repo, c.SessionID, string(c.WorkKind), c.WorkNumber, c.SchemaVersion,
			c.ProviderIdentity, string(c.Role), c.WorktreePath, c.Branch, c.HeadSHA, docs[0], c.LeaseID, c.AssignmentID,
			c.WorkflowStage, c.LastCompletedAction, c.CurrentOperation, docs[1],
			docs[2], c.Blocker, c.NextValidAction, c.RecoveryInstructions, c.Status, now, now))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("put checkpoint of session %s: %w", c.SessionID, notFound(err, "session", c.SessionID))
	}
	return &out, nil
}

// GetCheckpoint returns one checkpoint.
func (s *store) GetCheckpoint(ctx context.Context, k controlplane.CheckpointKey) (*controlplane.Checkpoint, error) {
	c, err := scanCheckpoint(s.reader().queryRow(ctx, `SELECT `+checkpointCols+` FROM cp_checkpoints
		WHERE forge = ? AND repo = ? AND session_id = ? AND work_kind = ? AND work_number = ?`,
		k.Forge, k.Repo, k.SessionID, string(k.WorkKind), k.WorkNumber))
	if err != nil {
		return nil, notFound(err, "checkpoint of session", fmt.Sprintf("%s on %s %s %s #%d", k.SessionID, k.Forge, k.Repo, k.WorkKind, k.WorkNumber))
	}
	return &c, nil
}

// ListCheckpoints returns checkpoints newest first.
func (s *store) ListCheckpoints(ctx context.Context, f controlplane.CheckpointFilter) ([]controlplane.Checkpoint, error) {
	var w filter
	w.eq("session_id", f.SessionID)
	w.eq("forge", f.Forge)
	w.eq("repo", f.Repo)
	w.eq("work_kind", string(f.WorkKind))
	if f.HasNumber {
		w.add("work_number = ?", f.WorkNumber)
	}
	if f.Identity != "" {
		w.add("session_id IN (SELECT id FROM cp_sessions WHERE identity = ?)", f.Identity)
	}
	out, err := queryAll(ctx, s.reader(), scanCheckpoint, `SELECT `+checkpointCols+` FROM cp_checkpoints`+w.where()+
		` ORDER BY updated_at DESC, session_id DESC, work_kind DESC, work_number DESC LIMIT ?`, append(w.args, limit(f.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	return out, nil
}
