package gitlab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
)

// exchange is one request the adapter must send, and what it is answered.
type exchange struct {
	method, path string // the path escaped, as sent
	token        string // PRIVATE-TOKEN
	body         string // the JSON body wanted; "" for none
	status       int
	answer       string // after withNextPage's prefix, if any
}

// withNextPage makes an answer one page of several: the server sends
// X-Next-Page: n with it.
func withNextPage(n int, answer string) string { return fmt.Sprintf("next-page=%d;", n) + answer }

// scripted is an adapter whose service token is "service-token" and
// review token "review-token", talking to a server that wants script's
// requests in order and answers them; the test fails on any other
// request, and on script's requests not all sent by its end.
func scripted(t *testing.T, script ...exchange) *gitlab.Forge {
	t.Helper()
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		if next == len(script) {
			t.Errorf("unscripted request %s %s %s", r.Method, r.URL.EscapedPath(), body)
			w.WriteHeader(http.StatusTeapot)
			return
		}
		want := script[next]
		next++
		got := exchange{method: r.Method, path: r.URL.EscapedPath(), token: r.Header.Get("PRIVATE-TOKEN")}
		if got.method != want.method || got.path != want.path || got.token != want.token {
			t.Errorf("request %d: %s %s with %s, want %s %s with %s", next, got.method, got.path, got.token, want.method, want.path, want.token)
		}
		if want.body != "" {
			var gotBody, wantBody any
			json.Unmarshal(body, &gotBody)
			if err := json.Unmarshal([]byte(want.body), &wantBody); err != nil {
				t.Fatalf("script %d: %v", next, err)
			}
			if diff := cmp.Diff(wantBody, gotBody); diff != "" {
				t.Errorf("request %d %s %s body (-want +got):\n%s", next, got.method, got.path, diff)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if rest, ok := strings.CutPrefix(want.answer, "next-page="); ok {
			n, answer, _ := strings.Cut(rest, ";")
			w.Header().Set("X-Next-Page", n)
			want.answer = answer
		}
		w.WriteHeader(want.status)
		io.WriteString(w, want.answer)
	}))
	t.Cleanup(func() {
		srv.Close()
		mu.Lock()
		defer mu.Unlock()
		if next != len(script) {
			t.Errorf("%d requests sent, want %d", next, len(script))
		}
	})
	f, err := gitlab.New(srv.URL, "service-token", gitlab.Options{ReviewToken: "review-token"})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const (
	mrPath    = "/api/v4/projects/g%2Fp/merge_requests/3"
	openMR    = `{"iid": 3, "state": "opened", "sha": "abc", "author": {"id": 1, "username": "workqueue"}, "reviewers": [{"id": 9, "username": "someone"}]}`
	reviewer  = `{"id": 7, "username": "a-reviewer"}`
	approvals = `{"iid": 3, "approved": true, "user_has_approved": true}`
)

func TestACommentIsANoteWhoseQuickActionsDoNotRun(t *testing.T) {
	// GitLab would close and merge on the lines below; with a space in
	// front they are text. It drops carriage returns before it looks.
	f := scripted(t,
		exchange{"POST", "/api/v4/projects/g%2Fp/issues/4/notes", "service-token", `{"body": "Done.\n /close\n /merge now\nsee /docs"}`, 201, `{"id": 11}`},
		exchange{"POST", mrPath + "/notes", "service-token", `{"body": "Fine"}`, 201, `{"id": 12}`},
	)
	ctx := context.Background()
	if id, err := f.CommentOnWork(ctx, "g/p", wq.WorkIssue, 4, "Done.\r\n/close\n/merge now\nsee /docs"); err != nil || id != 11 {
		t.Errorf("on the issue: %d, %v", id, err)
	}
	if id, err := f.CommentOnWork(ctx, "g/p", wq.WorkPR, 3, "Fine"); err != nil || id != 12 {
		t.Errorf("on the merge request: %d, %v", id, err)
	}
}

func TestAnIssueIsClosedWithAStateEvent(t *testing.T) {
	f := scripted(t, exchange{"PUT", "/api/v4/projects/g%2Fp/issues/4", "service-token", `{"state_event": "close"}`, 200,
		`{"iid": 4, "state": "closed"}`})
	if err := f.CloseIssue(context.Background(), "g/p", 4); err != nil {
		t.Error(err)
	}
}

func TestAnApprovalIsPinnedAndGivenByTheReviewIdentityWithItsBodyAsANote(t *testing.T) {
	f := scripted(t,
		exchange{"GET", mrPath, "service-token", "", 200, openMR},
		exchange{"GET", "/api/v4/user", "review-token", "", 200, reviewer},
		exchange{"POST", mrPath + "/approve", "review-token", `{"sha": "abc"}`, 201, approvals},
		exchange{"POST", mrPath + "/notes", "review-token", `{"body": "Looks good.\n /merge"}`, 201, `{"id": 12}`},
	)
	if err := f.ReviewPullRequest(context.Background(), "g/p", 3, wq.ReviewApproved, "Looks good.\n/merge", "abc"); err != nil {
		t.Error(err)
	}
}

func TestAnApprovalGitLabAlreadyHasStands(t *testing.T) {
	// GitLab answers 401 to a second approval by the same user, as a retry
	// after a lost answer would send.
	f := scripted(t,
		exchange{"GET", mrPath, "service-token", "", 200, openMR},
		exchange{"GET", "/api/v4/user", "review-token", "", 200, reviewer},
		exchange{"POST", mrPath + "/approve", "review-token", `{"sha": "abc"}`, 401, `{"message": "401 Unauthorized"}`},
		exchange{"GET", mrPath + "/approvals", "review-token", "", 200, approvals},
		// The review identity is read once.
		exchange{"GET", mrPath, "service-token", "", 200, openMR},
		exchange{"POST", mrPath + "/approve", "review-token", `{"sha": "abc"}`, 401, `{"message": "401 Unauthorized"}`},
		exchange{"GET", mrPath + "/approvals", "review-token", "", 200, `{"iid": 3, "approved": false, "user_has_approved": false}`},
	)
	ctx := context.Background()
	if err := f.ReviewPullRequest(ctx, "g/p", 3, wq.ReviewApproved, "", "abc"); err != nil {
		t.Errorf("approved already: %v", err)
	}
	if err := f.ReviewPullRequest(ctx, "g/p", 3, wq.ReviewApproved, "", "abc"); !wq.IsForgeError(err, wq.ForgePermanent) {
		t.Errorf("refused: %v, want the permanent refusal", err)
	}
}

func TestChangesAreRequestedByAReviewerWithTheQuickActionAndReadBack(t *testing.T) {
	script := func(state string) []exchange {
		return []exchange{
			{"GET", mrPath, "service-token", "", 200, openMR},
			{"GET", "/api/v4/user", "review-token", "", 200, reviewer},
			// The reviewer already there stays.
			{"PUT", mrPath, "service-token", `{"reviewer_ids": [9, 7]}`, 200, openMR},
			{"POST", mrPath + "/notes", "review-token", `{"body": "Rename x.\n /approve\n\n/request_changes"}`, 201, `{"id": 12}`},
			{"GET", mrPath + "/reviewers", "review-token", "", 200,
				`[{"user": {"id": 9, "username": "someone"}, "state": "requested_changes"}, {"user": {"id": 7, "username": "a-reviewer"}, "state": "` + state + `"}]`},
		}
	}
	ctx := context.Background()
	f := scripted(t, script("requested_changes")...)
	if err := f.ReviewPullRequest(ctx, "g/p", 3, wq.ReviewChangesRequested, "Rename x.\n/approve", "abc"); err != nil {
		t.Error(err)
	}
	// A GitLab without the quick action leaves the reviewer's state: the
	// verdict was not given.
	f = scripted(t, script("unreviewed")...)
	if err := f.ReviewPullRequest(ctx, "g/p", 3, wq.ReviewChangesRequested, "Rename x.\n/approve", "abc"); !wq.IsForgeError(err, wq.ForgePermanent) {
		t.Errorf("the state not set: %v, want a permanent error", err)
	}
}

// The reviewers are read to their last page: on a merge request with
// more reviewers than one page, the review identity's state is past the
// first.
func TestARequestForChangesIsReadBackPastTheFirstPageOfReviewers(t *testing.T) {
	var first []string
	for i := range 20 {
		first = append(first, fmt.Sprintf(`{"user": {"id": %d, "username": "r%d"}, "state": "unreviewed"}`, 100+i, i))
	}
	f := scripted(t,
		exchange{"GET", mrPath, "service-token", "", 200, openMR},
		exchange{"GET", "/api/v4/user", "review-token", "", 200, reviewer},
		exchange{"PUT", mrPath, "service-token", `{"reviewer_ids": [9, 7]}`, 200, openMR},
		exchange{"POST", mrPath + "/notes", "review-token", `{"body": "Rename x.\n\n/request_changes"}`, 201, `{"id": 12}`},
		exchange{"GET", mrPath + "/reviewers", "review-token", "", 200, withNextPage(2, "["+strings.Join(first, ",")+"]")},
		exchange{"GET", mrPath + "/reviewers", "review-token", "", 200, `[{"user": {"id": 7, "username": "a-reviewer"}, "state": "requested_changes"}]`},
	)
	if err := f.ReviewPullRequest(context.Background(), "g/p", 3, wq.ReviewChangesRequested, "Rename x.", "abc"); err != nil {
		t.Errorf("the verdict on the second page of reviewers: %v", err)
	}
}

func TestAVerdictOnAMovedHeadIsAConflictBeforeAnythingIsSent(t *testing.T) {
	f := scripted(t, exchange{"GET", mrPath, "service-token", "", 200, openMR})
	if err := f.ReviewPullRequest(context.Background(), "g/p", 3, wq.ReviewChangesRequested, "Rename x.", "old"); !wq.IsForgeError(err, wq.ForgeConflict) {
		t.Errorf("%v, want a conflict", err)
	}
}
