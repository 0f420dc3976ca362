package mr_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

// A change the target already holds is found by one read of the pushed
// commit's changes (which would verify a push that is not empty) and one
// comparison of the pushed head with the target, however many files it
// has: no file is read, no merge request opened, and the branch pushed to
// find out is deleted.
func TestAnEmptyDiffCostsOneReadAndOneCompareWhateverTheNumberOfFiles(t *testing.T) {
	calls := map[int]map[string]int{}
	for _, n := range []int{1, 40} {
		t.Run(fmt.Sprintf("%d files", n), func(t *testing.T) {
			h := newHarness(t, mr.Options{})
			files := map[string]string{}
			var actions []mr.FileAction
			for i := range n {
				path := fmt.Sprintf("dir/f%02d.txt", i)
				files[path] = fmt.Sprintf("content %d\n", i)
				actions = append(actions, mr.FileAction{Action: mr.ActionUpdate, FilePath: path, Content: text(files[path])})
			}
			h.forge.push("main", files)
			sub := fakeSubmission("")
			sub.FileActions = actions
			it := h.submit(sub)

			got, d := h.get(it.ID)
			wantEnded(t, got, wq.PhaseCompleted, mr.ReasonEmptyDiff)
			if d.MRNumber != 0 {
				t.Errorf("a merge request %d was opened for an empty diff", d.MRNumber)
			}
			if h.forge.count("CommitChanges") != 1 || h.forge.count("CompareTrees") != 1 || h.forge.count("ReadFile") != 0 ||
				h.forge.count("CreateMergeRequest") != 0 {
				t.Errorf("calls %v, want one CommitChanges, one CompareTrees, no ReadFile and no merge request", h.forge.calls)
			}
			if head := h.forge.head(sub.SourceBranch); head != "" {
				t.Errorf("the branch pushed to compare is still there at %s", head)
			}
			calls[n] = maps.Clone(h.forge.calls)
		})
	}
	t.Logf("forge calls for an empty diff of 1 or 40 files: %v", calls[1])
	if !maps.Equal(calls[1], calls[40]) {
		t.Errorf("forge calls grow with the number of files: 1 file %v, 40 files %v", calls[1], calls[40])
	}
}

// A pushed commit whose list of changes leaves out the path it changed
// (Gitea's leaves out a path whose type changed) is not taken for an
// empty one: the head is compared with the target, and the merge request
// opens once the path is read back from the head.
func TestAPathThePushedCommitsListLeavesOutIsStillAChange(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.project.AutoMerge = false
	h.forge.unlisted = map[string]bool{"a.txt": true}
	it := h.submit(fakeSubmission("a\n"))
	got, d := h.get(it.ID)
	if got.Phase != wq.PhaseActive || d.MRNumber == 0 {
		t.Fatalf("item %s/%s (error %q) with merge request %d, want active with one", got.Phase, got.Reason, got.Error, d.MRNumber)
	}
	if compared, read := h.forge.count("CompareTrees"), h.forge.count("ReadFile"); compared != 1 || read != 1 {
		t.Errorf("%d compares and %d files read, want the head compared once and a.txt read back", compared, read)
	}
}

func TestWhatCountsAsTheTargetHoldingTheChange(t *testing.T) {
	exec := true
	for _, tc := range []struct {
		name    string
		main    map[string]string // pushed to main before submitting
		actions []mr.FileAction
		want    string // the item's reason, or "" for an open merge request
		reads   int    // files read: the verification of a partly held change, or the target after a refused commit
	}{
		{"an update to the content main has", nil,
			[]mr.FileAction{{Action: mr.ActionUpdate, FilePath: "README.md", Content: text("# r\n")}}, mr.ReasonEmptyDiff, 0},
		{"an update main lacks", nil,
			[]mr.FileAction{{Action: mr.ActionUpdate, FilePath: "README.md", Content: text("# new\n")}}, "", 0},
		{"one file held and one not", map[string]string{"a.txt": "a\n"},
			[]mr.FileAction{{Action: mr.ActionUpdate, FilePath: "a.txt", Content: text("a\n")}, {Action: mr.ActionCreate, FilePath: "b.txt", Content: text("b\n")}}, "", 1},
		{"a chmod main lacks", nil,
			[]mr.FileAction{{Action: mr.ActionChmod, FilePath: "README.md", ExecuteFilemode: &exec}}, "", 0},
		{"a chmod main has already", map[string]string{"run.sh": "#!/bin/sh\n"},
			[]mr.FileAction{{Action: mr.ActionChmod, FilePath: "run.sh", ExecuteFilemode: &exec}}, mr.ReasonEmptyDiff, 0},
		{"a create main has with that content", map[string]string{"a.txt": "a\n"},
			[]mr.FileAction{{Action: mr.ActionCreate, FilePath: "a.txt", Content: text("a\n")}}, mr.ReasonEmptyDiff, 1},
		{"a delete of a file main does not have", nil,
			[]mr.FileAction{{Action: mr.ActionDelete, FilePath: "gone.txt"}}, mr.ReasonEmptyDiff, 1},
		{"a move main has made", map[string]string{"new.txt": "# r\n"},
			[]mr.FileAction{{Action: mr.ActionMove, PreviousPath: "old.txt", FilePath: "new.txt"}}, mr.ReasonEmptyDiff, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, mr.Options{})
			h.project.AutoMerge = false
			if tc.main != nil {
				h.forge.edit("main", func(tree map[string]fakeFile) {
					for p, content := range tc.main {
						tree[p] = fakeFile{content: content, exec: p == "run.sh"}
					}
				})
			}
			sub := fakeSubmission("")
			sub.FileActions = tc.actions
			it := h.submit(sub)
			got, d := h.get(it.ID)
			switch {
			case tc.want == "" && (got.Phase != wq.PhaseActive || d.MRNumber == 0):
				t.Errorf("item %s/%s (error %q) with merge request %d, want active with one", got.Phase, got.Reason, got.Error, d.MRNumber)
			case tc.want != "" && (got.Phase != wq.PhaseCompleted || got.Reason != tc.want || d.MRNumber != 0):
				t.Errorf("item %s/%s (error %q) with merge request %d, want completed/%s without one", got.Phase, got.Reason, got.Error, d.MRNumber, tc.want)
			}
			if reads := h.forge.count("ReadFile"); reads != tc.reads {
				t.Errorf("%d files read, want %d (calls %v)", reads, tc.reads, h.forge.calls)
			}
		})
	}
}

// A merge request whose change reaches the target another way is closed
// with a note at the next empty check, and its branch deleted; a move's
// previous path counts.
func TestAMergeRequestTheTargetCaughtUpWithIsSuperseded(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.project.AutoMerge = false
	h.forge.push("main", map[string]string{"old.txt": "moved\n"})
	sub := fakeSubmission("")
	sub.FileActions = []mr.FileAction{{Action: mr.ActionMove, PreviousPath: "old.txt", FilePath: "new.txt"}}
	it, d := h.openMR(sub)

	// Main gets new.txt by another way, but keeps old.txt: not the move yet.
	h.forge.push("main", map[string]string{"new.txt": "moved\n", "unrelated.txt": "x\n"})
	h.advance(31*time.Minute, time.Minute)
	if got, _ := h.get(it.ID); got.Phase != wq.PhaseActive {
		t.Fatalf("superseded while main still has old.txt: %s/%s", got.Phase, got.Reason)
	}

	// Then the rest of the same move reaches main.
	h.forge.edit("main", func(tree map[string]fakeFile) { delete(tree, "old.txt") })
	h.forge.resetCounts()
	h.advance(31*time.Minute, time.Minute)

	got, _ := h.get(it.ID)
	wantEnded(t, got, wq.PhaseCompleted, mr.ReasonSuperseded)
	m, notes := h.forge.mergeRequest(d.MRNumber)
	if m.State != wq.MergeRequestClosed || len(notes) == 0 {
		t.Errorf("merge request %s with notes %q, want closed with a note", m.State, notes)
	}
	h.wantBranchGone(sub.SourceBranch, "after the supersession")
	if n := h.forge.count("CompareTrees"); n != 1 {
		t.Errorf("%d compares in the empty check, want 1", n)
	}
}

// An empty check on a target that has not moved since the last look (or
// since the push, whose commit was made on it) costs one read of the
// target's head and no compare (issue 53); a target that moved is
// compared again, once.
func TestAnEmptyCheckOnAnUnmovedTargetCostsOneRead(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.project.AutoMerge = false
	it, _ := h.openMR(fakeSubmission("a\n"))
	look := func(what string, wantCompares int) {
		t.Helper()
		h.forge.resetCounts()
		h.advance(31*time.Minute, time.Minute)
		if got, _ := h.get(it.ID); got.Phase != wq.PhaseActive {
			t.Fatalf("%s: item %s/%s, want active", what, got.Phase, got.Reason)
		}
		if n, heads := h.forge.count("CompareTrees"), h.forge.count("BranchHead"); n != wantCompares || heads != 1 {
			t.Errorf("%s: %d compares and %d branch reads (calls %v), want %d and 1", what, n, heads, h.forge.calls, wantCompares)
		}
	}
	look("the first check after the push", 0)
	look("a second check", 0)
	h.forge.push("main", map[string]string{"unrelated.txt": "x\n"})
	look("a check after the target moved", 1)
	look("the check after that", 0)
}
