package store_test

import (
	"fmt"
	"testing"

	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// BenchmarkSweepScale is BenchmarkSweep at the scale of issue 16: one
// sweep over 1,000,000 idle items and 10 due ones must cost within 1.5×
// of the same over 10,000 idle items. Compare the two rows' ns/op on each
// database (seeding a million items takes a while; run it alone:
// scripts/test bench -run '^$' -bench SweepScale -benchtime 200x ./store/).
func BenchmarkSweepScale(b *testing.B) {
	for _, kind := range testdb.Kinds {
		for _, idle := range []int{10_000, 1_000_000} {
			b.Run(fmt.Sprintf("%s/idle=%d", kind, idle), func(b *testing.B) {
				benchmarkSweep(b, kind, idle)
			})
		}
	}
}
