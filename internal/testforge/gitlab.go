package testforge

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
)

// gitlabFixture acts on the GitLab-shaped test server through client-go,
// as a person's scripts would act on GitLab.
type gitlabFixture struct {
	endpoint
	srv      *gitlabtest.Server
	c        *gl.Client
	projects atomic.Int32
}

// GitLab returns the fixture of a GitLab-shaped test server of its own,
// stopped when the test ends.
func GitLab(t testing.TB) Fixture {
	t.Helper()
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	return GitLabOn(t, srv)
}

// GitLabOn returns the fixture of a GitLab-shaped test server the test
// already runs (and stops).
func GitLabOn(t testing.TB, srv *gitlabtest.Server) Fixture {
	t.Helper()
	c, err := gl.NewClient(srv.Token, gl.WithBaseURL(srv.URL+"/api/v4"), gl.WithoutRetries())
	if err != nil {
		t.Fatal(err)
	}
	f, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &gitlabFixture{endpoint: endpoint{kind: wq.ForgeGitLab, url: srv.URL, token: srv.Token, forge: f}, srv: srv, c: c}
}

func (g *gitlabFixture) DeliversWebhooks() bool { return true }
func (g *gitlabFixture) WaitForDeliveries()     { g.srv.WaitForDeliveries() }

// NewProject creates the project in the server directly: GitLab's project
// creation is not among the calls the server answers.
func (g *gitlabFixture) NewProject(t testing.TB, defaultBranch, path, content string) string {
	t.Helper()
	project := fmt.Sprintf("group/project-%d", g.projects.Add(1))
	g.srv.CreateProjectWith(project, defaultBranch, map[string]string{path: content})
	return project
}

// Push commits with the Commits API. GitLab has no upsert: each path is
// read first to choose between create and update.
func (g *gitlabFixture) Push(t testing.TB, project, branch string, edits ...Edit) string {
	t.Helper()
	opt := &gl.CreateCommitOptions{Branch: &branch, CommitMessage: gl.Ptr("A person's change"),
		AuthorName: &Author.Name, AuthorEmail: &Author.Email}
	ref := branch
	if g.BranchHead(t, project, branch) == "" {
		p, _, err := g.c.Projects.GetProject(project, nil)
		if err != nil {
			t.Fatalf("get project %s: %v", project, err)
		}
		opt.StartBranch, ref = &p.DefaultBranch, p.DefaultBranch
	}
	for _, e := range edits {
		a := &gl.CommitActionOptions{FilePath: gl.Ptr(e.Path)}
		_, exists := g.ReadFile(t, project, ref, e.Path)
		switch {
		case e.Delete:
			a.Action = gl.Ptr(gl.FileDelete)
		case exists:
			a.Action, a.Content = gl.Ptr(gl.FileUpdate), gl.Ptr(e.Content)
		default:
			a.Action, a.Content = gl.Ptr(gl.FileCreate), gl.Ptr(e.Content)
		}
		opt.Actions = append(opt.Actions, a)
	}
	c, _, err := g.c.Commits.CreateCommit(project, opt)
	if err != nil {
		t.Fatalf("push to %s@%s: %v", project, branch, err)
	}
	return c.ID
}

func (g *gitlabFixture) Merge(t testing.TB, project string, number int64) error {
	t.Helper()
	_, _, err := g.c.MergeRequests.AcceptMergeRequest(project, number, &gl.AcceptMergeRequestOptions{})
	return err
}

func (g *gitlabFixture) setState(t testing.TB, project string, number int64, event string) {
	t.Helper()
	if _, _, err := g.c.MergeRequests.UpdateMergeRequest(project, number, &gl.UpdateMergeRequestOptions{StateEvent: &event}); err != nil {
		t.Fatalf("%s %s!%d: %v", event, project, number, err)
	}
}

func (g *gitlabFixture) Close(t testing.TB, project string, number int64) {
	t.Helper()
	g.setState(t, project, number, "close")
}

func (g *gitlabFixture) Reopen(t testing.TB, project string, number int64) {
	t.Helper()
	g.setState(t, project, number, "reopen")
}

func (g *gitlabFixture) MergeRequest(t testing.TB, project string, number int64) MergeRequest {
	t.Helper()
	mr, _, err := g.c.MergeRequests.GetMergeRequest(project, number, nil)
	if err != nil {
		t.Fatalf("get %s!%d: %v", project, number, err)
	}
	out := MergeRequest{State: wq.MergeRequestOpen, Title: mr.Title, Description: mr.Description, Labels: []string(mr.Labels),
		HeadSHA: mr.SHA, SourceBranch: mr.SourceBranch, TargetBranch: mr.TargetBranch}
	switch mr.State {
	case "merged":
		out.State = wq.MergeRequestMerged
	case "closed":
		out.State = wq.MergeRequestClosed
	}
	return out
}

func (g *gitlabFixture) ReadFile(t testing.TB, project, ref, path string) (string, bool) {
	t.Helper()
	b, _, err := g.c.RepositoryFiles.GetRawFile(project, path, &gl.GetRawFileOptions{Ref: &ref})
	if errors.Is(err, gl.ErrNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatalf("read %s@%s:%s: %v", project, ref, path, err)
	}
	return string(b), true
}

func (g *gitlabFixture) BranchHead(t testing.TB, project, branch string) string {
	t.Helper()
	b, _, err := g.c.Branches.GetBranch(project, branch)
	if errors.Is(err, gl.ErrNotFound) {
		return ""
	}
	if err != nil || b.Commit == nil {
		t.Fatalf("branch %s@%s: %v", project, branch, err)
	}
	return b.Commit.ID
}

func (g *gitlabFixture) SetFastForwardOnly(t testing.TB, project string) {
	t.Helper()
	if _, _, err := g.c.Projects.EditProject(project, &gl.EditProjectOptions{MergeMethod: gl.Ptr(gl.FastForwardMerge)}); err != nil {
		t.Fatalf("fast-forward only on %s: %v", project, err)
	}
}

func (g *gitlabFixture) OpenIssue(t testing.TB, project, title string, labels ...string) int64 {
	t.Helper()
	opt := &gl.CreateIssueOptions{Title: &title}
	if len(labels) > 0 {
		opt.Labels = gl.Ptr(gl.LabelOptions(labels))
	}
	is, _, err := g.c.Issues.CreateIssue(project, opt)
	if err != nil {
		t.Fatalf("open an issue on %s: %v", project, err)
	}
	return is.IID
}

func (g *gitlabFixture) CloseIssue(t testing.TB, project string, number int64) {
	t.Helper()
	if _, _, err := g.c.Issues.UpdateIssue(project, number, &gl.UpdateIssueOptions{StateEvent: gl.Ptr("close")}); err != nil {
		t.Fatalf("close %s#%d: %v", project, number, err)
	}
}

// Review acts as Reviewer in the test server directly: GitLab's API has
// no call to submit a review requesting changes, and approving through it
// would approve as the token's user.
func (g *gitlabFixture) Review(t testing.TB, project string, number int64, verdict string) {
	t.Helper()
	switch verdict {
	case wq.ReviewApproved:
		g.srv.Approve(project, number, Reviewer)
	case wq.ReviewChangesRequested:
		g.srv.RequestChanges(project, number, Reviewer)
	default:
		t.Fatalf("unknown verdict %q", verdict)
	}
}

// SetStatus sets commit sha's status name to state (pending, running,
// success, failed, canceled), as an external CI system does; Gitea's
// "failure" is GitLab's "failed".
func (g *gitlabFixture) SetStatus(t testing.TB, project, sha, name, state string) {
	t.Helper()
	if state == "failure" || state == "error" {
		state = "failed"
	}
	if _, _, err := g.c.Commits.SetCommitStatus(project, sha, &gl.SetCommitStatusOptions{State: gl.BuildStateValue(state), Name: &name,
		TargetURL: gl.Ptr("https://ci.example/" + name)}); err != nil {
		t.Fatalf("set %s's status %s on %s: %v", sha, name, project, err)
	}
}
