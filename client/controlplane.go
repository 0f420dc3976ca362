package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

// Call sends a control-plane request: body (nil for none) is encoded as
// JSON, the answer decoded into out. Errors are *Error.
func (c *Client) Call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	return c.do(ctx, method, path, b, out)
}

// callFor is Call answering a new T: nil with the error when there is one.
func callFor[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any) (*T, error) {
	var out T
	if err := c.Call(ctx, method, path, query, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// listFor is a call answering an object whose member holds a list.
func listFor[T any](ctx context.Context, c *Client, method, path, member string, query url.Values) ([]T, error) {
	out, err := callFor[map[string][]T](ctx, c, method, path, query, nil)
	if err != nil {
		return nil, err
	}
	return (*out)[member], nil
}

// RegisterSession starts an agent session of role.
func (c *Client) RegisterSession(ctx context.Context, role cp.Role, name string, capabilities json.RawMessage) (*cp.SessionView, error) {
	body := map[string]any{"role": role, "name": name}
	if len(capabilities) > 0 {
		body["capabilities"] = capabilities
	}
	return callFor[cp.SessionView](ctx, c, http.MethodPost, "/api/v1/sessions", nil, body)
}

// HeartbeatSession keeps a session of the caller's active.
func (c *Client) HeartbeatSession(ctx context.Context, sessionID string) (*cp.SessionView, error) {
	return callFor[cp.SessionView](ctx, c, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(sessionID)+"/heartbeat", nil, nil)
}

// EndSession ends a session of the caller's, releasing its leases.
func (c *Client) EndSession(ctx context.Context, sessionID string) (*cp.SessionView, error) {
	return callFor[cp.SessionView](ctx, c, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(sessionID)+"/end", nil, nil)
}

// Allocate asks for a session's next safe work; apply reserves it.
func (c *Client) Allocate(ctx context.Context, sessionID, repo string, apply bool) (*cp.Allocation, error) {
	return callFor[cp.Allocation](ctx, c, http.MethodPost, "/api/v1/allocations", nil,
		map[string]any{"session_id": sessionID, "repo": repo, "apply": apply})
}

// Gate asks whether a mutation may pass. A refusal is an answer
// (Allowed false), not an error.
func (c *Client) Gate(ctx context.Context, sessionID, assignmentID string, action cp.Action, liveHead string) (*cp.Decision, error) {
	return callFor[cp.Decision](ctx, c, http.MethodPost, "/api/v1/gate", nil,
		map[string]any{"session_id": sessionID, "assignment_id": assignmentID, "action": action, "live_head_sha": liveHead})
}

// Act asks the service to make a gated mutation for a session: a
// comment, a review verdict, a merge or a close, made by the service
// after the gate allows it. A refusal is an *Error whose problem names
// the reason (the gate's, or own_pull_request, wrong_kind,
// forge_refused).
func (c *Client) Act(ctx context.Context, req cp.ActionRequest) (*cp.ActionResult, error) {
	return callFor[cp.ActionResult](ctx, c, http.MethodPost, "/api/v1/actions", nil, req)
}

// Work lists the inventory; query filters it (forge, repo, kind, state,
// limit).
func (c *Client) Work(ctx context.Context, query url.Values) ([]cp.Work, error) {
	return listFor[cp.Work](ctx, c, http.MethodGet, "/api/v1/work", "work", query)
}

// Leases lists the caller's active leases (every session's for an
// admin); query filters them (session_id, work_id, all, limit).
func (c *Client) Leases(ctx context.Context, query url.Values) ([]cp.Lease, error) {
	return listFor[cp.Lease](ctx, c, http.MethodGet, "/api/v1/leases", "leases", query)
}

// InspectLease reads a lease's freshness and, for sessionID (may be ""),
// the safe next action.
func (c *Client) InspectLease(ctx context.Context, leaseID, sessionID string) (*cp.LeaseView, error) {
	var query url.Values
	if sessionID != "" {
		query = url.Values{"session_id": {sessionID}}
	}
	return callFor[cp.LeaseView](ctx, c, http.MethodGet, "/api/v1/leases/"+url.PathEscape(leaseID), query, nil)
}

// LeaseRequest is the body of a lease's lifecycle call: the session
// acting, and what the call takes of the rest.
type LeaseRequest struct {
	SessionID    string           `json:"session_id"`
	HeadSHA      string           `json:"head_sha,omitempty"`      // heartbeat: the head the session believes is pinned (checked); adopt: its worktree's (recorded)
	WorktreePath string           `json:"worktree_path,omitempty"` // adopt: where the session resumes
	Proof        *cp.AbandonProof `json:"proof,omitempty"`         // abandon
}

// HeartbeatLease extends a lease the session holds; r.HeadSHA, if set,
// must be the head the lease is pinned to (else head_moved): a pinned
// head is the forge's, never declared.
func (c *Client) HeartbeatLease(ctx context.Context, leaseID string, r LeaseRequest) (*cp.LeaseView, error) {
	return leaseCall[cp.LeaseView](ctx, c, leaseID, "heartbeat", r)
}

// AdoptLease resumes a lease of the caller's identity, or takes an
// expired one.
func (c *Client) AdoptLease(ctx context.Context, leaseID string, r LeaseRequest) (*cp.LeaseView, error) {
	return leaseCall[cp.LeaseView](ctx, c, leaseID, "adopt", r)
}

// ReleaseLease ends a lease the session holds.
func (c *Client) ReleaseLease(ctx context.Context, leaseID string, r LeaseRequest) (*cp.LeaseView, error) {
	return leaseCall[cp.LeaseView](ctx, c, leaseID, "release", r)
}

// AbandonLease ends a lease whose holder is gone, with r.Proof.
func (c *Client) AbandonLease(ctx context.Context, leaseID string, r LeaseRequest) (*cp.LeaseView, error) {
	return leaseCall[cp.LeaseView](ctx, c, leaseID, "abandon", r)
}

// ReclaimLease assigns an expired lease's work to the session.
func (c *Client) ReclaimLease(ctx context.Context, leaseID string, r LeaseRequest) (*cp.Allocation, error) {
	return leaseCall[cp.Allocation](ctx, c, leaseID, "reclaim", r)
}

// leaseCall is POST /api/v1/leases/{id}/{verb}.
func leaseCall[T any](ctx context.Context, c *Client, leaseID, verb string, r LeaseRequest) (*T, error) {
	return callFor[T](ctx, c, http.MethodPost, "/api/v1/leases/"+url.PathEscape(leaseID)+"/"+verb, nil, r)
}

// ExpireLeases marks exactly the leases past their expiry as expired, and
// returns them.
func (c *Client) ExpireLeases(ctx context.Context) ([]cp.Lease, error) {
	return listFor[cp.Lease](ctx, c, http.MethodPost, "/api/v1/leases/expire", "expired", nil)
}

// WriteCheckpoint upserts a checkpoint of one of the caller's sessions
// (its times and schema version are the server's); requireComplete
// refuses one a resumed session could not act on.
func (c *Client) WriteCheckpoint(ctx context.Context, checkpoint cp.Checkpoint, requireComplete bool) (*cp.Checkpoint, error) {
	var query url.Values
	if requireComplete {
		query = url.Values{"require_complete": {"true"}}
	}
	return callFor[cp.Checkpoint](ctx, c, http.MethodPut, "/api/v1/checkpoints", query, checkpoint)
}

// Checkpoints lists checkpoints of the caller's sessions, newest first;
// query filters them (session_id, forge, repo, work_kind, work_number,
// limit), and all five key fields name one.
func (c *Client) Checkpoints(ctx context.Context, query url.Values) ([]cp.Checkpoint, error) {
	return listFor[cp.Checkpoint](ctx, c, http.MethodGet, "/api/v1/checkpoints", "checkpoints", query)
}

// ReconcileCheckpoint compares a stored checkpoint with the live lease and
// head (headSHA nil: a pull request's head from the inventory); nothing
// is changed.
func (c *Client) ReconcileCheckpoint(ctx context.Context, key cp.CheckpointKey, headSHA *string) (*cp.CheckpointReconcile, error) {
	body := map[string]any{"session_id": key.SessionID, "forge": key.Forge, "repo": key.Repo,
		"work_kind": key.WorkKind, "work_number": key.WorkNumber}
	if headSHA != nil {
		body["head_sha"] = *headSHA
	}
	return callFor[cp.CheckpointReconcile](ctx, c, http.MethodPost, "/api/v1/checkpoints/reconcile", nil, body)
}

// ReconcileIncident says what a monitoring observation would do to its
// forge issue and link, or with apply does it (permission incidents).
func (c *Client) ReconcileIncident(ctx context.Context, obs incident.Observation, apply bool) (*incident.Result, error) {
	return callFor[incident.Result](ctx, c, http.MethodPost, "/api/v1/incidents/reconcile", nil,
		map[string]any{"observation": obs, "apply": apply})
}
