package controlplane

import (
	"context"
	"fmt"

	wq "github.com/workqueue-dev/workqueue"
)

// AssignmentGate is the control plane's gate as item types meet it
// (wq.AssignmentGate): a change submitted for an assignment passes
// AuthorizeChange, with the pull request read live from the service's
// own forges. Item types receive it and name no control plane.
func (s *Service) AssignmentGate() wq.AssignmentGate { return assignmentGate{s} }

type assignmentGate struct{ s *Service }

// Authorize asks AuthorizeChange whether caller's change may be made.
func (g assignmentGate) Authorize(ctx context.Context, caller, assignmentID, forge, project, branch string) (wq.AssignmentGrant, error) {
	grant, err := g.s.AuthorizeChange(ctx, Caller{Identity: caller}, ChangeRequest{
		AssignmentID: assignmentID, Forge: forge, Repo: project, Branch: branch, PullRequest: g.pullRequest})
	if err != nil {
		return wq.AssignmentGrant{}, err
	}
	out := wq.AssignmentGrant{Merge: grant.Merge}
	switch grant.Work.Kind {
	case KindIssue:
		out.Issue = grant.Work.Number
	case KindPR:
		// AuthorizeChange allowed push onto this very branch: the
		// pull request's.
		out.Push = grant.Action == ActPush
	}
	return out, nil
}

// Pushed declares the service's push on the assignment's lease.
func (g assignmentGate) Pushed(ctx context.Context, caller, assignmentID, head string) error {
	return g.s.ChangePushed(ctx, Caller{Identity: caller}, assignmentID, head)
}

// Opened records the merge request the service opened for the assignment.
func (g assignmentGate) Opened(ctx context.Context, caller, assignmentID string, number int64, head string) error {
	return g.s.ChangeOpened(ctx, Caller{Identity: caller}, assignmentID, number, head)
}

func (g assignmentGate) pullRequest(ctx context.Context, forge, repo string, number int64) (string, string, error) {
	f, ok := g.s.Forges[forge]
	if !ok {
		return "", "", fmt.Errorf("forge %q is not configured", forge)
	}
	pr, err := f.GetMergeRequest(ctx, repo, number)
	if err != nil {
		return "", "", err
	}
	return pr.SourceBranch, pr.HeadSHA, nil
}
