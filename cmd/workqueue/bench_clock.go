//go:build unix

package main

import "golang.org/x/sys/unix"

// machineNanos reads the machine's monotonic clock, which every process
// on it shares (Go's own monotonic reading starts at the process's
// start): bench engine --instances orders executions of different
// processes by it.
func machineNanos() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // CLOCK_MONOTONIC is always there
	}
	return ts.Nano()
}
