package testforge_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testforge"
)

func TestAPersonDrivesAMergeRequestOnEitherForge(t *testing.T) {
	testforge.Each(t, func(t *testing.T, f testforge.Fixture) {
		ctx := context.Background()
		project := f.NewProject(t, "trunk", "a.txt", "one\n")
		if got, found := f.ReadFile(t, project, "trunk", "a.txt"); !found || got != "one\n" {
			t.Fatalf("trunk:a.txt = %q, %v", got, found)
		}
		if f.BranchHead(t, project, "feature") != "" {
			t.Fatal("a missing branch has a head")
		}
		head := f.Push(t, project, "feature", testforge.Write("a.txt", "uno\n"), testforge.Write("b.txt", "two\n"))
		if got := f.BranchHead(t, project, "feature"); got != head {
			t.Errorf("feature's head %q, want the pushed %q", got, head)
		}
		if got, _ := f.ReadFile(t, project, "feature", "b.txt"); got != "two\n" {
			t.Errorf("feature:b.txt = %q", got)
		}
		if _, found := f.ReadFile(t, project, "trunk", "b.txt"); found {
			t.Error("the push reached trunk")
		}
		head = f.Push(t, project, "feature", testforge.Remove("b.txt"))
		if _, found := f.ReadFile(t, project, head, "b.txt"); found {
			t.Error("b.txt is still there after its removal")
		}

		mr, err := f.Forge().CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: project, SourceBranch: "feature",
			TargetBranch: "trunk", Title: "Feature", Description: "Why.", Labels: []string{"managed"}})
		if err != nil {
			t.Fatal(err)
		}
		got := f.MergeRequest(t, project, mr.Number)
		want := testforge.MergeRequest{State: wq.MergeRequestOpen, Title: "Feature", Description: "Why.", Labels: []string{"managed"},
			HeadSHA: head, SourceBranch: "feature", TargetBranch: "trunk"}
		if !equal(got, want) {
			t.Errorf("read %+v, want %+v", got, want)
		}
		f.Close(t, project, mr.Number)
		if got := f.MergeRequest(t, project, mr.Number); got.State != wq.MergeRequestClosed {
			t.Errorf("closed by a person: %q", got.State)
		}
		f.Reopen(t, project, mr.Number)
		if got := f.MergeRequest(t, project, mr.Number); got.State != wq.MergeRequestOpen {
			t.Errorf("reopened by a person: %q", got.State)
		}
		eventually.True(t, forgeWait, "the person's merge", func() (bool, any) {
			err := f.Merge(t, project, mr.Number)
			return err == nil, err
		})
		if got := f.MergeRequest(t, project, mr.Number); got.State != wq.MergeRequestMerged {
			t.Errorf("merged by a person: %q", got.State)
		}
		if got, _ := f.ReadFile(t, project, "trunk", "a.txt"); got != "uno\n" {
			t.Errorf("trunk:a.txt after the merge = %q", got)
		}
	})
}

func TestAFastForwardProjectNeedsARebaseOnceItsTargetMoved(t *testing.T) {
	testforge.Each(t, func(t *testing.T, f testforge.Fixture) {
		ctx := context.Background()
		project := f.NewProject(t, "main", "a.txt", "a\n")
		f.SetFastForwardOnly(t, project)
		forge := f.Forge()
		commit := func() wq.Commit {
			c, err := forge.CommitFiles(ctx, wq.CommitRequest{Project: project, Base: "main", Branch: "wq/x", Message: "x",
				Changes: []wq.FileChange{{Action: "create", Path: "x.txt", Content: []byte("x\n")}}})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		commit()
		mr, err := forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: project, SourceBranch: "wq/x", TargetBranch: "main", Title: "x"})
		if err != nil {
			t.Fatal(err)
		}
		waitBlocker(t, forge, project, mr.Number, wq.MergeClear)

		f.Push(t, project, "main", testforge.Write("other.txt", "o\n")) // the target moves
		got := waitBlocker(t, forge, project, mr.Number, wq.MergeRebase)
		if got.Mergeable || (f.Kind() == wq.ForgeGitLab && got.MergeStatus != "need_rebase") {
			t.Errorf("after the target moved: mergeable %v, status %q", got.Mergeable, got.MergeStatus)
		}
		if err := forge.MergeMergeRequest(ctx, project, mr.Number, got.HeadSHA); !wq.IsForgeError(err, wq.ForgeUnprocessable) {
			t.Errorf("merging what needs a rebase: %v, want not mergeable now", err)
		}
		if err := f.Merge(t, project, mr.Number); err == nil {
			t.Error("a person merged what cannot fast-forward")
		}

		c := commit() // rebuilt on the moved target
		waitBlocker(t, forge, project, mr.Number, wq.MergeClear)
		eventually.True(t, forgeWait, "the fast-forward merge", func() (bool, any) {
			err := forge.MergeMergeRequest(ctx, project, mr.Number, c.SHA)
			if err != nil && !wq.IsForgeError(err, wq.ForgeUnprocessable) {
				t.Fatalf("merge the rebuilt branch: %v", err)
			}
			return err == nil, err
		})
		if head := f.BranchHead(t, project, "main"); head != c.SHA {
			t.Errorf("main is at %s, want the branch's head %s: not a fast-forward", head, c.SHA)
		}
	})
}

// hooked makes a project of f whose hook, ensured as the service ensures
// it, delivers to a receiver that reads every delivery with the webhook
// package. seen waits until a delivery of the project matches.
func hooked(t *testing.T, f testforge.Fixture) (project string, seen func(what string, match func(d *forge.Delivery) bool)) {
	t.Helper()
	if !f.DeliversWebhooks() {
		t.Skip("this forge delivers no webhooks here")
	}
	var mu sync.Mutex
	var got []*forge.Delivery
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d, err := testapi.Kinds.ParseWebhook(f.Kind(), "s3cret", r.Header, body)
		if err != nil {
			t.Errorf("a delivery the webhook package refuses: %v", err)
		}
		if d != nil {
			mu.Lock()
			got = append(got, d)
			mu.Unlock()
		}
	}))
	t.Cleanup(receiver.Close)
	project = f.NewProject(t, "main", "a.txt", "a\n")
	if _, err := f.Forge().EnsureWebhook(context.Background(), project, receiver.URL, "s3cret"); err != nil {
		t.Fatal(err)
	}
	return project, func(what string, match func(d *forge.Delivery) bool) {
		t.Helper()
		eventually.True(t, forgeWait, what, func() (bool, any) {
			f.WaitForDeliveries()
			mu.Lock()
			defer mu.Unlock()
			found := slices.ContainsFunc(got, func(d *forge.Delivery) bool { return d.Project == project && match(d) })
			return found, fmt.Sprintf("%d deliveries", len(got))
		})
	}
}

func TestHooksTheServiceEnsuresDeliverWhatTheWebhookPackageReads(t *testing.T) {
	testforge.Each(t, func(t *testing.T, f testforge.Fixture) {
		project, seen := hooked(t, f)
		f.Push(t, project, "feature", testforge.Write("b.txt", "b\n"))
		mr, err := f.Forge().CreateMergeRequest(context.Background(), wq.MergeRequestCreate{Project: project, SourceBranch: "feature",
			TargetBranch: "main", Title: "t"})
		if err != nil {
			t.Fatal(err)
		}
		seen("a merge request event", func(d *forge.Delivery) bool { return d.Number == mr.Number && d.DeliveryID != "" })
	})
}

func TestIssueAndReviewEventsCarryTheirWork(t *testing.T) {
	testforge.Each(t, func(t *testing.T, f testforge.Fixture) {
		project, seen := hooked(t, f)
		issue := f.OpenIssue(t, project, "Broken", "bug")
		seen("the opened issue", func(d *forge.Delivery) bool {
			w := d.Work
			return w != nil && w.Kind == wq.WorkIssue && w.Number == issue && w.State == wq.MergeRequestOpen && w.Title == "Broken" &&
				slices.Equal(w.Labels, []string{"bug"}) && !w.UpdatedAt.IsZero() && d.Number == 0
		})
		f.CloseIssue(t, project, issue)
		seen("the closed issue", func(d *forge.Delivery) bool {
			return d.Work != nil && d.Work.Kind == wq.WorkIssue && d.Work.Number == issue && d.Work.State == wq.MergeRequestClosed
		})
		head := f.Push(t, project, "feature", testforge.Write("b.txt", "b\n"))
		mr, err := f.Forge().CreateMergeRequest(context.Background(), wq.MergeRequestCreate{Project: project, SourceBranch: "feature",
			TargetBranch: "main", Title: "Feature", Description: fmt.Sprintf("Closes #%d", issue)})
		if err != nil {
			t.Fatal(err)
		}
		seen("the opened pull request", func(d *forge.Delivery) bool {
			w := d.Work
			return w != nil && w.Kind == wq.WorkPR && w.Number == mr.Number && w.HeadSHA == head &&
				slices.Equal(w.LinkedIssues, []int64{issue}) && d.Number == mr.Number
		})
		waitBlocker(t, f.Forge(), project, mr.Number, wq.MergeClear)
		f.Review(t, project, mr.Number, wq.ReviewChangesRequested)
		seen("the request for changes", func(d *forge.Delivery) bool {
			return d.Work != nil && d.Work.Number == mr.Number && d.Work.ReviewState == wq.ReviewChangesRequested
		})
		f.Review(t, project, mr.Number, wq.ReviewApproved)
		seen("the approval", func(d *forge.Delivery) bool {
			// Gitea's payload cannot tell whether others still request
			// changes; GitLab's reviewer states and "approved" can.
			return d.Work != nil && d.Work.Number == mr.Number && (d.Work.ReviewState == wq.ReviewApproved || d.RecheckReview)
		})
	})
}

func equal(a, b testforge.MergeRequest) bool {
	return a.State == b.State && a.Title == b.Title && a.Description == b.Description && slices.Equal(a.Labels, b.Labels) &&
		a.HeadSHA == b.HeadSHA && a.SourceBranch == b.SourceBranch && a.TargetBranch == b.TargetBranch
}

// forgeWait bounds the waits on a forge: both work asynchronously.
const forgeWait = 30 * time.Second

func waitBlocker(t *testing.T, f wq.Forge, project string, number int64, want wq.MergeBlocker) *wq.MergeRequest {
	t.Helper()
	var mr *wq.MergeRequest
	eventually.True(t, forgeWait, "blocker "+string(want), func() (bool, any) {
		var err error
		if mr, err = f.GetMergeRequest(context.Background(), project, number); err != nil {
			t.Fatal(err)
		}
		return mr.Blocker == want, mr.Blocker
	})
	return mr
}
