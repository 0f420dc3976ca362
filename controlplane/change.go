package controlplane

import (
	"context"
	"slices"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Refusal reasons of a change made for an assignment, beside the gate's.
const (
	ChangeOtherRepo   = "assignment_other_repo"   // the assignment's work is in another repository
	ChangeOtherBranch = "assignment_other_branch" // a pull request assignment's change must go to that pull request's branch
	ChangeNoPRBranch  = "pull_request_unreadable" // the pull request's branch and head could not be read
)

// ChangeRequest is a change an item type is about to make for an
// assignment: at submission, and again before each forge write.
type ChangeRequest struct {
	AssignmentID string
	Forge        string
	Repo         string
	Branch       string // the change's source branch
	// PullRequest reads a pull request's source branch and head commit
	// from the forge, live: a pull request assignment's change must go
	// onto that branch, at the head the assignment pinned.
	PullRequest func(ctx context.Context, forge, repo string, number int64) (branch, head string, err error)
}

// ChangeGrant is what an allowed change is for.
type ChangeGrant struct {
	SessionID string
	LeaseID   string
	Work      Work
	Action    Action // ActOpenPR for an issue, ActPush for a pull request
	// Merge says whether the assignment allows merging as well: a change
	// made for one that does not is never merged by the service on its
	// own (its review and merge go through the allocator).
	Merge bool
}

// AuthorizeChange decides whether caller may make req's change for its
// assignment (DESIGN section 9, "Assignments on the write path"): an
// issue assignment must allow open_pr; a pull request assignment push,
// onto that pull request's branch, whose head the forge says is still
// the one the assignment pinned (or its owner declared since). A refusal
// is an ECONFLICT error whose reason is the gate's (head_moved,
// lease_expired, work_terminal, not_owner…) or one of the Change*
// reasons; a missing assignment is no_assignment.
func (s *Service) AuthorizeChange(ctx context.Context, c Caller, req ChangeRequest) (*ChangeGrant, error) {
	a, w, err := s.assignedWork(ctx, c, req.AssignmentID)
	if err != nil {
		return nil, err
	}
	lease, err := s.Store.GetLease(ctx, a.LeaseID)
	if err != nil {
		return nil, err
	}
	if w.Forge != req.Forge || w.Repo != req.Repo {
		return nil, conflict(ChangeOtherRepo, "assignment %s is for %s %s, the change for %s %s", a.ID, w.Forge, w.Repo, req.Forge, req.Repo)
	}
	g := &ChangeGrant{SessionID: lease.SessionID, LeaseID: lease.ID, Work: *w, Action: ActOpenPR, Merge: slices.Contains(a.AllowedActions, ActMerge)}
	var live string
	if w.Kind == KindPR {
		g.Action = ActPush
		branch, head, err := req.PullRequest(ctx, w.Forge, w.Repo, w.Number)
		if err != nil {
			if wq.IsForgeError(err, wq.ForgeNotFound) {
				return nil, conflict(ChangeNoPRBranch, "pull request %s#%d: %v", w.Repo, w.Number, err)
			}
			return nil, err
		}
		if branch != req.Branch {
			return nil, conflict(ChangeOtherBranch, "assignment %s is for pull request %s#%d, whose branch is %q; the change is for %q",
				a.ID, w.Repo, w.Number, branch, req.Branch)
		}
		live = head
	}
	d, err := s.gateAt(ctx, c, lease.SessionID, a.ID, g.Action, live, live != "")
	if err != nil {
		return nil, err
	}
	if !d.Allowed {
		if d.Reason == GateHeadMoved && live != "" {
			s.headMoved(ctx, c, lease.ID, live)
		}
		return nil, conflict(d.Reason, "the gate refuses %s on %s %s#%d for assignment %s", g.Action, w.Kind, w.Repo, w.Number, a.ID)
	}
	return g, nil
}

// ChangePushed records that the service pushed head for the owner of a
// pull request assignment: its lease is pinned to it, so that the gate
// expects the owner's own push from now on and a stranger's push after
// it still reads head_moved. Nothing for an issue assignment. Only the
// service calls it: an agent never names the head its lease is pinned to.
func (s *Service) ChangePushed(ctx context.Context, c Caller, assignmentID, head string) error {
	a, w, err := s.assignedWork(ctx, c, assignmentID)
	if err != nil || w.Kind != KindPR {
		return err
	}
	lease, err := s.Store.GetLease(ctx, a.LeaseID)
	if err != nil {
		return err
	}
	return s.declarePush(ctx, c, lease, head)
}

// ChangeOpened records that the service opened (or found) pull request
// number of repo for an issue assignment: the assignment's session wrote
// it, for good. This is how the inventory knows a pull request's author
// (never from a "Closes #N" line): its review and merge go to other
// identities, and requested changes come back to it. A pull request
// whose author is already known keeps it; the row is written ahead of
// the forge's webhook when the inventory does not hold it yet (with no
// forge time, so the forge's own data still applies over it).
func (s *Service) ChangeOpened(ctx context.Context, c Caller, assignmentID string, number int64, head string) error {
	a, w, err := s.assignedWork(ctx, c, assignmentID)
	if err != nil || w.Kind != KindIssue || number <= 0 {
		return err
	}
	key := WorkKey{Forge: w.Forge, Repo: w.Repo, Kind: KindPR, Number: number}
	// setAuthor names the session the pull request's author, unless one
	// already is.
	setAuthor := func() error {
		_, err := s.Store.ReviseWork(ctx, key, func(cur *Work) bool {
			if cur.AuthorSession != "" {
				return false
			}
			cur.AuthorSession = a.SessionID
			return true
		}, s.now())
		return err
	}
	if err := setAuthor(); wq.ErrorCode(err) != wq.ENOTFOUND {
		return err
	}
	pr := Work{ID: wq.NewItemID().String(), WorkKey: key, State: StateOpen, Title: w.Title, Labels: []string{}, HeadSHA: head,
		ReviewState: ReviewNone, LinkedIssues: []int64{w.Number}, AuthorSession: a.SessionID, UpdatedAt: time.Unix(0, 0).UTC()}
	if err := s.Store.UpsertWork(ctx, []Work{pr}, s.now()); err != nil {
		return err
	}
	// A delivery may have written the row between the two calls: the
	// upsert then kept its state, and the author is set on it now.
	return setAuthor()
}

// assignedWork loads an assignment and its work; a missing assignment,
// or one on work outside the caller's projects, is the gate's
// no_assignment refusal, the same for both.
func (s *Service) assignedWork(ctx context.Context, c Caller, id string) (*Assignment, *Work, error) {
	missing := conflict(GateNoAssignment, "assignment %s does not exist", id)
	a, err := s.Store.GetAssignment(ctx, id)
	if wq.ErrorCode(err) == wq.ENOTFOUND {
		return nil, nil, missing
	}
	if err != nil {
		return nil, nil, err
	}
	w, err := s.Store.GetWork(ctx, a.WorkID)
	if err != nil {
		return nil, nil, err
	}
	if !c.covers(w) {
		return nil, nil, missing
	}
	return a, w, nil
}
