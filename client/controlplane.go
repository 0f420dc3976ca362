package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/cptype/incidenttype"
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

// RegisterSession starts an agent session of role.
func (c *Client) RegisterSession(ctx context.Context, role cptype.Role, name string, capabilities json.RawMessage) (*cptype.SessionView, error) {
	return callFor[cptype.SessionView](ctx, c, http.MethodPost, "/api/v1/sessions", nil,
		api.SessionRequest{Role: role, Name: name, Capabilities: capabilities})
}

// HeartbeatSession keeps a session of the caller's active.
func (c *Client) HeartbeatSession(ctx context.Context, sessionID string) (*cptype.SessionView, error) {
	return callFor[cptype.SessionView](ctx, c, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(sessionID)+"/heartbeat", nil, nil)
}

// EndSession ends a session of the caller's, releasing its leases.
func (c *Client) EndSession(ctx context.Context, sessionID string) (*cptype.SessionView, error) {
	return callFor[cptype.SessionView](ctx, c, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(sessionID)+"/end", nil, nil)
}

// Allocate asks for a session's next safe work; apply reserves it.
func (c *Client) Allocate(ctx context.Context, sessionID, repo string, apply bool) (*cptype.Allocation, error) {
	return callFor[cptype.Allocation](ctx, c, http.MethodPost, "/api/v1/allocations", nil,
		api.AllocationRequest{SessionID: sessionID, Repo: repo, Apply: apply})
}

// Gate asks whether a mutation may pass. A refusal is an answer
// (Allowed false), not an error.
func (c *Client) Gate(ctx context.Context, sessionID, assignmentID string, action cptype.Action, liveHead string) (*cptype.Decision, error) {
	return callFor[cptype.Decision](ctx, c, http.MethodPost, "/api/v1/gate", nil,
		api.GateRequest{SessionID: sessionID, AssignmentID: assignmentID, Action: action, LiveHeadSHA: liveHead})
}

// Act asks the service to make a gated mutation for a session: a
// comment, a review verdict, a merge or a close, made by the service
// after the gate allows it. A refusal is an *Error whose problem names
// the reason (the gate's, or own_pull_request, wrong_kind,
// forge_refused).
func (c *Client) Act(ctx context.Context, req cptype.ActionRequest) (*cptype.ActionResult, error) {
	return callFor[cptype.ActionResult](ctx, c, http.MethodPost, "/api/v1/actions", nil, req)
}

// Work lists the inventory; query filters it (forge, repo, kind, state,
// limit).
func (c *Client) Work(ctx context.Context, query url.Values) ([]cptype.Work, error) {
	out, err := callFor[api.WorkList](ctx, c, http.MethodGet, "/api/v1/work", query, nil)
	if err != nil {
		return nil, err
	}
	return out.Work, nil
}

// Leases lists the caller's active leases (every session's for an
// admin); query filters them (session_id, work_id, all, limit).
func (c *Client) Leases(ctx context.Context, query url.Values) ([]cptype.Lease, error) {
	out, err := callFor[api.LeaseList](ctx, c, http.MethodGet, "/api/v1/leases", query, nil)
	if err != nil {
		return nil, err
	}
	return out.Leases, nil
}

// InspectLease reads a lease's freshness and, for sessionID (may be ""),
// the safe next action.
func (c *Client) InspectLease(ctx context.Context, leaseID, sessionID string) (*cptype.LeaseView, error) {
	var query url.Values
	if sessionID != "" {
		query = url.Values{"session_id": {sessionID}}
	}
	return callFor[cptype.LeaseView](ctx, c, http.MethodGet, "/api/v1/leases/"+url.PathEscape(leaseID), query, nil)
}

// HeartbeatLease extends a lease the session holds; r.HeadSHA, if set,
// must be the head the lease is pinned to (else head_moved): a pinned
// head is the forge's, never declared.
func (c *Client) HeartbeatLease(ctx context.Context, leaseID string, r api.LeaseRequest) (*cptype.LeaseView, error) {
	return leaseCall[cptype.LeaseView](ctx, c, leaseID, "heartbeat", r)
}

// AdoptLease resumes a lease of the caller's identity, or takes an
// expired one.
func (c *Client) AdoptLease(ctx context.Context, leaseID string, r api.LeaseRequest) (*cptype.LeaseView, error) {
	return leaseCall[cptype.LeaseView](ctx, c, leaseID, "adopt", r)
}

// ReleaseLease ends a lease the session holds.
func (c *Client) ReleaseLease(ctx context.Context, leaseID string, r api.LeaseRequest) (*cptype.LeaseView, error) {
	return leaseCall[cptype.LeaseView](ctx, c, leaseID, "release", r)
}

// AbandonLease ends a lease whose holder is gone, with r.Proof.
func (c *Client) AbandonLease(ctx context.Context, leaseID string, r api.LeaseRequest) (*cptype.LeaseView, error) {
	return leaseCall[cptype.LeaseView](ctx, c, leaseID, "abandon", r)
}

// ReclaimLease assigns an expired lease's work to the session.
func (c *Client) ReclaimLease(ctx context.Context, leaseID string, r api.LeaseRequest) (*cptype.Allocation, error) {
	return leaseCall[cptype.Allocation](ctx, c, leaseID, "reclaim", r)
}

// leaseCall is POST /api/v1/leases/{id}/{verb}.
func leaseCall[T any](ctx context.Context, c *Client, leaseID, verb string, r api.LeaseRequest) (*T, error) {
	return callFor[T](ctx, c, http.MethodPost, "/api/v1/leases/"+url.PathEscape(leaseID)+"/"+verb, nil, r)
}

// ExpireLeases marks exactly the leases past their expiry as expired, and
// returns them.
func (c *Client) ExpireLeases(ctx context.Context) ([]cptype.Lease, error) {
	out, err := callFor[api.ExpiredLeases](ctx, c, http.MethodPost, "/api/v1/leases/expire", nil, nil)
	if err != nil {
		return nil, err
	}
	return out.Expired, nil
}

// WriteCheckpoint upserts a checkpoint of one of the caller's sessions
// (its times and schema version are the server's); requireComplete
// refuses one a resumed session could not act on.
func (c *Client) WriteCheckpoint(ctx context.Context, checkpoint cptype.Checkpoint, requireComplete bool) (*cptype.Checkpoint, error) {
	var query url.Values
	if requireComplete {
		query = url.Values{"require_complete": {"true"}}
	}
	return callFor[cptype.Checkpoint](ctx, c, http.MethodPut, "/api/v1/checkpoints", query, checkpoint)
}

// Checkpoints lists checkpoints of the caller's sessions, newest first;
// query filters them (session_id, forge, repo, work_kind, work_number,
// limit), and all five key fields name one.
func (c *Client) Checkpoints(ctx context.Context, query url.Values) ([]cptype.Checkpoint, error) {
	out, err := callFor[api.CheckpointList](ctx, c, http.MethodGet, "/api/v1/checkpoints", query, nil)
	if err != nil {
		return nil, err
	}
	return out.Checkpoints, nil
}

// ReconcileCheckpoint compares a stored checkpoint with the live lease and
// head (headSHA nil: a pull request's head from the inventory); nothing
// is changed.
func (c *Client) ReconcileCheckpoint(ctx context.Context, key cptype.CheckpointKey, headSHA *string) (*cptype.CheckpointReconcile, error) {
	return callFor[cptype.CheckpointReconcile](ctx, c, http.MethodPost, "/api/v1/checkpoints/reconcile", nil,
		api.CheckpointReconcileRequest{CheckpointKey: key, HeadSHA: headSHA})
}

// ReconcileIncident says what a monitoring observation would do to its
// forge issue and link, or with apply does it (permission incidents).
func (c *Client) ReconcileIncident(ctx context.Context, obs api.Observation, apply bool) (*incidenttype.Result, error) {
	return callFor[incidenttype.Result](ctx, c, http.MethodPost, "/api/v1/incidents/reconcile", nil,
		api.IncidentReconcileRequest{Observation: obs, Apply: apply})
}
