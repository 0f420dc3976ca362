// Package forgetest is the conformance suite every Forge passes: the real
// Gitea of the test harness, and the GitLab adapter against a GitLab-shaped
// test server.
package forgetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Project is a fresh project on a forge, with a main branch holding
// README.md.
type Project struct {
	Forge wq.Forge
	Path  string // owner/name or group/name
	// Calls, when set, counts the HTTP requests the Forge made so far, so
	// that the suite can hold a method to a number of calls.
	Calls func() int64
	// People, when set, act on the project as people do; the work
	// inventory's cases need them and are skipped without.
	People People
	// WorkPageSize is the page size of the Forge's ListOpenWork: the
	// suite makes one issue more than a page.
	WorkPageSize int
	// Reviewing, when set, is an adapter of the same forge whose review
	// identity is a second account with write access to the project (its
	// ReviewToken); the cases of verdicts given are skipped without it.
	Reviewing wq.Forge
	// Comments, when set, reads the comments on an issue or a pull request
	// (kind wq.WorkIssue or wq.WorkPR) of the project as the forge shows
	// them; the comment cases read what they wrote back with it.
	Comments func(t testing.TB, kind string, number int64) []Comment
}

// Comment is a comment as the forge shows it.
type Comment struct {
	ID   int64
	Body string
}

// People act on a project as people do (internal/testforge.Fixture is
// one).
type People interface {
	OpenIssue(t testing.TB, project, title string, labels ...string) int64
	CloseIssue(t testing.TB, project string, number int64)
	// Review gives a verdict (wq.ReviewApproved, wq.ReviewChangesRequested)
	// as a reviewer who is not the merge request's author.
	Review(t testing.TB, project string, number int64, verdict string)
}

// Run runs the suite. newProject makes a fresh project for each test.
func Run(t *testing.T, newProject func(t *testing.T) Project) {
	runWork(t, newProject)
	runActions(t, newProject)
	ctx := context.Background()
	change := func(action, path, content string) wq.FileChange {
		c := wq.FileChange{Action: action, Path: path}
		if content != "" || action == "create" || action == "update" {
			c.Content = []byte(content)
		}
		return c
	}
	commit := func(t *testing.T, p Project, branch string, changes ...wq.FileChange) wq.Commit {
		t.Helper()
		c, err := p.Forge.CommitFiles(ctx, wq.CommitRequest{Project: p.Path, Base: "main", Branch: branch,
			Message: "workqueue test", Changes: changes})
		if err != nil {
			t.Fatalf("CommitFiles: %v", err)
		}
		if c.SHA == "" {
			t.Fatal("CommitFiles returned no SHA")
		}
		return c
	}
	read := func(t *testing.T, p Project, ref, path string) (string, bool) {
		t.Helper()
		b, found, err := p.Forge.ReadFile(ctx, p.Path, ref, path)
		if err != nil {
			t.Fatalf("ReadFile %s:%s: %v", ref, path, err)
		}
		return string(b), found
	}
	// wantFiles checks a branch: each present path holds its content, no
	// absent path exists.
	wantFiles := func(t *testing.T, p Project, branch string, present map[string]string, absent ...string) {
		t.Helper()
		for path, want := range present {
			if got, found := read(t, p, branch, path); !found || got != want {
				t.Errorf("%s:%s = %q (found: %t), want %q", branch, path, got, found, want)
			}
		}
		for _, path := range absent {
			if _, found := read(t, p, branch, path); found {
				t.Errorf("%s:%s is still there", branch, path)
			}
		}
	}
	// seed commits changes to a branch and merges it, so that main holds them.
	seed := func(t *testing.T, p Project, changes ...wq.FileChange) {
		t.Helper()
		commit(t, p, "wq/seed", changes...)
		if err := mergeNow(ctx, p, "wq/seed"); err != nil {
			t.Fatalf("merge the seed: %v", err)
		}
	}

	t.Run("a commit lands on a new branch on top of the base", func(t *testing.T) {
		p := newProject(t)
		c := commit(t, p, "wq/one", change("create", "a.txt", "alpha\n"), change("create", "dir/b.txt", "beta\n"))
		head, err := p.Forge.BranchHead(ctx, p.Path, "wq/one")
		if err != nil || head != c.SHA {
			t.Fatalf("BranchHead = %q, %v; want %q", head, err, c.SHA)
		}
		if got, _ := read(t, p, "wq/one", "dir/b.txt"); got != "beta\n" {
			t.Errorf("dir/b.txt = %q", got)
		}
		if _, found := read(t, p, "main", "a.txt"); found {
			t.Error("the base branch changed")
		}
		if got, found := read(t, p, "wq/one", "README.md"); !found || got == "" {
			t.Error("the branch does not hold the base's files")
		}
	})

	t.Run("committing again replaces the branch's commit instead of stacking on it", func(t *testing.T) {
		p := newProject(t)
		first := commit(t, p, "wq/two", change("create", "a.txt", "first\n"))
		second := commit(t, p, "wq/two", change("create", "b.txt", "second\n"))
		if first.SHA == second.SHA {
			t.Fatal("the second commit has the first one's SHA")
		}
		if _, found := read(t, p, "wq/two", "a.txt"); found {
			t.Error("the first commit is still on the branch: commits stacked instead of one on top of the base")
		}
		if got, _ := read(t, p, "wq/two", "b.txt"); got != "second\n" {
			t.Errorf("b.txt = %q", got)
		}
	})

	t.Run("update, delete and move change the files they name", func(t *testing.T) {
		p := newProject(t)
		seed(t, p, change("create", "keep.txt", "v1\n"), change("create", "gone.txt", "x\n"), change("create", "old.txt", "moved\n"))
		commit(t, p, "wq/edit", change("update", "keep.txt", "v2\n"), change("delete", "gone.txt", ""),
			wq.FileChange{Action: "move", Path: "new.txt", PreviousPath: "old.txt"})
		wantFiles(t, p, "wq/edit", map[string]string{"keep.txt": "v2\n", "new.txt": "moved\n"}, "gone.txt", "old.txt")
	})

	t.Run("a commit's changes list every path it touched and nothing else", func(t *testing.T) {
		p := newProject(t)
		seed(t, p, change("create", "keep.txt", "v1\n"), change("create", "gone.txt", "x\n"),
			change("create", "old.txt", "moved\n"), change("create", "same.txt", "same\n"))
		c := commit(t, p, "wq/edit", change("update", "keep.txt", "v2\n"), change("delete", "gone.txt", ""),
			wq.FileChange{Action: "move", Path: "dir/new.txt", PreviousPath: "old.txt"}, change("create", "added.txt", "a\n"),
			change("update", "same.txt", "same\n"))
		got, err := p.Forge.CommitChanges(ctx, p.Path, c.SHA)
		if err != nil {
			t.Fatalf("CommitChanges: %v", err)
		}
		slices.SortFunc(got, func(a, b wq.PathChange) int { return strings.Compare(a.Path, b.Path) })
		want := []wq.PathChange{{Path: "added.txt", Status: wq.PathAdded, Mode: wq.ModeFile}, {Path: "dir/new.txt", Status: wq.PathAdded, Mode: wq.ModeFile},
			{Path: "gone.txt", Status: wq.PathRemoved}, {Path: "keep.txt", Status: wq.PathModified, Mode: wq.ModeFile}, {Path: "old.txt", Status: wq.PathRemoved}}
		if !slices.Equal(got, want) {
			t.Errorf("CommitChanges = %v, want %v (an update to the same content changes nothing; each path written with its mode)", got, want)
		}
		_, err = p.Forge.CommitChanges(ctx, p.Path, strings.Repeat("0", 40))
		wantKind(t, err, wq.ForgeNotFound)
	})

	t.Run("a tree is read whole, recursively, with directories and modes, past one page", func(t *testing.T) {
		p := newProject(t)
		var files []wq.FileChange
		for i := range 120 { // more than GitLab's largest page
			files = append(files, change("create", fmt.Sprintf("d%d/sub/f%03d.txt", i%3, i), "x\n"))
		}
		c := commit(t, p, "wq/tree", files...)
		var calls int64
		if p.Calls != nil {
			calls = p.Calls()
		}
		entries, err := p.Forge.ReadTree(ctx, p.Path, c.SHA)
		if err != nil {
			t.Fatalf("ReadTree: %v", err)
		}
		modes := map[string]string{}
		for _, e := range entries {
			if _, dup := modes[e.Path]; dup {
				t.Errorf("%s is listed twice", e.Path)
			}
			modes[e.Path] = e.Mode
		}
		// README.md, 3 directories d*, 3 d*/sub and 120 files.
		if len(modes) != 1+3+3+120 {
			t.Errorf("ReadTree listed %d entries, want %d", len(modes), 1+3+3+120)
		}
		for path, want := range map[string]string{"README.md": wq.ModeFile, "d0": wq.ModeDir, "d2/sub": wq.ModeDir, "d1/sub/f001.txt": wq.ModeFile} {
			if modes[path] != want {
				t.Errorf("%s has mode %q, want %q", path, modes[path], want)
			}
		}
		if p.Calls != nil {
			if n := p.Calls() - calls; n > 3 {
				t.Errorf("ReadTree of 127 entries made %d calls, want at most 3", n)
			}
		}
		if byBranch, err := p.Forge.ReadTree(ctx, p.Path, "wq/tree"); err != nil || len(byBranch) != len(entries) {
			t.Errorf("ReadTree by branch: %d entries, %v; want %d", len(byBranch), err, len(entries))
		}
		_, err = p.Forge.ReadTree(ctx, p.Path, "no-such-branch")
		wantKind(t, err, wq.ForgeNotFound)
	})

	t.Run("missing things are classified as not found", func(t *testing.T) {
		p := newProject(t)
		_, err := p.Forge.CommitFiles(ctx, wq.CommitRequest{Project: p.Path, Base: "no-such-base", Branch: "wq/x",
			Message: "m", Changes: []wq.FileChange{change("create", "a", "a")}})
		wantKind(t, err, wq.ForgeNotFound)
		_, err = p.Forge.BranchHead(ctx, p.Path, "no-such-branch")
		wantKind(t, err, wq.ForgeNotFound)
		_, err = p.Forge.GetMergeRequest(ctx, p.Path, 9999)
		wantKind(t, err, wq.ForgeNotFound)
		if err := p.Forge.DeleteBranch(ctx, p.Path, "no-such-branch"); err != nil {
			t.Errorf("deleting a missing branch: %v", err)
		}
		if _, found := read(t, p, "main", "no/such/file"); found {
			t.Error("a missing file was found")
		}
		if mr, err := p.Forge.FindMergeRequest(ctx, p.Path, "no-such-branch", "main"); err != nil || mr != nil {
			t.Errorf("FindMergeRequest for a branch without one = %+v, %v", mr, err)
		}
	})

	t.Run("a merge request is created with its label, found, edited, closed and reopened", func(t *testing.T) {
		p := newProject(t)
		c := commit(t, p, "wq/mr", change("create", "a.txt", "a\n"))
		mr, err := p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: "wq/mr", TargetBranch: "main",
			Title: "Add a", Description: "Because.", Labels: []string{"managed-by-workqueue"}})
		if err != nil {
			t.Fatal(err)
		}
		if mr.Number == 0 || mr.URL == "" || mr.State != wq.MergeRequestOpen || mr.SourceBranch != "wq/mr" || mr.TargetBranch != "main" {
			t.Errorf("created %+v", mr)
		}
		got, err := p.Forge.GetMergeRequest(ctx, p.Path, mr.Number)
		if err != nil {
			t.Fatal(err)
		}
		if got.HeadSHA != c.SHA || got.Title != "Add a" || got.Description != "Because." || len(got.Labels) != 1 || got.Labels[0] != "managed-by-workqueue" {
			t.Errorf("read back %+v", got)
		}
		_, err = p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: "wq/mr", TargetBranch: "main", Title: "again"})
		wantKind(t, err, wq.ForgeConflict)
		found, err := p.Forge.FindMergeRequest(ctx, p.Path, "wq/mr", "main")
		if err != nil || found == nil || found.Number != mr.Number {
			t.Fatalf("FindMergeRequest = %+v, %v", found, err)
		}
		if from, err := p.Forge.OpenMergeRequestsFrom(ctx, p.Path, "wq/mr"); err != nil || len(from) != 1 || from[0].Number != mr.Number || from[0].TargetBranch != "main" {
			t.Errorf("OpenMergeRequestsFrom = %+v, %v; want the one open merge request", from, err)
		}
		if from, err := p.Forge.OpenMergeRequestsFrom(ctx, p.Path, "no-such-branch"); err != nil || len(from) != 0 {
			t.Errorf("OpenMergeRequestsFrom a branch without one = %+v, %v", from, err)
		}
		title, desc, closed, open := "Add a, better", "Because, really.", wq.MergeRequestClosed, wq.MergeRequestOpen
		if got, err = p.Forge.UpdateMergeRequest(ctx, p.Path, mr.Number, wq.MergeRequestUpdate{Title: &title, Description: &desc}); err != nil ||
			got.Title != title || got.Description != desc {
			t.Errorf("edit: %+v, %v", got, err)
		}
		if got, err = p.Forge.UpdateMergeRequest(ctx, p.Path, mr.Number, wq.MergeRequestUpdate{State: &closed}); err != nil || got.State != wq.MergeRequestClosed {
			t.Errorf("close: %+v, %v", got, err)
		}
		if got, err = p.Forge.UpdateMergeRequest(ctx, p.Path, mr.Number, wq.MergeRequestUpdate{State: &open}); err != nil || got.State != wq.MergeRequestOpen {
			t.Errorf("reopen: %+v, %v", got, err)
		}
		id, err := p.Forge.CreateNote(ctx, p.Path, mr.Number, "workqueue is on it")
		if err != nil || id == 0 {
			t.Fatalf("CreateNote = %d, %v", id, err)
		}
		if err := p.Forge.UpdateNote(ctx, p.Path, mr.Number, id, "workqueue: done"); err != nil {
			t.Errorf("UpdateNote: %v", err)
		}
	})

	t.Run("a project's webhook is ensured once and the project is listed", func(t *testing.T) {
		p := newProject(t)
		projects, err := p.Forge.ListProjects(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listed := false
		for _, path := range projects {
			listed = listed || path == p.Path
		}
		if !listed {
			t.Errorf("ListProjects = %v, want it to hold %s", projects, p.Path)
		}
		url := "http://127.0.0.1:8080/webhooks/test"
		if got, err := p.Forge.EnsureWebhook(ctx, p.Path, url, "secret"); err != nil || got != wq.WebhookCreated {
			t.Fatalf("first EnsureWebhook: %q, %v; want created", got, err)
		}
		if got, err := p.Forge.EnsureWebhook(ctx, p.Path, url, "secret"); err != nil || got != wq.WebhookFound {
			t.Errorf("second EnsureWebhook: %q, %v; want found", got, err)
		}
		if got, err := p.Forge.EnsureWebhook(ctx, p.Path, url+"/other", "secret"); err != nil || got != wq.WebhookCreated {
			t.Errorf("EnsureWebhook to another URL: %q, %v; want created", got, err)
		}
	})

	t.Run("trees are compared tree against tree, in as many calls whatever the number of paths", func(t *testing.T) {
		p := newProject(t)
		compare := func(t *testing.T, base, head string) []wq.PathChange {
			t.Helper()
			got, err := p.Forge.CompareTrees(ctx, p.Path, base, head)
			if err != nil {
				t.Fatalf("CompareTrees %s..%s: %v", base, head, err)
			}
			slices.SortFunc(got, func(a, b wq.PathChange) int { return strings.Compare(a.Path, b.Path) })
			return got
		}
		seed(t, p, change("create", "keep.txt", "v1\n"), change("create", "gone.txt", "x\n"),
			change("create", "old.txt", "moved\n"), change("create", "same.txt", "same\n"))
		edit := []wq.FileChange{change("update", "keep.txt", "v2\n"), change("delete", "gone.txt", ""),
			{Action: "move", Path: "dir/new.txt", PreviousPath: "old.txt"}, change("create", "added.txt", "a\n"),
			change("update", "same.txt", "same\n")}
		commit(t, p, "wq/edit", edit...)
		ours := []wq.PathChange{{Path: "added.txt", Status: wq.PathAdded}, {Path: "dir/new.txt", Status: wq.PathAdded},
			{Path: "gone.txt", Status: wq.PathRemoved}, {Path: "keep.txt", Status: wq.PathModified}, {Path: "old.txt", Status: wq.PathRemoved}}
		var before int64
		if p.Calls != nil {
			before = p.Calls()
		}
		if got := compare(t, "main", "wq/edit"); !slices.Equal(got, ours) {
			t.Errorf("main..wq/edit = %v, want %v (an update to the same content differs in nothing)", got, ours)
		}
		if p.Calls != nil {
			many := p.Calls() - before
			commit(t, p, "wq/small", change("create", "one.txt", "1\n"))
			before = p.Calls()
			if got := compare(t, "main", "wq/small"); !slices.Equal(got, []wq.PathChange{{Path: "one.txt", Status: wq.PathAdded}}) {
				t.Errorf("main..wq/small = %v", got)
			}
			if one := p.Calls() - before; one != many || many > 2 {
				t.Errorf("CompareTrees made %d calls for five paths and %d for one: want the same, at most two", many, one)
			}
		}
		// The target moves on its own. Tree against tree, the branch now
		// also lacks what the target gained; a compare from the merge base
		// would hide it.
		commit(t, p, "wq/other", change("create", "other.txt", "o\n"))
		if err := mergeNow(ctx, p, "wq/other"); err != nil {
			t.Fatalf("merge the other change: %v", err)
		}
		withOther := append(slices.Clone(ours), wq.PathChange{Path: "other.txt", Status: wq.PathRemoved})
		if got := compare(t, "main", "wq/edit"); !slices.Equal(got, withOther) {
			t.Errorf("after the target moved, main..wq/edit = %v, want %v", got, withOther)
		}
		// Rebuilt on the moved target, only the branch's own paths differ.
		c := commit(t, p, "wq/edit", edit...)
		if got := compare(t, "main", c.SHA); !slices.Equal(got, ours) {
			t.Errorf("rebuilt, main..%s = %v, want %v", c.SHA, got, ours)
		}
		// The other way round, added and removed swap.
		back := compare(t, "wq/edit", "main")
		want := []wq.PathChange{{Path: "added.txt", Status: wq.PathRemoved}, {Path: "dir/new.txt", Status: wq.PathRemoved},
			{Path: "gone.txt", Status: wq.PathAdded}, {Path: "keep.txt", Status: wq.PathModified}, {Path: "old.txt", Status: wq.PathAdded}}
		if !slices.Equal(back, want) {
			t.Errorf("wq/edit..main = %v, want %v", back, want)
		}
		if got := compare(t, "wq/edit", c.SHA); len(got) != 0 {
			t.Errorf("a tree against itself = %v, want nothing", got)
		}
		_, err := p.Forge.CompareTrees(ctx, p.Path, "main", "no-such-branch")
		wantKind(t, err, wq.ForgeNotFound)
	})

	t.Run("a merge request says what blocks it and where its branch started", func(t *testing.T) {
		p := newProject(t)
		forked, err := p.Forge.BranchHead(ctx, p.Path, "main")
		if err != nil {
			t.Fatal(err)
		}
		commit(t, p, "wq/mb", change("create", "mb.txt", "ours\n"))
		mr, err := p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: "wq/mb", TargetBranch: "main", Title: "mb"})
		if err != nil {
			t.Fatal(err)
		}
		got := waitBlocker(t, p, mr.Number, wq.MergeClear)
		if !got.Mergeable || got.MergeBase != forked {
			t.Errorf("fresh: mergeable %v, merge base %q; want mergeable from %q", got.Mergeable, got.MergeBase, forked)
		}
		// The target moves: the branch still starts where it did.
		commit(t, p, "wq/other", change("create", "other.txt", "o\n"))
		if err := mergeNow(ctx, p, "wq/other"); err != nil {
			t.Fatalf("move the target: %v", err)
		}
		moved, err := p.Forge.BranchHead(ctx, p.Path, "main")
		if err != nil {
			t.Fatal(err)
		}
		got = waitBlocker(t, p, mr.Number, wq.MergeClear)
		if got.MergeBase != forked || got.MergeBase == moved {
			t.Errorf("after the target moved, merge base %q; want %q, not the target's head %q", got.MergeBase, forked, moved)
		}
		// A change to the same file lands on the target.
		commit(t, p, "wq/clash", change("create", "mb.txt", "theirs\n"))
		if err := mergeNow(ctx, p, "wq/clash"); err != nil {
			t.Fatalf("land the clash: %v", err)
		}
		if p.Forge.Kind() == wq.ForgeGitea {
			// Gitea's API says only "not mergeable": a conflict looks like a
			// check still running (see forge/gitea).
			got = waitBlocker(t, p, mr.Number, wq.MergeChecking)
		} else {
			got = waitBlocker(t, p, mr.Number, wq.MergeConflict)
		}
		if got.Mergeable {
			t.Errorf("a conflicting merge request is mergeable: %+v", got)
		}
		closed := wq.MergeRequestClosed
		if got, err = p.Forge.UpdateMergeRequest(ctx, p.Path, mr.Number, wq.MergeRequestUpdate{State: &closed}); err != nil ||
			got.Blocker != wq.MergeOther || got.Mergeable {
			t.Errorf("closed: %+v, %v; want blocked by something other than the branch", got, err)
		}
	})

	t.Run("a merge is pinned to the head SHA", func(t *testing.T) {
		p := newProject(t)
		c := commit(t, p, "wq/merge", change("create", "m.txt", "merged\n"))
		mr, err := p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: "wq/merge", TargetBranch: "main", Title: "m"})
		if err != nil {
			t.Fatal(err)
		}
		waitMergeable(t, p, mr.Number)
		err = p.Forge.MergeMergeRequest(ctx, p.Path, mr.Number, "0000000000000000000000000000000000000000")
		wantKind(t, err, wq.ForgeConflict)
		// A refused merge makes Gitea recompute mergeability; until it is
		// done it answers "try again later" (Unprocessable), which callers
		// retry, as reconcile_mr does.
		for deadline := time.Now().Add(30 * time.Second); ; {
			err := p.Forge.MergeMergeRequest(ctx, p.Path, mr.Number, c.SHA)
			if err == nil {
				break
			}
			if !wq.IsForgeError(err, wq.ForgeUnprocessable) || time.Now().After(deadline) {
				t.Fatalf("merge at the head: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		got, err := p.Forge.GetMergeRequest(ctx, p.Path, mr.Number)
		if err != nil || got.State != wq.MergeRequestMerged {
			t.Fatalf("after merge: %+v, %v", got, err)
		}
		if content, _ := read(t, p, "main", "m.txt"); content != "merged\n" {
			t.Errorf("main:m.txt = %q", content)
		}
	})
}

// runWork is the work inventory's part of the suite.
func runWork(t *testing.T, newProject func(t *testing.T) Project) {
	ctx := context.Background()
	people := projectHaving(newProject, func(p Project) bool { return p.People != nil }, "no people to act on this forge")
	list := func(t *testing.T, p Project) map[string]wq.WorkInfo {
		t.Helper()
		work, err := p.Forge.ListOpenWork(ctx, p.Path)
		if err != nil {
			t.Fatalf("ListOpenWork: %v", err)
		}
		out := map[string]wq.WorkInfo{}
		for _, w := range work {
			key := fmt.Sprintf("%s %d", w.Kind, w.Number)
			if _, dup := out[key]; dup {
				t.Errorf("%s listed twice", key)
			}
			out[key] = w
		}
		return out
	}
	pr := func(n int64) string { return fmt.Sprintf("%s %d", wq.WorkPR, n) }
	issue := func(n int64) string { return fmt.Sprintf("%s %d", wq.WorkIssue, n) }

	t.Run("open issues and pull requests are listed with what routing reads, closed ones are not", func(t *testing.T) {
		p := people(t)
		bug := p.People.OpenIssue(t, p.Path, "Broken", "bug")
		gone := p.People.OpenIssue(t, p.Path, "Done already")
		p.People.CloseIssue(t, p.Path, gone)
		mr, c := openPR(t, p, "wq/fix", fmt.Sprintf("Fixes #%d.", bug), "managed")
		closedMR, _ := openPR(t, p, "wq/dropped", "")
		closed := wq.MergeRequestClosed
		if _, err := p.Forge.UpdateMergeRequest(ctx, p.Path, closedMR.Number, wq.MergeRequestUpdate{State: &closed}); err != nil {
			t.Fatal(err)
		}
		got := list(t, p)
		if len(got) != 2 {
			t.Errorf("listed %v, want the open issue and the open pull request only", got)
		}
		is, ok := got[issue(bug)]
		if !ok || is.State != wq.MergeRequestOpen || is.Title != "Broken" || !slices.Equal(is.Labels, []string{"bug"}) ||
			is.Author == "" || is.UpdatedAt.IsZero() || is.HeadSHA != "" || is.ReviewState != "" {
			t.Errorf("the issue: %+v (listed: %v)", is, ok)
		}
		w, ok := got[pr(mr.Number)]
		if !ok || w.State != wq.MergeRequestOpen || w.Title != "Work on wq/fix" || !slices.Equal(w.Labels, []string{"managed"}) || w.URL != mr.URL ||
			w.Author == "" || w.HeadSHA != c.SHA || w.ReviewState != wq.ReviewNone || !slices.Equal(w.LinkedIssues, []int64{bug}) ||
			w.UpdatedAt.IsZero() {
			t.Errorf("the pull request: %+v (listed: %v)", w, ok)
		}
		waitMergeable(t, p, mr.Number)
		if w := list(t, p)[pr(mr.Number)]; !w.Mergeable {
			t.Errorf("once the forge says it merges, the listed pull request is not mergeable: %+v", w)
		}
		if got, err := p.Forge.GetWork(ctx, p.Path, wq.WorkIssue, gone); err != nil || got.State != wq.MergeRequestClosed || got.Title != "Done already" {
			t.Errorf("GetWork of the closed issue = %+v, %v", got, err)
		}
		if got, err := p.Forge.GetWork(ctx, p.Path, wq.WorkPR, closedMR.Number); err != nil || got.State != wq.MergeRequestClosed || got.Kind != wq.WorkPR {
			t.Errorf("GetWork of the closed pull request = %+v, %v", got, err)
		}
		_, err := p.Forge.GetWork(ctx, p.Path, wq.WorkIssue, 9999)
		wantKind(t, err, wq.ForgeNotFound)
		_, err = p.Forge.GetWork(ctx, p.Path, wq.WorkPR, 9999)
		wantKind(t, err, wq.ForgeNotFound)
	})

	t.Run("an issue the service opens is work with its labels and web page, listed and read back", func(t *testing.T) {
		p := newProject(t)
		got, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path, Title: "Disk full on db-1",
			Body: "Sentry: disk usage above 95%", Labels: []string{"sev2", "incident"}})
		if err != nil {
			t.Fatalf("CreateIssue: %v", err)
		}
		labels := slices.Sorted(slices.Values(got.Labels))
		if got.Kind != wq.WorkIssue || got.Number <= 0 || got.State != wq.MergeRequestOpen || got.Title != "Disk full on db-1" ||
			!slices.Equal(labels, []string{"incident", "sev2"}) || got.Author == "" || got.UpdatedAt.IsZero() ||
			!strings.HasPrefix(got.URL, "http") || !strings.HasSuffix(got.URL, fmt.Sprintf("/issues/%d", got.Number)) {
			t.Errorf("CreateIssue = %+v", got)
		}
		listed, ok := list(t, p)[issue(got.Number)]
		if !ok || listed.URL != got.URL || listed.Title != got.Title || !slices.Equal(slices.Sorted(slices.Values(listed.Labels)), labels) {
			t.Errorf("listed: %+v (listed: %v); want it as CreateIssue answered: %+v", listed, ok, got)
		}
		if read, err := p.Forge.GetWork(ctx, p.Path, wq.WorkIssue, got.Number); err != nil || read.URL != got.URL {
			t.Errorf("GetWork = %+v, %v; want URL %s", read, err, got.URL)
		}
		second, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path, Title: "Queue stalled", Labels: []string{"incident"}})
		if err != nil || second.Number == got.Number || !slices.Equal(second.Labels, []string{"incident"}) {
			t.Errorf("a second issue with a label the first made = %+v, %v", second, err)
		}
	})

	t.Run("an issue is not opened without a title or on a missing project", func(t *testing.T) {
		p := newProject(t)
		_, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path, Title: " ", Labels: []string{"incident"}})
		wantKind(t, err, wq.ForgePermanent)
		for _, labels := range [][]string{nil, {"incident"}} {
			_, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path + "-missing", Title: "t", Labels: labels})
			wantKind(t, err, wq.ForgeNotFound)
		}
		if got := list(t, p); len(got) != 0 {
			t.Errorf("listed %v after refusals", got)
		}
	})

	t.Run("a pull request's verdict is its reviewers' latest, changes requested first", func(t *testing.T) {
		p := people(t)
		mr, _ := openPR(t, p, "wq/review", "")
		waitMergeable(t, p, mr.Number) // GitLab says requested_changes only once its checks ran
		verdict := func(t *testing.T) string {
			t.Helper()
			listed := list(t, p)[pr(mr.Number)].ReviewState
			read, err := p.Forge.GetWork(ctx, p.Path, wq.WorkPR, mr.Number)
			if err != nil || read.ReviewState != listed {
				t.Errorf("GetWork = %+v, %v; want the verdict ListOpenWork gives, %q", read, err, listed)
			}
			return listed
		}
		p.People.Review(t, p.Path, mr.Number, wq.ReviewChangesRequested)
		if got := verdict(t); got != wq.ReviewChangesRequested {
			t.Errorf("after changes were requested: %q", got)
		}
		p.People.Review(t, p.Path, mr.Number, wq.ReviewApproved) // the same reviewer, satisfied
		if got := verdict(t); got != wq.ReviewApproved {
			t.Errorf("after the reviewer approved: %q", got)
		}
	})

	t.Run("every page is listed, and a pull request costs one more call", func(t *testing.T) {
		p := people(t)
		if p.WorkPageSize == 0 {
			t.Skip("the page size is not known")
		}
		want := map[string]bool{}
		for i := range p.WorkPageSize + 1 {
			want[issue(p.People.OpenIssue(t, p.Path, fmt.Sprintf("Issue %d", i)))] = true
		}
		one, _ := openPR(t, p, "wq/one", "")
		want[pr(one.Number)] = true
		count := func() int64 {
			if p.Calls == nil {
				return 0
			}
			return p.Calls()
		}
		before := count()
		got := list(t, p)
		withOne := count() - before
		for k := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("%s is not listed", k)
			}
		}
		if len(got) != len(want) {
			t.Errorf("listed %d, want %d", len(got), len(want))
		}
		if p.Calls != nil {
			two, _ := openPR(t, p, "wq/two", "")
			before = count()
			if got := list(t, p); len(got) != len(want)+1 {
				t.Errorf("listed %d after a second pull request, want %d", len(got), len(want)+1)
			}
			if more := count() - before - withOne; more != 1 {
				t.Errorf("a second open pull request (%d) cost %d more calls, want 1", two.Number, more)
			}
		}
	})
}

// openPR commits branch.txt to a new branch and opens a pull request
// from it, titled "Work on " and the branch.
func openPR(t *testing.T, p Project, branch, description string, labels ...string) (*wq.MergeRequest, wq.Commit) {
	t.Helper()
	ctx := context.Background()
	c, err := p.Forge.CommitFiles(ctx, wq.CommitRequest{Project: p.Path, Base: "main", Branch: branch, Message: "work",
		Changes: []wq.FileChange{{Action: "create", Path: branch + ".txt", Content: []byte(branch + "\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: branch, TargetBranch: "main",
		Title: "Work on " + branch, Description: description, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	return mr, c
}

// waitMergeable polls until the forge has computed mergeability: both
// forges do it asynchronously after a push.
func waitMergeable(t *testing.T, p Project, number int64) {
	t.Helper()
	waitFor(t, p, number, "mergeable", func(mr *wq.MergeRequest) bool { return mr.Mergeable })
}

// waitBlocker polls until the merge request's blocker is want and returns
// the merge request.
func waitBlocker(t *testing.T, p Project, number int64, want wq.MergeBlocker) *wq.MergeRequest {
	t.Helper()
	return waitFor(t, p, number, fmt.Sprintf("blocked by %q", want), func(mr *wq.MergeRequest) bool { return mr.Blocker == want })
}

// waitFor reads the merge request until done says it is as wanted, for up
// to 30s, and returns it.
func waitFor(t *testing.T, p Project, number int64, what string, done func(*wq.MergeRequest) bool) *wq.MergeRequest {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mr, err := p.Forge.GetMergeRequest(context.Background(), p.Path, number)
		if err != nil {
			t.Fatal(err)
		}
		if done(mr) {
			return mr
		}
		if time.Now().After(deadline) {
			t.Fatalf("merge request %d never became %s: %+v", number, what, mr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// projectHaving makes projects as newProject does, and skips the test,
// saying why, when the project lacks what has looks for.
func projectHaving(newProject func(t *testing.T) Project, has func(Project) bool, why string) func(t *testing.T) Project {
	return func(t *testing.T) Project {
		t.Helper()
		p := newProject(t)
		if !has(p) {
			t.Skip(why)
		}
		return p
	}
}

// mergeNow opens a merge request for branch and merges it.
func mergeNow(ctx context.Context, p Project, branch string) error {
	mr, err := p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: branch, TargetBranch: "main", Title: "seed"})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := p.Forge.GetMergeRequest(ctx, p.Path, mr.Number)
		if err != nil {
			return err
		}
		if got.Mergeable {
			err := p.Forge.MergeMergeRequest(ctx, p.Path, mr.Number, got.HeadSHA)
			if !wq.IsForgeError(err, wq.ForgeUnprocessable) {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("merge request %d never became mergeable", mr.Number)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantKind fails the test unless err is a forge error of kind k.
func wantKind(t *testing.T, err error, k wq.ForgeErrorKind) {
	t.Helper()
	got, ok := wq.ForgeErrorOf(err)
	if !ok || got != k {
		t.Fatalf("error %v: want a %s forge error", err, k)
	}
}
