package eventually_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/internal/eventually"
)

// failure stands in for a test: Fatalf records what it says and ends the
// goroutine, as testing's does.
type failure struct {
	testing.TB
	said string
}

func (f *failure) Helper() {}

func (f *failure) Fatalf(format string, args ...any) {
	f.said = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run runs wait as a test would and says what it failed with ("" when
// it did not).
func run(wait func(t testing.TB)) string {
	f := &failure{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(f)
	}()
	<-done
	return f.said
}

func TestTrueReturnsAtTheFirstLookWhereTheConditionHolds(t *testing.T) {
	t.Parallel()
	looks := 0
	said := run(func(t testing.TB) {
		eventually.True(t, time.Minute, "the third look", func() (bool, any) {
			looks++
			return looks == 3, looks
		})
	})
	if said != "" || looks != 3 {
		t.Errorf("failed with %q after %d looks, want no failure after 3", said, looks)
	}
}

func TestTrueFailsAfterTheTimeoutSayingWhatAndHowThingsLastStood(t *testing.T) {
	t.Parallel()
	said := run(func(t testing.TB) {
		eventually.True(t, 50*time.Millisecond, "the impossible", func() (bool, any) { return false, "still not" })
	})
	if want := "the impossible: not within 50ms (last: still not)"; said != want {
		t.Errorf("failed with %q, want %q", said, want)
	}
}

func TestTrueEveryLooksAtItsOwnInterval(t *testing.T) {
	t.Parallel()
	looks := 0
	run(func(t testing.TB) {
		eventually.TrueEvery(t, 200*time.Millisecond, time.Millisecond, "never", func() (bool, any) {
			looks++
			return false, looks
		})
	})
	// Every Interval would make at most 11 looks in 200 ms.
	if most := int(200*time.Millisecond/eventually.Interval) + 1; looks <= most {
		t.Errorf("%d looks in 200 ms every millisecond, no more than every Interval would make (%d)", looks, most)
	}
}

func TestValueReturnsTheValueThatHeld(t *testing.T) {
	t.Parallel()
	n := 0
	var got int
	said := run(func(t testing.TB) {
		got = eventually.Value(t, time.Minute, "two", func() (int, bool) {
			n++
			return n, n == 2
		})
	})
	if said != "" || got != 2 {
		t.Errorf("got %d, failed with %q; want 2 and no failure", got, said)
	}
}
