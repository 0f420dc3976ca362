//go:build !unix

package machinecpu

import "time"

// Process returns 0: this system's process times are not read.
func Process() time.Duration { return 0 }
