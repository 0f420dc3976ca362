package controlplane

import (
	"time"
)

// Safe next actions of an inspected lease.
const (
	NextContinue          = "continue"            // the caller's live lease: go on
	NextHeartbeat         = "heartbeat"           // the caller's live lease, near its end: heartbeat now
	NextAdopt             = "adopt"               // the caller's identity held it in another session: adopt to resume
	NextWaitForeignActive = "wait_foreign_active" // another's live lease: never steal it (hard rule 2 of #601)
	NextReclaim           = "reclaim"             // expired: it may be reclaimed, with provenance
	NextAllocate          = "allocate"            // ended: ask the allocator for work
)

// Inspect is a lease's freshness at now and the safe next action for the
// caller: session caller (nil when the caller has none), where owner is
// the session holding the lease (nil if it is gone). heartbeatWithin is
// how close to the expiry a heartbeat is due; sessionTTL how long a
// holder may be quiet before another session of its identity may adopt.
func Inspect(l *Lease, owner, caller *Session, now time.Time, heartbeatWithin, sessionTTL time.Duration) (Freshness, string) {
	f := Freshness{Live: l.Live(now), ExpiresIn: l.ExpiresAt.Sub(now), SinceBeat: now.Sub(l.HeartbeatAt)}
	quiet := (owner == nil || owner.Status(now, sessionTTL) != SessionActive) && f.SinceBeat > sessionTTL
	switch {
	case l.State != LeaseActive:
		return f, NextAllocate
	case !f.Live:
		return f, NextReclaim
	case caller != nil && caller.ID == l.SessionID:
		if f.ExpiresIn <= heartbeatWithin {
			return f, NextHeartbeat
		}
		return f, NextContinue
	case caller != nil && owner != nil && caller.Identity == owner.Identity && quiet:
		return f, NextAdopt
	}
	return f, NextWaitForeignActive
}

// Refusals of the lease lifecycle.
const (
	RefuseWaitForeignActive = "wait_foreign_active" // a live lease of another identity: never stolen
	RefuseNotOwner          = "not_owner"           // only the lease's session may do this
	RefuseNotActive         = "not_active"          // the lease already ended
	RefuseProof             = "insufficient_proof"  // an abandon without the proof the rules ask
)

// Adoption decides whether session by may adopt l (held by owner, nil if
// gone) at now; holderQuiet says the holder went quiet (its session not
// active and no heartbeat on the lease for the session TTL). The holding
// session itself resumes it. Another session takes a live lease only
// from a quiet holder of its own identity, and an expired one from any
// holder; what its role may take is the service's to check. "" allows.
func Adoption(l *Lease, owner, by *Session, now time.Time, holderQuiet bool) string {
	switch {
	case l.State != LeaseActive && l.State != LeaseExpired:
		return RefuseNotActive
	case by.ID == l.SessionID:
		return ""
	case l.Live(now) && (owner == nil || owner.Identity != by.Identity || !holderQuiet):
		return RefuseWaitForeignActive
	}
	return ""
}

// AbandonProof is what a caller asserts to abandon a lease (#601 hard
// rule 3).
type AbandonProof struct {
	DeadProcess        bool `json:"dead_process"`
	MissingWorktree    bool `json:"missing_worktree"`
	NoLiveMutationRisk bool `json:"no_live_mutation_risk"`
	NoOpenPR           bool `json:"no_open_pr"`
	OperatorAuthorized bool `json:"operator_authorized"`
}

// Abandonment decides whether a caller may abandon l with proof: always
// (dead_process or missing_worktree) and no_live_mutation_risk; a caller
// whose session does not hold the lease (foreign) also needs either
// operator_authorized from an admin, or the full dead_process,
// missing_worktree and no_open_pr proof while the holder is quiet
// (holderQuiet: the service's own record of its heartbeats). A
// no_open_pr the inventory contradicts (openPR) is no proof. "" allows.
func Abandonment(l *Lease, callerSession string, admin bool, p AbandonProof, holderQuiet, openPR bool) string {
	if l.State != LeaseActive {
		return RefuseNotActive
	}
	if !(p.DeadProcess || p.MissingWorktree) || !p.NoLiveMutationRisk || p.NoOpenPR && openPR {
		return RefuseProof
	}
	if callerSession != l.SessionID {
		full := p.DeadProcess && p.MissingWorktree && p.NoOpenPR && holderQuiet
		if !(p.OperatorAuthorized && admin) && !full {
			return RefuseProof
		}
	}
	return ""
}
