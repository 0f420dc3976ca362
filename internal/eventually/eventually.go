// Package eventually waits, in tests, for a condition that another
// goroutine or process makes true (a real forge, a served binary), without
// each test writing its own deadline loop: True for a condition, Value
// for a value, TrueEvery for a benchmark that measures how soon a
// condition holds. Tests of time-driven behaviour drive a fake clock
// instead.
package eventually

import (
	"testing"
	"time"
)

// Interval is how often a condition is checked.
const Interval = 20 * time.Millisecond

// True checks cond every Interval until it holds, and fails the test after
// timeout, saying what did not happen (and how things last stood, from
// cond's second result).
func True(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, state any)) {
	t.Helper()
	TrueEvery(t, timeout, Interval, what, cond)
}

// TrueEvery is True checking every interval instead of every Interval:
// for a benchmark that measures how soon cond holds, where Interval would
// be most of what it measures.
func TrueEvery(t testing.TB, timeout, interval time.Duration, what string, cond func() (ok bool, state any)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (last: %v)", what, timeout, state)
		}
		time.Sleep(interval)
	}
}

// Value is True for a condition on a value it returns.
func Value[T any](t testing.TB, timeout time.Duration, what string, get func() (T, bool)) T {
	t.Helper()
	var v T
	True(t, timeout, what, func() (bool, any) {
		var ok bool
		v, ok = get()
		return ok, v
	})
	return v
}
