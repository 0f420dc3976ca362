package mr_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testforge"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
)

// The lifecycle suite: every test runs on the real Gitea and on the
// GitLab-shaped test server (testforge.Each), with the service's own
// adapter for each, a real store and engine on the real clock, and a
// person acting on the forge through the fixture.

// world is a running slice of the service on one forge: a store, the
// engine with the mr type, and a project on the forge.
type world struct {
	t       *testing.T
	ctx     context.Context
	store   *testdb.Store
	engine  *engine.Engine
	fx      testforge.Fixture // nil when the test drives the forge another way
	kind    string            // the forge's name in the service, its kind
	forge   *notingForge
	repo    string
	project mr.Project
}

// notingForge is the service's adapter, with the notes it posted kept by
// merge request: neither the adapters nor the fixture read notes back.
type notingForge struct {
	wq.Forge
	mu    sync.Mutex
	notes map[int64][]string
}

func (n *notingForge) CreateNote(ctx context.Context, project string, number int64, body string) (int64, error) {
	id, err := n.Forge.CreateNote(ctx, project, number, body)
	if err == nil {
		n.mu.Lock()
		n.notes[number] = append(n.notes[number], body)
		n.mu.Unlock()
	}
	return id, err
}

// CommitStatuses forwards the adapter's (wq.CommitStatusReader).
func (n *notingForge) CommitStatuses(ctx context.Context, project, sha string) ([]wq.CommitStatus, error) {
	return n.Forge.(wq.CommitStatusReader).CommitStatuses(ctx, project, sha)
}

func (n *notingForge) notesOn(number int64) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.notes[number])
}

// newWorld starts the service on fx's forge, with a new project whose
// main branch holds README.md.
func newWorld(t *testing.T, fx testforge.Fixture, opts mr.Options) *world {
	t.Helper()
	return startWorld(t, fx, fx.Kind(), fx.Forge(), fx.NewProject(t, "main", "README.md", "# readme\n"), opts)
}

func startWorld(t *testing.T, fx testforge.Fixture, kind string, f wq.Forge, repo string, opts mr.Options) *world {
	t.Helper()
	return startWorldOn(t, store.KindSQLite, fx, kind, f, repo, opts)
}

// startWorldOn is startWorld on a database of dbKind.
func startWorldOn(t *testing.T, dbKind string, fx testforge.Fixture, kind string, f wq.Forge, repo string, opts mr.Options) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), store: testdb.Open(t, dbKind), fx: fx, kind: kind,
		forge: &notingForge{Forge: f, notes: map[int64][]string{}}, repo: repo,
		project: mr.Project{Label: "managed-by-workqueue", AutoMerge: true, FileModes: wq.SetsFileModes(f)}}
	opts.Store, opts.Forges = w.store, map[string]wq.Forge{kind: w.forge}
	if opts.MergeRecheckInterval == 0 {
		opts.MergeRecheckInterval = 200 * time.Millisecond
	}
	if opts.ReconcileInterval == 0 {
		opts.ReconcileInterval = 2 * time.Second
	}
	w.engine = startEngine(t, w.store, nil, opts, 100*time.Millisecond)
	return w
}

func (w *world) submit(sub mr.Submission, want wq.SubmitResult) *wq.Item {
	w.t.Helper()
	sub.Forge, sub.Project = w.kind, w.repo
	it, result, err := mr.Submit(w.ctx, w.store, sub, w.project, "e2e", time.Now())
	if err != nil {
		w.t.Fatalf("Submit: %v", err)
	}
	if result != want {
		w.t.Fatalf("result %q, want %q", result, want)
	}
	w.engine.Notify(mr.ItemType, it.ID)
	return it
}

// waitFor polls the item until cond holds: the service and the forge are
// real and asynchronous here.
func (w *world) waitFor(id wq.ItemID, what string, cond func(*wq.Item, *mr.Detail) bool) (*wq.Item, *mr.Detail) {
	w.t.Helper()
	var it *wq.Item
	var d *mr.Detail
	eventually.TrueEvery(w.t, 60*time.Second, 50*time.Millisecond, what, func() (bool, any) {
		it, d = w.get(id)
		return cond(it, d), fmt.Sprintf("item %+v detail %+v", it, d)
	})
	return it, d
}

func (w *world) waitTerminal(id wq.ItemID) (*wq.Item, *mr.Detail) {
	w.t.Helper()
	return w.waitFor(id, "a terminal phase", func(it *wq.Item, _ *mr.Detail) bool { return it.Phase.Terminal() })
}

// waitMR waits until the item has a merge request and is idle.
func (w *world) waitMR(id wq.ItemID) (*wq.Item, *mr.Detail) {
	w.t.Helper()
	return w.waitFor(id, "the merge request", func(it *wq.Item, d *mr.Detail) bool {
		if it.Phase.Terminal() {
			w.t.Fatalf("item %s/%s (error %q) before its merge request was open", it.Phase, it.Reason, it.Error)
		}
		return d.MRNumber != 0 && idle(it, d)
	})
}

// onTopOfTarget reports whether head is one commit changing exactly paths
// on top of what base holds: its tree is base's with those paths changed,
// and its own diff is those paths.
func (w *world) onTopOfTarget(base, head string, paths ...string) bool {
	w.t.Helper()
	changed := func(cs []wq.PathChange, err error) []string {
		if err != nil {
			w.t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.Path)
		}
		slices.Sort(out)
		return out
	}
	// Every path of either tree is compared: nothing but paths may differ.
	every := map[string]bool{}
	for _, ref := range []string{base, head} {
		entries, err := w.forge.ReadTree(w.ctx, w.repo, ref)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, e := range entries {
			if e.Mode != wq.ModeDir {
				every[e.Path] = true
			}
		}
	}
	slices.Sort(paths)
	return slices.Equal(changed(w.forge.CompareTrees(w.ctx, w.repo, base, head, slices.Sorted(maps.Keys(every)))), paths) &&
		slices.Equal(changed(w.forge.CommitChanges(w.ctx, w.repo, head)), paths)
}

// openMR submits submission(content) without auto-merge and returns the
// item once its merge request is open.
func (w *world) openMR(content string) (*wq.Item, *mr.Detail) {
	w.t.Helper()
	w.project.AutoMerge = false
	it := w.submit(submission(content), mr.ResultCreated)
	_, d := w.waitMR(it.ID)
	return it, d
}

func idle(it *wq.Item, _ *mr.Detail) bool { return !it.Actionable && it.LeaseOwner == "" }

func TestLifecycleASubmittedChangeIsOneCommitOnTheTargetMergedAndItsBranchDeleted(t *testing.T) {
	testforge.Each(t, func(t *testing.T, fx testforge.Fixture) {
		w := newWorld(t, fx, mr.Options{})
		base := fx.BranchHead(t, w.repo, "main")
		sub := submission("hello from workqueue\n")
		sub.FileActions = append(sub.FileActions, mr.FileAction{Action: mr.ActionCreate, FilePath: "docs/b.md", Content: text("# b\n")})
		it := w.submit(sub, mr.ResultCreated)
		got, d := w.waitTerminal(it.ID)
		wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
		if !w.onTopOfTarget(base, d.HeadSHA, "a.txt", "docs/b.md") {
			t.Error("the pushed commit is not one commit of the change on top of the target")
		}
		pr := fx.MergeRequest(t, w.repo, d.MRNumber)
		// Both forges keep a merged merge request's head once its source
		// branch is deleted (the GitLab test server does now too).
		headKept := pr.HeadSHA == d.HeadSHA
		if pr.State != wq.MergeRequestMerged || !headKept || !slices.Equal(pr.Labels, []string{"managed-by-workqueue"}) {
			t.Errorf("merge request %+v, want merged at %s", pr, d.HeadSHA)
		}
		for path, want := range map[string]string{"a.txt": "hello from workqueue\n", "docs/b.md": "# b\n"} {
			if content, _ := fx.ReadFile(t, w.repo, "main", path); content != want {
				t.Errorf("main:%s = %q, want %q", path, content, want)
			}
		}
		if d.NoteID == 0 || len(w.forge.notesOn(d.MRNumber)) != 1 {
			t.Errorf("dashboard note %d, notes %q; want one", d.NoteID, w.forge.notesOn(d.MRNumber))
		}
		if head := fx.BranchHead(t, w.repo, sub.SourceBranch); head != "" {
			t.Errorf("the merged branch is still there at %s", head)
		}
	})
}

func TestLifecycleNewContentForceUpdatesTheSameMergeRequest(t *testing.T) {
	testforge.Each(t, func(t *testing.T, fx testforge.Fixture) {
		w := newWorld(t, fx, mr.Options{})
		it, first := w.openMR("v1\n")

		w.submit(submission("v1\n"), mr.ResultUnchanged)
		if head := fx.BranchHead(t, w.repo, "wq/update-a"); head != first.HeadSHA {
			t.Errorf("an unchanged submission moved the branch: %s → %s", first.HeadSHA, head)
		}

		next := submission("v2\n")
		next.Title, next.Description = "Update a to v2", "Second try."
		w.submit(next, mr.ResultUpdated)
		_, second := w.waitFor(it.ID, "the new commit", func(it *wq.Item, d *mr.Detail) bool { return d.HeadSHA != first.HeadSHA && idle(it, d) })
		if second.MRNumber != first.MRNumber {
			t.Errorf("a new merge request %d, want the same %d", second.MRNumber, first.MRNumber)
		}
		if !w.onTopOfTarget(fx.BranchHead(t, w.repo, "main"), second.HeadSHA, "a.txt") {
			t.Error("the new commit is not one commit on top of the target: the branch was not force-updated")
		}
		pr := fx.MergeRequest(t, w.repo, second.MRNumber)
		if pr.Title != "Update a to v2" || pr.Description != mr.ManagedDescription(it.ID, "Second try.") || pr.HeadSHA != second.HeadSHA {
			t.Errorf("merge request not synced: %+v", pr)
		}
		if content, _ := fx.ReadFile(t, w.repo, "wq/update-a", "a.txt"); content != "v2\n" {
			t.Errorf("branch content %q", content)
		}

		// A title-only change syncs the merge request without a new commit.
		retitled := next
		retitled.Title = "Update a to v2, retitled"
		w.submit(retitled, mr.ResultUpdated)
		w.waitFor(it.ID, "the retitle", func(it *wq.Item, d *mr.Detail) bool {
			return idle(it, d) && fx.MergeRequest(t, w.repo, d.MRNumber).Title == retitled.Title
		})
		if head := fx.BranchHead(t, w.repo, "wq/update-a"); head != second.HeadSHA {
			t.Error("a title-only change pushed a new commit")
		}
	})
}

func TestLifecycleAChangeTheTargetAlreadyHoldsCompletesWithoutAMergeRequest(t *testing.T) {
	testforge.Each(t, func(t *testing.T, fx testforge.Fixture) {
		w := newWorld(t, fx, mr.Options{})
		sub := submission("")
		sub.FileActions = []mr.FileAction{{Action: mr.ActionUpdate, FilePath: "README.md", Content: text("# readme\n")}}
		it := w.submit(sub, mr.ResultCreated)
		got, d := w.waitTerminal(it.ID)
		wantEnded(t, got, wq.PhaseCompleted, mr.ReasonEmptyDiff)
		if d.MRNumber != 0 {
			t.Errorf("a merge request %d was opened for an empty diff", d.MRNumber)
		}
		if pr, _ := w.forge.FindMergeRequest(w.ctx, w.repo, sub.SourceBranch, "main"); pr != nil {
			t.Errorf("a merge request was opened: %+v", pr)
		}
		if head := fx.BranchHead(t, w.repo, sub.SourceBranch); head != "" {
			t.Errorf("the branch pushed to compare is still there at %s", head)
		}
	})
}

func TestLifecycleAMergeRequestMadeEmptyByAnotherChangeIsSuperseded(t *testing.T) {
	testforge.Each(t, func(t *testing.T, fx testforge.Fixture) {
		w := newWorld(t, fx, mr.Options{EmptyCheckInterval: 300 * time.Millisecond})
		it, d := w.openMR("shared\n")

		fx.Push(t, w.repo, "main", testforge.Write("a.txt", "shared\n"), testforge.Write("unrelated.txt", "x\n"))

		got, _ := w.waitTerminal(it.ID)
		wantEnded(t, got, wq.PhaseCompleted, mr.ReasonSuperseded)
		if pr := fx.MergeRequest(t, w.repo, d.MRNumber); pr.State != wq.MergeRequestClosed {
			t.Errorf("our merge request is %s, want closed", pr.State)
		}
		if notes := w.forge.notesOn(d.MRNumber); len(notes) == 0 || !strings.Contains(notes[len(notes)-1], "already holds this change") {
			t.Errorf("notes %q, want the closing note last", notes)
		}
		if head := fx.BranchHead(t, w.repo, "wq/update-a"); head != "" {
			t.Errorf("the superseded branch is still there at %s", head)
		}
	})
}

// A merge request a person closed cancels its item and keeps its branch;
// a retry reopens the same merge request.
func TestLifecycleAMergeRequestClosedByAPersonCancelsAndARetryReopensIt(t *testing.T) {
	testforge.Each(t, func(t *testing.T, fx testforge.Fixture) {
		w := newWorld(t, fx, mr.Options{})
		it, d := w.openMR("v1\n")
		fx.Close(t, w.repo, d.MRNumber)

		got, _ := w.waitTerminal(it.ID)
		wantEnded(t, got, wq.PhaseCancelled, mr.ReasonClosed)
		if head := fx.BranchHead(t, w.repo, d.SourceBranch); head != d.HeadSHA {
			t.Errorf("branch at %q, want kept at %s so that the merge request can be reopened", head, d.HeadSHA)
		}

		// The retry the service makes: needs_mr and needs_reconcile again.
		if _, err := w.store.RetryItem(w.ctx, it.ID, []wq.DimensionUpdate{
			{DimensionKey: wq.DimensionKey{Dimension: mr.DimMR}, Status: wq.StatusTrue},
			{DimensionKey: wq.DimensionKey{Dimension: mr.DimReconcile}, Status: wq.StatusTrue},
		}, time.Now()); err != nil {
			t.Fatal(err)
		}
		w.engine.Notify(mr.ItemType, it.ID)
		got, again := w.waitFor(it.ID, "the reopened merge request", func(it *wq.Item, d *mr.Detail) bool {
			return it.Phase.Terminal() || idle(it, d) && fx.MergeRequest(t, w.repo, d.MRNumber).State == wq.MergeRequestOpen
		})
		if got.Phase != wq.PhaseActive || again.MRNumber != d.MRNumber {
			t.Errorf("after the retry: item %s/%s (error %q) with merge request %d, want active with %d reopened",
				got.Phase, got.Reason, got.Error, again.MRNumber, d.MRNumber)
		}
	})
}

// A change the forge refuses for good (creating a file the target already
// has with other content) fails the item at the first attempt, naming the
// path and saying to update it, instead of being tried max_attempts times.
func TestLifecycleAChangeTheForgeRefusesFailsAtOnceWithItsMessage(t *testing.T) {
	testforge.Each(t, func(t *testing.T, fx testforge.Fixture) {
		w := newWorld(t, fx, mr.Options{})
		sub := submission("not the readme\n")
		sub.FileActions[0].FilePath = "README.md"
		it := w.submit(sub, mr.ResultCreated)
		got, _ := w.waitTerminal(it.ID)
		if got.Phase != wq.PhaseFailed || got.Attempts != 1 || !strings.Contains(got.Error, "create README.md") || !strings.Contains(got.Error, "update") {
			t.Errorf("item %s after %d attempts, error %q; want failed after 1 naming the path and update", got.Phase, got.Attempts, got.Error)
		}
		if head := fx.BranchHead(t, w.repo, sub.SourceBranch); head != "" {
			t.Errorf("a branch was written for a refused change: %s", head)
		}
	})
}

// On a fast-forward-only project, a target that moved before the merge
// leaves the merge request needing a rebase: the service pushes the same
// change again on the current target, and merges it.
func TestLifecycleAnAutoMergeWhoseTargetMovedIsRebuiltAndMerged(t *testing.T) {
	testforge.Each(t, func(t *testing.T, fx testforge.Fixture) {
		w := newWorld(t, fx, mr.Options{})
		fx.SetFastForwardOnly(t, w.repo)
		it, first := w.openMR("v1\n")
		moved := fx.Push(t, w.repo, "main", testforge.Write("unrelated.txt", "x\n"))

		w.project.AutoMerge = true // the same change, now to be merged
		w.submit(submission("v1\n"), mr.ResultUpdated)
		got, d := w.waitTerminal(it.ID)
		wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
		if d.HeadSHA == first.HeadSHA || d.MRNumber != first.MRNumber {
			t.Errorf("head %s on merge request %d; want a rebuilt head on the same merge request %d", d.HeadSHA, d.MRNumber, first.MRNumber)
		}
		if !w.onTopOfTarget(moved, d.HeadSHA, "a.txt") {
			t.Error("the rebuilt commit is not the change on top of the moved target")
		}
		if head := fx.BranchHead(t, w.repo, "main"); head != d.HeadSHA {
			t.Errorf("main at %s, want fast-forwarded to the rebuilt %s", head, d.HeadSHA)
		}
		for path, want := range map[string]string{"a.txt": "v1\n", "unrelated.txt": "x\n"} {
			if content, _ := fx.ReadFile(t, w.repo, "main", path); content != want {
				t.Errorf("main:%s = %q, want %q", path, content, want)
			}
		}
	})
}

func TestLifecycleCancelClosesTheMergeRequestWithANoteAndDeletesTheBranch(t *testing.T) {
	testforge.Each(t, func(t *testing.T, fx testforge.Fixture) {
		w := newWorld(t, fx, mr.Options{})
		it, d := w.openMR("v1\n")

		requestCancel(t, w.ctx, w.store, it.ID, "cancelled by e2e: not wanted", time.Now())
		w.engine.Notify(mr.ItemType, it.ID)

		got, _ := w.waitTerminal(it.ID)
		wantEnded(t, got, wq.PhaseCancelled, "cancelled by e2e: not wanted")
		if pr := fx.MergeRequest(t, w.repo, d.MRNumber); pr.State != wq.MergeRequestClosed {
			t.Errorf("merge request %s, want closed", pr.State)
		}
		if notes := w.forge.notesOn(d.MRNumber); len(notes) == 0 || notes[len(notes)-1] != "Closed by workqueue: cancelled by e2e: not wanted" {
			t.Errorf("notes %q, want the closing note last", notes)
		}
		if head := fx.BranchHead(t, w.repo, d.SourceBranch); head != "" {
			t.Errorf("the branch is still there at %s", head)
		}
	})
}

// GitLab's locked state is a merge in progress, not a closed merge
// request: the item stays active and merges once the lock is gone. Only
// the GitLab test server can lock a merge request on demand.
func TestLifecycleALockedMergeRequestLeavesTheItemActive(t *testing.T) {
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	srv.CreateProjectWith("group/project", "main", map[string]string{"README.md": "# readme\n"})
	f, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := startWorld(t, nil, wq.ForgeGitLab, f, "group/project", mr.Options{})
	it, d := w.openMR("v1\n")
	srv.SetMergeRequestState(w.repo, d.MRNumber, "locked")

	w.project.AutoMerge = true
	w.submit(submission("v1\n"), mr.ResultUpdated)
	w.waitFor(it.ID, "reconciles of the locked merge request", func(it *wq.Item, _ *mr.Detail) bool {
		row := it.Dimensions[wq.DimensionKey{Dimension: mr.DimReconcile}]
		return it.Phase.Terminal() || strings.Contains(string(row.Detail), `"blocker":"merging"`) && strings.Contains(string(row.Detail), `"wait":"400ms"`)
	})
	if got, _ := w.get(it.ID); got.Phase != wq.PhaseActive {
		t.Fatalf("item %s/%s (error %q) while its merge request is locked, want active", got.Phase, got.Reason, got.Error)
	}

	srv.SetMergeRequestState(w.repo, d.MRNumber, "opened")
	got, _ := w.waitTerminal(it.ID)
	wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
}

func (w *world) get(id wq.ItemID) (*wq.Item, *mr.Detail) {
	w.t.Helper()
	return getItem(w.t, w.store, id)
}
