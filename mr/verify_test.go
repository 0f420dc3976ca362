package mr

import (
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

func TestCheckCommitComparesWhatTheForgeChangedWithWhatWasAsked(t *testing.T) {
	move := FileAction{Action: ActionMove, FilePath: "new.txt", PreviousPath: "old.txt"}
	del := FileAction{Action: ActionDelete, FilePath: "gone.txt"}
	chmod := FileAction{Action: ActionChmod, FilePath: "run.sh", ExecuteFilemode: new(true)}
	added := func(p string) wq.PathChange { return wq.PathChange{Path: p, Status: wq.PathAdded} }
	modified := func(p string) wq.PathChange { return wq.PathChange{Path: p, Status: wq.PathModified} }
	removed := func(p string) wq.PathChange { return wq.PathChange{Path: p, Status: wq.PathRemoved} }
	for _, tc := range []struct {
		name      string
		actions   []FileAction
		changed   []wq.PathChange
		unchanged []string // paths to read back
		problem   string   // a fragment of the problem; "" for none
	}{
		{"every action in the commit", []FileAction{create("a"), move, del}, []wq.PathChange{added("a"), added("new.txt"), removed("old.txt"), removed("gone.txt")}, nil, ""},
		{"an update to the same content is not in the diff", []FileAction{create("a"), {Action: ActionUpdate, FilePath: "b", Content: text("x")}},
			[]wq.PathChange{added("a")}, []string{"b"}, ""},
		{"a dropped file is read back", []FileAction{create("fd"), create("fd2/x")}, []wq.PathChange{added("fd2/x")}, []string{"fd"}, ""},
		{"a mode change may not show", []FileAction{chmod}, nil, nil, ""},
		{"a path nobody asked for", []FileAction{create("a")}, []wq.PathChange{added("a"), removed("b")}, nil, `removed "b", which no file action names`},
		{"a delete left out", []FileAction{create("a"), del}, []wq.PathChange{added("a")}, nil, `delete "gone.txt" is not in it`},
		{"a move that copied", []FileAction{move}, []wq.PathChange{added("new.txt")}, nil, `left "old.txt" in place`},
		{"a create that removed", []FileAction{create("a")}, []wq.PathChange{removed("a")}, nil, `create "a" removed the file`},
		{"a chmod that removed", []FileAction{chmod}, []wq.PathChange{removed("run.sh")}, nil, `chmod "run.sh" removed the file`},
		{"an update shown as modified", []FileAction{{Action: ActionUpdate, FilePath: "b", Content: text("x")}}, []wq.PathChange{modified("b")}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unchanged, problem := CheckCommit(tc.actions, tc.changed, nil)
			if tc.problem == "" && problem != "" || tc.problem != "" && !strings.Contains(problem, tc.problem) {
				t.Errorf("problem %q, want %q", problem, tc.problem)
			}
			var got []string
			for _, a := range unchanged {
				got = append(got, a.FilePath)
			}
			if tc.problem == "" && strings.Join(got, ",") != strings.Join(tc.unchanged, ",") {
				t.Errorf("to read back %v, want %v", got, tc.unchanged)
			}
		})
	}
}
