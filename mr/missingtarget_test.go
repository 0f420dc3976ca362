package mr_test

import (
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

// A change to a target branch the project does not have fails at once,
// and its error says so in words, once: not the forge's "ref not found"
// or "sha not found [nope]" under the operation's name (issue 55).
func TestAMissingTargetBranchFailsSayingTheBranchDoesNotExist(t *testing.T) {
	h := newHarness(t, mr.Options{})
	sub := fakeSubmission("v1\n")
	sub.TargetBranch = "nope"
	it := h.submit(sub)

	got, _ := h.get(it.ID)
	if got.Phase != wq.PhaseFailed {
		t.Fatalf("item %s/%s (error %q), want failed", got.Phase, got.Reason, got.Error)
	}
	want := `the target branch "nope" does not exist on o/r`
	if !strings.HasSuffix(got.Error, want) || strings.Count(got.Error, "nope") != 1 {
		t.Errorf("error %q, want it to end with %q and name the branch once", got.Error, want)
	}
	for _, chain := range []string{"not found", "permanent failure", "read the target's tree"} {
		if strings.Contains(got.Error, chain) {
			t.Errorf("error %q says %q: the forge's chain, not words", got.Error, chain)
		}
	}
	if got.Attempts > 1 {
		t.Errorf("%d attempts: a missing branch is not retried", got.Attempts)
	}
}
