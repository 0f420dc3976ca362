package controlplane

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/secrets"
)

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
	if err != nil {
		return nil, err
	}
	return s.visibleLeases(ctx, c, list)
}

// visibleLeases is the leases of list the caller may see: its own
// sessions' (any session's for an admin) on work of its projects.
func (s *Service) visibleLeases(ctx context.Context, c Caller, list []Lease) ([]Lease, error) {
	if c.Admin && c.Projects == nil {
		return list, nil
	}
	out := list[:0]
	mine := map[string]bool{} // by session: one lookup each, not one per lease
	scope := s.scopeOf(c)
	for _, l := range list {
		own, known := mine[l.SessionID]
		if !known {
			sess, err := s.Store.GetSession(ctx, l.SessionID)
			own = c.Admin || err == nil && sess.Identity == c.Identity
			mine[l.SessionID] = own
		}
		if !own {
			continue
		}
		covered, err := scope.coversWork(ctx, l.WorkID)
		if err != nil {
			return nil, err
		}
		if covered {
			out = append(out, l)
		}
	}
	return out, nil
}

// InspectLease is one lease of the caller's identity (any, for an admin)
// with its freshness and the safe next action for the caller's session
// (callerSession may be ""). Another identity's lease is ENOTFOUND, as
// its sessions and checkpoints are, so that lease ids cannot be probed.
func (s *Service) InspectLease(ctx context.Context, c Caller, id, callerSession string) (*LeaseView, error) {
	l, err := s.lease(ctx, c, id)
	if err != nil {
		return nil, err
	}
	owner, _ := s.Store.GetSession(ctx, l.SessionID)
	if !c.Admin && (owner == nil || owner.Identity != c.Identity) {
		return nil, leaseNotFound(id)
	}
	var caller *Session
	if callerSession != "" {
		if caller, err = s.session(ctx, c, callerSession); err != nil {
			return nil, err
		}
	}
	return s.inspect(ctx, l.ID, caller)
}

// inspect is the view of lease id as stored now, for caller (nil: none).
func (s *Service) inspect(ctx context.Context, id string, caller *Session) (*LeaseView, error) {
	l, err := s.Store.GetLease(ctx, id)
	if err != nil {
		return nil, err
	}
	owner, _ := s.Store.GetSession(ctx, l.SessionID)
	f, next := Inspect(l, owner, caller, s.now(), s.heartbeatWithin(), s.sessionTTL())
	return &LeaseView{Lease: *l, Freshness: f, SafeNextAction: next}, nil
}

// sessionAndLease loads a session the caller acts for and a lease.
func (s *Service) sessionAndLease(ctx context.Context, c Caller, sessionID, id string) (*Session, *Lease, error) {
	sess, err := s.session(ctx, c, sessionID)
	if err != nil {
		return nil, nil, err
	}
	l, err := s.lease(ctx, c, id)
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

// PinnedHead is the head the gate expects of a pull request lease: the
// service's own push for its owner, else the head the forge had when the
// assignment was made. Nothing an agent says moves it.
func PinnedHead(a *Assignment, l *Lease) string {
	if l != nil && l.HeadSHA != "" {
		return l.HeadSHA
	}
	if a != nil {
		return a.ExpectedHeadSHA
	}
	return ""
}

// HeartbeatLease extends the owner's live lease by the lease TTL. A
// head_sha is a claim, never a declaration: it must be a commit id, and
// one that is not the head the lease is pinned to is refused head_moved
// (a pinned head comes from the forge alone; the work is routed again
// once the forge's head moved).
func (s *Service) HeartbeatLease(ctx context.Context, c Caller, id, sessionID, headSHA string) (*LeaseView, error) {
	if err := ValidateSHA("head_sha", headSHA); err != nil {
		return nil, err
	}
	l, sess, err := s.ownLease(ctx, c, id, sessionID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if !l.Live(now) {
		return nil, conflict(RefuseNotActive, "lease %s is not live (%s, expires %s): adopt or reclaim it", id, l.State, l.ExpiresAt.Format(time.RFC3339))
	}
	if headSHA != "" {
		a, err := s.Store.GetAssignment(ctx, l.AssignmentID)
		if err != nil {
			return nil, err
		}
		if pinned := PinnedHead(a, l); pinned != "" && pinned != headSHA {
			return nil, conflict(GateHeadMoved, "lease %s is pinned to head %s, which the forge gave at assignment; "+
				"a head an agent names never moves it: allocate again to work on %s", id, pinned, headSHA)
		}
	}
	next := *l
	next.HeartbeatAt, next.ExpiresAt = now, now.Add(s.leaseTTL())
	if err := s.Store.UpdateLease(ctx, *l, next, Event{Time: now, Type: EventHeartbeat, Actor: c.Identity, SessionID: sessionID,
		WorkID: l.WorkID, LeaseID: l.ID, AssignmentID: l.AssignmentID}); err != nil {
		return nil, err
	}
	return s.inspect(ctx, id, sess)
}

// declarePush pins the lease of a pull request assignment to head, a
// commit the service itself pushed for the lease's owner: the gate
// expects it from then on, so that a stranger's push after it still
// reads head_moved.
func (s *Service) declarePush(ctx context.Context, c Caller, l *Lease, head string) error {
	now := s.now()
	if !l.Live(now) {
		return conflict(RefuseNotActive, "lease %s is not live", l.ID)
	}
	next := *l
	next.HeartbeatAt, next.ExpiresAt, next.HeadSHA = now, now.Add(s.leaseTTL()), head
	detail, _ := json.Marshal(map[string]string{"pushed_head_sha": head})
	return s.Store.UpdateLease(ctx, *l, next, Event{Time: now, Type: EventHeartbeat, Actor: c.Identity, SessionID: l.SessionID,
		WorkID: l.WorkID, LeaseID: l.ID, AssignmentID: l.AssignmentID, Reason: "the service pushed for the owner", Detail: detail})
}

// ReleaseLease ends the owner's lease.
func (s *Service) ReleaseLease(ctx context.Context, c Caller, id, sessionID string) (*LeaseView, error) {
	l, _, err := s.ownLease(ctx, c, id, sessionID)
	if err != nil {
		return nil, err
	}
	return s.endLease(ctx, c, l, LeaseReleased, EventReleased, sessionID, "released by its owner", nil)
}

func (s *Service) endLease(ctx context.Context, c Caller, l *Lease, st LeaseState, event, sessionID, why string, detail json.RawMessage) (*LeaseView, error) {
	if l.State != LeaseActive {
		return nil, conflict(RefuseNotActive, "lease %s already %s", l.ID, l.State)
	}
	now := s.now()
	next := *l
	next.State, next.EndedAt = st, now
	if err := s.Store.UpdateLease(ctx, *l, next, Event{Time: now, Type: event, Actor: c.Identity, SessionID: sessionID,
		WorkID: l.WorkID, LeaseID: l.ID, AssignmentID: l.AssignmentID, Reason: why, Detail: detail}); err != nil {
		return nil, err
	}
	s.auditLease(ctx, wq.AuditLeaseEnded, c.Identity, "api", why, l, &next)
	s.Holders.Changed(l.WorkID)
	return s.inspect(ctx, l.ID, nil)
}

// headMoved ends lease l because the forge's head of its pull request is
// no longer the one it is pinned to: the assignment lost its right to
// review, merge or push, and the work is routed again. A lease that
// changed meanwhile is left to whoever changed it.
func (s *Service) headMoved(ctx context.Context, c Caller, leaseID, live string) {
	l, err := s.Store.GetLease(ctx, leaseID)
	if err != nil || l.State != LeaseActive {
		return
	}
	detail, _ := json.Marshal(map[string]string{"live_head_sha": live, "pinned_head_sha": l.HeadSHA})
	if _, err := s.endLease(ctx, c, l, LeaseReleased, EventReleased, l.SessionID, GateHeadMoved, detail); err != nil && wq.ErrorCode(err) != wq.ECONFLICT {
		s.log().Warn("control plane: could not end a lease whose head moved", "lease", leaseID, "error", err)
	}
}

// holderStale reports whether the session holding l has gone quiet: its
// session is stale or ended (or gone), and the lease itself has had no
// heartbeat for the session TTL. Only then may another session take or
// end what it holds.
func (s *Service) holderStale(owner *Session, l *Lease, now time.Time) bool {
	return (owner == nil || owner.Status(now, s.sessionTTL()) != SessionActive) && now.Sub(l.HeartbeatAt) > s.sessionTTL()
}

// AdoptLease moves a lease to session sessionID (#601). The session that
// holds it resumes it (a restarted process presenting its session id,
// with its worktree path). Another session adopts it only when its
// holder went quiet (holderStale) and, while the lease is live, only
// within the holder's identity; and only when it could have been given
// the work itself: the routing rules for its role, at the head the
// assignment pinned (see mayTakeOver). Provenance is always recorded:
// the session adopted from and by, the work (on the lease), the head and
// worktree the adopter reported (in the event, as claims), and the
// worktree path. The pinned head never changes.
func (s *Service) AdoptLease(ctx context.Context, c Caller, id, sessionID, worktree, headSHA string) (*LeaseView, error) {
	if err := ValidateSHA("head_sha", headSHA); err != nil {
		return nil, err
	}
	if err := validateText("worktree_path", worktree, maxWorktreePath); err != nil {
		return nil, err
	}
	by, l, err := s.sessionAndLease(ctx, c, sessionID, id)
	if err != nil {
		return nil, err
	}
	owner, _ := s.Store.GetSession(ctx, l.SessionID)
	now := s.now()
	if why := Adoption(l, owner, by, now, s.holderStale(owner, l, now)); why != "" {
		return nil, conflict(why, "lease %s cannot be adopted by session %s: its holder is live, or another identity's", id, sessionID)
	}
	if by.ID != l.SessionID {
		if err := s.mayTakeOver(ctx, by, l); err != nil {
			return nil, err
		}
	}
	next := *l
	next.State, next.EndedAt = LeaseActive, time.Time{}
	next.AdoptedFromSessionID, next.AdoptedBySessionID, next.SessionID = l.SessionID, by.ID, by.ID
	next.HeartbeatAt, next.ExpiresAt = now, now.Add(s.leaseTTL())
	next.WorktreePath = secrets.Text(worktree)
	detail, _ := json.Marshal(map[string]string{"reported_head_sha": headSHA, "worktree_path": next.WorktreePath, "pinned_head_sha": l.HeadSHA})
	if err := s.Store.UpdateLease(ctx, *l, next, Event{Time: now, Type: EventAdopted, Actor: c.Identity, SessionID: by.ID,
		WorkID: l.WorkID, LeaseID: l.ID, AssignmentID: l.AssignmentID, Reason: "adopted from session " + l.SessionID, Detail: detail}); err != nil {
		return nil, err
	}
	s.auditLease(ctx, wq.AuditLeaseAdopted, c.Identity, "api", "adopted from session "+l.SessionID, l, &next)
	s.Holders.Changed(l.WorkID)
	return s.inspect(ctx, id, by)
}

// mayTakeOver refuses session by taking over lease l (an adoption from
// another session, a reclaim) unless the allocator could have given by
// the work now: the route of l's assignment is by's role's, by did not
// write the pull request it would review or merge (or did write the one
// it would answer changes on), and the pull request's head, read from
// the forge, is still the one the assignment pinned; if it moved there
// is nothing to take over at that head.
func (s *Service) mayTakeOver(ctx context.Context, by *Session, l *Lease) error {
	a, err := s.Store.GetAssignment(ctx, l.AssignmentID)
	if err != nil {
		return err
	}
	w, err := s.Store.GetWork(ctx, l.WorkID)
	if err != nil {
		return err
	}
	if w.State.Terminal() {
		return conflict(GateWorkTerminal, "%s %s#%d is %s", w.Kind, w.Repo, w.Number, w.State)
	}
	route := RouteOf(a.AllowedActions)
	if want := route.Role(); by.Role != want {
		return conflict(SkipWrongRole, "lease %s is on the %s route, for a %s session; session %s is a %s", l.ID, route, want, by.ID, by.Role)
	}
	if w.Kind != KindPR {
		return nil
	}
	own, err := s.authoredByIdentity(ctx, w, by.Identity)
	if err != nil {
		return err
	}
	switch {
	case route == RouteChangesAnswered && (!own || w.AuthorSession == ""):
		return conflict(SkipNotAuthor, "changes were requested of the identity that wrote %s#%d, not of %s", w.Repo, w.Number, by.Identity)
	case (route == RouteReview || route == RouteMerge) && own:
		return conflict(SkipOwnPR, "%s wrote %s#%d and may not review or merge it", by.Identity, w.Repo, w.Number)
	}
	live, err := s.liveHead(ctx, w)
	if err != nil {
		return err
	}
	if pinned := PinnedHead(a, l); pinned != "" && live != "" && live != pinned {
		return conflict(GateHeadMoved, "%s#%d moved from the pinned head %s to %s: there is nothing to take over at that head; allocate instead",
			w.Repo, w.Number, pinned, live)
	}
	return nil
}

// liveHead is a pull request's head as its forge has it now, or the
// inventory's when no forge of that name is configured here.
func (s *Service) liveHead(ctx context.Context, w *Work) (string, error) {
	f, ok := s.Forges[w.Forge]
	if !ok {
		return w.HeadSHA, nil
	}
	pr, err := f.GetMergeRequest(ctx, w.Repo, w.Number)
	if err != nil {
		return "", forgeRefusal("read the pull request", err)
	}
	return pr.HeadSHA, nil
}

// ExpireLeases marks exactly the leases past their expiry as expired,
// and returns those of them the caller may list (Leases): the sweep is
// everyone's housekeeping, what it found is not everyone's to read.
func (s *Service) ExpireLeases(ctx context.Context, c Caller) ([]Lease, error) {
	expired, err := s.Store.ExpireLeases(ctx, s.now())
	if err != nil {
		return nil, err
	}
	for _, l := range expired {
		before := l
		before.State, before.EndedAt = LeaseActive, time.Time{}
		s.auditLease(ctx, wq.AuditLeaseEnded, c.Identity, "sweep", "expired", &before, &l)
		s.Holders.Changed(l.WorkID)
	}
	return s.visibleLeases(ctx, c, expired)
}

// AbandonLease ends a lease whose holder is gone, with the proof #601's
// rules ask (see Abandonment). What the service can know it checks: a
// foreign abandon needs the holder to have gone quiet (holderStale), and
// no_open_pr is checked against the inventory. Every proof given is
// recorded in the lease's events.
func (s *Service) AbandonLease(ctx context.Context, c Caller, id, sessionID string, proof AbandonProof) (*LeaseView, error) {
	_, l, err := s.sessionAndLease(ctx, c, sessionID, id)
	if err != nil {
		return nil, err
	}
	owner, _ := s.Store.GetSession(ctx, l.SessionID)
	now := s.now()
	stale := s.holderStale(owner, l, now)
	var openPR int64
	if proof.NoOpenPR {
		if openPR, err = s.openPRFor(ctx, l.WorkID); err != nil {
			return nil, err
		}
	}
	detail, _ := json.Marshal(map[string]any{"proof": proof, "holder_stale": stale, "open_pr": openPR})
	if why := Abandonment(l, sessionID, c.Admin, proof, stale, openPR != 0); why != "" {
		ev := Event{Time: now, Type: EventRefused, Actor: c.Identity, SessionID: sessionID, WorkID: l.WorkID, LeaseID: l.ID,
			AssignmentID: l.AssignmentID, Reason: why, Detail: detail}
		if err := s.Store.AppendEvent(ctx, ev); err != nil {
			return nil, err
		}
		msg := "abandoning lease %s needs (dead_process or missing_worktree) and no_live_mutation_risk; " +
			"another session's lease also needs operator_authorized from an admin, or dead_process, missing_worktree and no_open_pr " +
			"with its holder quiet (no heartbeat for the session TTL)"
		if openPR != 0 {
			msg += "; no_open_pr is false: pull request #%d is open for this work"
			return nil, conflict(why, msg, id, openPR)
		}
		return nil, conflict(why, msg, id)
	}
	return s.endLease(ctx, c, l, LeaseAbandoned, EventAbandoned, sessionID, "abandoned with proof", detail)
}

// openPRFor is the number of an open pull request of the inventory that
// is the work, or closes it; 0 when there is none.
func (s *Service) openPRFor(ctx context.Context, workID string) (int64, error) {
	w, err := s.Store.GetWork(ctx, workID)
	if err != nil {
		return 0, err
	}
	if w.Kind == KindPR {
		if w.State == StateOpen {
			return w.Number, nil
		}
		return 0, nil
	}
	f := WorkFilter{Forge: w.Forge, Repo: w.Repo, Kind: KindPR, State: StateOpen, Limit: 500}
	for {
		page, err := s.Store.ListWork(ctx, f)
		if err != nil {
			return 0, err
		}
		for _, pr := range page {
			if slices.Contains(pr.LinkedIssues, w.Number) {
				return pr.Number, nil
			}
		}
		if len(page) < f.Limit {
			return 0, nil
		}
		f.After = page[len(page)-1].ID
	}
}

// ReclaimLease ends an expired lease as reclaimed and assigns its work to
// session sessionID under a new lease, with provenance. A live lease is
// never reclaimed (wait_foreign_active). The reclaimer must be one the
// allocator could give the work to (mayTakeOver: its role's route, never
// its own pull request to review or merge), and the new assignment keeps
// the old one's actions and pinned head: if the head moved, there is
// nothing to reclaim at that head (head_moved).
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
	if err := s.mayTakeOver(ctx, by, old); err != nil {
		return nil, err
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
		ExpectedHeadSHA: prev.ExpectedHeadSHA, Terminal: prev.Terminal, CreatedAt: now}
	l := Lease{ID: wq.NewItemID().String(), WorkID: old.WorkID, SessionID: by.ID, AssignmentID: a.ID, State: LeaseActive,
		CreatedAt: now, HeartbeatAt: now, ExpiresAt: now.Add(s.leaseTTL()), HeadSHA: old.HeadSHA,
		AdoptedFromSessionID: old.SessionID, AdoptedBySessionID: by.ID}
	a.LeaseID = l.ID
	if err := s.Store.Reclaim(ctx, *old, a, l, Event{Time: now, Type: EventReclaimed, Actor: c.Identity, SessionID: by.ID,
		WorkID: old.WorkID, LeaseID: l.ID, AssignmentID: a.ID, Reason: "reclaimed expired lease " + old.ID + " of session " + old.SessionID}, now); err != nil {
		return nil, err
	}
	s.auditLease(ctx, wq.AuditLeaseReclaimed, c.Identity, "api", "reclaimed expired lease "+old.ID+" of session "+old.SessionID, old, &l)
	s.Holders.Changed(old.WorkID)
	return &Allocation{Outcome: OutcomeAssigned, Work: w, Lease: &LeaseRef{ID: l.ID, ExpiresAt: l.ExpiresAt},
		Assignment: &AssignmentRef{ID: a.ID, AllowedActions: a.AllowedActions, ExpectedHeadSHA: a.ExpectedHeadSHA}, Candidates: []CandidateSkip{}}, nil
}
