package secrets_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/workqueue-dev/workqueue/secrets"
)

// BenchmarkScanRealCode is push protection's scan of this repository's
// own Go files, one file per Scan (report MB/s): code with escapes, format
// verbs, entities in comments and long words, where the benchmark of
// mr/pushprotect_bench_test.go repeats one line without any.
func BenchmarkScanRealCode(b *testing.B) {
	var files [][]byte
	for _, glob := range []string{"*.go", "../mr/*.go", "../forge/gitea/*.go"} {
		names, _ := filepath.Glob(glob)
		for _, n := range names {
			c, err := os.ReadFile(n)
			if err != nil {
				b.Fatal(err)
			}
			files = append(files, c)
		}
	}
	total := 0
	for _, f := range files {
		total += len(f)
	}
	b.SetBytes(int64(total))
	for b.Loop() {
		for _, f := range files {
			secrets.Scan(f)
		}
	}
}

// BenchmarkFindShortField is Find on a field of a submission (a title).
func BenchmarkFindShortField(b *testing.B) {
	title := "Fix the flaky clock in engine tests (retry with -count=1) and update docs/config.md"
	b.SetBytes(int64(len(title)))
	for b.Loop() {
		secrets.Find(title)
	}
}
