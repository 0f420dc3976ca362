// Package testgitea gives tests the real Gitea that scripts/test starts
// (TEST_GITEA_URL, TEST_GITEA_TOKEN, TEST_GITEA_USER), and fresh
// repositories on it.
//
// Without TEST_GITEA_URL a Gitea test skips, except when CI is set: then it
// fails, because a Gitea half that silently skips is a failed run.
package testgitea

import (
	"crypto/rand"
	"encoding/hex"
	"os"
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
