// Package machinecpu reads how much CPU time the whole machine has spent
// busy (Linux's /proc/stat), so that a benchmark can report the CPU one
// unit of work cost everything it ran on: this process, the database
// server and the kernel. The bench compares the figure with River's, read
// the same way, in the same run.
package machinecpu

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// ticksPerSecond is USER_HZ, which /proc/stat counts in: 100 on every
// Linux architecture Go supports.
const ticksPerSecond = 100

// Busy returns the CPU time all cores have spent on anything but idling
// and waiting for I/O since boot, or 0 where /proc is not there.
func Busy() time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	return parse(sc.Text())
}

// parse reads the first line of /proc/stat: "cpu" and the ticks spent in
// user, nice, system, idle, iowait, irq, softirq, steal (guest time is
// already in user).
func parse(line string) time.Duration {
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, f := range fields[1:min(len(fields), 9)] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / ticksPerSecond
}

// PerThousand is busy CPU time in milliseconds per 1,000 units of n.
func PerThousand(busy time.Duration, n int) float64 {
	if n <= 0 {
		return 0
	}
	return float64(busy) / float64(time.Millisecond) * 1000 / float64(n)
}
