package forge_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
)

func TestOneTableClassifiesBothForges(t *testing.T) {
	t.Parallel()
	both := []string{wq.ForgeGitea, wq.ForgeGitLab}
	for _, tc := range []struct {
		name   string
		forges []string
		op     forge.Op
		status int
		want   wq.ForgeErrorKind
	}{
		{"no answer is transient", both, forge.OpAny, 0, wq.ForgeTransient},
		{"a 404 is not found", both, forge.OpAny, 404, wq.ForgeNotFound},
		{"a 409 is a conflict", both, forge.OpAny, 409, wq.ForgeConflict},
		{"a 409 on a merge is a conflict (head moved, merge conflict)", both, forge.OpMerge, 409, wq.ForgeConflict},
		{"a 429 is rate limited", both, forge.OpAny, 429, wq.ForgeRateLimited},
		{"a 408 is transient", both, forge.OpAny, 408, wq.ForgeTransient},
		{"a 500 is transient", both, forge.OpAny, 500, wq.ForgeTransient},
		{"a 503 on a merge is transient", both, forge.OpMerge, 503, wq.ForgeTransient},
		{"a 400 is permanent", both, forge.OpAny, 400, wq.ForgePermanent},
		{"a 401 is permanent", both, forge.OpAny, 401, wq.ForgePermanent},
		{"a 403 is permanent", both, forge.OpAny, 403, wq.ForgePermanent},
		{"a 422 outside a merge is permanent (GitLab: a merge request into a missing branch)", both, forge.OpAny, 422, wq.ForgePermanent},
		{"a 405 outside a merge is permanent", both, forge.OpAny, 405, wq.ForgePermanent},
		{"Gitea's 423 for an archived repository is permanent", both, forge.OpAny, 423, wq.ForgePermanent},
		{"Gitea's 412 for a merge request whose branch is gone is permanent", both, forge.OpAny, 412, wq.ForgePermanent},
		{"a 405 on a merge is not mergeable now", both, forge.OpMerge, 405, wq.ForgeUnprocessable},
		{"GitLab's 406 on a merge (before 17.x) is not mergeable now", []string{wq.ForgeGitLab}, forge.OpMerge, 406, wq.ForgeUnprocessable},
		{"GitLab's 422 on a merge is not mergeable now", []string{wq.ForgeGitLab}, forge.OpMerge, 422, wq.ForgeUnprocessable},
		{"Gitea's 422 on a merge is a malformed form, permanent", []string{wq.ForgeGitea}, forge.OpMerge, 422, wq.ForgePermanent},
		{"Gitea never answers 406: permanent", []string{wq.ForgeGitea}, forge.OpMerge, 406, wq.ForgePermanent},
		{"Gitea's 400 for a tree is a ref it cannot find", []string{wq.ForgeGitea}, forge.OpTree, 400, wq.ForgeNotFound},
		{"a 400 elsewhere on Gitea is permanent", []string{wq.ForgeGitea}, forge.OpAny, 400, wq.ForgePermanent},
	} {
		for _, kind := range tc.forges {
			t.Run(kind+": "+tc.name, func(t *testing.T) {
				if got := forge.Kind(kind, tc.op, tc.status); got != tc.want {
					t.Errorf("Kind(%s, %d) = %s, want %s", kind, tc.status, got, tc.want)
				}
			})
		}
	}
}

func TestRetryAfterReadsWhatTheForgeAsked(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	reset := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	for _, tc := range []struct {
		name   string
		status int
		h      http.Header
		want   time.Duration
	}{
		{"Retry-After in seconds", 429, h("Retry-After", "30"), 30 * time.Second},
		{"Retry-After as an HTTP date", 503, h("Retry-After", now.Add(2*time.Minute).Format(http.TimeFormat)), 2 * time.Minute},
		{"a 429 without Retry-After waits until GitLab's RateLimit-Reset", 429, h("RateLimit-Reset", reset(90*time.Second)), 90 * time.Second},
		{"Retry-After wins over RateLimit-Reset", 429, h("Retry-After", "5", "RateLimit-Reset", reset(time.Hour)), 5 * time.Second},
		{"a RateLimit-Reset in the past is no wait", 429, h("RateLimit-Reset", reset(-time.Minute)), 0},
		{"a small RateLimit-Reset is seconds from now", 429, h("RateLimit-Reset", "12"), 12 * time.Second},
		{"a RateLimit-Reset beyond a day waits a day", 429, h("RateLimit-Reset", reset(72*time.Hour)), 24 * time.Hour},
		{"a 503's RateLimit-Reset says nothing about the outage", 503, h("RateLimit-Reset", reset(time.Minute)), 0},
		{"nothing asked, no wait", 429, h(), 0},
		{"no headers at all", 0, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := forge.RetryAfter(tc.status, tc.h, now); got != tc.want {
				t.Errorf("RetryAfter = %v, want %v", got, tc.want)
			}
		})
	}
}

// failingForge is a server that answers every API call with status and
// the headers given, and counts the calls. It serves Gitea's version probe,
// and a pull request whose repository merges with merge commits, so that a
// Gitea merge reaches the merge call itself.
func failingForge(t *testing.T, status int, header http.Header) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	calls := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1/version":
			w.Write([]byte(`{"version":"` + gitea.ServerVersion + `"}`))
			return
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/repos/o/r/pulls/"):
			w.Write([]byte(`{"number":3,"state":"open","base":{"ref":"main","repo":{"default_merge_style":"merge","allow_merge_commits":true}}}`))
			return
		}
		calls.Add(1)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		w.Write([]byte(`{"message":"` + http.StatusText(status) + `"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, calls
}

// adapterCalls are the adapters' calls through each of their transports:
// Gitea's SDK and its plain net/http path, GitLab's client-go.
var adapterCalls = map[string]func(t *testing.T, url string) error{
	"gitea branch head (SDK)": func(t *testing.T, url string) error {
		_, err := newGitea(t, url).BranchHead(context.Background(), "o/r", "workqueue/x")
		return err
	},
	"gitea commit changes (net/http)": func(t *testing.T, url string) error {
		_, err := newGitea(t, url).CommitChanges(context.Background(), "o/r", strings.Repeat("0", 40))
		return err
	},
	"gitlab branch head (client-go)": func(t *testing.T, url string) error {
		_, err := newGitLab(t, url).BranchHead(context.Background(), "g/p", "workqueue/x")
		return err
	},
}

func newGitea(t *testing.T, url string) *gitea.Forge {
	f, err := gitea.New(url, "token", gitea.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func newGitLab(t *testing.T, url string) *gitlab.Forge {
	f, err := gitlab.New(url, "token", gitlab.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestOverloadedForgesAreTransientAndSayHowLongToWait(t *testing.T) {
	t.Parallel()
	inTwoMinutes := func() string { return time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat) }
	for _, tc := range []struct {
		name             string
		status           int
		header           http.Header
		wantKind         wq.ForgeErrorKind
		wantMin, wantMax time.Duration
	}{
		{"a 429 with Retry-After 30 is rate limited for 30s", 429, http.Header{"Retry-After": {"30"}}, wq.ForgeRateLimited, 30 * time.Second, 30 * time.Second},
		{"a 503 with an HTTP-date is transient until that date", 503, http.Header{"Retry-After": {inTwoMinutes()}}, wq.ForgeTransient, time.Minute + 55*time.Second, 2 * time.Minute},
		{"a 429 without Retry-After waits for RateLimit-Reset", 429,
			http.Header{"Ratelimit-Reset": {strconv.FormatInt(time.Now().Add(90*time.Second).Unix(), 10)}}, wq.ForgeRateLimited, 85 * time.Second, 90 * time.Second},
		{"a 429 without either is rate limited with no wait of its own", 429, nil, wq.ForgeRateLimited, 0, 0},
		{"a 502 is transient", 502, nil, wq.ForgeTransient, 0, 0},
		{"a 403 is permanent and its Retry-After is ignored", 403, http.Header{"Retry-After": {"30"}}, wq.ForgePermanent, 0, 0},
	} {
		for call, do := range adapterCalls {
			t.Run(tc.name+" on "+call, func(t *testing.T) {
				t.Parallel()
				srv, calls := failingForge(t, tc.status, tc.header)
				err := do(t, srv.URL)
				var fe *wq.ForgeError
				if !errors.As(err, &fe) {
					t.Fatalf("got %v, want a *ForgeError", err)
				}
				if fe.Kind != tc.wantKind || fe.Status != tc.status {
					t.Errorf("kind %s status %d, want %s %d (%v)", fe.Kind, fe.Status, tc.wantKind, tc.status, err)
				}
				if fe.RetryAfter < tc.wantMin || fe.RetryAfter > tc.wantMax {
					t.Errorf("RetryAfter %v, want between %v and %v", fe.RetryAfter, tc.wantMin, tc.wantMax)
				}
				if got, want := wq.IsTransient(err), tc.wantKind != wq.ForgePermanent; got != want {
					t.Errorf("IsTransient = %v, want %v", got, want)
				}
				// No client retries behind the engine's back: it backs off per item.
				if n := calls.Load(); n != 1 {
					t.Errorf("the forge was asked %d times, want once", n)
				}
			})
		}
	}
}

func TestAdaptersClassifyPerOperation(t *testing.T) {
	t.Parallel()
	merge := func(f wq.Forge) error {
		return f.MergeMergeRequest(context.Background(), project(f), 3, strings.Repeat("a", 40))
	}
	create := func(f wq.Forge) error {
		_, err := f.CreateMergeRequest(context.Background(), wq.MergeRequestCreate{Project: project(f), SourceBranch: "wq/a",
			TargetBranch: "gone", Title: "t"})
		return err
	}
	read := func(f wq.Forge) error { _, err := f.BranchHead(context.Background(), project(f), "main"); return err }
	for _, tc := range []struct {
		name   string
		kind   string
		status int
		do     func(wq.Forge) error
		want   wq.ForgeErrorKind
	}{
		{"a GitLab merge answered 422 is not mergeable now", wq.ForgeGitLab, 422, merge, wq.ForgeUnprocessable},
		{"a GitLab merge answered 406 is not mergeable now", wq.ForgeGitLab, 406, merge, wq.ForgeUnprocessable},
		{"a GitLab merge answered 405 is not mergeable now", wq.ForgeGitLab, 405, merge, wq.ForgeUnprocessable},
		{"a GitLab merge request into a missing branch (422) fails for good", wq.ForgeGitLab, 422, create, wq.ForgePermanent},
		{"a Gitea merge answered 405 is not mergeable now", wq.ForgeGitea, 405, merge, wq.ForgeUnprocessable},
		{"a Gitea merge answered 422 fails for good", wq.ForgeGitea, 422, merge, wq.ForgePermanent},
		{"a Gitea pull request refused with 422 fails for good", wq.ForgeGitea, 422, create, wq.ForgePermanent},
		{"a Gitea 405 outside a merge fails for good", wq.ForgeGitea, 405, read, wq.ForgePermanent},
		{"a GitLab 405 outside a merge fails for good", wq.ForgeGitLab, 405, read, wq.ForgePermanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := failingForge(t, tc.status, nil)
			var f wq.Forge = newGitLab(t, srv.URL)
			if tc.kind == wq.ForgeGitea {
				f = newGitea(t, srv.URL)
			}
			err := tc.do(f)
			if got, ok := wq.ForgeErrorOf(err); !ok || got != tc.want {
				t.Errorf("%v: want a %s forge error", err, tc.want)
			}
		})
	}
}

func project(f wq.Forge) string {
	if f.Kind() == wq.ForgeGitea {
		return "o/r"
	}
	return "g/p"
}
