package policy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/forgetest"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/policy"
)

// guarded is the GitLab adapter on the in-test GitLab, guarded, with a
// count of the requests that reached the server.
func guarded(t *testing.T, p policy.Project) (wq.Forge, func() int64) {
	t.Helper()
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	srv.CreateProjectWith("o/r", "main", map[string]string{"README.md": "hello\n"})
	client, calls := forgetest.CountingClient()
	f, err := gitlab.Plugin.Open(forge.Config{URL: srv.URL, Token: srv.Token, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	return policy.Guard("gl", f, func(string) policy.Project { return p }), calls
}

func TestAGuardedForgeRefusesBeforeAnyRequestReachesTheForge(t *testing.T) {
	f, calls := guarded(t, project())
	ctx := context.Background()
	refused := []struct {
		name string
		call func() error
	}{
		{"a workflow file pushed", func() error {
			_, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "o/r", Base: "main", Branch: "workqueue/x", Message: "ci",
				Changes: []wq.FileChange{{Action: "create", Path: ".gitlab-ci.yml", Content: []byte("job: {script: [env]}\n")}}})
			return err
		}},
		{"a secret in a file", func() error {
			_, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "o/r", Base: "main", Branch: "workqueue/x", Message: "m",
				Changes: []wq.FileChange{{Action: "create", Path: "a.txt", Content: []byte("t = " + token)}}})
			return err
		}},
		{"a push outside the branch prefix", func() error {
			_, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "o/r", Base: "main", Branch: "main", Message: "m",
				Changes: []wq.FileChange{{Action: "create", Path: "a.txt", Content: []byte("a")}}})
			return err
		}},
		{"a secret in a title", func() error {
			_, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: "o/r", SourceBranch: "workqueue/x", TargetBranch: "main", Title: token})
			return err
		}},
		{"a steering label", func() error {
			_, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: "o/r", SourceBranch: "workqueue/x", TargetBranch: "main", Title: "t",
				Labels: []string{"priority/high"}})
			return err
		}},
		{"another repository's issue closed", func() error {
			d := "Closes other/repo#1"
			_, err := f.UpdateMergeRequest(ctx, "o/r", 1, wq.MergeRequestUpdate{Description: &d})
			return err
		}},
		{"a secret in a comment", func() error {
			_, err := f.CommentOnWork(ctx, "o/r", wq.WorkIssue, 1, "key: "+token)
			return err
		}},
		{"a secret in a note", func() error { _, err := f.CreateNote(ctx, "o/r", 1, token); return err }},
		{"a secret in an issue", func() error {
			_, err := f.CreateIssue(ctx, wq.IssueCreate{Project: "o/r", Title: "t", Body: token})
			return err
		}},
		{"a secret in a review", func() error { return f.ReviewPullRequest(ctx, "o/r", 1, wq.ReviewApproved, token, "abc") }},
		{"a branch not the service's deleted", func() error { return f.DeleteBranch(ctx, "o/r", "main") }},
		{"a secret in an edited comment", func() error {
			return f.(wq.WorkCommentEditor).EditWorkComment(ctx, "o/r", wq.WorkIssue, 1, 7, "key: "+token)
		}},
	}
	for _, tc := range refused {
		before := calls()
		err := tc.call()
		if !wq.IsForgeError(err, wq.ForgePermanent) {
			t.Errorf("%s: want a permanent refusal, got %v", tc.name, err)
		}
		if calls() != before {
			t.Errorf("%s: %d requests reached the forge", tc.name, calls()-before)
		}
	}
}

func TestAGuardedForgeHoldsATargetToTheRepositorysDefaultBranch(t *testing.T) {
	f, _ := guarded(t, project())
	ctx := context.Background()
	change := []wq.FileChange{{Action: "create", Path: "a.txt", Content: []byte("a\n")}}
	if _, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "o/r", Base: "main", Branch: "workqueue/a", Message: "a", Changes: change}); err != nil {
		t.Fatalf("a change onto the default branch: %v", err)
	}
	_, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "o/r", Base: "workqueue/a", Branch: "workqueue/b", Message: "b", Changes: change})
	if !wq.IsForgeError(err, wq.ForgePermanent) {
		t.Errorf("a change onto the service's own branch: %v", err)
	}
}

func TestAGuardedForgeKeepsItsCIJobs(t *testing.T) {
	f, _ := guarded(t, project())
	if _, ok := f.(wq.CIJobs); !ok {
		t.Error("the guarded GitLab adapter lost its CI jobs")
	}
	if _, ok := f.(wq.DefaultBrancher); !ok {
		t.Error("the guarded GitLab adapter lost its default branch")
	}
	if _, ok := f.(wq.CommitStatusReader); !ok {
		t.Error("the guarded GitLab adapter lost its commit statuses")
	}
	if policy.Unguarded(f).Kind() != wq.ForgeGitLab {
		t.Error("Unguarded does not return the adapter")
	}
}

func TestAWriteCarriesItsCallersPolicy(t *testing.T) {
	f, calls := guarded(t, project())
	ctx := policy.WithCaller(context.Background(), agent)
	before := calls()
	d := "Fixes #9"
	_, err := f.UpdateMergeRequest(ctx, "o/r", 1, wq.MergeRequestUpdate{Description: &d})
	if !wq.IsForgeError(err, wq.ForgePermanent) || calls() != before {
		t.Errorf("an agent's description closing an issue beyond its assignment: %v, %d requests", err, calls()-before)
	}
}

// A caller's label the repository lacks is not made unless the project
// says create_labels; the service's own labels are (issue 48).
func TestALabelTheRepositoryLacksIsMadeOnlyWhereTheProjectSaysSo(t *testing.T) {
	for _, create := range []bool{false, true} {
		p := project()
		p.CreateLabels = create
		f, _ := guarded(t, p)
		ctx := context.Background()
		if _, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "o/r", Base: "main", Branch: "workqueue/l", Message: "l",
			Changes: []wq.FileChange{{Action: "create", Path: "l.txt", Content: []byte("l\n")}}}); err != nil {
			t.Fatal(err)
		}
		_, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: "o/r", SourceBranch: "workqueue/l", TargetBranch: "main",
			Title: "l", Labels: []string{"managed-by-workqueue", "brand-new"}})
		if create != (err == nil) {
			t.Errorf("create_labels %v: %v", create, err)
		}
	}
}

// The forge's checks (issue 50) pass the guard: reads reach the adapter,
// the hook's secret reset is a write the policy checks.
func TestAGuardedForgeForwardsTheForgesChecks(t *testing.T) {
	f, _ := guarded(t, project())
	ctx := context.Background()
	v, err := f.(wq.VersionReader).ServerVersion(ctx)
	if err != nil || v != gitlabtest.DefaultVersion {
		t.Errorf("ServerVersion through the guard: %q, %v; want %s", v, err, gitlabtest.DefaultVersion)
	}
	settings, err := f.(wq.SettingsReader).ProjectSettings(ctx, "o/r")
	if err != nil || len(settings) != 3 {
		t.Errorf("ProjectSettings through the guard: %+v, %v; want three", settings, err)
	}
	h, err := f.(wq.WebhookInspector).InspectWebhook(ctx, "o/r", "http://wq.example/webhooks/gl")
	if err != nil || len(h.Problems) != 1 || h.Problems[0] != wq.WebhookMissing {
		t.Errorf("InspectWebhook through the guard: %+v, %v; want missing", h, err)
	}
	if _, err := f.(wq.WebhookSecretResetter).ResetWebhookSecret(ctx, "o/r", "http://wq.example/webhooks/gl", "s"); err != nil {
		t.Errorf("ResetWebhookSecret through the guard: %v", err)
	}
}

// A merge train's car is built on the car ahead: a base that is the
// service's own branch, with the target held to the targets; a base that
// is not the service's, or a target that is not one, is refused.
func TestAGuardedForgeLetsACarBuildOnTheServicesOwnBranchOnly(t *testing.T) {
	f, calls := guarded(t, project())
	ctx := context.Background()
	change := []wq.FileChange{{Action: "create", Path: "a.txt", Content: []byte("a\n")}}
	if _, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "o/r", Base: "main", Branch: "workqueue/a", Message: "a", Changes: change}); err != nil {
		t.Fatal(err)
	}
	onA := []wq.FileChange{{Action: "create", Path: "b.txt", Content: []byte("b\n")}}
	if _, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "o/r", Base: "workqueue/a", Target: "main", Branch: "workqueue/b", Message: "b", Changes: onA}); err != nil {
		t.Errorf("a car on the car ahead: %v", err)
	}
	for _, req := range []wq.CommitRequest{
		{Project: "o/r", Base: "feature/person", Target: "main", Branch: "workqueue/c"},     // a person's branch
		{Project: "o/r", Base: "workqueue/a", Target: "workqueue/a", Branch: "workqueue/c"}, // not a target
		{Project: "o/r", Base: "workqueue/c", Target: "main", Branch: "workqueue/c"},        // onto itself
	} {
		req.Message, req.Changes = "c", change
		before := calls()
		if _, err := f.CommitFiles(ctx, req); !wq.IsForgeError(err, wq.ForgePermanent) || calls() != before {
			t.Errorf("%+v: %v, %d requests; want refused before the forge", req, err, calls()-before)
		}
	}
}

// A rate limit on the read of the default branch is not kept as its
// answer: the next write reads it again, once the forge takes requests.
func TestARateLimitedDefaultBranchReadIsNotKept(t *testing.T) {
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	srv.CreateProjectWith("o/r", "main", map[string]string{"README.md": "hello\n"})
	var limited atomic.Bool
	limited.Store(true)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if limited.Load() {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		u, _ := url.Parse(srv.URL)
		httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	f, err := gitlab.Plugin.Open(forge.Config{URL: front.URL, Token: srv.Token})
	if err != nil {
		t.Fatal(err)
	}
	g := policy.Guard("gl", f, func(string) policy.Project { return project() })
	ctx := context.Background()
	if _, err := g.(wq.DefaultBrancher).DefaultBranch(ctx, "o/r"); !wq.IsForgeError(err, wq.ForgeRateLimited) {
		t.Fatalf("during the rate limit: %v", err)
	}
	limited.Store(false)
	if branch, err := g.(wq.DefaultBrancher).DefaultBranch(ctx, "o/r"); err != nil || branch != "main" {
		t.Errorf("after the rate limit: %q, %v; want main, read again", branch, err)
	}
}
