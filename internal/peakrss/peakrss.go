// Package peakrss reads and resets the process's peak resident memory
// (Linux's VmHWM), and reads another process's (PeakOf): for benchmarks
// that report the peak of one phase, and a test that bounds a served
// binary's.
package peakrss

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Reset resets the kernel's high-water mark of the process's resident
// memory (Linux: writing 5 to /proc/self/clear_refs), so that Peak
// reports the peak from now on. Elsewhere it does nothing.
func Reset() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// Peak returns VmHWM in bytes, or 0 where /proc is not there.
func Peak() int64 { return peak("/proc/self/status") }

// PeakOf returns another process's VmHWM in bytes (a serve a test
// started), or 0 where /proc is not there or the process is gone.
func PeakOf(pid int) int64 { return peak("/proc/" + strconv.Itoa(pid) + "/status") }

func peak(status string) int64 {
	f, err := os.Open(status)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
