package controlplane

import (
	"context"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// LeaseView is a lease with its freshness and the safe next action for
// the caller (#601's inspect).
type LeaseView struct {
	Lease
	Freshness      Freshness `json:"freshness"`
	SafeNextAction string    `json:"safe_next_action"`
}

// heartbeatWithin is how close to its expiry a lease's owner is told to
// heartbeat: a third of the TTL.
func (s *Service) heartbeatWithin() time.Duration { return s.leaseTTL() / 3 }

// Leases lists leases: active ones, or all (with all). A non-admin sees
// its own sessions' leases only.
func (s *Service) Leases(ctx context.Context, c Caller, f LeaseFilter) ([]Lease, error) {
	if f.SessionID != "" {
		if _, err := s.session(ctx, c, f.SessionID); err != nil {
			return nil, err
		}
	}
	list, err := s.Store.ListLeases(ctx, f)
	if err != nil || c.Admin {
		return list, err
	}
	out := list[:0]
	mine := map[string]bool{} // by session: one lookup each, not one per lease
	for _, l := range list {
		own, known := mine[l.SessionID]
		if !known {
			sess, err := s.Store.GetSession(ctx, l.SessionID)
			own = err == nil && sess.Identity == c.Identity
			mine[l.SessionID] = own
		}
		if own {
			out = append(out, l)
		}
	}
	return out, nil
}

// InspectLease is one lease with its freshness and the safe next action
// for the caller's session (callerSession may be "").
func (s *Service) InspectLease(ctx context.Context, c Caller, id, callerSession string) (*LeaseView, error) {
	l, err := s.Store.GetLease(ctx, id)
	if err != nil {
		return nil, err
	}
	owner, _ := s.Store.GetSession(ctx, l.SessionID)
	var caller *Session
	if callerSession != "" {
		if caller, err = s.session(ctx, c, callerSession); err != nil {
			return nil, err
		}
	}
	f, next := Inspect(l, owner, caller, s.now(), s.heartbeatWithin())
	return &LeaseView{Lease: *l, Freshness: f, SafeNextAction: next}, nil
}

// sessionAndLease loads a session the caller acts for and a lease.
func (s *Service) sessionAndLease(ctx context.Context, c Caller, sessionID, id string) (*Session, *Lease, error) {
	sess, err := s.session(ctx, c, sessionID)
	if err != nil {
		return nil, nil, err
	}
	l, err := s.Store.GetLease(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return sess, l, nil
}

// ownLease loads a lease held by session sessionID that the caller acts
// for, or refuses not_owner.
func (s *Service) ownLease(ctx context.Context, c Caller, id, sessionID string) (*Lease, *Session, error) {
	sess, l, err := s.sessionAndLease(ctx, c, sessionID, id)
	if err != nil {
		return nil, nil, err
	}
	if l.SessionID != sess.ID {
		return nil, nil, conflict(RefuseNotOwner, "lease %s is held by another session", id)
	}
	return l, sess, nil
}

// HeartbeatLease extends the owner's live lease by the lease TTL; a head
// the owner pushed itself (headSHA) becomes the head the gate expects.
func (s *Service) HeartbeatLease(ctx context.Context, c Caller, id, sessionID, headSHA string) (*LeaseView, error) {
	l, _, err := s.ownLease(ctx, c, id, sessionID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if !l.Live(now) {
		return nil, conflict(RefuseNotActive, "lease %s is not live (%s, expires %s): adopt or reclaim it", id, l.State, l.ExpiresAt.Format(time.RFC3339))
	}
	next := *l
	next.HeartbeatAt, next.ExpiresAt = now, now.Add(s.leaseTTL())
	if headSHA != "" {
		next.HeadSHA = headSHA
	}
	if err := s.Store.UpdateLease(ctx, *l, next, Event{Time: now, Type: EventHeartbeat, Actor: c.Identity, SessionID: sessionID,
		WorkID: l.WorkID, LeaseID: l.ID, AssignmentID: l.AssignmentID}); err != nil {
		return nil, err
	}
	return s.InspectLease(ctx, c, id, sessionID)
}

// ReleaseLease ends the owner's lease.
func (s *Service) ReleaseLease(ctx context.Context, c Caller, id, sessionID string) (*LeaseView, error) {
	l, _, err := s.ownLease(ctx, c, id, sessionID)
	if err != nil {
		return nil, err
	}
	return s.endLease(ctx, c, l, LeaseReleased, EventReleased, sessionID, "released by its owner")
}

func (s *Service) endLease(ctx context.Context, c Caller, l *Lease, st LeaseState, event, sessionID, why string) (*LeaseView, error) {
	if l.State != LeaseActive {
		return nil, conflict(RefuseNotActive, "lease %s already %s", l.ID, l.State)
	}
	now := s.now()
	next := *l
	next.State, next.EndedAt = st, now
	if err := s.Store.UpdateLease(ctx, *l, next, Event{Time: now, Type: event, Actor: c.Identity, SessionID: sessionID,
		WorkID: l.WorkID, LeaseID: l.ID, AssignmentID: l.AssignmentID, Reason: why}); err != nil {
		return nil, err
	}
	return s.InspectLease(ctx, c, l.ID, "")
}

// AdoptLease moves a lease to session sessionID (#601): its owner's
// identity resuming in a new session, or a sanctioned reclaim of an
// expired lease. Provenance is always recorded: the session adopted from
// and by, the work (on the lease), the head and the worktree path. A live
// foreign lease answers wait_foreign_active.
func (s *Service) AdoptLease(ctx context.Context, c Caller, id, sessionID, worktree, headSHA string) (*LeaseView, error) {
	by, l, err := s.sessionAndLease(ctx, c, sessionID, id)
	if err != nil {
		return nil, err
	}
	owner, _ := s.Store.GetSession(ctx, l.SessionID)
	now := s.now()
	if why := Adoption(l, owner, by, now); why != "" {
		return nil, conflict(why, "lease %s cannot be adopted by session %s", id, sessionID)
	}
	next := *l
	next.State, next.EndedAt = LeaseActive, time.Time{}
	next.AdoptedFromSessionID, next.AdoptedBySessionID, next.SessionID = l.SessionID, by.ID, by.ID
	next.HeartbeatAt, next.ExpiresAt = now, now.Add(s.leaseTTL())
	next.WorktreePath, next.HeadSHA = worktree, headSHA
	if err := s.Store.UpdateLease(ctx, *l, next, Event{Time: now, Type: EventAdopted, Actor: c.Identity, SessionID: by.ID,
		WorkID: l.WorkID, LeaseID: l.ID, AssignmentID: l.AssignmentID, Reason: "adopted from session " + l.SessionID}); err != nil {
		return nil, err
	}
	return s.InspectLease(ctx, c, id, sessionID)
}

// ExpireLeases marks exactly the leases past their expiry as expired.
func (s *Service) ExpireLeases(ctx context.Context) ([]Lease, error) {
	return s.Store.ExpireLeases(ctx, s.now())
}

// AbandonLease ends a lease whose holder is gone, with the proof #601's
// rules ask (see Abandonment).
func (s *Service) AbandonLease(ctx context.Context, c Caller, id, sessionID string, proof AbandonProof) (*LeaseView, error) {
	_, l, err := s.sessionAndLease(ctx, c, sessionID, id)
	if err != nil {
		return nil, err
	}
	if why := Abandonment(l, sessionID, c.Admin, proof); why != "" {
		return nil, conflict(why, "abandoning lease %s needs (dead_process or missing_worktree) and no_live_mutation_risk; "+
			"another session's lease also needs operator_authorized from an admin or dead_process, missing_worktree and no_open_pr", id)
	}
	return s.endLease(ctx, c, l, LeaseAbandoned, EventAbandoned, sessionID, "abandoned with proof")
}

// ReclaimLease ends an expired lease as reclaimed and assigns its work to
// session sessionID under a new lease, with provenance. A live lease is
// never reclaimed: wait_foreign_active.
func (s *Service) ReclaimLease(ctx context.Context, c Caller, id, sessionID string) (*Allocation, error) {
	by, old, err := s.sessionAndLease(ctx, c, sessionID, id)
	if err != nil {
		return nil, err
	}
	now := s.now()
	switch {
	case old.Live(now):
		return nil, conflict(RefuseWaitForeignActive, "lease %s is live until %s", id, old.ExpiresAt.Format(time.RFC3339))
	case old.State != LeaseActive && old.State != LeaseExpired:
		return nil, conflict(RefuseNotActive, "lease %s already %s", id, old.State)
	}
	prev, err := s.Store.GetAssignment(ctx, old.AssignmentID)
	if err != nil {
		return nil, err
	}
	w, err := s.Store.GetWork(ctx, old.WorkID)
	if err != nil {
		return nil, err
	}
	a := Assignment{ID: wq.NewItemID().String(), SessionID: by.ID, WorkID: old.WorkID, AllowedActions: prev.AllowedActions,
		ExpectedHeadSHA: w.HeadSHA, Terminal: prev.Terminal, CreatedAt: now}
	l := Lease{ID: wq.NewItemID().String(), WorkID: old.WorkID, SessionID: by.ID, AssignmentID: a.ID, State: LeaseActive,
		CreatedAt: now, HeartbeatAt: now, ExpiresAt: now.Add(s.leaseTTL()), HeadSHA: w.HeadSHA,
		AdoptedFromSessionID: old.SessionID, AdoptedBySessionID: by.ID}
	a.LeaseID = l.ID
	if err := s.Store.Reclaim(ctx, *old, a, l, Event{Time: now, Type: EventReclaimed, Actor: c.Identity, SessionID: by.ID,
		WorkID: old.WorkID, LeaseID: l.ID, AssignmentID: a.ID, Reason: "reclaimed expired lease " + old.ID + " of session " + old.SessionID}, now); err != nil {
		return nil, err
	}
	return &Allocation{Outcome: OutcomeAssigned, Work: w, Lease: &LeaseRef{ID: l.ID, ExpiresAt: l.ExpiresAt},
		Assignment: &AssignmentRef{ID: a.ID, AllowedActions: a.AllowedActions, ExpectedHeadSHA: a.ExpectedHeadSHA}, Candidates: []CandidateSkip{}}, nil
}

// Work lists the inventory.
func (s *Service) Work(ctx context.Context, f WorkFilter) ([]Work, error) {
	return s.Store.ListWork(ctx, f)
}
