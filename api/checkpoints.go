package api

import "github.com/workqueue-dev/workqueue/cptype"

// CheckpointList is GET /api/v1/checkpoints (and the list_checkpoints
// tool's answer), newest first.
type CheckpointList struct {
	Checkpoints []cptype.Checkpoint `json:"checkpoints" jsonschema:"the checkpoints, newest first"`
}

// CheckpointReconcileRequest is POST /api/v1/checkpoints/reconcile (and
// the reconcile_checkpoint tool's input): a checkpoint and, optionally,
// the live head.
type CheckpointReconcileRequest struct {
	cptype.CheckpointKey
	HeadSHA *string `json:"head_sha,omitempty" jsonschema:"your worktree's head commit now (default: a pull request's head from the inventory)"`
}
