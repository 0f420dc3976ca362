package mcpserver

import (
	"encoding/json"

	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/cptype"
)

// The tools' inputs and the outputs that are not an API type as it is.
// Their jsonschema tags are the schema's descriptions, read by a model.

type itemRef struct {
	ID string `json:"id" jsonschema:"the item's id, as a submit tool or list_items answered it"`
}

type itemQuery struct {
	ItemType string `json:"item_type,omitempty" jsonschema:"only items of this type (an item type's name, as its submit tool's item_type)"`
	Phase    string `json:"phase,omitempty" jsonschema:"only items in this phase: active, completed, failed or cancelled"`
	Forge    string `json:"forge,omitempty" jsonschema:"only items acting on this configured forge"`
	Project  string `json:"project,omitempty" jsonschema:"only items acting on this project (its full path)"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"the previous page's next_cursor, to read on"`
	Limit    int    `json:"limit,omitempty" jsonschema:"at most this many (1 to 500)"`
}

type sessionRef struct {
	SessionID string `json:"session_id" jsonschema:"your session's id, as start_session answered it"`
}

// assignedWork names the work a gated action is for: the assignment
// allocate_work (or reclaim_lease) gave the session.
type assignedWork struct {
	SessionID    string `json:"session_id" jsonschema:"your session's id"`
	AssignmentID string `json:"assignment_id" jsonschema:"your assignment's id, as allocate_work or reclaim_lease answered it"`
}

// request is the action on the assigned work.
func (w assignedWork) request(action cptype.Action) cptype.ActionRequest {
	return cptype.ActionRequest{SessionID: w.SessionID, AssignmentID: w.AssignmentID, Action: action}
}

type commentAction struct {
	assignedWork
	Body string `json:"body" jsonschema:"the comment's text (Markdown, at most 64 KiB)"`
}

type reviewAction struct {
	assignedWork
	Verdict string `json:"verdict" jsonschema:"approve, or request_changes"`
	Body    string `json:"body,omitempty" jsonschema:"what you found; required with request_changes, saying what to change (at most 64 KiB)"`
}

type workQuery struct {
	Forge string       `json:"forge,omitempty" jsonschema:"only this configured forge's"`
	Repo  string       `json:"repo,omitempty" jsonschema:"only this repository's (its full path)"`
	Kind  cptype.Kind  `json:"kind,omitempty" jsonschema:"issue or pr"`
	State cptype.State `json:"state,omitempty" jsonschema:"open, merged or closed"`
	Limit int          `json:"limit,omitempty" jsonschema:"at most this many (1 to 500)"`
}

type leaseQuery struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"only this session's"`
	WorkID    string `json:"work_id,omitempty" jsonschema:"only this work item's (its id in the inventory)"`
	All       bool   `json:"all,omitempty" jsonschema:"ended leases too"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many (1 to 500)"`
}

type leaseInspection struct {
	LeaseID   string `json:"lease_id" jsonschema:"the lease's id"`
	SessionID string `json:"session_id,omitempty" jsonschema:"your session's id, for the safe next action"`
}

type leaseAct struct {
	LeaseID   string `json:"lease_id" jsonschema:"the lease's id"`
	SessionID string `json:"session_id" jsonschema:"your session's id"`
}

type leaseHeartbeat struct {
	leaseAct
	HeadSHA string `json:"head_sha,omitempty" jsonschema:"the head you believe the lease is at (a commit id): refused with head_moved if it is not the pinned one"`
}

type leaseAdoption struct {
	leaseAct
	WorktreePath string `json:"worktree_path,omitempty" jsonschema:"the worktree you resume the work in"`
	HeadSHA      string `json:"head_sha,omitempty" jsonschema:"your worktree's head commit, recorded as your report"`
}

type leaseAbandonment struct {
	leaseAct
	Proof api.AbandonProof `json:"proof" jsonschema:"why the holder is gone; every claim must be true"`
}

// checkpointWrite is cptype.Checkpoint's writable fields described, and
// write_checkpoint's require_complete.
type checkpointWrite struct {
	cptype.CheckpointKey
	Role                 cptype.Role     `json:"role,omitempty" jsonschema:"default: the session's"`
	ProviderIdentity     string          `json:"provider_identity,omitempty" jsonschema:"who you act as on the forge"`
	WorktreePath         string          `json:"worktree_path,omitempty" jsonschema:"where you work"`
	Branch               string          `json:"branch,omitempty" jsonschema:"the branch you work on"`
	HeadSHA              string          `json:"head_sha,omitempty" jsonschema:"your worktree's head commit"`
	Capabilities         json.RawMessage `json:"capabilities,omitempty" jsonschema:"what the session can do (JSON)"`
	LeaseID              string          `json:"lease_id,omitempty" jsonschema:"the lease you hold on the work"`
	AssignmentID         string          `json:"assignment_id,omitempty" jsonschema:"the assignment you work under"`
	WorkflowStage        string          `json:"workflow_stage,omitempty" jsonschema:"where in your workflow you are"`
	LastCompletedAction  string          `json:"last_completed_action,omitempty" jsonschema:"what you finished last"`
	CurrentOperation     string          `json:"current_operation,omitempty" jsonschema:"what you are doing now"`
	PendingMutation      json.RawMessage `json:"pending_mutation,omitempty" jsonschema:"a mutation begun and not confirmed (JSON)"`
	Evidence             json.RawMessage `json:"evidence,omitempty" jsonschema:"what you saw that a resumed session needs (JSON)"`
	Blocker              string          `json:"blocker,omitempty" jsonschema:"what stops you, if anything"`
	NextValidAction      string          `json:"next_valid_action,omitempty" jsonschema:"what a resumed session may do next"`
	RecoveryInstructions string          `json:"recovery_instructions,omitempty" jsonschema:"how to resume, in words"`
	Status               string          `json:"status,omitempty" jsonschema:"your status, in a word"`
	RequireComplete      bool            `json:"require_complete,omitempty" jsonschema:"refuse unless session_id, role, workflow_stage, next_valid_action and recovery_instructions are all given, as before stopping"`
}

type checkpointFound struct {
	Found      bool               `json:"found" jsonschema:"whether the checkpoint exists"`
	Checkpoint *cptype.Checkpoint `json:"checkpoint,omitempty" jsonschema:"the checkpoint, when found"`
}

type checkpointQuery struct {
	SessionID  string      `json:"session_id,omitempty" jsonschema:"only this session's"`
	Forge      string      `json:"forge,omitempty" jsonschema:"only this forge's"`
	Repo       string      `json:"repo,omitempty" jsonschema:"only this repository's"`
	WorkKind   cptype.Kind `json:"work_kind,omitempty" jsonschema:"only this kind's: issue or pr"`
	WorkNumber *int64      `json:"work_number,omitempty" jsonschema:"only this issue or pull request number's (0: sessions' own checkpoints)"`
	Limit      int         `json:"limit,omitempty" jsonschema:"at most this many (1 to 500)"`
}

type incidentReconcile struct {
	Observation observation `json:"observation" jsonschema:"what the error tracker says of one of its issues"`
	Apply       bool        `json:"apply,omitempty" jsonschema:"true files the issue or updates the link; false (the default) is a dry run"`
}

// observation is api.Observation described; its times are text, which
// the service parses (and refuses by name) itself.
type observation struct {
	Provider     string  `json:"provider" jsonschema:"sentry or glitchtip"`
	Organization string  `json:"organization" jsonschema:"the provider's organization"`
	Project      string  `json:"project" jsonschema:"the provider's project"`
	Environment  string  `json:"environment,omitempty" jsonschema:"the environment, when the provider scopes issues by it"`
	Fingerprint  string  `json:"fingerprint" jsonschema:"the provider's issue (group) id"`
	Title        string  `json:"title,omitempty" jsonschema:"the issue's title"`
	Culprit      string  `json:"culprit,omitempty" jsonschema:"where it fails, as the provider says"`
	Level        string  `json:"level,omitempty" jsonschema:"error, warning, ..."`
	Status       string  `json:"status,omitempty" jsonschema:"the provider's status: unresolved, resolved, ignored"`
	EventCount   int64   `json:"event_count,omitempty" jsonschema:"how many events the issue has"`
	Permalink    string  `json:"permalink,omitempty" jsonschema:"the issue's page at the provider (absolute http or https URL)"`
	FirstSeen    string  `json:"first_seen,omitempty" jsonschema:"when it was first seen (RFC 3339)"`
	LastSeen     string  `json:"last_seen,omitempty" jsonschema:"when it was last seen (RFC 3339)"`
	LinkedPRs    []int64 `json:"linked_prs,omitempty" jsonschema:"pull requests of the forge repository that address it"`
}
