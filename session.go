package workqueue

import (
	"context"
	"time"
)

// SessionRevocations records dashboard logins that ended before their
// cookie expired (a logout), in the database, so that every instance on
// it refuses such a cookie at once (issue 49). A login is named by an id
// the dashboard derives from its cookie; a revocation is kept until the
// cookie's own expiry, after which the cookie is refused anyway. Both
// drivers implement it.
type SessionRevocations interface {
	// RevokeSession records login id as ended until expires, and
	// forgets the revocations whose expiry passed at now. Revoking an id
	// twice is no error. EINVALID for an empty id; EUNAVAILABLE.
	RevokeSession(ctx context.Context, id string, expires, now time.Time) error
	// SessionRevoked reports whether login id was revoked. EUNAVAILABLE.
	SessionRevoked(ctx context.Context, id string) (bool, error)
}
