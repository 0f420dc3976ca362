package machinecpu

import (
	"testing"
	"time"
)

func TestBusyCountsEverythingButIdleAndIOWait(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	got := parse("cpu  100 20 30 5000 400 5 6 7 99 1")
	if want := (100 + 20 + 30 + 5 + 6 + 7) * 10 * time.Millisecond; got != want {
		t.Errorf("busy = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4", "cpu 1 x 3 4 5", "intr 1 2 3 4 5"} {
		if got := parse(bad); got != 0 {
			t.Errorf("parse(%q) = %v, want 0", bad, got)
		}
	}
	if got := PerThousand(142*time.Millisecond*20, 20_000); got != 142 {
		t.Errorf("PerThousand = %v, want 142", got)
	}
}

// A process's CPU time grows while it works.
func TestProcessCountsThisProcesssWork(t *testing.T) {
	before := Process()
	deadline := time.Now().Add(50 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ {
		_ = n * n
	}
	if spent := Process() - before; spent <= 0 {
		t.Errorf("50 ms of busy work added %v of CPU time", spent)
	}
}
