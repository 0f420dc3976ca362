package policy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/policy"
)

// BenchmarkCheckASubmission is what the outbound policy adds to a
// submission of 100 files (as BenchmarkPushProtection in package mr, whose
// contents it scans): every text but the contents (branches, title, a
// description of a few paragraphs, the commit message, labels, every
// path), the protected paths, the closing references, the target and
// the labels. It reports the p50 and p99 of one submission's check.
func BenchmarkCheckASubmission(b *testing.B) {
	w := submit()
	w.Description = strings.Repeat("This change makes the parser accept trailing commas, as the spec allows, and says so in the docs.\n\n", 8) + "Closes #7"
	w.Message = "parser: accept trailing commas\n\nThe spec allows them; people write them."
	w.Labels = []string{"kind/bug", "area/parser"}
	w.Files = nil
	for i := range 100 {
		w.Files = append(w.Files, policy.File{Action: "create", Path: fmt.Sprintf("pkg/parser/f%03d.go", i)})
	}
	p := project()
	p.CallerLabels = []string{"kind/*", "area/*"}
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := policy.Check(agent, p, w).Err(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
