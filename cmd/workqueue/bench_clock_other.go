//go:build !unix

package main

import "time"

// machineNanos falls back to the wall clock where there is no shared
// monotonic clock to read.
func machineNanos() int64 { return time.Now().UnixNano() }
