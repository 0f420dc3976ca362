// Package mrgate joins the mr item type and the control plane: the gate a
// change submitted for an assignment passes (mr.Assignments), with the
// pull request read live from its forge. It is its own package because
// neither side should know the other.
package mrgate

import (
	"context"
	"fmt"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/mr"
)

// New returns the control plane's gate for the mr type, reading pull
// requests from forges by configured name.
func New(cp *controlplane.Service, forges map[string]wq.Forge) mr.Assignments {
	return &assignmentGate{cp: cp, forges: forges}
}

type assignmentGate struct {
	cp     *controlplane.Service
	forges map[string]wq.Forge
}

var _ mr.Assignments = (*assignmentGate)(nil)

// Authorize asks the control plane whether caller's change may be made.
func (g *assignmentGate) Authorize(ctx context.Context, caller, assignmentID, forge, project, branch string) (mr.AssignmentGrant, error) {
	grant, err := g.cp.AuthorizeChange(ctx, controlplane.Caller{Identity: caller}, controlplane.ChangeRequest{
		AssignmentID: assignmentID, Forge: forge, Repo: project, Branch: branch, PullRequest: g.pullRequest})
	if err != nil {
		return mr.AssignmentGrant{}, err
	}
	out := mr.AssignmentGrant{Merge: grant.Merge}
	switch grant.Work.Kind {
	case controlplane.KindIssue:
		out.Issue = grant.Work.Number
	case controlplane.KindPR:
		// AuthorizeChange allowed push onto this very branch: the
		// pull request's.
		out.Push = grant.Action == controlplane.ActPush
	}
	return out, nil
}

// Pushed declares the service's push on the assignment's lease.
func (g *assignmentGate) Pushed(ctx context.Context, caller, assignmentID, head string) error {
	return g.cp.ChangePushed(ctx, controlplane.Caller{Identity: caller}, assignmentID, head)
}

// Opened records the merge request the service opened for the assignment.
func (g *assignmentGate) Opened(ctx context.Context, caller, assignmentID string, number int64, head string) error {
	return g.cp.ChangeOpened(ctx, controlplane.Caller{Identity: caller}, assignmentID, number, head)
}

func (g *assignmentGate) pullRequest(ctx context.Context, forge, repo string, number int64) (string, string, error) {
	f, ok := g.forges[forge]
	if !ok {
		return "", "", fmt.Errorf("forge %q is not configured", forge)
	}
	pr, err := f.GetMergeRequest(ctx, repo, number)
	if err != nil {
		return "", "", err
	}
	return pr.SourceBranch, pr.HeadSHA, nil
}
