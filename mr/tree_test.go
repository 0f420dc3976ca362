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
