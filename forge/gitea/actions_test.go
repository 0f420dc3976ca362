package gitea_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
)

func TestAVerdictGivenWhileTheHeadMovesIsWithdrawnOnRealGitea(t *testing.T) {
	// Gitea records a verdict on a commit that is no longer the head,
	// marked stale. A push between the adapter's read of the head and the
	// review is caught by the read after, and the verdict withdrawn.
	f, c, repo, owner, name := hookRepo(t)
	ctx := context.Background()
	change := func(path string) wq.CommitRequest {
		return wq.CommitRequest{Project: repo, Base: "main", Branch: "wq/race", Message: "work",
			Changes: []wq.FileChange{{Action: "create", Path: path, Content: []byte(path + "\n")}}}
	}
	head, err := f.CommitFiles(ctx, change("a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	mr, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: repo, SourceBranch: "wq/race", TargetBranch: "main", Title: "race"})
	if err != nil {
		t.Fatal(err)
	}
	var pushed atomic.Bool
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	pushFirst := roundTrip(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/reviews") && !pushed.Swap(true) {
			if _, err := f.CommitFiles(ctx, change("b.txt")); err != nil {
				return nil, err
			}
		}
		return base.RoundTrip(r)
	})
	srv := testgitea.Get(t)
	reviewing, err := gitea.New(srv.URL, srv.Token, gitea.Options{HTTPClient: &http.Client{Transport: pushFirst}, ReviewToken: srv.Reviewer(t, repo)})
	if err != nil {
		t.Fatal(err)
	}
	err = reviewing.ReviewPullRequest(ctx, repo, mr.Number, wq.ReviewApproved, "Looks good.", head.SHA)
	if !pushed.Load() || !wq.IsForgeError(err, wq.ForgeConflict) {
		t.Fatalf("%v (pushed meanwhile: %v), want a conflict", err, pushed.Load())
	}
	reviews, _, err := c.ListPullReviews(owner, name, mr.Number, sdk.ListPullReviewsOptions{})
	if err != nil || len(reviews) != 0 {
		t.Errorf("reviews %+v, %v; want the verdict withdrawn", reviews, err)
	}
}

func TestAReviewIdentityThatOpenedThePullRequestIsRefusedOnRealGitea(t *testing.T) {
	// The review identity opening a pull request is no way the service
	// works, but its verdict there would be refused by Gitea all the same.
	f, _, repo, _, _ := hookRepo(t)
	ctx := context.Background()
	srv := testgitea.Get(t)
	token := srv.Reviewer(t, repo)
	asReviewer, err := gitea.New(srv.URL, token, gitea.Options{ReviewToken: token})
	if err != nil {
		t.Fatal(err)
	}
	head, err := f.CommitFiles(ctx, wq.CommitRequest{Project: repo, Base: "main", Branch: "wq/theirs", Message: "work",
		Changes: []wq.FileChange{{Action: "create", Path: "a.txt", Content: []byte("a\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := asReviewer.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: repo, SourceBranch: "wq/theirs", TargetBranch: "main", Title: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	err = asReviewer.ReviewPullRequest(ctx, repo, mr.Number, wq.ReviewApproved, "", head.SHA)
	if !wq.IsForgeError(err, wq.ForgePermanent) || !errors.Is(err, wq.ErrSelfReview) || !strings.Contains(err.Error(), testgitea.ReviewerName+", the review identity") {
		t.Errorf("%v; want the review identity named as the author", err)
	}
}
