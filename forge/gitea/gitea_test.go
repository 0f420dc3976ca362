package gitea_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/forgetest"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/internal/testforge"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
)

func TestConformanceOnRealGitea(t *testing.T) {
	srv := testgitea.Get(t)
	client, calls := forgetest.CountingClient()
	f, err := gitea.New(srv.URL, srv.Token, gitea.Options{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	people := testforge.Gitea(t)
	forgetest.Run(t, func(t *testing.T) forgetest.Project {
		return forgetest.Project{Forge: f, Path: srv.NewRepo(t), Calls: calls, People: people, WorkPageSize: gitea.WorkPageSize}
	})
}

func TestRefusedConnectionIsTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	f, err := gitea.New("http://"+addr, "token", gitea.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.BranchHead(context.Background(), "o/r", "main")
	if !wq.IsForgeError(err, wq.ForgeTransient) {
		t.Errorf("refused connection gave %v, want a transient forge error", err)
	}
}

func TestNewRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct{ url, token string }{{"ftp://x", "t"}, {"http://", "t"}, {"http://x", ""}, {"::", "t"}} {
		if _, err := gitea.New(tc.url, tc.token, gitea.Options{}); wq.ErrorCode(err) != wq.EINVALID {
			t.Errorf("New(%q, %q) = %v, want invalid", tc.url, tc.token, err)
		}
	}
}

func TestProjectMustBeOwnerSlashName(t *testing.T) {
	f, _ := gitea.New("http://127.0.0.1:1", "t", gitea.Options{})
	for _, p := range []string{"noslash", "a/b/c", "/b", "a/"} {
		if _, err := f.BranchHead(context.Background(), p, "main"); !wq.IsForgeError(err, wq.ForgePermanent) {
			t.Errorf("project %q: %v, want a permanent error", p, err)
		}
	}
}

// hookRepo is a new repository of the real Gitea with an adapter and an
// SDK client for it.
func hookRepo(t *testing.T) (f *gitea.Forge, c *sdk.Client, repo, owner, name string) {
	t.Helper()
	srv := testgitea.Get(t)
	f, _ = gitea.New(srv.URL, srv.Token, gitea.Options{})
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	repo = srv.NewRepo(t)
	owner, name, _ = strings.Cut(repo, "/")
	return f, c, repo, owner, name
}

func TestHookMissingEventsIsUpdatedOnRealGitea(t *testing.T) {
	f, c, repo, owner, name := hookRepo(t)
	const url = "http://127.0.0.1:9/webhooks/gitea"
	// A hook made by hand before CI events were subscribed, and disabled.
	if _, _, err := c.CreateRepoHook(owner, name, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: false,
		Events: []string{"pull_request"}, Config: map[string]string{"url": url, "content_type": "json"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := f.EnsureWebhook(ctx, repo, url, "s"); err != nil || got != wq.WebhookUpdated {
		t.Fatalf("%q %v, want updated", got, err)
	}
	hooks, _, err := c.ListRepoHooks(owner, name, sdk.ListHooksOptions{})
	if err != nil || len(hooks) != 1 {
		t.Fatalf("%d hooks, %v", len(hooks), err)
	}
	for _, e := range gitea.HookEvents {
		if !slices.Contains(hooks[0].Events, e) {
			t.Errorf("event %s not subscribed: %v", e, hooks[0].Events)
		}
	}
	if !hooks[0].Active {
		t.Error("hook still inactive")
	}
	if got, err := f.EnsureWebhook(ctx, repo, url, "s"); err != nil || got != wq.WebhookFound {
		t.Errorf("%q %v, want found", got, err)
	}
}

func TestReviewVerdictIsEachReviewersLatest(t *testing.T) {
	t.Parallel()
	alice, bob := &sdk.User{ID: 1, UserName: "alice"}, &sdk.User{ID: 2, UserName: "bob"}
	r := func(id int64, who *sdk.User, state sdk.ReviewStateType) *sdk.PullReview {
		return &sdk.PullReview{ID: id, Reviewer: who, State: state}
	}
	dismissed := r(3, bob, sdk.ReviewStateRequestChanges)
	dismissed.Dismissed = true
	for _, tc := range []struct {
		name    string
		reviews []*sdk.PullReview
		want    string
	}{
		{"no reviews", nil, wq.ReviewNone},
		{"comments only", []*sdk.PullReview{r(1, alice, sdk.ReviewStateComment)}, wq.ReviewNone},
		{"an approval", []*sdk.PullReview{r(1, alice, sdk.ReviewStateApproved)}, wq.ReviewApproved},
		{"changes requested by one win over another's approval", []*sdk.PullReview{r(1, alice, sdk.ReviewStateApproved), r(2, bob, sdk.ReviewStateRequestChanges)}, wq.ReviewChangesRequested},
		{"a later approval by the same reviewer answers their request", []*sdk.PullReview{r(2, alice, sdk.ReviewStateApproved), r(1, alice, sdk.ReviewStateRequestChanges)}, wq.ReviewApproved},
		{"a comment leaves the verdict before it standing", []*sdk.PullReview{r(1, alice, sdk.ReviewStateRequestChanges), r(2, alice, sdk.ReviewStateComment)}, wq.ReviewChangesRequested},
		{"a new request for review withdraws the verdict", []*sdk.PullReview{r(1, alice, sdk.ReviewStateApproved), r(2, alice, sdk.ReviewStateRequestReview)}, wq.ReviewNone},
		{"a dismissed review does not count", []*sdk.PullReview{r(1, alice, sdk.ReviewStateApproved), dismissed}, wq.ReviewApproved},
		{"a pending review does not count", []*sdk.PullReview{r(1, alice, sdk.ReviewStatePending)}, wq.ReviewNone},
		{"a team's request names no reviewer", []*sdk.PullReview{{ID: 1, State: sdk.ReviewStateRequestChanges}}, wq.ReviewNone},
	} {
		if got := gitea.ReviewVerdict(tc.reviews); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestAHookMadeBeforeIssueEventsIsUpdatedOnRealGitea(t *testing.T) {
	// Hooks made before the inventory read issues send every other event
	// workqueue reads: hooks ensure must still update them, once.
	f, c, repo, owner, name := hookRepo(t)
	const url = "http://127.0.0.1:9/webhooks/gitea"
	before := slices.DeleteFunc(slices.Clone(gitea.HookEvents), func(e string) bool { return e == "issues" })
	if _, _, err := c.CreateRepoHook(owner, name, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: true, Events: before,
		Config: map[string]string{"url": url, "content_type": "json"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := f.EnsureWebhook(ctx, repo, url, "s"); err != nil || got != wq.WebhookUpdated {
		t.Fatalf("%q %v, want updated", got, err)
	}
	hooks, _, err := c.ListRepoHooks(owner, name, sdk.ListHooksOptions{})
	if err != nil || len(hooks) != 1 || !slices.Contains(hooks[0].Events, "issues") {
		t.Fatalf("hooks %+v, %v; want one, sending issues", hooks, err)
	}
	if got, err := f.EnsureWebhook(ctx, repo, url, "s"); err != nil || got != wq.WebhookFound {
		t.Errorf("%q %v, want found", got, err)
	}
}
