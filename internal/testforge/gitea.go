package testforge

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
)

// giteaFixture acts on the real Gitea through its SDK.
type giteaFixture struct {
	endpoint
	srv testgitea.Server
	c   *sdk.Client
}

// Gitea returns the fixture of the test Gitea; it skips the test (fails it
// in CI) when there is none.
func Gitea(t testing.TB) Fixture {
	t.Helper()
	srv := testgitea.Get(t)
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatalf("gitea client: %v", err)
	}
	f, err := gitea.New(srv.URL, srv.Token, gitea.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &giteaFixture{endpoint: endpoint{kind: wq.ForgeGitea, url: srv.URL, token: srv.Token, forge: f}, srv: srv, c: c}
}

func (g *giteaFixture) DeliversWebhooks() bool { return true } // scripts/gitea allows loopback hosts
func (g *giteaFixture) WaitForDeliveries()     {}

func split(t testing.TB, project string) (owner, repo string) {
	t.Helper()
	owner, repo, ok := strings.Cut(project, "/")
	if !ok {
		t.Fatalf("project %q: want owner/name", project)
	}
	return owner, repo
}

// NewProject creates an empty repository and makes its first commit on
// defaultBranch, which Gitea then takes as the default branch.
func (g *giteaFixture) NewProject(t testing.TB, defaultBranch, path, content string) string {
	t.Helper()
	b := make([]byte, 5)
	rand.Read(b)
	repo, _, err := g.c.CreateRepo(sdk.CreateRepoOption{Name: "t-" + hex.EncodeToString(b), DefaultBranch: defaultBranch})
	if err != nil {
		t.Fatalf("create repo: %v", err)
	}
	owner, name := split(t, repo.FullName)
	if _, _, err := g.c.ChangeFiles(owner, name, sdk.ChangeFilesOptions{Message: "Initial commit", Branch: defaultBranch,
		Author: identity(), Committer: identity(),
		Files: []*sdk.ChangeFileOperation{{Operation: "create", Path: path, Content: base64.StdEncoding.EncodeToString([]byte(content))}},
	}); err != nil {
		t.Fatalf("first commit of %s: %v", repo.FullName, err)
	}
	return repo.FullName
}

func identity() sdk.Identity { return sdk.Identity{Name: Author.Name, Email: Author.Email} }

// Push commits with ChangeFiles: "upload" creates or replaces a file, so
// the person need not know which.
func (g *giteaFixture) Push(t testing.TB, project, branch string, edits ...Edit) string {
	t.Helper()
	owner, name := split(t, project)
	opt := sdk.ChangeFilesOptions{Message: "A person's change", Branch: branch, Author: identity(), Committer: identity()}
	if g.BranchHead(t, project, branch) == "" {
		repo, _, err := g.c.GetRepo(owner, name)
		if err != nil {
			t.Fatalf("get repo %s: %v", project, err)
		}
		opt.Branch, opt.NewBranch = repo.DefaultBranch, branch
	}
	for _, e := range edits {
		op := &sdk.ChangeFileOperation{Operation: "upload", Path: e.Path, Content: base64.StdEncoding.EncodeToString([]byte(e.Content))}
		if e.Delete {
			op.Operation, op.Content = "delete", ""
		}
		opt.Files = append(opt.Files, op)
	}
	fr, _, err := g.c.ChangeFiles(owner, name, opt)
	if err != nil || fr == nil || fr.Commit == nil {
		t.Fatalf("push to %s@%s: %v", project, branch, err)
	}
	return fr.Commit.SHA
}

func (g *giteaFixture) Merge(t testing.TB, project string, number int64) error {
	t.Helper()
	owner, name := split(t, project)
	repo, _, err := g.c.GetRepo(owner, name)
	if err != nil {
		t.Fatalf("get repo %s: %v", project, err)
	}
	ok, resp, err := g.c.MergePullRequest(owner, name, number, sdk.MergePullRequestOption{Style: repo.DefaultMergeStyle})
	switch {
	case err != nil:
		return err
	case !ok:
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		return fmt.Errorf("gitea refused to merge %s!%d: HTTP %d", project, number, status)
	}
	return nil
}

func (g *giteaFixture) setState(t testing.TB, project string, number int64, state sdk.StateType) {
	t.Helper()
	owner, name := split(t, project)
	if _, _, err := g.c.EditPullRequest(owner, name, number, sdk.EditPullRequestOption{State: &state}); err != nil {
		t.Fatalf("set %s!%d %s: %v", project, number, state, err)
	}
}

func (g *giteaFixture) Close(t testing.TB, project string, number int64) {
	t.Helper()
	g.setState(t, project, number, sdk.StateClosed)
}

func (g *giteaFixture) Reopen(t testing.TB, project string, number int64) {
	t.Helper()
	g.setState(t, project, number, sdk.StateOpen)
}

func (g *giteaFixture) MergeRequest(t testing.TB, project string, number int64) MergeRequest {
	t.Helper()
	owner, name := split(t, project)
	pr, _, err := g.c.GetPullRequest(owner, name, number)
	if err != nil {
		t.Fatalf("get %s!%d: %v", project, number, err)
	}
	out := MergeRequest{State: wq.MergeRequestOpen, Title: pr.Title, Description: pr.Body}
	switch {
	case pr.HasMerged:
		out.State = wq.MergeRequestMerged
	case pr.State == sdk.StateClosed:
		out.State = wq.MergeRequestClosed
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, l.Name)
	}
	if pr.Head != nil {
		out.HeadSHA, out.SourceBranch = pr.Head.Sha, pr.Head.Ref
	}
	if pr.Base != nil {
		out.TargetBranch = pr.Base.Ref
	}
	return out
}

func (g *giteaFixture) ReadFile(t testing.TB, project, ref, path string) (string, bool) {
	t.Helper()
	owner, name := split(t, project)
	b, resp, err := g.c.GetFile(owner, name, ref, path)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return "", false
	}
	if err != nil {
		t.Fatalf("read %s@%s:%s: %v", project, ref, path, err)
	}
	return string(b), true
}

func (g *giteaFixture) BranchHead(t testing.TB, project, branch string) string {
	t.Helper()
	owner, name := split(t, project)
	b, resp, err := g.c.GetRepoBranch(owner, name, branch)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return ""
	}
	if err != nil || b == nil || b.Commit == nil {
		t.Fatalf("branch %s@%s: %v", project, branch, err)
	}
	return b.Commit.ID
}

func (g *giteaFixture) SetFastForwardOnly(t testing.TB, project string) {
	t.Helper()
	owner, name := split(t, project)
	yes, no, ff := true, false, sdk.MergeStyleFastForwardOnly
	if _, _, err := g.c.EditRepo(owner, name, sdk.EditRepoOption{DefaultMergeStyle: &ff, AllowFastForwardOnlyMerge: &yes,
		AllowMerge: &no, AllowRebase: &no, AllowRebaseMerge: &no, AllowSquash: &no}); err != nil {
		t.Fatalf("fast-forward only on %s: %v", project, err)
	}
}

func (g *giteaFixture) OpenIssue(t testing.TB, project, title string, labels ...string) int64 {
	t.Helper()
	owner, name := split(t, project)
	is, _, err := g.c.CreateIssue(owner, name, sdk.CreateIssueOption{Title: title, Labels: g.labelIDs(t, owner, name, labels)})
	if err != nil {
		t.Fatalf("open an issue on %s: %v", project, err)
	}
	return is.Index
}

// labelIDs finds or makes the project's labels of these names: Gitea
// takes label ids.
func (g *giteaFixture) labelIDs(t testing.TB, owner, name string, labels []string) []int64 {
	t.Helper()
	if len(labels) == 0 {
		return nil
	}
	existing, _, err := g.c.ListRepoLabels(owner, name, sdk.ListLabelsOptions{ListOptions: sdk.ListOptions{PageSize: 50}})
	if err != nil {
		t.Fatalf("labels of %s/%s: %v", owner, name, err)
	}
	var ids []int64
	for _, l := range labels {
		i := slices.IndexFunc(existing, func(e *sdk.Label) bool { return e.Name == l })
		if i >= 0 {
			ids = append(ids, existing[i].ID)
			continue
		}
		made, _, err := g.c.CreateLabel(owner, name, sdk.CreateLabelOption{Name: l, Color: "#00aabb"})
		if err != nil {
			t.Fatalf("make label %s on %s/%s: %v", l, owner, name, err)
		}
		existing = append(existing, made)
		ids = append(ids, made.ID)
	}
	return ids
}

func (g *giteaFixture) CloseIssue(t testing.TB, project string, number int64) {
	t.Helper()
	owner, name := split(t, project)
	closed := sdk.StateClosed
	if _, _, err := g.c.EditIssue(owner, name, number, sdk.EditIssueOption{State: &closed}); err != nil {
		t.Fatalf("close %s#%d: %v", project, number, err)
	}
}

// Review acts as Reviewer through the admin token's Sudo: the account is
// made on first use (another test may have made it) and given write
// access to the project, so that its verdict is an official one.
func (g *giteaFixture) Review(t testing.TB, project string, number int64, verdict string) {
	t.Helper()
	owner, name := split(t, project)
	no := false
	_, resp, err := g.c.AdminCreateUser(sdk.CreateUserOption{Username: Reviewer, Email: Reviewer + "@example.com",
		Password: "reviewer-" + hex.EncodeToString([]byte(Reviewer)), MustChangePassword: &no})
	if err != nil && (resp == nil || resp.StatusCode != http.StatusUnprocessableEntity) {
		t.Fatalf("make the reviewer's account: %v", err)
	}
	write := sdk.AccessModeWrite
	if _, err := g.c.AddCollaborator(owner, name, Reviewer, sdk.AddCollaboratorOption{Permission: &write}); err != nil {
		t.Fatalf("let the reviewer into %s: %v", project, err)
	}
	as, err := sdk.NewClient(g.srv.URL, sdk.SetToken(g.srv.Token), sdk.SetSudo(Reviewer))
	if err != nil {
		t.Fatal(err)
	}
	opt := sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "Looks good."}
	switch verdict {
	case wq.ReviewApproved:
	case wq.ReviewChangesRequested:
		opt = sdk.CreatePullReviewOptions{State: sdk.ReviewStateRequestChanges, Body: "Please change this."}
	default:
		t.Fatalf("unknown verdict %q", verdict)
	}
	if _, _, err := as.CreatePullReview(owner, name, number, opt); err != nil {
		t.Fatalf("review %s!%d as %s: %v", project, number, Reviewer, err)
	}
}

// SetStatus sets commit sha's status context to state (pending, success,
// failure, error, warning), as a CI system does.
func (g *giteaFixture) SetStatus(t testing.TB, project, sha, context, state string) {
	t.Helper()
	owner, name := split(t, project)
	if _, _, err := g.c.CreateStatus(owner, name, sha, sdk.CreateStatusOption{State: sdk.StatusState(state), Context: context,
		TargetURL: "https://ci.example/" + context}); err != nil {
		t.Fatalf("set %s's status %s on %s: %v", sha, context, project, err)
	}
}
