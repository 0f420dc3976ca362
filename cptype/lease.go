package cptype

import "time"

// Lease is a session's exclusive hold on one work item.
type Lease struct {
	ID           string     `json:"id"`
	WorkID       string     `json:"work_id"`       // the work it holds
	SessionID    string     `json:"session_id"`    // the session holding it: the authority on who holds the work
	AssignmentID string     `json:"assignment_id"` // what the session may do with the work
	State        LeaseState `json:"state"`
	CreatedAt    time.Time  `json:"created_at"`
	HeartbeatAt  time.Time  `json:"heartbeat_at"`            // the owner's last heartbeat
	ExpiresAt    time.Time  `json:"expires_at"`              // it holds until then unless heartbeated
	EndedAt      time.Time  `json:"ended_at,omitzero"`       // released, expired, abandoned or reclaimed at
	WorktreePath string     `json:"worktree_path,omitempty"` // where the owner works, as it said when adopting
	HeadSHA      string     `json:"head_sha,omitempty"`      // the head the owner declared (its own push, or at adoption)
	// Provenance of an adoption or reclaim (hard rule 4 of #601).
	AdoptedFromSessionID string `json:"adopted_from_session_id,omitempty"`
	AdoptedBySessionID   string `json:"adopted_by_session_id,omitempty"`
}

// Live reports whether the lease holds its work at now.
func (l *Lease) Live(now time.Time) bool { return l.State == LeaseActive && now.Before(l.ExpiresAt) }

// LeaseView is a lease with its freshness and the safe next action for
// the caller (#601's inspect).
type LeaseView struct {
	Lease
	Freshness      Freshness `json:"freshness"`
	SafeNextAction string    `json:"safe_next_action"`
}

// Freshness says how a lease stands at a time.
type Freshness struct {
	Live      bool          `json:"live"`
	ExpiresIn time.Duration `json:"expires_in_ns"` // negative once expired
	SinceBeat time.Duration `json:"since_heartbeat_ns"`
}
