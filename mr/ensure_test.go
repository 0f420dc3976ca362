package mr_test

import (
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

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
