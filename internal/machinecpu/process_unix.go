//go:build unix

package machinecpu

import (
	"syscall"
	"time"
)

// Process returns the CPU time this process has spent, user and system,
// or 0 where the system does not say.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
