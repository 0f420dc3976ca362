//go:build unix

package main

import "testing"

// The machine clock as the instances read it, once calibrated, stays on
// CLOCK_MONOTONIC as a system call reads it, so that the spans of two
// processes compare.
func TestTheMachineClockFollowsClockMonotonic(t *testing.T) {
	for range 1000 {
		before := clockMonotonic()
		got := machineNanos()
		after := clockMonotonic()
		const slack = 50_000 // ns: the calibration's window and a descheduling
		if got < before-slack || got > after+slack {
			t.Fatalf("machine clock %d outside [%d, %d] by more than %d ns", got, before, after, slack)
		}
	}
}
