package api

import (
	"encoding/json"

	"github.com/workqueue-dev/workqueue/cptype"
)

// SessionList is GET /api/v1/sessions.
type SessionList struct {
	Sessions []cptype.SessionView `json:"sessions"`
}

// SessionRequest is POST /api/v1/sessions: a session to start (and the
// start_session tool's input).
type SessionRequest struct {
	Role         cptype.Role     `json:"role" jsonschema:"author (works issues into pull requests and answers requested changes), reviewer (reviews pull requests others wrote) or merger (merges approved, mergeable pull requests)"`
	Name         string          `json:"name,omitempty" jsonschema:"a name people recognise, such as the host and the agent"`
	Capabilities json.RawMessage `json:"capabilities,omitempty" jsonschema:"what this session can do, as a JSON object of your choosing"`
}

// WorkList is GET /api/v1/work (and the list_work tool's answer).
type WorkList struct {
	Work []cptype.Work `json:"work" jsonschema:"the issues and pull requests, by forge, repository, kind and number"`
}

// AllocationRequest is POST /api/v1/allocations (and the allocate_work
// tool's input).
type AllocationRequest struct {
	SessionID string `json:"session_id" jsonschema:"your session's id"`
	Repo      string `json:"repo,omitempty" jsonschema:"only repositories matching this glob, such as org/* or group/**"`
	Apply     bool   `json:"apply,omitempty" jsonschema:"true assigns the work under a lease; false (the default) is a dry run that writes nothing"`
}

// GateRequest is POST /api/v1/gate: may this mutation pass now (and the
// check_gate tool's input)?
type GateRequest struct {
	SessionID    string        `json:"session_id" jsonschema:"your session's id"`
	AssignmentID string        `json:"assignment_id" jsonschema:"the assignment's id, as allocate_work or reclaim_lease answered it"`
	Action       cptype.Action `json:"action" jsonschema:"the mutation you are about to make: comment, push, open_pr, review, merge or close"`
	LiveHeadSHA  string        `json:"live_head_sha,omitempty" jsonschema:"the pull request's head commit as you see it now, so that a moved head is refused"`
}
