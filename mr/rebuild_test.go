package mr_test

import (
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

// On a fast-forward project, a target that moved while CI ran leaves the
// merge request needing a rebase: the service makes a new commit of the
// same content on the current target, and merges that.
func TestAMergeRequestWhoseTargetMovedIsRebuiltAndMerged(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.forge.setFastForward(true)
	h.forge.setBlocker(wq.MergeCI)
	it, first := h.openMR(fakeSubmission("v1\n"))
	moved := h.forge.push("main", map[string]string{"unrelated.txt": "x\n"})
	h.forge.setBlocker(wq.MergeClear)
	h.advance(10*time.Minute, time.Minute)

	got, d := h.get(it.ID)
	wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
	if d.HeadSHA == first.HeadSHA || d.MRNumber != first.MRNumber {
		t.Errorf("head %s merge request %d; want a new head on the same merge request %d", d.HeadSHA, d.MRNumber, first.MRNumber)
	}
	if h.forge.parent(d.HeadSHA) != moved || h.forge.head("main") != d.HeadSHA {
		t.Errorf("rebuilt head's parent %s, main at %s; want on top of %s and fast-forwarded to it", h.forge.parent(d.HeadSHA), h.forge.head("main"), moved)
	}
	if content, _ := h.forge.file("main", "a.txt"); content != "v1\n" {
		t.Errorf("main:a.txt = %q", content)
	}
	if n := h.forge.count("CommitFiles"); n != 2 {
		t.Errorf("%d commits, want the first and one rebuild", n)
	}
}

// A rebuild whose push succeeded and was verified is not pushed again
// when a later step fails and ensure_mr runs once more.
func TestARebuildIsPushedOnceThoughTheStepAfterItFails(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.forge.setFastForward(true)
	h.forge.setBlocker(wq.MergeCI)
	it, _ := h.openMR(fakeSubmission("v1\n"))
	h.forge.push("main", map[string]string{"unrelated.txt": "x\n"})
	h.forge.setBlocker(wq.MergeClear)
	h.forge.failNextAfter("GetMergeRequest", "CommitChanges", badGateway("merge request"))
	h.advance(10*time.Minute, time.Minute)

	got, _ := h.get(it.ID)
	wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
	if n := h.forge.count("CommitFiles"); n != 2 {
		t.Errorf("%d commits, want the first and one rebuild", n)
	}
}

// A merge the forge refuses although the merge request looked mergeable
// is rebuilt when the target moved, and looked at again later when it did
// not.
func TestARefusedMergeIsRebuiltOnlyWhenTheTargetMoved(t *testing.T) {
	for _, moved := range []bool{false, true} {
		name := map[bool]string{false: "target unchanged", true: "target moved"}[moved]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, mr.Options{})
			h.forge.setBlocker(wq.MergeCI)
			it, first := h.openMR(fakeSubmission("v1\n"))
			if moved {
				h.forge.push("main", map[string]string{"unrelated.txt": "x\n"})
			}
			h.forge.setBlocker(wq.MergeClear)
			h.forge.setRefuseMerges(1)
			h.forge.resetCounts()
			h.advance(time.Minute, time.Minute)

			_, d := h.get(it.ID)
			if rebuilt := d.HeadSHA != first.HeadSHA; rebuilt != moved {
				t.Errorf("rebuilt: %v, want %v", rebuilt, moved)
			}
			h.advance(10*time.Minute, time.Minute)
			got, _ := h.get(it.ID)
			wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
		})
	}
}

// A conflict a rebuild on the current target cannot solve fails the item
// with the reason; the service does not rebuild in a loop.
func TestAConflictARebuildCannotSolveFailsTheItem(t *testing.T) {
	t.Run("the forge refuses the rebuilt commit", func(t *testing.T) {
		h := newHarness(t, mr.Options{})
		h.forge.setBlocker(wq.MergeCI)
		it, _ := h.openMR(fakeSubmission("v1\n"))
		h.forge.push("main", map[string]string{"a.txt": "theirs\n"}) // the file we create now exists
		h.forge.setBlocker(wq.MergeConflict)
		h.advance(10*time.Minute, time.Minute)

		got, _ := h.get(it.ID)
		if got.Phase != wq.PhaseFailed || !strings.Contains(got.Error, "create a.txt") || !strings.Contains(got.Error, "submit it as update") {
			t.Errorf("item %s, error %q; want failed naming the path the target holds and saying to update it", got.Phase, got.Error)
		}
		if n := h.forge.count("CommitFiles"); n != 2 {
			t.Errorf("%d commits, want the first and one rebuild", n)
		}
	})
	t.Run("still conflicting on top of the target after a rebuild", func(t *testing.T) {
		h := newHarness(t, mr.Options{})
		h.forge.setBlocker(wq.MergeCI)
		it, first := h.openMR(fakeSubmission("v1\n"))
		h.forge.push("main", map[string]string{"unrelated.txt": "x\n"})
		h.forge.setBlocker(wq.MergeConflict)
		h.advance(2*time.Hour, time.Minute)

		got, d := h.get(it.ID)
		if got.Phase != wq.PhaseFailed || !strings.Contains(got.Error, "conflicts with main") {
			t.Errorf("item %s, error %q; want failed for the conflict", got.Phase, got.Error)
		}
		if d.HeadSHA == first.HeadSHA || h.forge.parent(d.HeadSHA) != h.forge.head("main") {
			t.Error("the branch was not rebuilt on the target before failing")
		}
		if n := h.forge.count("CommitFiles"); n != 2 {
			t.Errorf("%d commits, want the first and one rebuild", n)
		}
	})
}

// A merge request that needs a rebase while already on top of the target
// (a status the forge has not recomputed yet) is looked at again, not
// rebuilt into the same commit.
func TestARebaseStatusOnTopOfTheTargetIsWaitedOut(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.forge.setBlocker(wq.MergeRebase)
	it, first := h.openMR(fakeSubmission("v1\n"))
	h.advance(30*time.Minute, time.Minute)
	got, d := h.get(it.ID)
	if got.Phase != wq.PhaseActive || d.HeadSHA != first.HeadSHA {
		t.Errorf("item %s (error %q) at head %s; want active, not rebuilt", got.Phase, got.Error, d.HeadSHA)
	}
}

// A push whose verification failed is pushed and verified again by the
// next ensure_mr, never used as it is for a merge request.
func TestAPushWhoseVerificationFailedIsPushedAndVerifiedAgain(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.project.AutoMerge = false
	h.forge.failNext("CommitChanges", badGateway("commit changes"))
	it := h.submit(fakeSubmission("v1\n"))
	if got, d := h.get(it.ID); got.Phase != wq.PhaseActive || d.MRNumber != 0 {
		t.Fatalf("after the failed verification: item %s with merge request %d, want active without one", got.Phase, d.MRNumber)
	}
	h.advance(5*time.Minute, time.Minute)

	got, d := h.get(it.ID)
	if got.Phase != wq.PhaseActive || d.MRNumber == 0 || d.PushedHash != d.ContentHash {
		t.Fatalf("item %s (error %q) with merge request %d, want active with one", got.Phase, got.Error, d.MRNumber)
	}
	if commits, verified := h.forge.count("CommitFiles"), h.forge.count("CommitChanges"); commits != 2 || verified != 2 {
		t.Errorf("%d commits and %d verifications, want the push verified again: 2 and 2", commits, verified)
	}
}
