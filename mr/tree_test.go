package mr

import (
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

func TestAChangeKeepsTheModesTheTargetHolds(t *testing.T) {
	target := newTargetTree("main", []wq.TreeEntry{
		{Path: "run.sh", Mode: wq.ModeExecutable}, {Path: "plain.txt", Mode: wq.ModeFile},
		{Path: "link", Mode: wq.ModeSymlink}, {Path: "vendor/lib", Mode: wq.ModeGitlink},
		{Path: "docs/a.md", Mode: wq.ModeFile}, // its directory is not listed: it is still one
	})
	content := func(s string) *string { return &s }
	no, yes := false, true
	cases := []struct {
		name        string
		action      FileAction
		mode, from  string
		refusedSays string
	}{
		{"an update keeps the executable bit", FileAction{Action: ActionUpdate, FilePath: "run.sh", Content: content("x")}, wq.ModeExecutable, wq.ModeExecutable, ""},
		{"execute_filemode sets it", FileAction{Action: ActionUpdate, FilePath: "run.sh", Content: content("x"), ExecuteFilemode: &no}, wq.ModeFile, wq.ModeExecutable, ""},
		{"a move keeps its source's mode", FileAction{Action: ActionMove, PreviousPath: "run.sh", FilePath: "bin/run.sh"}, wq.ModeExecutable, wq.ModeExecutable, ""},
		{"a moved link stays a link", FileAction{Action: ActionMove, PreviousPath: "link", FilePath: "link2"}, wq.ModeSymlink, wq.ModeSymlink, ""},
		{"a moved submodule stays one", FileAction{Action: ActionMove, PreviousPath: "vendor/lib", FilePath: "vendor/lib2"}, wq.ModeGitlink, wq.ModeGitlink, ""},
		{"a create is a regular file", FileAction{Action: ActionCreate, FilePath: "new.sh", Content: content("x"), ExecuteFilemode: &yes}, wq.ModeExecutable, "", ""},
		{"an update of a link needs replace_type", FileAction{Action: ActionUpdate, FilePath: "link", Content: content("x")}, "", "", "replace_type"},
		{"with it the link becomes a file", FileAction{Action: ActionUpdate, FilePath: "link", Content: content("x"), ReplaceType: true}, wq.ModeFile, wq.ModeSymlink, ""},
		{"a moved link given content needs replace_type", FileAction{Action: ActionMove, PreviousPath: "link", FilePath: "l2", Content: content("x")}, "", "", "replace_type"},
		{"a chmod of a submodule is refused", FileAction{Action: ActionChmod, FilePath: "vendor/lib", ExecuteFilemode: &yes}, "", "", "submodule"},
		{"a delete of a directory is refused", FileAction{Action: ActionDelete, FilePath: "docs"}, "", "", "directory"},
		{"an update of a directory is refused", FileAction{Action: ActionUpdate, FilePath: "vendor", Content: content("x")}, "", "", "directory"},
		{"a move of a directory is refused", FileAction{Action: ActionMove, PreviousPath: "docs", FilePath: "doc"}, "", "", "directory"},
		{"a file under a file is refused", FileAction{Action: ActionCreate, FilePath: "plain.txt/x", Content: content("x")}, "", "", "plain.txt"},
		{"a file where a directory is is refused", FileAction{Action: ActionCreate, FilePath: "docs", Content: content("x")}, "", "", "directory"},
		{"a directory in another case is refused", FileAction{Action: ActionCreate, FilePath: "Docs/b.md", Content: content("x")}, "", "", `"docs"`},
		{"a file in another case is refused", FileAction{Action: ActionCreate, FilePath: "docs/A.md", Content: content("x")}, "", "", `"docs/a.md"`},
		{"a file in upper case is refused", FileAction{Action: ActionCreate, FilePath: "PLAIN.TXT", Content: content("x")}, "", "", `"plain.txt"`},
		{"a new directory is fine", FileAction{Action: ActionCreate, FilePath: "src/x/y.go", Content: content("x")}, wq.ModeFile, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chs, err := changes([]FileAction{c.action})
			if err != nil {
				t.Fatal(err)
			}
			err = planChanges([]FileAction{c.action}, chs, target)
			if c.refusedSays != "" {
				if err == nil || !strings.Contains(err.Error(), c.refusedSays) {
					t.Fatalf("planChanges = %v, want a refusal naming %s", err, c.refusedSays)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if chs[0].Mode != c.mode || chs[0].FromMode != c.from {
				t.Errorf("mode %q from %q, want %q from %q", chs[0].Mode, chs[0].FromMode, c.mode, c.from)
			}
		})
	}
}

func TestThePushCheckComparesModes(t *testing.T) {
	actions := []FileAction{{Action: ActionMove, PreviousPath: "link", FilePath: "link2"}}
	changed := []wq.PathChange{{Path: "link", Status: wq.PathRemoved}, {Path: "link2", Status: wq.PathAdded, Mode: wq.ModeFile}}
	if _, problem := CheckCommit(actions, changed, map[string]string{"link2": wq.ModeSymlink}); !strings.Contains(problem, "symbolic link") {
		t.Errorf("a link written as a file: problem %q, want one naming the symbolic link", problem)
	}
	changed[1].Mode = wq.ModeSymlink
	if _, problem := CheckCommit(actions, changed, map[string]string{"link2": wq.ModeSymlink}); problem != "" {
		t.Errorf("the link kept: problem %q", problem)
	}
}

// What the push reads of the target (the directories treeDirs names, a
// WalkTree) decides every check as the whole tree would: modes, names
// that fold alike at any depth (in either spelling of a directory),
// files under files, directories where files go.
func TestTheDirectoriesOnTheWayDecideAsTheWholeTreeDoes(t *testing.T) {
	whole := []wq.TreeEntry{
		{Path: "README.md", Mode: wq.ModeFile}, {Path: "run.sh", Mode: wq.ModeExecutable}, {Path: "link", Mode: wq.ModeSymlink},
		{Path: "docs", Mode: wq.ModeDir}, {Path: "docs/a.md", Mode: wq.ModeFile}, {Path: "docs/x", Mode: wq.ModeDir},
		{Path: "docs/x/deep.txt", Mode: wq.ModeFile},
		{Path: "Docs", Mode: wq.ModeDir}, {Path: "Docs/only-here.md", Mode: wq.ModeFile},
		{Path: "src", Mode: wq.ModeDir}, {Path: "src/pkg", Mode: wq.ModeDir}, {Path: "src/pkg/tool.sh", Mode: wq.ModeExecutable},
		{Path: "src/pkg/plain.txt", Mode: wq.ModeFile}, {Path: "src/vendor", Mode: wq.ModeGitlink},
		{Path: "other", Mode: wq.ModeDir}, {Path: "other/many.txt", Mode: wq.ModeFile},
	}
	content := func(s string) *string { return &s }
	yes := true
	for _, a := range []FileAction{
		{Action: ActionCreate, FilePath: "docs/only-here.md", Content: content("x")},       // Docs/only-here.md, in the other spelling
		{Action: ActionCreate, FilePath: "DOCS/X/Deep.txt", Content: content("x")},         // three levels down
		{Action: ActionCreate, FilePath: "src/pkg/plain.txt/under", Content: content("x")}, // a file under a file
		{Action: ActionCreate, FilePath: "src/pkg", Content: content("x")},                 // a file where a directory is
		{Action: ActionCreate, FilePath: "src/Pkg/new.go", Content: content("x")},
		{Action: ActionCreate, FilePath: "src/pkg/new.go", Content: content("x"), ExecuteFilemode: &yes},
		{Action: ActionUpdate, FilePath: "src/pkg/tool.sh", Content: content("x")},
		{Action: ActionUpdate, FilePath: "src/vendor", Content: content("x")},
		{Action: ActionMove, PreviousPath: "src/pkg/tool.sh", FilePath: "bin/tool.sh"},
		{Action: ActionMove, PreviousPath: "link", FilePath: "docs/x/LINK"},
		{Action: ActionMove, PreviousPath: "README.md", FilePath: "Other/many.txt"},
		{Action: ActionDelete, FilePath: "docs/x"},
		{Action: ActionChmod, FilePath: "src/vendor", ExecuteFilemode: &yes},
		{Action: ActionCreate, FilePath: "new/dir/file.txt", Content: content("x")},
	} {
		t.Run(a.Action+" "+a.FilePath, func(t *testing.T) {
			plan := func(entries []wq.TreeEntry) (string, string, string) {
				chs, err := changes([]FileAction{a})
				if err != nil {
					t.Fatal(err)
				}
				if err := planChanges([]FileAction{a}, chs, newTargetTree("main", entries)); err != nil {
					return "", "", err.Error()
				}
				return chs[0].Mode, chs[0].FromMode, ""
			}
			chs, _ := changes([]FileAction{a})
			walked := walk(whole, treeDirs(chs))
			if len(walked) == len(whole) {
				t.Fatalf("the walk read the whole tree: %v", walked)
			}
			mode, from, refused := plan(whole)
			wMode, wFrom, wRefused := plan(walked)
			// Where the target holds two spellings of a name, either may be
			// the one a refusal names, on the whole tree too.
			if mode != wMode || from != wFrom || strings.ToLower(refused) != strings.ToLower(wRefused) {
				t.Errorf("on the directories on the way (%d of %d entries): mode %q from %q, refused %q; on the whole tree: %q from %q, refused %q",
					len(walked), len(whole), wMode, wFrom, wRefused, mode, from, refused)
			}
		})
	}
}

// walk is what wq.Forge.WalkTree lists of a tree given as its whole list
// of entries: the root's entries and those of each directory descend
// accepts, asked only about directories of directories listed.
func walk(whole []wq.TreeEntry, descend func(dir string) bool) []wq.TreeEntry {
	var out []wq.TreeEntry
	for dirs := []string{""}; len(dirs) > 0; dirs = dirs[1:] {
		for _, e := range whole {
			parent := ""
			if i := strings.LastIndexByte(e.Path, '/'); i >= 0 {
				parent = e.Path[:i]
			}
			if parent != dirs[0] {
				continue
			}
			out = append(out, e)
			if e.Mode == wq.ModeDir && descend(e.Path) {
				dirs = append(dirs, e.Path)
			}
		}
	}
	return out
}
