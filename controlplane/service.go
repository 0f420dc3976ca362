package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/secrets"
)

// Caller is who asks: the identity of the authenticated token, whether
// it may act on any session (admin) or only its own (agent), and the
// projects it may see and act on.
type Caller struct {
	Identity string
	Admin    bool
	// Projects reports whether the caller's grants cover the repository
	// repo of forge: work, leases, assignments, checkpoints and events of
	// any other repository are, to this caller, as if they did not exist
	// (DESIGN section 9, "Project scope"). nil covers every project, as a
	// grant without projects does; a caller whose grants cover none
	// passes a function that answers false.
	Projects func(forge, repo string) bool
	// MaySubmit says whether the caller may submit changes to a
	// repository itself (permission submit there); nil: nowhere. A
	// caller that may not is agent-only there: the outbound policy holds
	// its texts to its assignment, and its approval does not release a
	// change of protected paths (Service.ReviewLabel).
	MaySubmit func(repo string) bool
}

// agentOnly reports whether c writes to repo only as an agent.
func (c Caller) agentOnly(repo string) bool { return c.MaySubmit == nil || !c.MaySubmit(repo) }

// Covers reports whether the caller may see and act on the work of repo
// on forge.
func (c Caller) Covers(forge, repo string) bool {
	return c.Projects == nil || c.Projects(forge, repo)
}

// covers reports whether the caller may see and act on w.
func (c Caller) covers(w *Work) bool { return w != nil && c.Covers(w.Forge, w.Repo) }

// Service is the control plane's operations over a Store: what the REST
// API, the CLI and the MCP tools call.
type Service struct {
	Store  Store
	Clock  clockwork.Clock // nil: the real clock
	Policy Policy
	// LeaseTTL is how long a lease holds without a heartbeat (default
	// 30m); SessionTTL how long a session is active without one (default
	// 15m).
	LeaseTTL   time.Duration
	SessionTTL time.Duration
	// MaxCheckpoints bounds the checkpoints one session keeps (default
	// DefaultMaxCheckpoints).
	MaxCheckpoints int
	// Inventory syncs the work on demand (Sync); nil when no repositories
	// are configured.
	Inventory *Inventory
	// Forges make the gated actions (Act), by configured forge name.
	Forges map[string]wq.Forge
	// MergeQueue, when set, takes a merger's merge of a pull request
	// whose project merges through a merge train (wq.MergeQueuer); nil:
	// merges go to the forge.
	MergeQueue wq.MergeQueuer
	// ReviewLabel marks a pull request whose protected paths wait for a
	// person's approval (package policy): a merge through Act needs an
	// approval of its current head by an identity that is not agent-only
	// there. "": no pull request is held so.
	ReviewLabel string
	Log         *slog.Logger // nil: no logging
	// Metrics, when set, counts allocations by outcome and gate refusals
	// by reason (package metrics implements it).
	Metrics Metrics
	// Audit, when set, receives an entry for each lease and assignment
	// made, ended, adopted or reclaimed, with its state before and after
	// (DDR-28); heartbeats, which only push a lease's expiry on, are in
	// the control plane's own events only.
	Audit wq.AuditSink
	// Holders, when set, keeps the holder note of each work unit whose
	// leases change (holders.go): who holds it, on the forge.
	Holders *HolderNotes
}

// Metrics receives what the control plane counts.
type Metrics interface {
	// Allocated: an allocation answered with an outcome (Outcome, or
	// "error").
	Allocated(outcome string)
	// GateRefused: the gate refused a mutation for a reason.
	GateRefused(reason string)
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Sync lists every configured repository again now (admin only).
func (s *Service) Sync(ctx context.Context, c Caller) (*SyncReport, error) {
	if !c.Admin {
		return nil, wq.Errorf(wq.EFORBIDDEN, "%s may not sync the inventory: permission admin is required", c.Identity)
	}
	if s.Inventory == nil {
		return nil, wq.Errorf(wq.EUNAVAILABLE, "no control_plane.repos are configured: there is no inventory to sync")
	}
	rep, err := s.Inventory.Sync(ctx)
	if err != nil {
		return &rep, err
	}
	return &rep, nil
}

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}

func (s *Service) leaseTTL() time.Duration {
	if s.LeaseTTL > 0 {
		return s.LeaseTTL
	}
	return 30 * time.Minute
}

func (s *Service) sessionTTL() time.Duration {
	if s.SessionTTL > 0 {
		return s.SessionTTL
	}
	return 15 * time.Minute
}

func conflict(reason, format string, args ...any) error {
	return &wq.Error{Code: wq.ECONFLICT, Reason: reason, Message: reason + ": " + fmt.Sprintf(format, args...)}
}

// RegisterSession starts a session of role for the caller.
func (s *Service) RegisterSession(ctx context.Context, c Caller, role Role, name string, capabilities json.RawMessage) (*SessionView, error) {
	if !role.Valid() {
		return nil, wq.Errorf(wq.EINVALID, "role: want author, reviewer or merger, got %q", role)
	}
	if err := validateText("name", name, maxSessionName); err != nil {
		return nil, err
	}
	name = secrets.Text(name)
	if len(capabilities) > 0 {
		var obj map[string]any
		switch {
		case len(capabilities) > MaxCheckpointJSON:
			return nil, wq.Errorf(wq.EINVALID, "capabilities: at most %d bytes of JSON, got %d", MaxCheckpointJSON, len(capabilities))
		case json.Unmarshal(capabilities, &obj) != nil || obj == nil:
			return nil, wq.Errorf(wq.EINVALID, "capabilities: want a JSON object")
		}
		if err := refuseTranscript("capabilities", capabilities); err != nil {
			return nil, err
		}
		var err error
		if capabilities, err = secrets.JSON(capabilities); err != nil {
			return nil, wq.Errorf(wq.EINVALID, "capabilities: %v", err)
		}
	}
	now := s.now()
	sess := Session{ID: wq.NewItemID().String(), Identity: c.Identity, Name: name, Role: role, Capabilities: capabilities,
		CreatedAt: now, HeartbeatAt: now}
	if err := s.Store.CreateSession(ctx, sess); err != nil {
		return nil, err
	}
	if err := s.Store.AppendEvent(ctx, Event{Time: now, Type: EventSession, Actor: c.Identity, SessionID: sess.ID, Reason: "registered"}); err != nil {
		return nil, err
	}
	v := s.view(&sess)
	return &v, nil
}

// session loads a session the caller may act for: its own, or any for an
// admin. Another identity's session is ENOTFOUND to a non-admin, so that
// session ids cannot be probed.
func (s *Service) session(ctx context.Context, c Caller, id string) (*Session, error) {
	sess, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if sess.Identity != c.Identity && !c.Admin {
		return nil, wq.Errorf(wq.ENOTFOUND, "session %s not found", id)
	}
	return sess, nil
}

func (s *Service) view(sess *Session) SessionView {
	return SessionView{Session: *sess, Status: sess.Status(s.now(), s.sessionTTL())}
}

// Sessions lists the caller's sessions (every session for an admin).
func (s *Service) Sessions(ctx context.Context, c Caller, limit int) ([]SessionView, error) {
	identity := c.Identity
	if c.Admin {
		identity = ""
	}
	list, err := s.Store.ListSessions(ctx, identity, limit)
	if err != nil {
		return nil, err
	}
	out := make([]SessionView, len(list))
	for i := range list {
		out[i] = s.view(&list[i])
	}
	return out, nil
}

// Session returns one session the caller may act for.
func (s *Service) Session(ctx context.Context, c Caller, id string) (*SessionView, error) {
	sess, err := s.session(ctx, c, id)
	if err != nil {
		return nil, err
	}
	v := s.view(sess)
	return &v, nil
}

// HeartbeatSession keeps a session active.
func (s *Service) HeartbeatSession(ctx context.Context, c Caller, id string) (*SessionView, error) {
	if _, err := s.session(ctx, c, id); err != nil {
		return nil, err
	}
	if err := s.Store.HeartbeatSession(ctx, id, s.now()); err != nil {
		return nil, err
	}
	return s.Session(ctx, c, id)
}

// EndSession ends a session and releases its leases. A caller narrowed
// to some projects may not end a session that holds a lease of another
// project: that would release it.
func (s *Service) EndSession(ctx context.Context, c Caller, id string) (*SessionView, error) {
	if _, err := s.session(ctx, c, id); err != nil {
		return nil, err
	}
	if c.Projects != nil {
		held, err := s.Store.ListLeases(ctx, LeaseFilter{SessionID: id})
		if err != nil {
			return nil, err
		}
		if visible, err := s.visibleLeases(ctx, c, slices.Clone(held)); err != nil {
			return nil, err
		} else if len(visible) != len(held) {
			return nil, wq.Errorf(wq.EFORBIDDEN, "%s may not end session %s: it holds work outside the projects this token covers; end it with a token that covers them",
				c.Identity, id)
		}
	}
	now := s.now()
	released, err := s.Store.EndSession(ctx, id, Event{Time: now, Type: EventSession, Actor: c.Identity, SessionID: id, Reason: "ended"}, now)
	if err != nil {
		return nil, err
	}
	for _, l := range released {
		before := l
		before.State, before.EndedAt = LeaseActive, time.Time{}
		s.auditLease(ctx, wq.AuditLeaseEnded, c.Identity, "api", "its session ended", &before, &l)
		s.Holders.Changed(l.WorkID)
	}
	return s.Session(ctx, c, id)
}

// Allocate gives session sessionID its next safe work (#600): a dry run
// (apply false) writes nothing and says what would be assigned and why
// every other candidate was passed over; apply assigns it under a new
// lease in one transaction. A race lost to another session moves on to
// the next candidate; when none is left the answer is wait.
func (s *Service) Allocate(ctx context.Context, c Caller, sessionID, repoGlob string, apply bool) (*Allocation, error) {
	out, err := s.allocate(ctx, c, sessionID, repoGlob, apply)
	if s.Metrics != nil {
		if err != nil {
			s.Metrics.Allocated("error")
		} else {
			s.Metrics.Allocated(string(out.Outcome))
		}
	}
	return out, err
}

func (s *Service) allocate(ctx context.Context, c Caller, sessionID, repoGlob string, apply bool) (*Allocation, error) {
	if repoGlob != "" && !doublestar.ValidatePattern(repoGlob) {
		return nil, wq.Errorf(wq.EINVALID, "repo: want a glob such as org/* or group/**, got %q", repoGlob)
	}
	sess, err := s.session(ctx, c, sessionID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if st := sess.Status(now, s.sessionTTL()); st != SessionActive {
		return nil, conflict("session_"+string(st), "session %s is %s: register or heartbeat first", sess.ID, st)
	}
	cands, err := s.Store.Candidates(ctx, now)
	if err != nil {
		return nil, err
	}
	// Work outside the caller's projects is no candidate at all: it is
	// neither chosen nor listed among the skipped.
	cands = inScope(c, cands)
	if err := s.identify(ctx, cands); err != nil {
		return nil, err
	}
	cands, held, err := s.awaitingPerson(ctx, c, cands)
	if err != nil {
		return nil, err
	}
	lost := held // held back for a person, then races lost while applying
	for rereads := 0; ; {
		choice := Choose(sess, cands, repoGlob, s.Policy, now)
		out := &Allocation{Outcome: choice.Outcome, Candidates: skips(choice.Skipped, lost)}
		if choice.Outcome != OutcomePreview {
			if choice.Outcome == OutcomeNoSafeWork && slices.ContainsFunc(lost, func(c CandidateSkip) bool { return c.Reason == SkipLost }) {
				out.Outcome = OutcomeWait // the work this session could take went to another
			}
			return out, nil
		}
		out.Work = choice.Work
		if !apply {
			return out, nil
		}
		if choice.Work.Kind == KindPR {
			// The head an assignment pins comes from the forge, read now:
			// a verdict the inventory holds counts only at the head it was
			// given on, so a pull request that moved is chosen again as
			// the forge has it.
			fresh, moved, err := s.readLive(ctx, choice.Work)
			if err != nil {
				return nil, err
			}
			if moved {
				if rereads++; rereads > maxRereads {
					// The pull requests keep moving under the choice (a
					// forge still checking mergeability after a merge):
					// the answer is to come back, as when others hold them.
					out.Outcome, out.Work = OutcomeWait, nil
					return out, nil
				}
				cands = replaced(cands, fresh)
				continue
			}
		}
		a := Assignment{ID: wq.NewItemID().String(), SessionID: sess.ID, WorkID: choice.Work.ID, AllowedActions: choice.Actions,
			ExpectedHeadSHA: choice.Head, Terminal: choice.Terminal, CreatedAt: now}
		l := Lease{ID: wq.NewItemID().String(), WorkID: choice.Work.ID, SessionID: sess.ID, AssignmentID: a.ID, State: LeaseActive,
			CreatedAt: now, HeartbeatAt: now, ExpiresAt: now.Add(s.leaseTTL()), HeadSHA: ""}
		a.LeaseID = l.ID
		ev := Event{Time: now, Type: EventAssigned, Actor: c.Identity, SessionID: sess.ID, WorkID: a.WorkID, LeaseID: l.ID,
			AssignmentID: a.ID, Reason: "route " + choice.Route.String()}
		err := s.Store.Assign(ctx, a, l, ev, now)
		switch {
		case err == nil:
			s.auditLease(ctx, wq.AuditLeaseAssigned, c.Identity, "api", "route "+choice.Route.String(), nil, &l)
			s.Holders.Changed(a.WorkID)
			out.Outcome = OutcomeAssigned
			out.Lease = &LeaseRef{ID: l.ID, ExpiresAt: l.ExpiresAt}
			out.Assignment = &AssignmentRef{ID: a.ID, AllowedActions: a.AllowedActions, ExpectedHeadSHA: a.ExpectedHeadSHA}
			return out, nil
		case errors.Is(err, ErrWorkHeld):
			lost = append(lost, CandidateSkip{Work: choice.Work, Reason: SkipLost})
		case errors.Is(err, ErrWorkTerminal):
			lost = append(lost, CandidateSkip{Work: choice.Work, Reason: SkipTerminal})
		default:
			return nil, err
		}
		cands = without(cands, choice.Work.ID)
	}
}

// inScope is the candidates of the caller's projects, in a slice of
// its own (the store's may be shared).
func inScope(c Caller, cands []Candidate) []Candidate {
	if c.Projects == nil {
		return cands
	}
	out := make([]Candidate, 0, len(cands))
	for _, cand := range cands {
		if c.covers(cand.Work) {
			out = append(out, cand)
		}
	}
	return out
}

// maxRereads bounds how often one allocation reads moved pull requests
// again before it gives up for now.
const maxRereads = 8

// identify fills the identities of the sessions each candidate names.
func (s *Service) identify(ctx context.Context, cands []Candidate) error {
	ids := map[string]string{}
	if r, ok := s.Store.(IdentityReader); ok {
		// One read for every session named, where the store can.
		var sessions []string
		for _, c := range cands {
			for _, id := range []string{c.AuthorSession, c.LeaseSession} {
				if _, seen := ids[id]; id != "" && !seen {
					ids[id] = ""
					sessions = append(sessions, id)
				}
			}
		}
		found, err := r.SessionIdentities(ctx, sessions)
		if err != nil {
			return err
		}
		for _, id := range sessions {
			ids[id] = found[id] // "" for a session not found, as below
		}
	}
	of := func(session string) (string, error) {
		if session == "" {
			return "", nil
		}
		if id, ok := ids[session]; ok {
			return id, nil
		}
		sess, err := s.Store.GetSession(ctx, session)
		switch {
		case wq.ErrorCode(err) == wq.ENOTFOUND:
			sess = &Session{}
		case err != nil:
			return "", err
		}
		ids[session] = sess.Identity
		return sess.Identity, nil
	}
	for i := range cands {
		var err error
		if cands[i].AuthorIdentity, err = of(cands[i].AuthorSession); err != nil {
			return err
		}
		if cands[i].LeaseIdentity, err = of(cands[i].LeaseSession); err != nil {
			return err
		}
	}
	return nil
}

// readLive reads pull request w from its forge and, when the forge's head
// or verdict is not the inventory's, writes what the forge says and
// returns it with moved true. Without a forge of that name here the
// inventory stands.
func (s *Service) readLive(ctx context.Context, w *Work) (*Work, bool, error) {
	f, ok := s.Forges[w.Forge]
	if !ok {
		return w, false, nil
	}
	info, err := f.GetWork(ctx, w.Repo, string(KindPR), w.Number)
	if err != nil {
		return nil, false, fmt.Errorf("read %s#%d before pinning its head: %w", w.Repo, w.Number, err)
	}
	fresh, err := toWork(w.Forge, w.Repo, *info)
	if err != nil {
		return nil, false, err
	}
	if fresh.HeadSHA == w.HeadSHA && fresh.ReviewState == w.ReviewState && fresh.State == w.State && fresh.Mergeable == w.Mergeable {
		return w, false, nil
	}
	got, err := s.Store.ReviseWork(ctx, w.WorkKey, func(cur *Work) bool {
		cur.HeadSHA, cur.ReviewState, cur.State, cur.Mergeable = fresh.HeadSHA, fresh.ReviewState, fresh.State, fresh.Mergeable
		if fresh.UpdatedAt.After(cur.UpdatedAt) {
			cur.UpdatedAt = fresh.UpdatedAt
		}
		return true
	}, s.now())
	if err != nil {
		return nil, false, err
	}
	return got, true, nil
}

// replaced is cands with the candidate of w's key holding w.
func replaced(cands []Candidate, w *Work) []Candidate {
	for i := range cands {
		if cands[i].ID == w.ID {
			cands[i].Work = w
		}
	}
	return cands
}

func without(cands []Candidate, id string) []Candidate {
	out := make([]Candidate, 0, len(cands))
	for _, c := range cands {
		if c.ID != id {
			out = append(out, c)
		}
	}
	return out
}

// awaitingPerson finds the approved pull requests whose protected paths
// still wait for a person (ReviewLabel, and no approval of their head by
// an identity that may submit there: approvedByPerson). None is a
// merger's: for an agent-only caller it is passed over (awaits_person);
// for a caller that may submit there it is one to review.
func (s *Service) awaitingPerson(ctx context.Context, c Caller, cands []Candidate) ([]Candidate, []CandidateSkip, error) {
	if s.ReviewLabel == "" {
		return cands, nil, nil
	}
	var held []CandidateSkip
	out := make([]Candidate, 0, len(cands)) // the store's slice may be shared
	for _, cand := range cands {
		if cand.Kind != KindPR || cand.State.Terminal() || cand.ReviewState != ReviewApproved || !slices.Contains(cand.Labels, s.ReviewLabel) {
			out = append(out, cand)
			continue
		}
		ok, err := s.approvedByPerson(ctx, cand.Work, cand.HeadSHA)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case ok:
			out = append(out, cand)
		case c.agentOnly(cand.Repo):
			held = append(held, CandidateSkip{Work: cand.Work, Reason: SkipAwaitsPerson})
		default:
			cand.AwaitsPerson = true
			out = append(out, cand)
		}
	}
	return out, held, nil
}

func skips(picks []Pick, lost []CandidateSkip) []CandidateSkip {
	out := make([]CandidateSkip, 0, len(picks)+len(lost))
	for _, p := range picks {
		out = append(out, CandidateSkip{Work: p.Work, Reason: p.Reason})
	}
	return append(out, lost...)
}

// Gate checks a mutation (#613) and logs a refusal. The caller must act
// for the session; a session it may not act for is refused as not_owner,
// never revealed.
//
// liveHead is the caller's claim: the gate refuses when either it or the
// inventory's head is not the pinned one, and it is never taken over the
// service's own record. The service's own writes pass the head they read
// from the forge (gateAt).
func (s *Service) Gate(ctx context.Context, c Caller, sessionID, assignmentID string, action Action, liveHead string) (Decision, error) {
	if err := ValidateSHA("live_head_sha", liveHead); err != nil {
		return Decision{}, err
	}
	if !action.Valid() {
		return Decision{}, wq.Errorf(wq.EINVALID, "action: want one of comment, push, open_pr, review, merge or close, got %q", clip(string(action)))
	}
	return s.gateAt(ctx, c, sessionID, assignmentID, action, liveHead, false)
}

// gateAt is Gate; fromForge says liveHead was read from the forge just
// now, and is the one head that counts.
func (s *Service) gateAt(ctx context.Context, c Caller, sessionID, assignmentID string, action Action, liveHead string, fromForge bool) (Decision, error) {
	now := s.now()
	in := GateInput{SessionID: sessionID, Action: action, LiveHead: liveHead, LiveFromForge: fromForge, Now: now}
	var err error
	if in.Session, err = s.Store.GetSession(ctx, sessionID); err != nil && wq.ErrorCode(err) != wq.ENOTFOUND {
		return Decision{}, err
	}
	if in.Session != nil && in.Session.Identity != c.Identity && !c.Admin {
		in.Session = &Session{ID: "", Identity: in.Session.Identity} // not the caller's: not_owner
	}
	if in.Assignment, err = s.Store.GetAssignment(ctx, assignmentID); err != nil && wq.ErrorCode(err) != wq.ENOTFOUND {
		return Decision{}, err
	}
	if in.Assignment != nil {
		if in.Lease, err = s.Store.GetLease(ctx, in.Assignment.LeaseID); err != nil && wq.ErrorCode(err) != wq.ENOTFOUND {
			return Decision{}, err
		}
		if in.Work, err = s.Store.GetWork(ctx, in.Assignment.WorkID); err != nil && wq.ErrorCode(err) != wq.ENOTFOUND {
			return Decision{}, err
		}
		if in.Work != nil && !c.covers(in.Work) {
			// An assignment on work outside the caller's projects is
			// one that does not exist: no_assignment, and a refusal
			// event that names no work.
			in.Assignment, in.Lease, in.Work = nil, nil, nil
		}
	}
	d := Check(in)
	if !d.Allowed && s.Metrics != nil {
		s.Metrics.GateRefused(d.Reason)
	}
	if !d.Allowed {
		ev := Event{Time: now, Type: EventRefused, Actor: c.Identity, SessionID: sessionID, AssignmentID: assignmentID, Reason: d.Reason}
		if in.Assignment != nil {
			ev.WorkID, ev.LeaseID = in.Assignment.WorkID, in.Assignment.LeaseID
		}
		ev.Detail, _ = json.Marshal(map[string]string{"action": string(action), "live_head_sha": liveHead})
		if err := s.Store.AppendEvent(ctx, ev); err != nil {
			return Decision{}, err
		}
	}
	return d, nil
}
