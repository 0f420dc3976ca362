package controlplane

import "context"

// Events lists the control plane's event log, newest first: assignments,
// refusals, releases, expiries, adoptions, abandons, reclaims. An admin
// sees every event; anyone else only those of their own sessions (a
// session_id naming another caller's session is ENOTFOUND, as for
// Leases), so that the log tells nobody what others were given.
func (s *Service) Events(ctx context.Context, c Caller, f EventFilter) ([]Event, error) {
	if f.SessionID != "" {
		if _, err := s.session(ctx, c, f.SessionID); err != nil {
			return nil, err
		}
	}
	list, err := s.Store.ListEvents(ctx, f)
	if err != nil || c.Admin && c.Projects == nil {
		return list, err
	}
	out := list[:0]
	mine := map[string]bool{} // by session: one lookup each, not one per event
	scope := s.scopeOf(c)
	for _, e := range list {
		if !c.Admin {
			if e.SessionID == "" {
				continue // system events (an expiry sweep) name no session of the caller's
			}
			own, known := mine[e.SessionID]
			if !known {
				sess, err := s.Store.GetSession(ctx, e.SessionID)
				own = err == nil && sess.Identity == c.Identity
				mine[e.SessionID] = own
			}
			if !own {
				continue
			}
		}
		if e.WorkID != "" {
			// An event of work outside the caller's projects names
			// that work: left out.
			covered, err := scope.coversWork(ctx, e.WorkID)
			if err != nil {
				return nil, err
			}
			if !covered {
				continue
			}
		}
		out = append(out, e)
	}
	return out, nil
}
