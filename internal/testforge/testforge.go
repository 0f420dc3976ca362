// Package testforge gives end-to-end tests a forge to act on as a person
// would, whichever forge it is: the real Gitea of the test harness
// (internal/testgitea) and the GitLab-shaped test server
// (forge/gitlab/gitlabtest). A lifecycle test written against Fixture runs
// on both with Each.
//
// A person here is the forge's own API used directly, outside the
// service's adapter, with the test token and a person's name on commits
// (Author). Only a review needs a second person (Reviewer), since Gitea
// refuses an approval by the pull request's author.
package testforge

import (
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

// Author is the name and email commits made "as a person" carry.
var Author = wq.CommitAuthor{Name: "A Person", Email: "person@example.com"}

// Reviewer is the username of the person who reviews (Fixture.Review).
const Reviewer = "a-reviewer"

// Fixture is one forge, as an end-to-end test needs it. Every method fails
// the test on an error it does not return.
type Fixture interface {
	// Kind is wq.ForgeGitea or wq.ForgeGitLab.
	Kind() string
	// URL and Token are what the service's configuration names for this
	// forge (forges[].url and its token).
	URL() string
	Token() string
	// Forge is the service's adapter for this forge.
	Forge() wq.Forge

	// NewProject creates a project whose default branch holds one file,
	// path with content, and returns the project's full path.
	NewProject(t testing.TB, defaultBranch, path, content string) string
	// Push commits edits to branch as a person and returns the new head.
	// A missing branch is created from the project's default branch.
	Push(t testing.TB, project, branch string, edits ...Edit) string

	// Merge merges a merge request as a person pressing the button would:
	// with the project's own merge method, without pinning the head. It
	// returns the forge's refusal, if any.
	Merge(t testing.TB, project string, number int64) error
	// Close and Reopen close or reopen a merge request as a person.
	Close(t testing.TB, project string, number int64)
	Reopen(t testing.TB, project string, number int64)
	// MergeRequest reads a merge request as a person sees it.
	MergeRequest(t testing.TB, project string, number int64) MergeRequest

	// ReadFile reads path at ref (a branch or a commit); found is false if
	// it is not there.
	ReadFile(t testing.TB, project, ref, path string) (content string, found bool)
	// BranchHead returns the commit at the head of branch, "" if the
	// branch is missing.
	BranchHead(t testing.TB, project, branch string) string

	// SetFastForwardOnly makes the project merge fast-forward only (GitLab
	// merge_method ff; Gitea: fast-forward-only the only allowed and the
	// default merge style). Once its target moved, a merge request then
	// needs a rebase, and a merge is refused.
	SetFastForwardOnly(t testing.TB, project string)

	// OpenIssue opens an issue as a person, with labels (made on the
	// project when missing), and returns its number. CloseIssue closes
	// one.
	OpenIssue(t testing.TB, project, title string, labels ...string) int64
	CloseIssue(t testing.TB, project string, number int64)
	// Review gives a merge request a verdict, wq.ReviewApproved or
	// wq.ReviewChangesRequested, as a reviewer who is not its author
	// (Reviewer): a second person on Gitea (an account the admin token
	// makes and acts as), a user of the test server's own on GitLab.
	Review(t testing.TB, project string, number int64, verdict string)
	// SetStatus sets commit sha's check context to state, in Gitea's
	// words (pending, success, failure), as a CI system does.
	SetStatus(t testing.TB, project, sha, context, state string)

	// DeliversWebhooks reports whether hooks the service creates
	// (Forge().EnsureWebhook) are delivered to loopback URLs: both forges
	// here deliver merge request and pipeline events. WaitForDeliveries
	// returns once the deliveries the forge queued so far were made, where
	// the forge can tell (the GitLab test server); on Gitea it returns at
	// once, and a test polls for what the delivery causes.
	DeliversWebhooks() bool
	WaitForDeliveries()
}

// Edit is one file change a person pushes.
type Edit struct {
	Path    string
	Content string
	Delete  bool
}

// Write is an edit that creates or replaces path with content.
func Write(path, content string) Edit { return Edit{Path: path, Content: content} }

// Remove is an edit that deletes path.
func Remove(path string) Edit { return Edit{Path: path, Delete: true} }

// MergeRequest is a merge request as a person sees it.
type MergeRequest struct {
	State                      string // wq.MergeRequestOpen, wq.MergeRequestMerged or wq.MergeRequestClosed
	Title                      string
	Description                string
	Labels                     []string
	HeadSHA                    string
	SourceBranch, TargetBranch string
}

// Each runs test once per forge, as subtests named after the forge: the
// real Gitea (skipped when the harness has none, and failing in CI, as
// internal/testgitea does) and the GitLab-shaped test server.
func Each(t *testing.T, test func(t *testing.T, f Fixture)) {
	t.Run(wq.ForgeGitea, func(t *testing.T) { test(t, Gitea(t)) })
	t.Run(wq.ForgeGitLab, func(t *testing.T) { test(t, GitLab(t)) })
}

// endpoint is what every fixture says of its forge alike.
type endpoint struct {
	kind, url, token string
	forge            wq.Forge
}

func (e endpoint) Kind() string    { return e.kind }
func (e endpoint) URL() string     { return e.url }
func (e endpoint) Token() string   { return e.token }
func (e endpoint) Forge() wq.Forge { return e.forge }
