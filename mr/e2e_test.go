package mr_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
)

// world is a running service slice: a store, the engine with the mr type,
// and a real Gitea repository.
type world struct {
	t       *testing.T
	ctx     context.Context
	store   *testdb.Store
	forge   *gitea.Forge
	sdk     *sdk.Client
	repo    string
	project mr.Project
}

func newWorld(t *testing.T, opts mr.Options) *world {
	t.Helper()
	srv := testgitea.Get(t)
	f, err := gitea.New(srv.URL, srv.Token, gitea.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: context.Background(), store: testdb.Open(t, store.KindSQLite), forge: f, sdk: c, repo: srv.NewRepo(t),
		project: mr.Project{Label: "managed-by-workqueue", AutoMerge: true}}
	opts.Store, opts.Forges = w.store, map[string]wq.Forge{"gitea": f}
	cfg := engine.DefaultConfig()
	cfg.HandledTypes = []string{mr.ItemType}
	cfg.SweepInterval = 100 * time.Millisecond
	cfg.Owner = "e2e"
	e, err := engine.New(cfg, w.store, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	e.Register(mr.Type(opts))
	if err := e.Start(w.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(context.Background()) })
	return w
}

func (w *world) submit(sub mr.Submission, want wq.SubmitResult) *wq.Item {
	w.t.Helper()
	sub.Forge, sub.Project = "gitea", w.repo
	it, result, err := mr.Submit(w.ctx, w.store, sub, w.project, "e2e", time.Now())
	if err != nil {
		w.t.Fatalf("Submit: %v", err)
	}
	if result != want {
		w.t.Fatalf("result %q, want %q", result, want)
	}
	return it
}

// waitFor polls the item until cond holds: the service and the forge are
// real and asynchronous here.
func (w *world) waitFor(id wq.ItemID, what string, cond func(*wq.Item, *mr.Detail) bool) (*wq.Item, *mr.Detail) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		it, err := w.store.GetItem(w.ctx, id)
		if err != nil {
			w.t.Fatal(err)
		}
		d, err := w.store.GetMRDetail(w.ctx, id)
		if err != nil {
			w.t.Fatal(err)
		}
		if cond(it, d) {
			return it, d
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s: item %+v detail %+v", what, it, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// parentOf returns the first parent of a commit.
func (w *world) parentOf(sha string) string {
	w.t.Helper()
	owner, name, _ := cutProject(w.repo)
	c, _, err := w.sdk.GetSingleCommit(owner, name, sha)
	if err != nil {
		w.t.Fatal(err)
	}
	if len(c.Parents) != 1 {
		w.t.Fatalf("commit %s has %d parents, want 1", sha, len(c.Parents))
	}
	return c.Parents[0].SHA
}

func cutProject(p string) (string, string, bool) {
	for i := range p {
		if p[i] == '/' {
			return p[:i], p[i+1:], true
		}
	}
	return p, "", false
}

func idle(it *wq.Item, _ *mr.Detail) bool { return !it.Actionable && it.LeaseOwner == "" }

func TestSubmittedChangeBecomesOneCommitAndAMergedPullRequest(t *testing.T) {
	w := newWorld(t, mr.Options{MergeRecheckInterval: 200 * time.Millisecond})
	base, err := w.forge.BranchHead(w.ctx, w.repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	sub := submission("hello from workqueue\n")
	sub.FileActions = append(sub.FileActions, mr.FileAction{Action: mr.ActionCreate, FilePath: "docs/b.md", Content: text("# b\n")})
	it := w.submit(sub, mr.ResultCreated)
	got, d := w.waitFor(it.ID, "completion", func(it *wq.Item, _ *mr.Detail) bool { return it.Phase.Terminal() })
	if got.Phase != wq.PhaseCompleted || got.Reason != mr.ReasonMerged {
		t.Fatalf("item %s/%s (error %q), want completed/merged", got.Phase, got.Reason, got.Error)
	}
	if w.parentOf(d.HeadSHA) != base {
		t.Error("the pushed commit is not directly on top of the target")
	}
	pr, err := w.forge.GetMergeRequest(w.ctx, w.repo, d.MRNumber)
	if err != nil {
		t.Fatal(err)
	}
	if pr.State != wq.MergeRequestMerged || pr.HeadSHA != d.HeadSHA || len(pr.Labels) != 1 || pr.Labels[0] != "managed-by-workqueue" || pr.URL != d.MRURL {
		t.Errorf("pull request %+v", pr)
	}
	for path, want := range map[string]string{"a.txt": "hello from workqueue\n", "docs/b.md": "# b\n"} {
		if content, _, _ := w.forge.ReadFile(w.ctx, w.repo, "main", path); string(content) != want {
			t.Errorf("main:%s = %q, want %q", path, content, want)
		}
	}
	if d.NoteID == 0 {
		t.Error("no dashboard note was posted")
	}
}

func TestNewContentForceUpdatesTheSamePullRequest(t *testing.T) {
	w := newWorld(t, mr.Options{})
	w.project.AutoMerge = false
	it := w.submit(submission("v1\n"), mr.ResultCreated)
	_, first := w.waitFor(it.ID, "the pull request", func(it *wq.Item, d *mr.Detail) bool { return d.MRNumber != 0 && idle(it, d) })

	w.submit(submission("v1\n"), mr.ResultUnchanged)
	if head, _ := w.forge.BranchHead(w.ctx, w.repo, "wq/update-a"); head != first.HeadSHA {
		t.Errorf("an unchanged submission moved the branch: %s → %s", first.HeadSHA, head)
	}

	next := submission("v2\n")
	next.Title, next.Description = "Update a to v2", "Second try."
	w.submit(next, mr.ResultUpdated)
	_, second := w.waitFor(it.ID, "the new commit", func(it *wq.Item, d *mr.Detail) bool { return d.HeadSHA != first.HeadSHA && idle(it, d) })
	base, _ := w.forge.BranchHead(w.ctx, w.repo, "main")
	if second.MRNumber != first.MRNumber {
		t.Errorf("a new pull request %d, want the same %d", second.MRNumber, first.MRNumber)
	}
	if w.parentOf(second.HeadSHA) != base {
		t.Error("the new commit is not directly on top of the target: the branch was not force-updated")
	}
	pr, _ := w.forge.GetMergeRequest(w.ctx, w.repo, second.MRNumber)
	if pr.Title != "Update a to v2" || pr.Description != mr.ManagedDescription(it.ID, "Second try.") || pr.HeadSHA != second.HeadSHA {
		t.Errorf("pull request not synced: %+v", pr)
	}
	if content, _, _ := w.forge.ReadFile(w.ctx, w.repo, "wq/update-a", "a.txt"); string(content) != "v2\n" {
		t.Errorf("branch content %q", content)
	}

	// A title-only change syncs the pull request without a new commit.
	retitled := next
	retitled.Title = "Update a to v2, retitled"
	w.submit(retitled, mr.ResultUpdated)
	w.waitFor(it.ID, "the retitle", func(it *wq.Item, d *mr.Detail) bool {
		pr, _ := w.forge.GetMergeRequest(w.ctx, w.repo, d.MRNumber)
		return idle(it, d) && pr != nil && pr.Title == retitled.Title
	})
	if head, _ := w.forge.BranchHead(w.ctx, w.repo, "wq/update-a"); head != second.HeadSHA {
		t.Error("a title-only change pushed a new commit")
	}
}

func TestChangeTheTargetAlreadyHoldsCompletesWithoutAPullRequest(t *testing.T) {
	w := newWorld(t, mr.Options{})
	readme, found, err := w.forge.ReadFile(w.ctx, w.repo, "main", "README.md")
	if err != nil || !found {
		t.Fatalf("README.md: %v %v", found, err)
	}
	sub := submission("")
	sub.FileActions = []mr.FileAction{{Action: mr.ActionUpdate, FilePath: "README.md", Content: text(string(readme))}}
	it := w.submit(sub, mr.ResultCreated)
	got, d := w.waitFor(it.ID, "completion", func(it *wq.Item, _ *mr.Detail) bool { return it.Phase.Terminal() })
	if got.Phase != wq.PhaseCompleted || got.Reason != mr.ReasonEmptyDiff || d.MRNumber != 0 {
		t.Errorf("item %s/%s with pull request %d, want completed/empty_diff and none", got.Phase, got.Reason, d.MRNumber)
	}
	if pr, _ := w.forge.FindMergeRequest(w.ctx, w.repo, "wq/update-a", "main"); pr != nil {
		t.Errorf("a pull request was opened: %+v", pr)
	}
	if _, err := w.forge.BranchHead(w.ctx, w.repo, "wq/update-a"); !wq.IsForgeError(err, wq.ForgeNotFound) {
		t.Errorf("a branch was pushed: %v", err)
	}
}

func TestPullRequestMadeEmptyByAnotherMergeIsClosedAsSuperseded(t *testing.T) {
	w := newWorld(t, mr.Options{EmptyCheckInterval: 300 * time.Millisecond})
	w.project.AutoMerge = false
	it := w.submit(submission("shared\n"), mr.ResultCreated)
	_, d := w.waitFor(it.ID, "the pull request", func(it *wq.Item, d *mr.Detail) bool { return d.MRNumber != 0 })

	// The same change reaches main another way.
	if _, err := w.forge.CommitFiles(w.ctx, wq.CommitRequest{Project: w.repo, Base: "main", Branch: "other",
		Message: "same change", Changes: []wq.FileChange{{Action: "create", Path: "a.txt", Content: []byte("shared\n")}}}); err != nil {
		t.Fatal(err)
	}
	other, err := w.forge.CreateMergeRequest(w.ctx, wq.MergeRequestCreate{Project: w.repo, SourceBranch: "other", TargetBranch: "main", Title: "other"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		pr, _ := w.forge.GetMergeRequest(w.ctx, w.repo, other.Number)
		if pr != nil && pr.Mergeable && w.forge.MergeMergeRequest(w.ctx, w.repo, other.Number, pr.HeadSHA) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("could not merge the other pull request")
		}
		time.Sleep(100 * time.Millisecond)
	}

	got, _ := w.waitFor(it.ID, "supersession", func(it *wq.Item, _ *mr.Detail) bool { return it.Phase.Terminal() })
	if got.Phase != wq.PhaseCompleted || got.Reason != mr.ReasonSuperseded {
		t.Fatalf("item %s/%s (error %q), want completed/superseded", got.Phase, got.Reason, got.Error)
	}
	if pr, _ := w.forge.GetMergeRequest(w.ctx, w.repo, d.MRNumber); pr.State != wq.MergeRequestClosed {
		t.Errorf("our pull request is %s, want closed", pr.State)
	}
}

func TestPullRequestClosedByAPersonCancelsTheItem(t *testing.T) {
	w := newWorld(t, mr.Options{ReconcileInterval: 300 * time.Millisecond})
	w.project.AutoMerge = false
	it := w.submit(submission("v1\n"), mr.ResultCreated)
	_, d := w.waitFor(it.ID, "the pull request", func(it *wq.Item, d *mr.Detail) bool { return d.MRNumber != 0 && idle(it, d) })
	closed := wq.MergeRequestClosed
	if _, err := w.forge.UpdateMergeRequest(w.ctx, w.repo, d.MRNumber, wq.MergeRequestUpdate{State: &closed}); err != nil {
		t.Fatal(err)
	}
	got, _ := w.waitFor(it.ID, "cancellation", func(it *wq.Item, _ *mr.Detail) bool { return it.Phase.Terminal() })
	if got.Phase != wq.PhaseCancelled || got.Reason != mr.ReasonClosed {
		t.Errorf("item %s/%s, want cancelled/closed", got.Phase, got.Reason)
	}
}

// A change the forge refuses for good (creating a file the target already
// has: Gitea answers 422) fails the item at the first attempt with the
// forge's message, instead of being tried max_attempts times (issue 9,
// defect 7).
func TestAChangeTheForgeRefusesFailsAtOnceWithItsMessage(t *testing.T) {
	w := newWorld(t, mr.Options{})
	sub := submission("not the readme\n")
	sub.FileActions[0].FilePath = "README.md" // exists on main with other content
	it := w.submit(sub, mr.ResultCreated)
	got, _ := w.waitFor(it.ID, "failure", func(it *wq.Item, _ *mr.Detail) bool { return it.Phase.Terminal() })
	if got.Phase != wq.PhaseFailed || got.Attempts != 1 || !strings.Contains(got.Error, "commit") {
		t.Errorf("item %s after %d attempts, error %q; want failed after 1 with the forge's refusal", got.Phase, got.Attempts, got.Error)
	}
	if _, err := w.forge.BranchHead(w.ctx, w.repo, sub.SourceBranch); !wq.IsForgeError(err, wq.ForgeNotFound) {
		t.Errorf("a branch was written for a refused change: %v", err)
	}
}
