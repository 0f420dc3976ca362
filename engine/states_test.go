package engine

import (
	"fmt"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

// A dimension row's audit state is one map per row and status, shared,
// and variants without a bound never grow the shared ones past theirs.
func TestDimensionStatesAreSharedAndBounded(t *testing.T) {
	var s dimensionStates
	k := wq.DimensionKey{Dimension: "needs_ci", Variant: "build"}
	a, b := s.of(k, wq.StatusTrue), s.of(k, wq.StatusTrue)
	if fmt.Sprintf("%p", a) != fmt.Sprintf("%p", b) {
		t.Error("the same row and status made two maps")
	}
	if a["dimension"] != "needs_ci" || a["variant"] != "build" || a["status"] != wq.StatusTrue || len(a) != 3 {
		t.Errorf("state %v", a)
	}
	if f := s.of(k, wq.StatusFalse); f["status"] != wq.StatusFalse {
		t.Errorf("the false state says %v", f["status"])
	}
	for i := range maxDimensionStates + 100 {
		k := wq.DimensionKey{Dimension: "needs_ci", Variant: fmt.Sprint("job-", i)}
		if got := s.of(k, wq.StatusTrue); got["variant"] != k.Variant {
			t.Fatalf("variant %q: state %v", k.Variant, got)
		}
	}
	if n := s.n.Load(); n > maxDimensionStates {
		t.Errorf("%d states kept, bound %d", n, maxDimensionStates)
	}
}
