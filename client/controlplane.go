package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	cp "github.com/workqueue-dev/workqueue/controlplane"
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

// RegisterSession starts an agent session of role.
func (c *Client) RegisterSession(ctx context.Context, role cp.Role, name string, capabilities json.RawMessage) (*cp.SessionView, error) {
	var out cp.SessionView
	body := map[string]any{"role": role, "name": name}
	if len(capabilities) > 0 {
		body["capabilities"] = capabilities
	}
	return &out, c.Call(ctx, http.MethodPost, "/api/v1/sessions", nil, body, &out)
}

// Allocate asks for a session's next safe work; apply reserves it.
func (c *Client) Allocate(ctx context.Context, sessionID, repo string, apply bool) (*cp.Allocation, error) {
	var out cp.Allocation
	return &out, c.Call(ctx, http.MethodPost, "/api/v1/allocations", nil,
		map[string]any{"session_id": sessionID, "repo": repo, "apply": apply}, &out)
}

// Gate asks whether a mutation may pass.
func (c *Client) Gate(ctx context.Context, sessionID, assignmentID string, action cp.Action, liveHead string) (*cp.Decision, error) {
	var out cp.Decision
	return &out, c.Call(ctx, http.MethodPost, "/api/v1/gate", nil,
		map[string]any{"session_id": sessionID, "assignment_id": assignmentID, "action": action, "live_head_sha": liveHead}, &out)
}
