package controlplane

import (
	"context"

	wq "github.com/workqueue-dev/workqueue"
)

// leaseState is a lease as its audit entries say it.
func leaseState(l *Lease) map[string]any {
	st := map[string]any{"lease": l.ID, "state": l.State, "session": l.SessionID, "assignment": l.AssignmentID,
		"expires_at": l.ExpiresAt}
	if !l.EndedAt.IsZero() {
		st["ended_at"] = l.EndedAt
	}
	return st
}

// auditLease writes a lease's change to the audit sink: old is the lease
// before (nil when it was made), next after. source is what caused it
// ("api" for a caller's call, "sweep" for an expiry), why the control
// plane's reason.
func (s *Service) auditLease(ctx context.Context, event, actor, source, why string, old *Lease, next *Lease) {
	if s.Audit == nil {
		return
	}
	e := wq.AuditEntry{Time: s.now(), EventType: event, Actor: actor, NewState: leaseState(next),
		Trigger:  map[string]any{"source": source, "reason": why},
		Metadata: map[string]any{"work": next.WorkID}}
	if old != nil {
		e.OldState = leaseState(old)
	}
	s.Audit.WriteAudit(ctx, e)
}
