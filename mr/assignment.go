package mr

import (
	"context"
	"errors"
	"fmt"
	"slices"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Assignments is the control plane as the mr type meets it (DESIGN
// section 9, "Assignments on the write path"): a change submitted for an
// assignment passes the gate at submission, and again before each forge
// write, so that a lease that expired or work that was closed meanwhile
// stops the item before anything is pushed.
type Assignments interface {
	// Authorize says what caller's change to branch of project is for,
	// or refuses it: an *wq.Error whose Reason is the gate's (head_moved,
	// lease_expired, work_terminal, not_owner, no_assignment…) when the
	// assignment does not allow it; any other error is transient.
	Authorize(ctx context.Context, caller, assignmentID, forge, project, branch string) (AssignmentGrant, error)
	// Pushed says that the service pushed head for the assignment.
	Pushed(ctx context.Context, caller, assignmentID, head string) error
	// Opened says that the service opened (or found) merge request
	// number, at head, for the assignment: its session wrote it.
	Opened(ctx context.Context, caller, assignmentID string, number int64, head string) error
}

// AssignmentGrant is what an allowed change is for.
type AssignmentGrant struct {
	// Issue is the issue an issue assignment is for: the merge request
	// closes it. 0 for a pull request assignment.
	Issue int64
	// Merge says whether the assignment allows merging: without it the
	// service never merges the change on its own.
	Merge bool
	// Push says the assignment allows pushing onto the merge request of
	// the change's very branch: its holder may change that branch's item
	// even when another identity submitted it.
	Push bool
}

// forAssignment checks sub against its assignment and completes it: the
// merge request closes the assigned issue, and is merged by the service
// only when the assignment allows merging.
func forAssignment(ctx context.Context, as Assignments, sub Submission, caller string) (Submission, AssignmentGrant, error) {
	if as == nil {
		return sub, AssignmentGrant{}, wq.Errorf(wq.EUNAVAILABLE, "assignment_id: this instance runs no control plane to check it against")
	}
	g, err := as.Authorize(ctx, caller, sub.AssignmentID, sub.Forge, sub.Project, sub.SourceBranch)
	if err != nil {
		return sub, g, err
	}
	if sub.AutoMerge == nil {
		sub.AutoMerge = new(bool)
	} else if *sub.AutoMerge && !g.Merge {
		return sub, g, wq.Errorf(wq.EINVALID, "auto_merge: assignment %s does not allow merging; its pull request is reviewed and merged through the allocator", sub.AssignmentID)
	}
	if g.Issue > 0 && !slices.Contains(forge.ClosingIssues(sub.Description), g.Issue) {
		if sub.Description != "" {
			sub.Description += "\n\n"
		}
		sub.Description += fmt.Sprintf("Closes #%d", g.Issue)
	}
	return sub, g, nil
}

// gateStopped asks the control plane again, before a forge write of an
// item submitted for an assignment, whether the change may still be made;
// a refusal cancels the item with the gate's reason, and nothing is
// written. It reports whether the item was stopped.
func (x *executors) gateStopped(ctx context.Context, ex *wq.Execution, d *Detail) (bool, error) {
	if d.AssignmentID == "" {
		return false, nil
	}
	if x.Assignments == nil {
		return false, fmt.Errorf("%w: the item was submitted for assignment %s and this instance runs no control plane", wq.ErrPermanent, d.AssignmentID)
	}
	_, err := x.Assignments.Authorize(ctx, ex.Item.CallerIdentity, d.AssignmentID, d.Forge, d.Project, d.SourceBranch)
	var refused *wq.Error
	if err == nil || !asRefusal(err, &refused) {
		return false, err
	}
	x.Log.Info("gate refused a change before its forge write", "item", ex.Item.ID, "assignment", d.AssignmentID, "reason", refused.Reason)
	return true, ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCancelled, Reason: refused.Reason})
}

// asRefusal reports whether err is the control plane's refusal (an
// application error with a reason) rather than a failure to ask.
func asRefusal(err error, into **wq.Error) bool {
	var e *wq.Error
	if !errors.As(err, &e) || e.Reason == "" {
		return false
	}
	*into = e
	return true
}
