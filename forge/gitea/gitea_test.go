package gitea_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	gitea.SetTreePageSize(f, 50)
	people := testforge.Gitea(t)
	forgetest.Run(t, func(t *testing.T) forgetest.Project {
		repo := srv.NewRepo(t)
		reviewing, err := gitea.New(srv.URL, srv.Token, gitea.Options{ReviewToken: srv.Reviewer(t, repo)})
		if err != nil {
			t.Fatal(err)
		}
		return forgetest.Project{Forge: f, Path: repo, Calls: calls, People: people, WorkPageSize: gitea.WorkPageSize,
			Reviewing: reviewing, Comments: comments(srv, repo)}
	})
}

// comments reads the comments on an issue or a pull request of repo (the
// kind does not matter to Gitea).
func comments(srv testgitea.Server, repo string) func(t testing.TB, kind string, number int64) []forgetest.Comment {
	return func(t testing.TB, _ string, number int64) []forgetest.Comment {
		t.Helper()
		c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
		if err != nil {
			t.Fatal(err)
		}
		owner, name, _ := strings.Cut(repo, "/")
		list, _, err := c.ListIssueComments(owner, name, number, sdk.ListIssueCommentOptions{})
		if err != nil {
			t.Fatalf("comments on %s#%d: %v", repo, number, err)
		}
		var out []forgetest.Comment
		for _, cm := range list {
			out = append(out, forgetest.Comment{ID: cm.ID, Body: cm.Body})
		}
		return out
	}
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
		return &sdk.PullReview{ID: id, Reviewer: who, State: state, CommitID: "h2"}
	}
	at := func(commit string, rv *sdk.PullReview) *sdk.PullReview { rv.CommitID = commit; return rv }
	stale := r(1, alice, sdk.ReviewStateApproved)
	stale.Stale = true
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
		{"an approval of an older commit does not count", []*sdk.PullReview{at("h1", r(1, alice, sdk.ReviewStateApproved))}, wq.ReviewNone},
		{"changes requested on an older commit do not count", []*sdk.PullReview{r(1, alice, sdk.ReviewStateApproved), at("h1", r(2, bob, sdk.ReviewStateRequestChanges))}, wq.ReviewApproved},
		{"a review Gitea marks stale does not count", []*sdk.PullReview{stale}, wq.ReviewNone},
		{"a request for review withdraws a verdict at any commit", []*sdk.PullReview{r(1, alice, sdk.ReviewStateApproved), at("", r(2, alice, sdk.ReviewStateRequestReview))}, wq.ReviewNone},
	} {
		if got := gitea.ReviewVerdict(tc.reviews, "h2"); got != tc.want {
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

// issueLabels returns the ids of the labels issue number carries, read
// as a person would.
func issueLabels(t *testing.T, c *sdk.Client, owner, name string, number int64) []int64 {
	t.Helper()
	is, _, err := c.GetIssue(owner, name, number)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, l := range is.Labels {
		ids = append(ids, l.ID)
	}
	slices.Sort(ids)
	return ids
}

// labelsNamed returns the repository's labels called label.
func labelsNamed(t *testing.T, c *sdk.Client, owner, name, label string) []*sdk.Label {
	t.Helper()
	all, _, err := c.ListRepoLabels(owner, name, sdk.ListLabelsOptions{ListOptions: sdk.ListOptions{PageSize: 50}})
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(all, func(l *sdk.Label) bool { return l.Name != label })
}

// interceptLabels returns an adapter for the test Gitea whose requests to
// list or make labels go through intercept (send passes one on to Gitea),
// all others straight to Gitea.
func interceptLabels(t *testing.T, intercept func(r *http.Request, send func() (*http.Response, error)) (*http.Response, error)) *gitea.Forge {
	t.Helper()
	srv := testgitea.Get(t)
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	rt := roundTrip(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/labels") {
			return intercept(r, func() (*http.Response, error) { return base.RoundTrip(r) })
		}
		return base.RoundTrip(r)
	})
	f, err := gitea.New(srv.URL, srv.Token, gitea.Options{HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type roundTrip func(*http.Request) (*http.Response, error)

// meet returns a function that returns once n callers called it, or with
// an error after 10s.
func meet(n int) func() error {
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	return func() error {
		arrived.Done()
		select {
		case <-all:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("the other caller never came")
		}
	}
}

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestAnIssueCarriesLabelsByNameAndTheMissingOneIsMadeOnRealGitea(t *testing.T) {
	f, c, repo, owner, name := hookRepo(t)
	bug, _, err := c.CreateLabel(owner, name, sdk.CreateLabelOption{Name: "bug", Color: "#ee0701"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.CreateIssue(context.Background(), wq.IssueCreate{Project: repo, Title: "Disk full", Body: "from Sentry",
		Labels: []string{"bug", "incident", "bug"}})
	if err != nil {
		t.Fatal(err)
	}
	is, _, err := c.GetIssue(owner, name, got.Number)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != is.HTMLURL || got.Author != testgitea.Get(t).User || is.Body != "from Sentry" {
		t.Errorf("CreateIssue = %+v; Gitea has %s by %s with body %q", got, is.HTMLURL, is.Poster.UserName, is.Body)
	}
	if same := labelsNamed(t, c, owner, name, "bug"); len(same) != 1 || same[0].Color != "ee0701" {
		t.Errorf("labels called bug: %+v; want the one made before, untouched", same)
	}
	made := labelsNamed(t, c, owner, name, "incident")
	if len(made) != 1 || made[0].Color != "cccccc" {
		t.Fatalf("labels called incident: %+v; want one, made in the neutral colour", made)
	}
	if ids, want := issueLabels(t, c, owner, name, got.Number), []int64{bug.ID, made[0].ID}; !slices.Equal(ids, want) {
		t.Errorf("the issue carries labels %v, want %v", ids, want)
	}
}

func TestIssuesOpenedAtOnceWithANewLabelShareOneOnRealGitea(t *testing.T) {
	open := func(t *testing.T, forges ...*gitea.Forge) (repo string, c *sdk.Client, numbers []int64) {
		t.Helper()
		_, c, repo, _, _ = hookRepo(t)
		numbers = make([]int64, len(forges))
		errs := make([]error, len(forges))
		var wg sync.WaitGroup
		for i, f := range forges {
			wg.Go(func() {
				var w *wq.WorkInfo
				w, errs[i] = f.CreateIssue(context.Background(), wq.IssueCreate{Project: repo, Title: fmt.Sprint("Alert ", i),
					Labels: []string{"triage"}})
				if errs[i] == nil {
					numbers[i] = w.Number
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		return repo, c, numbers
	}
	oneLabelOnBoth := func(t *testing.T, c *sdk.Client, repo string, numbers []int64) {
		t.Helper()
		owner, name, _ := strings.Cut(repo, "/")
		labels := labelsNamed(t, c, owner, name, "triage")
		if len(labels) != 1 {
			t.Fatalf("%d labels called triage, want 1: %+v", len(labels), labels)
		}
		for _, n := range numbers {
			if got := issueLabels(t, c, owner, name, n); !slices.Equal(got, []int64{labels[0].ID}) {
				t.Errorf("issue %d carries labels %v, want [%d]", n, got, labels[0].ID)
			}
		}
	}

	t.Run("callers of one adapter make the label once", func(t *testing.T) {
		// The first two listings wait for each other, so that both callers
		// find the label missing, and making it takes a while, so that
		// either would still find it missing if the other did not wait.
		var posts, lists atomic.Int32
		bothListing := meet(2)
		f := interceptLabels(t, func(r *http.Request, send func() (*http.Response, error)) (*http.Response, error) {
			switch {
			case r.Method == http.MethodPost:
				posts.Add(1)
				time.Sleep(300 * time.Millisecond)
			case lists.Add(1) <= 2:
				if err := bothListing(); err != nil {
					return nil, err
				}
			}
			return send()
		})
		repo, c, numbers := open(t, f, f)
		if n := posts.Load(); n != 1 {
			t.Errorf("the label was made %d times, want once", n)
		}
		oneLabelOnBoth(t, c, repo, numbers)
	})

	t.Run("adapters of two processes that both make it end on one", func(t *testing.T) {
		// Each request to make the label waits for the other, so that
		// both adapters found it missing and both make it.
		bothMaking := meet(2)
		made := func(r *http.Request, send func() (*http.Response, error)) (*http.Response, error) {
			if r.Method == http.MethodPost {
				if err := bothMaking(); err != nil {
					return nil, err
				}
			}
			return send()
		}
		repo, c, numbers := open(t, interceptLabels(t, made), interceptLabels(t, made))
		oneLabelOnBoth(t, c, repo, numbers)
	})
}

func TestALabelRefusedAsTakenIsLookedUpOnRealGitea(t *testing.T) {
	// A Gitea that kept label names unique would refuse the second maker
	// of a name (409 or 422): the label another caller made is used.
	refuse := func(status int, made bool) func(r *http.Request, send func() (*http.Response, error)) (*http.Response, error) {
		return func(r *http.Request, send func() (*http.Response, error)) (*http.Response, error) {
			if r.Method != http.MethodPost {
				return send()
			}
			if made {
				resp, err := send()
				if err != nil {
					return nil, err
				}
				resp.Body.Close()
			}
			return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"message":"label already exists"}`))}, nil
		}
	}
	for _, status := range []int{http.StatusConflict, http.StatusUnprocessableEntity} {
		t.Run(fmt.Sprintf("%d for a name another caller made", status), func(t *testing.T) {
			f := interceptLabels(t, refuse(status, true))
			_, c, repo, owner, name := hookRepo(t)
			w, err := f.CreateIssue(context.Background(), wq.IssueCreate{Project: repo, Title: "t", Labels: []string{"triage"}})
			if err != nil {
				t.Fatal(err)
			}
			labels := labelsNamed(t, c, owner, name, "triage")
			if len(labels) != 1 || !slices.Equal(issueLabels(t, c, owner, name, w.Number), []int64{labels[0].ID}) {
				t.Errorf("labels called triage %+v; the issue carries %v", labels, issueLabels(t, c, owner, name, w.Number))
			}
		})
	}
	t.Run("a refusal stands when the name is still missing", func(t *testing.T) {
		f := interceptLabels(t, refuse(http.StatusUnprocessableEntity, false))
		_, c, repo, owner, name := hookRepo(t)
		_, err := f.CreateIssue(context.Background(), wq.IssueCreate{Project: repo, Title: "t", Labels: []string{"triage"}})
		if !wq.IsForgeError(err, wq.ForgePermanent) {
			t.Errorf("%v, want the permanent refusal", err)
		}
		if issues, _, err := c.ListRepoIssues(owner, name, sdk.ListIssueOption{}); err != nil || len(issues) != 0 {
			t.Errorf("issues %d, %v; want none opened", len(issues), err)
		}
	})
}

func TestAnEmptyTitleOrLabelNameIsRefusedBeforeSending(t *testing.T) {
	// The SDK refuses them without a status, which would read as a
	// network failure and be retried for ever.
	f, _ := gitea.New("http://127.0.0.1:1", "t", gitea.Options{})
	for _, req := range []wq.IssueCreate{{Project: "o/r", Title: " "}, {Project: "o/r", Title: "t", Labels: []string{"ok", ""}}} {
		if _, err := f.CreateIssue(context.Background(), req); !wq.IsForgeError(err, wq.ForgePermanent) {
			t.Errorf("%+v: %v, want a permanent error", req, err)
		}
	}
}

// Gitea answers a merge it cannot make now with 405 and a message; the
// SDK closes that body unread, and the message must still reach the
// error an operator reads.
func TestARefusedMergeKeepsGiteasMessage(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/repos/o/r/pulls/7", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"number":7,"state":"open","head":{"sha":"abc"},"base":{"ref":"main","repo":{"allow_merge_commits":true}}}`)
	})
	mux.HandleFunc("POST /api/v1/repos/o/r/pulls/7/merge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMethodNotAllowed)
		io.WriteString(w, `{"message":"Please try again later","url":"https://example.invalid/api/swagger"}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f, err := gitea.New(srv.URL, "t", gitea.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = f.MergeMergeRequest(context.Background(), "o/r", 7, "abc")
	var fe *wq.ForgeError
	if !errors.As(err, &fe) || fe.Status != http.StatusMethodNotAllowed {
		t.Fatalf("merge: %v, want a 405 forge error", err)
	}
	if fe.Message != "Please try again later" || !strings.Contains(err.Error(), "Please try again later") {
		t.Errorf("the refusal reads %q (message %q), want Gitea's message", err, fe.Message)
	}
}
