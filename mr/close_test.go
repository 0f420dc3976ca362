package mr_test

import (
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/mr"
)

// cancelOpen opens a merge request without auto-merge, lets before act
// on it, cancels the item with reason, and returns how the item ended.
func cancelOpen(t *testing.T, before func(h *harness, d *mr.Detail), reason string) (*harness, *wq.Item, *mr.Detail) {
	t.Helper()
	h := newHarness(t, mr.Options{})
	h.project.AutoMerge = false
	it, d := h.openMR(fakeSubmission("v1\n"))
	if before != nil {
		before(h, d)
	}
	h.cancel(it.ID, reason)
	got, _ := h.get(it.ID)
	return h, got, d
}

func TestCancelClosesTheMergeRequestWithANoteAndDeletesTheBranch(t *testing.T) {
	h, got, d := cancelOpen(t, nil, "cancelled by alice: no longer needed")
	wantEnded(t, got, wq.PhaseCancelled, "cancelled by alice: no longer needed")
	m, notes := h.forge.mergeRequest(d.MRNumber)
	if m.State != wq.MergeRequestClosed {
		t.Errorf("merge request %s, want closed", m.State)
	}
	if len(notes) == 0 || notes[len(notes)-1] != "Closed by workqueue: cancelled by alice: no longer needed" {
		t.Errorf("notes %q, want the closing note last", notes)
	}
	h.wantBranchGone(d.SourceBranch, "after the cancel")
}

func TestCancelKeepsTheBranchWhenTheProjectSaysSoOrItIsNotOurs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keep    bool // delete_source_branch: false
		foreign bool // someone pushed to the branch
	}{
		{"delete_source_branch false", true, false},
		{"someone pushed to the branch", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, mr.Options{DeleteSourceBranch: func(forge, project string) bool {
				if forge != "fake" || project != "o/r" {
					t.Errorf("asked about %s %s", forge, project)
				}
				return !tc.keep
			}})
			h.project.AutoMerge = false
			it, d := h.openMR(fakeSubmission("v1\n"))
			head := d.HeadSHA
			if tc.foreign {
				head = h.forge.push(d.SourceBranch, map[string]string{"theirs.txt": "x\n"})
			}
			h.cancel(it.ID, "")
			got, _ := h.get(it.ID)
			wantEnded(t, got, wq.PhaseCancelled, mr.ReasonCancelled)
			if m, _ := h.forge.mergeRequest(d.MRNumber); m.State != wq.MergeRequestClosed {
				t.Errorf("merge request %s, want closed", m.State)
			}
			if got := h.forge.head(d.SourceBranch); got != head {
				t.Errorf("branch at %q, want kept at %s", got, head)
			}
		})
	}
}

// An item cancelled before it pushed anything has nothing on the forge:
// it cancels without a forge call, and before any push.
func TestCancelBeforeAnyPushCancelsWithoutTheForge(t *testing.T) {
	h := newHarness(t, mr.Options{})
	it, _, err := mr.Submit(h.ctx, h.store, withForge(fakeSubmission("v1\n")), h.project, "test", h.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.cancel(it.ID, "changed my mind")
	got, _ := h.get(it.ID)
	wantEnded(t, got, wq.PhaseCancelled, "changed my mind")
	if n := h.forge.count(""); n != 0 {
		t.Errorf("%d forge calls (%v), want none", n, h.forge.calls)
	}
}

// A merge request a person merged before the cancel took effect holds the
// item's change in the target: the item completes as merged.
func TestCancelAfterAPersonMergedCompletesAsMerged(t *testing.T) {
	h, got, d := cancelOpen(t, func(h *harness, d *mr.Detail) { h.forge.mergeByPerson(d.MRNumber) }, "too late")
	wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
	if _, notes := h.forge.mergeRequest(d.MRNumber); len(notes) != 1 { // the dashboard note only
		t.Errorf("notes %q: a merged merge request got a closing note", notes)
	}
	h.wantBranchGone(d.SourceBranch, "after the merge")
}

func TestMergedBranchesAreDeletedWhenTheyAreStillOurs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		setting   bool
		byService bool // merged by the service (auto-merge), else by a person
		deleted   bool
	}{
		{"merged by the service", true, true, true},
		{"merged by a person", true, false, true},
		{"delete_source_branch false", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, mr.Options{DeleteSourceBranch: func(string, string) bool { return tc.setting }})
			h.project.AutoMerge = tc.byService
			it := h.submit(fakeSubmission("v1\n"))
			_, d := h.get(it.ID)
			if !tc.byService {
				h.forge.mergeByPerson(d.MRNumber)
				h.event(it.ID, gitea.EventPullRequest, `{"action":"closed","pull_request":{"merged":true,"state":"closed"}}`, "merged")
			}
			got, _ := h.get(it.ID)
			wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
			if deleted := h.forge.head(d.SourceBranch) == ""; deleted != tc.deleted {
				t.Errorf("branch deleted: %v, want %v", deleted, tc.deleted)
			}
		})
	}
}
