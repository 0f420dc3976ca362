package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/policy"
)

// Refusal reasons of gated actions, beside the gate's.
const (
	ActionOwnPullRequest = "own_pull_request" // a session reviewing the pull request it wrote
	ActionWrongKind      = "wrong_kind"       // the action does not apply to the assignment's work (merge an issue)
	ActionForgeRefused   = "forge_refused"    // the forge refused what the gate allowed
	// ActionReviewRequired refuses the merge of a pull request whose
	// protected paths wait for a person: no identity that may submit to
	// the repository itself approved its current head.
	ActionReviewRequired = "review_required"
)

// EventAction is the log entry of a gated action done for a session.
const EventAction = "action"

// maxActionBody bounds a comment or review body (both forges take more).
const maxActionBody = 64 << 10

// Act makes req's mutation on the forge for the caller's session, if
// the gate allows it (DESIGN section 9): a review or merge is pinned to
// the pull request's live head, which must still be the one the
// assignment pinned (else head_moved); a session never reviews its own
// pull request. A review, a merge and a close release the lease and
// update the inventory at once, so that the allocator hands the work on
// without waiting for the forge's webhook. Every action is logged with
// its session and assignment. A refusal is an ECONFLICT with a reason.
func (s *Service) Act(ctx context.Context, c Caller, req ActionRequest) (*ActionResult, error) {
	if err := validateAction(req); err != nil {
		return nil, err
	}
	a, w, err := s.assignedWork(ctx, c, req.AssignmentID)
	if err != nil {
		return nil, err
	}
	if (req.Action == ActReview || req.Action == ActMerge) && w.Kind != KindPR || req.Action == ActClose && w.Kind != KindIssue {
		return nil, conflict(ActionWrongKind, "%s does not apply to %s %s#%d", req.Action, w.Kind, w.Repo, w.Number)
	}
	if req.Action == ActReview || req.Action == ActMerge {
		// Sessions of one identity are one actor: none of them judges
		// or merges what another of them wrote.
		sess, err := s.session(ctx, c, req.SessionID)
		if err != nil && wq.ErrorCode(err) != wq.ENOTFOUND {
			return nil, err
		}
		if sess != nil {
			own, err := s.authoredByIdentity(ctx, w, sess.Identity)
			if err != nil {
				return nil, err
			}
			if own {
				return nil, conflict(ActionOwnPullRequest, "%s wrote pull request %s#%d and may not %s it, whichever of its sessions asks",
					sess.Identity, w.Repo, w.Number, req.Action)
			}
		}
	}
	f, ok := s.Forges[w.Forge]
	if !ok {
		return nil, wq.Errorf(wq.EUNAVAILABLE, "forge %q of %s is not configured on this instance", w.Forge, w.Repo)
	}
	// What the forge receives passes the outbound policy as this caller's,
	// here (a refusal names the field) and again in the forge's guard.
	pc := policy.Caller{Identity: c.Identity, AgentOnly: c.agentOnly(w.Repo), Assignment: &policy.Assignment{ID: a.ID}}
	if w.Kind == KindIssue {
		pc.Assignment.Issue = w.Number
	}
	if req.Body != "" {
		op := policy.OpComment
		if req.Action == ActReview {
			op = policy.OpReview
		}
		if err := policy.Check(pc, policy.Project{}, policy.Write{Op: op, Project: w.Repo, Body: req.Body}).Err(); err != nil {
			return nil, err
		}
	}
	ctx = policy.WithCaller(ctx, pc)
	var live string
	if w.Kind == KindPR && (req.Action == ActReview || req.Action == ActMerge) {
		pr, err := f.GetMergeRequest(ctx, w.Repo, w.Number)
		if err != nil {
			return nil, forgeRefusal("read the pull request", err)
		}
		live = pr.HeadSHA
	}
	d, err := s.gateAt(ctx, c, req.SessionID, a.ID, req.Action, live, live != "")
	if err != nil {
		return nil, err
	}
	if !d.Allowed {
		if d.Reason == GateHeadMoved && live != "" {
			s.headMoved(ctx, c, a.LeaseID, live)
		}
		return nil, conflict(d.Reason, "the gate refuses %s on %s %s#%d", req.Action, w.Kind, w.Repo, w.Number)
	}
	if req.Action == ActMerge && s.ReviewLabel != "" && slices.Contains(w.Labels, s.ReviewLabel) {
		if ok, err := s.approvedByPerson(ctx, w, live); err != nil {
			return nil, err
		} else if !ok {
			return nil, conflict(ActionReviewRequired, "%s#%d changes protected paths (label %s): it merges only once an identity that may submit to %s itself approved its head %s",
				w.Repo, w.Number, s.ReviewLabel, w.Repo, live)
		}
	}
	out := &ActionResult{Action: req.Action, Work: w, HeadSHA: live}
	switch req.Action {
	case ActComment:
		out.CommentID, err = f.CommentOnWork(ctx, w.Repo, string(w.Kind), w.Number, req.Body)
	case ActReview:
		verdict := wq.ReviewApproved
		if req.Verdict == VerdictRequestChanges {
			verdict = wq.ReviewChangesRequested
		}
		err = f.ReviewPullRequest(ctx, w.Repo, w.Number, verdict, req.Body, live)
	case ActMerge:
		if s.MergeQueue != nil {
			out.Queued, err = s.MergeQueue.QueueMerge(ctx, w.Forge, w.Repo, w.Number, live, c.Identity, s.now())
		}
		if !out.Queued && err == nil {
			err = f.MergeMergeRequest(ctx, w.Repo, w.Number, live)
		}
	case ActClose:
		err = f.CloseIssue(ctx, w.Repo, w.Number)
	}
	if err != nil {
		err = forgeRefusal(string(req.Action), err)
		switch wq.ErrorReason(err) {
		case ActionForgeRefused:
			if req.Action == ActMerge {
				s.notMergeable(ctx, w.WorkKey, live)
			}
		case GateHeadMoved:
			s.headMoved(ctx, c, a.LeaseID, "")
		}
		return nil, err
	}
	if err := s.logAction(ctx, c, a, req, live, w.Repo); err != nil {
		return nil, err
	}
	if req.Action == ActComment {
		return out, nil
	}
	if out.Queued {
		// The train merges it: the merger's part is done, the work is
		// not merged yet.
		if _, err := s.ReleaseLease(ctx, c, a.LeaseID, req.SessionID); err != nil && wq.ErrorCode(err) != wq.ECONFLICT {
			return nil, err
		}
		out.Released = true
		return out, nil
	}
	// The work moves on now, over what the store holds by then (a
	// delivery may have landed during the forge call), as a push does:
	// what the forge said before is older and changes nothing, and its
	// next change (its webhook saying the same) still applies.
	moved, err := s.Store.ReviseWork(ctx, w.WorkKey, func(cur *Work) bool { return applyAction(cur, req, w.HeadSHA, live) }, s.now())
	if err != nil {
		return nil, err
	}
	out.Work = moved
	if req.Action == ActMerge {
		// The forge closes the issues a merged pull request closes as
		// part of the merge; the inventory learns it before the lease
		// goes, so that no one is handed the finished issue while its
		// webhook is on the way.
		s.settleLinked(ctx, f, moved)
	}
	if _, err := s.ReleaseLease(ctx, c, a.LeaseID, req.SessionID); err != nil && wq.ErrorCode(err) != wq.ECONFLICT {
		return nil, err
	}
	out.Released = true
	return out, nil
}

// authoredByIdentity reports whether identity wrote pull request w: the
// session the inventory names as its author is one of identity's, or,
// while its author is unknown, a session of identity holds an issue it
// closes (its author may be that session, whose record is on its way).
func (s *Service) authoredByIdentity(ctx context.Context, w *Work, identity string) (bool, error) {
	if w.Kind != KindPR {
		return false, nil
	}
	if w.AuthorSession != "" {
		author, err := s.Store.GetSession(ctx, w.AuthorSession)
		if wq.ErrorCode(err) == wq.ENOTFOUND {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return author.Identity == identity, nil
	}
	for _, n := range w.LinkedIssues {
		issue, err := s.Store.FindWork(ctx, WorkKey{Forge: w.Forge, Repo: w.Repo, Kind: KindIssue, Number: n})
		if wq.ErrorCode(err) == wq.ENOTFOUND {
			continue
		}
		if err != nil {
			return false, err
		}
		leases, err := s.Store.ListLeases(ctx, LeaseFilter{WorkID: issue.ID, Limit: 1})
		if err != nil {
			return false, err
		}
		if len(leases) == 1 && leases[0].Live(s.now()) {
			holder, err := s.Store.GetSession(ctx, leases[0].SessionID)
			if err == nil && holder.Identity == identity {
				return true, nil
			}
		}
	}
	return false, nil
}

// applyAction is what a review, merge or close done on the forge changes
// in the stored work cur; read is the head the inventory held when the
// action began, live the head it was pinned to.
func applyAction(cur *Work, req ActionRequest, read, live string) bool {
	switch req.Action {
	case ActReview:
		// A verdict is on the head it was given to: a push the inventory
		// learnt of since leaves the verdict to the forge.
		if cur.HeadSHA != read && cur.HeadSHA != live {
			return false
		}
		cur.HeadSHA, cur.ReviewState = live, ReviewApproved
		if req.Verdict == VerdictRequestChanges {
			cur.ReviewState = ReviewChangesRequested
		}
	case ActMerge:
		cur.State, cur.HeadSHA = StateMerged, live
	case ActClose:
		cur.State = StateClosed
	default:
		return false
	}
	return true
}

// settleLinked reads from the forge the issues merged pull request pr
// closes and writes those the forge closed. The forge decides (GitLab
// closes them only on its default branch); a failed read is logged and
// left to the issue's webhook and the next sync.
func (s *Service) settleLinked(ctx context.Context, f wq.Forge, pr *Work) {
	for _, n := range pr.LinkedIssues {
		key := WorkKey{Forge: pr.Forge, Repo: pr.Repo, Kind: KindIssue, Number: n}
		info, err := f.GetWork(ctx, pr.Repo, string(KindIssue), n)
		if err != nil {
			s.log().Warn("control plane: could not read an issue a merge closes", "forge", pr.Forge, "repo", pr.Repo, "issue", n, "error", err)
			continue
		}
		closed := State(info.State)
		if !closed.Terminal() {
			continue
		}
		_, err = s.Store.ReviseWork(ctx, key, func(cur *Work) bool {
			if cur.State.Terminal() {
				return false
			}
			cur.State = closed
			if info.UpdatedAt.After(cur.UpdatedAt) {
				cur.UpdatedAt = info.UpdatedAt.UTC()
			}
			return true
		}, s.now())
		if err != nil && wq.ErrorCode(err) != wq.ENOTFOUND {
			s.log().Warn("control plane: could not close an issue a merge closed", "forge", pr.Forge, "repo", pr.Repo, "issue", n, "error", err)
		}
	}
}

// notMergeable records that the forge refused to merge pull request key
// at head: it cannot merge now (a conflict, a mergeability check still
// running). Inventory.Settle reads it again until it can.
func (s *Service) notMergeable(ctx context.Context, key WorkKey, head string) {
	_, err := s.Store.ReviseWork(ctx, key, func(cur *Work) bool {
		if cur.HeadSHA != head || !cur.Mergeable {
			return false
		}
		cur.Mergeable = false
		return true
	}, s.now())
	if err != nil {
		s.log().Warn("control plane: could not record a refused merge", "repo", key.Repo, "number", key.Number, "error", err)
	}
}

// validateAction refuses, naming the field, a request Act cannot make.
func validateAction(r ActionRequest) error {
	switch {
	case r.SessionID == "":
		return wq.Errorf(wq.EINVALID, "session_id: required")
	case r.AssignmentID == "":
		return wq.Errorf(wq.EINVALID, "assignment_id: required")
	}
	switch r.Action {
	case ActComment:
		if strings.TrimSpace(r.Body) == "" {
			return wq.Errorf(wq.EINVALID, "body: a comment needs text")
		}
	case ActReview:
		if r.Verdict != VerdictApprove && r.Verdict != VerdictRequestChanges {
			return wq.Errorf(wq.EINVALID, "verdict: want approve or request_changes, got %q", r.Verdict)
		}
		if r.Verdict == VerdictRequestChanges && strings.TrimSpace(r.Body) == "" {
			return wq.Errorf(wq.EINVALID, "body: requesting changes needs a body saying which")
		}
	case ActMerge, ActClose:
	default:
		return wq.Errorf(wq.EINVALID, "action: want comment, review, merge or close, got %q (push and open_pr are submissions of changes)", r.Action)
	}
	if len(r.Body) > maxActionBody {
		return wq.Errorf(wq.EINVALID, "body: at most %d bytes", maxActionBody)
	}
	return nil
}

// logAction appends the action to the event log, with its session and
// assignment.
func (s *Service) logAction(ctx context.Context, c Caller, a *Assignment, req ActionRequest, head string, repo string) error {
	detail, _ := json.Marshal(map[string]any{"action": string(req.Action), "verdict": req.Verdict, "head_sha": head,
		"agent_only": c.agentOnly(repo)})
	return s.Store.AppendEvent(ctx, Event{Time: s.now(), Type: EventAction, Actor: c.Identity, SessionID: req.SessionID,
		WorkID: a.WorkID, LeaseID: a.LeaseID, AssignmentID: a.ID, Reason: string(req.Action), Detail: detail})
}

// approvedByPerson reports whether pull request w was approved at head,
// through Act, by an identity that may submit to its repository itself
// (not agent-only there) and did not write it.
func (s *Service) approvedByPerson(ctx context.Context, w *Work, head string) (bool, error) {
	events, err := s.Store.ListEvents(ctx, EventFilter{WorkID: w.ID, Limit: 500})
	if err != nil {
		return false, err
	}
	for _, ev := range events {
		if ev.Type != EventAction || ev.Reason != string(ActReview) {
			continue
		}
		var d struct {
			Verdict   string `json:"verdict"`
			HeadSHA   string `json:"head_sha"`
			AgentOnly *bool  `json:"agent_only"`
		}
		if json.Unmarshal(ev.Detail, &d) != nil || d.Verdict != VerdictApprove || d.HeadSHA != head || d.AgentOnly == nil || *d.AgentOnly {
			continue
		}
		own, err := s.authoredByIdentity(ctx, w, ev.Actor)
		if err != nil {
			return false, err
		}
		if !own {
			return true, nil
		}
	}
	return false, nil
}

// forgeRefusal is a forge error as the caller should read it: a head
// that moved under a pinned review or merge is head_moved; another
// refusal is forge_refused; transient failures stay errors to retry.
func forgeRefusal(op string, err error) error {
	kind, ok := wq.ForgeErrorOf(err)
	switch {
	case ok && kind == wq.ForgeConflict:
		return conflict(GateHeadMoved, "%s: the forge says the head moved: %v", op, err)
	case ok && (kind == wq.ForgeUnprocessable || kind == wq.ForgePermanent || kind == wq.ForgeNotFound):
		return conflict(ActionForgeRefused, "%s: %v", op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
