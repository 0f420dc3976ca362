package mr

import (
	"context"
	"errors"
	"fmt"
	"slices"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Assignments is the control plane's gate as the mr type meets it.
type Assignments = wq.AssignmentGate

// AssignmentGrant is what an allowed change is for.
type AssignmentGrant = wq.AssignmentGrant

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
