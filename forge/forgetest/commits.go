package forgetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

// runCommits is the part of the suite about commits, files and trees.
func runCommits(t *testing.T, newProject func(t *testing.T) Project) {
	ctx := context.Background()
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

	t.Run("trees are compared tree against tree on the paths asked about", func(t *testing.T) {
		p := newProject(t)
		// Every path the cases below touch, other.txt included.
		paths := []string{"keep.txt", "gone.txt", "old.txt", "same.txt", "dir/new.txt", "added.txt", "other.txt"}
		compare := func(t *testing.T, base, head string) []wq.PathChange {
			t.Helper()
			got, err := p.Forge.CompareTrees(ctx, p.Path, base, head, paths)
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
			change("update", "same.txt", "same\n"), change("create", "unasked.txt", "u\n")}
		commit(t, p, "wq/edit", edit...)
		ours := []wq.PathChange{{Path: "added.txt", Status: wq.PathAdded}, {Path: "dir/new.txt", Status: wq.PathAdded},
			{Path: "gone.txt", Status: wq.PathRemoved}, {Path: "keep.txt", Status: wq.PathModified}, {Path: "old.txt", Status: wq.PathRemoved}}
		if got := compare(t, "main", "wq/edit"); !slices.Equal(got, ours) {
			t.Errorf("main..wq/edit = %v, want %v (an update to the same content differs in nothing; unasked.txt was not asked about)", got, ours)
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
		edit = edit[:len(edit)-1]
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
		_, err := p.Forge.CompareTrees(ctx, p.Path, "main", "no-such-branch", paths)
		wantKind(t, err, wq.ForgeNotFound)
	})

	t.Run("a tree is walked a directory at a time, where asked and nowhere else, past one page", func(t *testing.T) {
		p := newProject(t)
		files := []wq.FileChange{change("create", "d0/sub/f.txt", "f\n"), change("create", "d1/sub/g.txt", "g\n"),
			change("create", "Docs/x.md", "x\n")}
		for i := range 120 { // more than GitLab's largest page, in one directory
			files = append(files, change("create", fmt.Sprintf("big/f%03d.txt", i), "x\n"))
		}
		c := commit(t, p, "wq/walk", files...)
		var asked []string
		entries, err := p.Forge.WalkTree(ctx, p.Path, c.SHA, func(dir string) bool {
			asked = append(asked, dir)
			return dir == "big" || dir == "d0" || dir == "d0/sub"
		})
		if err != nil {
			t.Fatalf("WalkTree: %v", err)
		}
		modes := map[string]string{}
		for _, e := range entries {
			if _, dup := modes[e.Path]; dup {
				t.Errorf("%s is listed twice", e.Path)
			}
			modes[e.Path] = e.Mode
		}
		// The root (README.md, big, d0, d1, Docs), big's 120 files, d0/sub
		// and d0/sub/f.txt; nothing under d1 or Docs.
		if len(modes) != 5+120+2 {
			t.Errorf("WalkTree listed %d entries, want %d: %v", len(modes), 5+120+2, slices.Sorted(maps.Keys(modes)))
		}
		for path, want := range map[string]string{"README.md": wq.ModeFile, "big": wq.ModeDir, "d1": wq.ModeDir, "Docs": wq.ModeDir,
			"big/f119.txt": wq.ModeFile, "d0/sub": wq.ModeDir, "d0/sub/f.txt": wq.ModeFile} {
			if modes[path] != want {
				t.Errorf("%s has mode %q, want %q", path, modes[path], want)
			}
		}
		for _, path := range []string{"d1/sub", "Docs/x.md"} {
			if _, ok := modes[path]; ok {
				t.Errorf("%s was listed: its directory was not asked for", path)
			}
		}
		slices.Sort(asked)
		if want := []string{"Docs", "big", "d0", "d0/sub", "d1"}; !slices.Equal(asked, want) {
			t.Errorf("descend was asked about %v, want the directories of the directories listed, %v", asked, want)
		}
		byBranch, err := p.Forge.WalkTree(ctx, p.Path, "wq/walk", func(string) bool { return false })
		if err != nil || len(byBranch) != 5 {
			t.Errorf("WalkTree of the root by branch: %v, %v; want its 5 entries", byBranch, err)
		}
		_, err = p.Forge.WalkTree(ctx, p.Path, "no-such-branch", func(string) bool { return true })
		wantKind(t, err, wq.ForgeNotFound)
	})

	t.Run("reading a change's paths costs what the change touches, not what the repository holds", func(t *testing.T) {
		p := newProject(t)
		if p.Calls == nil {
			t.Skip("the forge's calls are not counted")
		}
		// What a push reads, on a one-file change: the target's directories
		// on the way to it, the commit's changes with their modes, and the
		// compare of the target with the pushed head.
		cost := func(t *testing.T) map[string]int64 {
			t.Helper()
			got := map[string]int64{}
			measure := func(what string, fn func() error) {
				before := p.Calls()
				if err := fn(); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				got[what] = p.Calls() - before
			}
			c := commit(t, p, "wq/one", change("create", "src/pkg/new.txt", "n\n"))
			measure("WalkTree", func() error {
				_, err := p.Forge.WalkTree(ctx, p.Path, "main", func(dir string) bool { return dir == "src" || dir == "src/pkg" })
				return err
			})
			measure("CommitChanges", func() error {
				changed, err := p.Forge.CommitChanges(ctx, p.Path, c.SHA)
				if err == nil && (len(changed) != 1 || changed[0].Mode != wq.ModeFile) {
					t.Errorf("CommitChanges = %v, want src/pkg/new.txt added as a regular file", changed)
				}
				return err
			})
			measure("CompareTrees", func() error {
				differ, err := p.Forge.CompareTrees(ctx, p.Path, "main", c.SHA, []string{"src/pkg/new.txt"})
				if err == nil && len(differ) != 1 {
					t.Errorf("CompareTrees = %v, want src/pkg/new.txt added", differ)
				}
				return err
			})
			return got
		}
		seed(t, p, change("create", "src/pkg/a.txt", "a\n"))
		small := cost(t)
		var more []wq.FileChange
		for i := range 150 {
			more = append(more, change("create", fmt.Sprintf("other/d%d/f%03d.txt", i%5, i), "x\n"),
				change("create", fmt.Sprintf("src/other/f%03d.txt", i), "x\n"))
		}
		seed(t, p, more...)
		if large := cost(t); !maps.Equal(small, large) {
			t.Errorf("calls with 2 files %v, with 302 %v: want the same, the reads of a change's paths grew with the repository", small, large)
		}
	})
}
