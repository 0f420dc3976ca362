package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/workqueue-dev/workqueue/api"
)

// FreezeIdentity freezes an identity (permission admin on every
// project): its leases end, its calls are refused 403 identity_frozen,
// and its items are held before any forge write until it is unfrozen.
func (c *Client) FreezeIdentity(ctx context.Context, identity, reason string) (*api.IdentityState, error) {
	var body any
	if reason != "" {
		body = api.FreezeRequest{Reason: reason}
	}
	return callFor[api.IdentityState](ctx, c, http.MethodPost, "/api/v1/identities/"+url.PathEscape(identity)+"/freeze", nil, body)
}

// UnfreezeIdentity lifts an identity's freeze (permission admin on every
// project): its calls are served and its items go on; its ended leases
// do not come back.
func (c *Client) UnfreezeIdentity(ctx context.Context, identity string) (*api.IdentityState, error) {
	return callFor[api.IdentityState](ctx, c, http.MethodPost, "/api/v1/identities/"+url.PathEscape(identity)+"/unfreeze", nil, nil)
}

// FrozenIdentities lists the frozen identities (permission admin).
func (c *Client) FrozenIdentities(ctx context.Context) ([]api.IdentityFreeze, error) {
	out, err := callFor[api.FrozenIdentities](ctx, c, http.MethodGet, "/api/v1/identities/frozen", nil, nil)
	if err != nil {
		return nil, err
	}
	return out.Identities, nil
}
