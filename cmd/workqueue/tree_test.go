package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testgitea"

	wq "github.com/workqueue-dev/workqueue"
)

// The pushed tree is the submitted one, modes included, and nothing
// collides with what the target holds (issue 28, defects 4 and 5), on the
// real Gitea: main holds a symbolic link, a submodule, and files and
// directories in one spelling. A move of the link or an update of the
// submodule fails before any write, saying why (Gitea's API writes only
// regular files, and an update would make the submodule one); making the
// submodule a file takes replace_type, and then it is one (the link, which
// Gitea cannot replace in one commit, fails saying so). A path that differs
// only in case from one main holds, at any directory, fails with both
// spellings; a delete of a directory fails instead of counting as held.
func TestTheTargetsTreeDecidesModesAndCollisions(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) { c.Projects[0].AutoMerge = false })
	testgitea.Get(t).Git(t, w.repo, "main", func(dir string, git func(...string) string) {
		// Staged from blobs, so that no working-tree file is involved.
		object := func(content string) string {
			tmp := filepath.Join(t.TempDir(), "blob")
			if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			return git("hash-object", "-w", tmp)
		}
		stage := func(mode, sha, path string) { git("update-index", "--add", "--cacheinfo", mode+","+sha+","+path) }
		stage("120000", object("README.md"), "link")
		stage("160000", git("rev-parse", "HEAD"), "sub")
		stage("100644", object("existing\n"), "existing.txt")
		stage("100644", object("b\n"), "dir/b.txt")
	})
	ctx := context.Background()
	before, err := w.forge.ReadTree(ctx, w.repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	if modes := treeModes(before); modes["link"] != wq.ModeSymlink || modes["sub"] != wq.ModeGitlink || modes["dir"] != wq.ModeDir {
		t.Fatalf("main's tree: %v; want a link, a submodule and a directory", modes)
	}

	type want struct {
		phase string
		says  []string // what the error names
	}
	cases := []struct {
		branch  string
		actions []map[string]any
		want    want
	}{
		{"workqueue/move-link", []map[string]any{{"action": "move", "previous_path": "link", "file_path": "moved-link"}},
			want{"failed", []string{"moved-link", "symbolic link"}}},
		{"workqueue/update-sub", []map[string]any{{"action": "update", "file_path": "sub", "content": "not a submodule\n"}},
			want{"failed", []string{`"sub"`, "submodule", "replace_type"}}},
		{"workqueue/update-link", []map[string]any{{"action": "update", "file_path": "link", "content": "a file now\n"}},
			want{"failed", []string{`"link"`, "symbolic link", "replace_type"}}},
		{"workqueue/case-file", []map[string]any{{"action": "create", "file_path": "EXISTING.txt", "content": "x\n"}},
			want{"failed", []string{"EXISTING.txt", "existing.txt"}}},
		{"workqueue/case-dir", []map[string]any{{"action": "create", "file_path": "DIR/new.txt", "content": "x\n"}},
			want{"failed", []string{`"DIR"`, `"dir"`}}},
		{"workqueue/case-readme", []map[string]any{{"action": "create", "file_path": "readme.MD", "content": "x\n"}},
			want{"failed", []string{"readme.MD", "README.md"}}},
		{"workqueue/case-move", []map[string]any{{"action": "move", "previous_path": "existing.txt", "file_path": "Dir/existing.txt"}},
			want{"failed", []string{`"Dir"`, `"dir"`}}},
		{"workqueue/under-file", []map[string]any{{"action": "create", "file_path": "existing.txt/inner.txt", "content": "x\n"}},
			want{"failed", []string{"existing.txt", "directory"}}},
		{"workqueue/delete-dir", []map[string]any{{"action": "delete", "file_path": "dir"}},
			want{"failed", []string{`"dir"`, "directory"}}},
	}
	ids := map[string]string{}
	for _, c := range cases {
		status, out, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(c.branch, c.actions...))
		if status != http.StatusCreated {
			t.Fatalf("submit %s: %d %v", c.branch, status, out)
		}
		ids[c.branch] = out["id"].(string)
	}
	for _, c := range cases {
		it := w.waitItem(ids[c.branch], "the end", func(it map[string]any) bool { return it["phase"] != "active" })
		msg, _ := it["error"].(string)
		if it["phase"] != c.want.phase {
			t.Errorf("%s: %v/%v (%q), want %s", c.branch, it["phase"], it["reason"], msg, c.want.phase)
			continue
		}
		for _, s := range c.want.says {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: the error %q does not name %s", c.branch, msg, s)
			}
		}
		if head, err := w.forge.BranchHead(ctx, w.repo, c.branch); !wq.IsForgeError(err, wq.ForgeNotFound) {
			t.Errorf("%s: the branch was pushed (%s) for a change refused before any write", c.branch, head)
		}
	}
	if after, err := w.forge.ReadTree(ctx, w.repo, "main"); err != nil || !sameTree(before, after) {
		t.Errorf("main changed: %v, %v", after, err)
	}

	// With replace_type the submodule becomes a regular file, as asked,
	// and the link is kept; a link Gitea's API cannot replace in one
	// commit fails saying so, before any write.
	replace := func(branch, path string) map[string]any {
		t.Helper()
		status, out, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch,
			map[string]any{"action": "update", "file_path": path, "content": "a file now\n", "replace_type": true}))
		if status != http.StatusCreated {
			t.Fatalf("submit with replace_type: %d %v", status, out)
		}
		it, _ := w.waitPR(out["id"].(string))
		return it
	}
	if it := replace("workqueue/replace-sub", "sub"); it["phase"] != "active" {
		t.Fatalf("replace_type on the submodule: %v/%v (%v), want a pull request", it["phase"], it["reason"], it["error"])
	}
	pushed, err := w.forge.ReadTree(ctx, w.repo, "workqueue/replace-sub")
	if err != nil {
		t.Fatal(err)
	}
	if m := treeModes(pushed); m["sub"] != wq.ModeFile || m["link"] != wq.ModeSymlink {
		t.Errorf("after replace_type: sub %q, link %q; want a regular file and the link kept", m["sub"], m["link"])
	}
	if it := replace("workqueue/replace-link", "link"); it["phase"] != "failed" || !strings.Contains(it["error"].(string), "symbolic link link") {
		t.Errorf("replace_type on the link: %v/%v, want failed saying Gitea cannot replace it in one commit", it["phase"], it["error"])
	}
}

func treeModes(entries []wq.TreeEntry) map[string]string {
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.Path] = e.Mode
	}
	return m
}

func sameTree(a, b []wq.TreeEntry) bool {
	ma, mb := treeModes(a), treeModes(b)
	if len(ma) != len(mb) {
		return false
	}
	for p, m := range ma {
		if mb[p] != m {
			return false
		}
	}
	return true
}
