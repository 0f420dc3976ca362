package cptype

import (
	"encoding/json"
	"time"
)

// Session is one agent session.
type Session struct {
	ID           string          `json:"id"`
	Identity     string          `json:"identity"` // the caller identity of the token that registered it
	Name         string          `json:"name,omitempty"`
	Role         Role            `json:"role"`
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	CreatedAt    time.Time       `json:"created_at"`
	HeartbeatAt  time.Time       `json:"heartbeat_at"`
	EndedAt      time.Time       `json:"ended_at,omitzero"`
}

// Status is the session's status at now, given the session TTL.
func (s *Session) Status(now time.Time, ttl time.Duration) SessionStatus {
	switch {
	case !s.EndedAt.IsZero():
		return SessionEnded
	case now.Sub(s.HeartbeatAt) > ttl:
		return SessionStale
	}
	return SessionActive
}

// SessionView is a session with its status now: the answer of every
// session route.
type SessionView struct {
	Session
	Status SessionStatus `json:"status"`
}
