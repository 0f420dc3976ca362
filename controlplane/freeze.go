package controlplane

import (
	"context"
	"errors"

	wq "github.com/workqueue-dev/workqueue"
)

// ReasonIdentityFrozen is the reason recorded on a lease ended because an
// admin froze the identity holding it (package identity).
const ReasonIdentityFrozen = "identity_frozen"

// EndLeasesOf ends, as released with ReasonIdentityFrozen, every active
// lease of identity's sessions (its newest 500 sessions; a frozen
// identity cannot heartbeat, so the leases of any older one expire), so
// that the work it held is routed to others at once. Admin only. A lease
// that changed meanwhile is left to whoever changed it. It returns the
// leases it ended.
func (s *Service) EndLeasesOf(ctx context.Context, c Caller, identity string) ([]Lease, error) {
	if !c.Admin {
		return nil, wq.Errorf(wq.EFORBIDDEN, "%s may not end another identity's leases: permission admin is required", c.Identity)
	}
	sessions, err := s.Store.ListSessions(ctx, identity, 0)
	if err != nil {
		return nil, err
	}
	var ended []Lease
	var errs []error
	for _, sess := range sessions {
		held, err := s.Store.ListLeases(ctx, LeaseFilter{SessionID: sess.ID})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range held {
			l := &held[i]
			if l.State != LeaseActive {
				continue
			}
			if _, err := s.endLease(ctx, c, l, LeaseReleased, EventReleased, l.SessionID, ReasonIdentityFrozen, nil); err != nil {
				if wq.ErrorCode(err) != wq.ECONFLICT {
					errs = append(errs, err)
				}
				continue
			}
			ended = append(ended, *l)
		}
	}
	return ended, errors.Join(errs...)
}
