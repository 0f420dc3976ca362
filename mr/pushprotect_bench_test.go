package mr

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkPushProtection is what push protection adds to a submission
// of 100 files of 10 KB of code (no secret in them): the scan of every
// file's content. It reports the p50 and p99 of one submission's scan.
func BenchmarkPushProtection(b *testing.B) {
	line := "func handle(w http.ResponseWriter, r *http.Request) { if err := serve(r.Context(), w); err != nil { log.Print(err) } }\n"
	content := strings.Repeat(line, 10<<10/len(line)+1)[:10<<10]
	actions := make([]FileAction, 100)
	for i := range actions {
		c := content
		actions[i] = FileAction{Action: ActionCreate, FilePath: fmt.Sprintf("pkg/f%03d.go", i), Content: &c}
	}
	var took []time.Duration
	b.SetBytes(int64(len(content) * len(actions)))
	for b.Loop() {
		start := time.Now()
		if r := scanSecrets(actions, Policy{}); len(r) != 0 {
			b.Fatalf("findings in clean code: %v", r[0])
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
