package auth

import (
	"context"

	wq "github.com/workqueue-dev/workqueue"
)

// Chain tries each kind of token in turn: a configured static token (by
// its hash), then a JWT (three segments) against its issuer, then an
// opaque token by introspection. Over-size tokens are refused before any
// of them looks.
type Chain struct {
	Static        *StaticTokens
	JWTs          *JWTs          // nil: no issuer rules
	Introspection *Introspection // nil: no introspection endpoint
}

// Authenticate implements Authenticator.
func (c *Chain) Authenticate(ctx context.Context, token string) (*Caller, error) {
	if token == "" || len(token) > MaxTokenBytes {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token: empty or over %d bytes", MaxTokenBytes)
	}
	if c.Static != nil {
		if caller, err := c.Static.Authenticate(ctx, token); err == nil {
			return caller, nil
		}
	}
	if LooksLikeJWT(token) {
		if c.JWTs == nil {
			return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token: no issuer is trusted")
		}
		return c.JWTs.Authenticate(ctx, token)
	}
	if c.Introspection != nil {
		return c.Introspection.Authenticate(ctx, token)
	}
	return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token")
}

// NeedsRemoteCall implements RemoteCoster: only an opaque token that is
// neither a static token nor in the introspection cache costs a call.
// A JWT is verified locally against its issuer's cached keys, whose
// refetch the key set bounds (once per MinRefresh).
func (c *Chain) NeedsRemoteCall(token string) bool {
	if token == "" || len(token) > MaxTokenBytes {
		return false
	}
	if c.Static != nil && c.Static.holds(token) {
		return false
	}
	if LooksLikeJWT(token) || c.Introspection == nil {
		return false
	}
	return c.Introspection.NeedsRemoteCall(token)
}
