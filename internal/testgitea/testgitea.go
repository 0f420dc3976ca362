// Package testgitea gives tests the real Gitea that scripts/test starts
// (TEST_GITEA_URL, TEST_GITEA_TOKEN, TEST_GITEA_USER): fresh repositories
// on it (NewRepo), a second account's token for reviews (Reviewer), and
// commits pushed from a clone for what the API cannot write (Git).
//
// Without TEST_GITEA_URL a Gitea test skips, except when CI is set: then it
// fails, because a Gitea half that silently skips is a failed run.
package testgitea

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	sdk "code.gitea.io/sdk/gitea"
)

// Server is the test Gitea.
type Server struct {
	URL   string
	Token string
	User  string
}

// Get returns the test Gitea, or skips (fails in CI) when there is none.
func Get(t testing.TB) Server {
	t.Helper()
	s := Server{URL: os.Getenv("TEST_GITEA_URL"), Token: os.Getenv("TEST_GITEA_TOKEN"), User: os.Getenv("TEST_GITEA_USER")}
	if s.URL == "" || s.Token == "" || s.User == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("TEST_GITEA_URL/TOKEN/USER are not set in CI: the Gitea half must run (use scripts/test)")
		}
		t.Skip("no test Gitea; run scripts/test for the Gitea half")
	}
	return s
}

// NewRepo creates a repository with a main branch holding README.md and
// returns its owner/name.
func (s Server) NewRepo(t testing.TB) string {
	t.Helper()
	c, err := sdk.NewClient(s.URL, sdk.SetToken(s.Token))
	if err != nil {
		t.Fatalf("gitea client: %v", err)
	}
	b := make([]byte, 5)
	rand.Read(b)
	name := "t-" + hex.EncodeToString(b)
	repo, _, err := c.CreateRepo(sdk.CreateRepoOption{Name: name, AutoInit: true, DefaultBranch: "main", Readme: "Default"})
	if err != nil {
		t.Fatalf("create repo %s: %v", name, err)
	}
	return repo.FullName
}

// ReviewerName is the second account of the test Gitea (Server.Reviewer).
const ReviewerName = "wq-reviewer"

// reviewerToken is ReviewerName's token, made once per test process.
var reviewerToken struct {
	sync.Mutex
	token string
}

// Reviewer gives ReviewerName, a second account that reviews pull
// requests the test token opened (Gitea refuses their author's verdict),
// write access to repo, and returns a token of the account's own that
// may read it and act on repositories (read:user, write:repository).
// The account is made on first use (an earlier run may have made it);
// the token once per test process, with the account's password, which
// Gitea asks for to make one.
func (s Server) Reviewer(t testing.TB, repo string) (token string) {
	t.Helper()
	admin, err := sdk.NewClient(s.URL, sdk.SetToken(s.Token))
	if err != nil {
		t.Fatalf("gitea client: %v", err)
	}
	const password = "wq-reviewer-password-1"
	reviewerToken.Lock()
	defer reviewerToken.Unlock()
	if reviewerToken.token == "" {
		no := false
		_, resp, err := admin.AdminCreateUser(sdk.CreateUserOption{Username: ReviewerName, Email: ReviewerName + "@example.com",
			Password: password, MustChangePassword: &no})
		if err != nil && (resp == nil || resp.StatusCode != http.StatusUnprocessableEntity) {
			t.Fatalf("make the account %s: %v", ReviewerName, err)
		}
		as, err := sdk.NewClient(s.URL, sdk.SetBasicAuth(ReviewerName, password))
		if err != nil {
			t.Fatalf("gitea client as %s: %v", ReviewerName, err)
		}
		b := make([]byte, 5)
		rand.Read(b)
		tok, _, err := as.CreateAccessToken(sdk.CreateAccessTokenOption{Name: "t-" + hex.EncodeToString(b),
			Scopes: []sdk.AccessTokenScope{"read:user", "write:repository"}})
		if err != nil {
			t.Fatalf("make a token for %s: %v", ReviewerName, err)
		}
		reviewerToken.token = tok.Token
	}
	owner, name, _ := strings.Cut(repo, "/")
	write := sdk.AccessModeWrite
	if _, err := admin.AddCollaborator(owner, name, ReviewerName, sdk.AddCollaboratorOption{Permission: &write}); err != nil {
		t.Fatalf("let %s into %s: %v", ReviewerName, repo, err)
	}
	return reviewerToken.token
}

// Git changes branch of repo with the git command line, as a person with a
// clone would: fn runs in a fresh clone of the branch (git(args...) runs a
// git command there and returns its output), then what fn staged is
// committed and pushed. It is for what the API cannot write, such as a
// symbolic link or a submodule's gitlink.
func (s Server) Git(t testing.TB, repo, branch string, fn func(dir string, git func(args ...string) string)) {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User, u.Path = url.UserPassword(s.User, s.Token), "/"+repo+".git"
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
			"GIT_AUTHOR_NAME=A Person", "GIT_AUTHOR_EMAIL=person@example.com",
			"GIT_COMMITTER_NAME=A Person", "GIT_COMMITTER_EMAIL=person@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("clone", "--quiet", "--branch", branch, "--single-branch", u.String(), ".")
	fn(dir, git)
	git("commit", "--quiet", "-m", "by hand")
	git("push", "--quiet", "origin", "HEAD:refs/heads/"+branch)
}
