package mr_test

import (
	"fmt"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/mr"
)

// fakeSubmission is a change to the fake forge's main.
func fakeSubmission(content string) mr.Submission {
	return mr.Submission{SourceBranch: "wq/update-a", TargetBranch: "main", Title: "Update a",
		FileActions: []mr.FileAction{{Action: mr.ActionCreate, FilePath: "a.txt", Content: text(content)}}}
}

// openMR submits sub and returns the item once its merge request is open.
func (h *harness) openMR(sub mr.Submission) (*wq.Item, *mr.Detail) {
	h.t.Helper()
	it := h.submit(sub)
	got, d := h.get(it.ID)
	if got.Phase != wq.PhaseActive || d.MRNumber == 0 {
		h.t.Fatalf("after submitting: item %s/%s (error %q), merge request %d; want active with one", got.Phase, got.Reason, got.Error, d.MRNumber)
	}
	return got, d
}

// An auto-merge item whose merge request stays blocked reads it ever more
// rarely: the waits double from merge_recheck_interval (1m) up to
// reconcile_interval (30m), so an hour costs a handful of reads where a
// fixed 1m recheck cost sixty.
func TestAnAutoMergeWaitingAnHourReadsItsMergeRequestLogarithmically(t *testing.T) {
	for _, blocker := range []wq.MergeBlocker{wq.MergeCI, wq.MergeChecking, wq.MergeMerging, wq.MergeOther, wq.MergeClear} {
		t.Run(fmt.Sprintf("blocked by %q", blocker), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mr.Options{})
			h.forge.setBlocker(blocker)
			if blocker == wq.MergeClear {
				h.forge.setRefuseMerges(1000) // mergeable, yet every merge is refused
			}
			it, _ := h.openMR(fakeSubmission("v1\n"))
			h.forge.resetCounts()

			h.advance(time.Hour, time.Minute)

			reads := h.forge.count("GetMergeRequest")
			t.Logf("GetMergeRequest calls over an hour: %d", reads)
			if reads > 12 || reads < 4 {
				t.Errorf("%d merge request reads over an hour, want between 4 and 12", reads)
			}
			row, detail := h.reconcileRow(it.ID)
			if detail.Wait != (30*time.Minute).String() || row.PendingUntil.Sub(h.clock.Now()) > 30*time.Minute {
				t.Errorf("after an hour: wait %q, next look in %v; want 30m0s and at most 30m", detail.Wait, row.PendingUntil.Sub(h.clock.Now()))
			}
			if got, _ := h.get(it.ID); got.Phase != wq.PhaseActive {
				t.Errorf("item %s (error %q), want still active", got.Phase, got.Error)
			}
		})
	}
}

func TestPeopleAreWaitedForAtTheReconcileInterval(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.forge.setBlocker(wq.MergePeople)
	it, _ := h.openMR(fakeSubmission("v1\n"))
	row, detail := h.reconcileRow(it.ID)
	if next := row.PendingUntil.Sub(h.clock.Now()); next != 30*time.Minute || detail.Blocker != string(wq.MergePeople) || detail.Wait != "" {
		t.Fatalf("waiting on people: next look in %v with %+v, want 30m without a backoff", next, detail)
	}
	h.forge.resetCounts()
	h.advance(time.Hour, time.Minute)
	if reads := h.forge.count("GetMergeRequest"); reads != 2 {
		t.Errorf("%d merge request reads over an hour waiting on people, want 2", reads)
	}

	// An approval arrives as a webhook: the item looks at once, and merges.
	h.forge.setBlocker(wq.MergeClear)
	_, d := h.get(it.ID)
	h.event(it.ID, gitea.EventReview, `{"action":"reviewed","review":{"type":"pull_request_review_approved"}}`, "approval")
	got, _ := h.get(it.ID)
	wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
	if m, _ := h.forge.mergeRequest(d.MRNumber); m.State != wq.MergeRequestMerged {
		t.Errorf("merge request %s, want merged", m.State)
	}
}

func TestAWebhookOrAPushStartsTheWaitsOver(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("v1\n"))
	h.advance(20*time.Minute, time.Minute)
	if _, detail := h.reconcileRow(it.ID); detail.Wait != (16 * time.Minute).String() {
		t.Fatalf("after 20 minutes of CI the wait is %q, want 16m0s", detail.Wait)
	}

	// A pipeline of the pushed head started: CI news wakes the item, and
	// the next wait is short again.
	h.event(it.ID, gitea.EventWorkflowRun,
		fmt.Sprintf(`{"action":"requested","workflow_run":{"id":78,"head_sha":%q}}`, d.HeadSHA), "run-78")
	row, detail := h.reconcileRow(it.ID)
	if next := row.PendingUntil.Sub(h.clock.Now()); next != time.Minute || detail.Wait != time.Minute.String() {
		t.Errorf("after a webhook: next look in %v (wait %q), want 1m", next, detail.Wait)
	}
	if _, d := h.get(it.ID); d.HeadPipelineID != 78 {
		t.Errorf("head pipeline %d, want the webhook's 78 recorded before the detail was replaced", d.HeadPipelineID)
	}

	h.advance(20*time.Minute, time.Minute)
	if _, detail := h.reconcileRow(it.ID); detail.Wait != (16 * time.Minute).String() {
		t.Fatalf("20 minutes later the wait is %q, want 16m0s", detail.Wait)
	}
	// New content is pushed: a new head, a new wait.
	if _, result, err := mr.Submit(h.ctx, h.store, withForge(fakeSubmission("v2\n")), h.project, "test", h.clock.Now()); err != nil || result != mr.ResultUpdated {
		t.Fatalf("resubmit: %s %v", result, err)
	}
	h.settle()
	row, detail = h.reconcileRow(it.ID)
	if _, now := h.get(it.ID); now.HeadSHA == d.HeadSHA {
		t.Fatal("the new content was not pushed")
	}
	if next := row.PendingUntil.Sub(h.clock.Now()); next != time.Minute || detail.Wait != time.Minute.String() {
		t.Errorf("after a push: next look in %v (wait %q), want 1m", next, detail.Wait)
	}
}

// An item without auto-merge reads its merge request every
// reconcile_interval, as before.
func TestWithoutAutoMergeTheMergeRequestIsReadEveryReconcileInterval(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.project.AutoMerge = false
	it, _ := h.openMR(fakeSubmission("v1\n"))
	h.forge.resetCounts()
	h.advance(time.Hour, time.Minute)
	if reads := h.forge.count("GetMergeRequest"); reads != 2 {
		t.Errorf("%d reads over an hour, want 2", reads)
	}
	if got, _ := h.get(it.ID); got.Phase != wq.PhaseActive {
		t.Errorf("item %s, want active: nothing merges it", got.Phase)
	}
}

func withForge(sub mr.Submission) mr.Submission {
	sub.Forge, sub.Project = "fake", "o/r"
	return sub
}

// A merge request read closed is read again a moment later before its
// item is cancelled: a forge can answer closed for a moment while it
// merges, and a merged one completes its item.
func TestAMergeRequestReadClosedWhileItMergesCompletesItsItem(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.project.AutoMerge = false
	it := h.submit(submission("v1\n"))
	_, d := h.get(it.ID)
	h.forge.mergeByPerson(d.MRNumber)
	h.forge.closedWhileMerging = 1
	h.event(it.ID, gitlab.EventMergeRequest, fmt.Sprintf(`{"object_kind":"merge_request","object_attributes":{"iid":%d,"action":"merge","state":"merged"}}`, d.MRNumber), "m1")
	it, _ = h.get(it.ID)
	wantEnded(t, it, wq.PhaseCompleted, mr.ReasonMerged)
}
