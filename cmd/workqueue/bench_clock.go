//go:build unix

package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// machineNanos reads the machine's monotonic clock, which every process
// on it shares (Go's own monotonic reading starts at the process's
// start): bench engine --instances orders executions of different
// processes by it. It is read once, against Go's monotonic clock (the
// same CLOCK_MONOTONIC, read through the vDSO), and then advanced by
// that: a clock_gettime system call for each span's two ends cost the
// instances 1 µs per execution, which the one-instance burn-down never
// paid.
func machineNanos() int64 { return machineClock.nanos + int64(time.Since(machineClock.at)) }

var machineClock = calibrateMachineClock()

// clockBase pairs a reading of CLOCK_MONOTONIC with Go's clock: nanos
// were read at at, to within the narrowest of a few tries.
type clockBase struct {
	at    time.Time
	nanos int64
}

func calibrateMachineClock() clockBase {
	var best clockBase
	narrowest := time.Duration(-1)
	for range 5 {
		before := time.Now()
		n := clockMonotonic()
		after := time.Now()
		if d := after.Sub(before); narrowest < 0 || d < narrowest {
			narrowest = d
			best = clockBase{at: before.Add(d / 2), nanos: n}
		}
	}
	return best
}

// clockMonotonic reads CLOCK_MONOTONIC by a system call.
func clockMonotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // CLOCK_MONOTONIC is always there
	}
	return ts.Nano()
}
