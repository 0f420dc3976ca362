package mr_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/mr"
)

// checkRow reads the item's needs_check row of glob.
func checkRow(t testing.TB, it *wq.Item, glob string) (wq.Dimension, mr.CheckDetail) {
	t.Helper()
	row, ok := it.Dimensions[wq.DimensionKey{Dimension: mr.DimCheck, Variant: glob}]
	if !ok {
		t.Fatalf("no needs_check row for %q: %v", glob, it.Dimensions)
	}
	var d mr.CheckDetail
	if err := json.Unmarshal(row.Detail, &d); err != nil {
		t.Fatalf("needs_check[%s] detail %s: %v", glob, row.Detail, err)
	}
	return row, d
}

func requiring(globs ...string) func(string, string) []string {
	return func(string, string) []string { return globs }
}

// A mergeable merge request waits while a required check is pending,
// is not merged on a failed one, and is merged once every check
// succeeded on its head, which reconcile_mr reads from the forge itself.
func TestRequiredChecksHoldTheMergeUntilEverySucceededOnTheHead(t *testing.T) {
	h := newHarness(t, mr.Options{RequiredChecks: requiring("konflux/*", "ci/lint")})
	it := h.submit(submission("v1\n"))
	it, d := h.get(it.ID)
	if it.Phase.Terminal() || d.HeadSHA == "" {
		t.Fatalf("item %s/%s, head %q: want it open and waiting", it.Phase, it.Reason, d.HeadSHA)
	}
	if _, rd := h.reconcileRow(it.ID); rd.Blocker != "required_checks" {
		t.Errorf("reconcile blocker %q, want required_checks", rd.Blocker)
	}
	for _, glob := range []string{"konflux/*", "ci/lint"} {
		if row, cd := checkRow(t, it, glob); row.Status != wq.StatusTrue || cd.State != wq.CheckPending || cd.SHA != d.HeadSHA {
			t.Errorf("needs_check[%s] = %s %+v, want pending on %s", glob, row.Status, cd, d.HeadSHA)
		}
	}

	h.forge.setStatus(d.HeadSHA, "konflux/build", wq.CheckSuccess)
	h.forge.setStatus(d.HeadSHA, "konflux/release", wq.CheckSuccess)
	h.forge.setStatus(d.HeadSHA, "ci/lint", wq.CheckFailed)
	h.advance(time.Hour, time.Minute)
	it, _ = h.get(it.ID)
	if it.Phase.Terminal() {
		t.Fatalf("merged (%s/%s) with ci/lint failed", it.Phase, it.Reason)
	}
	if _, cd := checkRow(t, it, "ci/lint"); cd.State != wq.CheckFailed {
		t.Errorf("ci/lint = %+v, want failed", cd)
	}
	if _, cd := checkRow(t, it, "konflux/*"); cd.State != wq.CheckSuccess || len(cd.Checks) != 2 {
		t.Errorf("konflux/* = %+v, want succeeded by both checks", cd)
	}
	if note := mr.RenderNote(it, d, ""); !strings.Contains(note, "| Required check `ci/lint` | failed: ci/lint (failed)") {
		t.Errorf("the status note does not name the failed check:\n%s", note)
	}

	h.forge.setStatus(d.HeadSHA, "ci/lint", wq.CheckSuccess)
	h.advance(time.Hour, time.Minute)
	it, _ = h.get(it.ID)
	wantEnded(t, it, wq.PhaseCompleted, mr.ReasonMerged)
}

// A glob no check matched yet is not met: a required check that never
// reported holds the merge rather than passing by default.
func TestARequiredCheckThatNeverReportedHoldsTheMerge(t *testing.T) {
	h := newHarness(t, mr.Options{RequiredChecks: requiring("security/*")})
	it := h.submit(submission("v1\n"))
	_, d := h.get(it.ID)
	h.forge.setStatus(d.HeadSHA, "ci/build", wq.CheckSuccess) // another check
	h.advance(2*time.Hour, 5*time.Minute)
	it, _ = h.get(it.ID)
	if it.Phase.Terminal() {
		t.Fatalf("merged (%s/%s) although no security/* check reported", it.Phase, it.Reason)
	}
	if _, cd := checkRow(t, it, "security/*"); cd.State != wq.CheckPending || len(cd.Checks) != 0 {
		t.Errorf("security/* = %+v, want pending with no check", cd)
	}
}

// A new head resets every required check: a success on the old head
// does not let the new one merge.
func TestANewHeadResetsTheRequiredChecks(t *testing.T) {
	h := newHarness(t, mr.Options{RequiredChecks: requiring("ci/build")})
	h.project.AutoMerge = false
	it := h.submit(submission("v1\n"))
	_, first := h.get(it.ID)
	h.forge.setStatus(first.HeadSHA, "ci/build", wq.CheckSuccess)
	h.advance(time.Hour, time.Minute)
	if it, _ := h.get(it.ID); !rowDone(it, "ci/build") {
		t.Fatalf("ci/build not done on the first head: %v", it.Dimensions)
	}

	h.project.AutoMerge = true
	h.submit(submission("v2\n"))
	it, second := h.get(it.ID)
	if second.HeadSHA == first.HeadSHA {
		t.Fatal("the resubmission pushed no new head")
	}
	if row, cd := checkRow(t, it, "ci/build"); row.Status != wq.StatusTrue || cd.SHA != second.HeadSHA || cd.State != wq.CheckPending {
		t.Errorf("ci/build after the new head = %s %+v, want pending on %s", row.Status, cd, second.HeadSHA)
	}
	h.advance(time.Hour, time.Minute)
	if it, _ := h.get(it.ID); it.Phase.Terminal() {
		t.Fatalf("merged (%s/%s) on the old head's success", it.Phase, it.Reason)
	}
	h.forge.setStatus(second.HeadSHA, "ci/build", wq.CheckSuccess)
	h.advance(time.Hour, time.Minute)
	it, _ = h.get(it.ID)
	wantEnded(t, it, wq.PhaseCompleted, mr.ReasonMerged)
}

func rowDone(it *wq.Item, glob string) bool {
	row, ok := it.Dimensions[wq.DimensionKey{Dimension: mr.DimCheck, Variant: glob}]
	return ok && row.Status == wq.StatusFalse
}

// The forges' status and job events update the rows of the checks they
// name without a forge call; a payload about another head changes
// nothing.
func TestStatusAndJobEventsUpdateTheirChecksWithoutAForgeCall(t *testing.T) {
	h := newHarness(t, mr.Options{RequiredChecks: requiring("ci/*", "lint")})
	h.project.AutoMerge = false
	it := h.submit(submission("v1\n"))
	_, d := h.get(it.ID)
	h.forge.resetCounts()

	h.event(it.ID, gitea.EventStatus, fmt.Sprintf(`{"sha":%q,"state":"failure","context":"ci/build"}`, d.HeadSHA), "s1")
	h.event(it.ID, gitea.EventStatus, fmt.Sprintf(`{"sha":%q,"state":"success","context":"ci/build"}`, "someoneelse"), "s2")
	h.event(it.ID, gitlab.EventJob, fmt.Sprintf(`{"object_kind":"build","build_id":3,"build_name":"lint","build_status":"success","sha":%q,"pipeline_id":9}`, d.HeadSHA), "j1")
	it, _ = h.get(it.ID)
	if _, cd := checkRow(t, it, "ci/*"); cd.State != wq.CheckFailed || len(cd.Checks) != 1 || cd.Checks[0].Context != "ci/build" {
		t.Errorf("ci/* = %+v, want failed by ci/build", cd)
	}
	if !rowDone(it, "lint") {
		t.Errorf("lint is not done after its job succeeded: %v", it.Dimensions)
	}
	if n := h.forge.count("CommitStatuses"); n != 0 {
		t.Errorf("the events read the forge's statuses %d times, want none", n)
	}
	if n := h.forge.count("MergeMergeRequest"); n != 0 {
		t.Errorf("merged on events alone: %d", n)
	}
}
