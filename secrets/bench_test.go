package secrets_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/internal/secretcorpus"
	"github.com/workqueue-dev/workqueue/secrets"
)

// benchText is prose an agent writes, with a secret now and then.
func benchText(n int) string {
	corpus := secretcorpus.Corpus(7, 1)
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("Ran go test ./... in the worktree; 3 packages failed on the flaky clock, retried with -count=1 and they passed. ")
		if i%20 == 0 {
			b.WriteString(corpus[i%len(corpus)].Text + "\n")
		}
	}
	return b.String()[:n]
}

// BenchmarkText is redaction's speed on free text (report MB/s).
func BenchmarkText(b *testing.B) {
	for _, size := range []int{256, 4 << 10, 64 << 10} {
		s := benchText(size)
		b.Run(strings.TrimSuffix(strings.TrimSuffix(strconvItoa(size), "0"), ""), func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				secrets.Text(s)
			}
		})
	}
}

// BenchmarkJSONCheckpoint is redaction's speed on a 16 KiB checkpoint
// document (report MB/s).
func BenchmarkJSONCheckpoint(b *testing.B) {
	var steps []any
	for i := 0; ; i++ {
		steps = append(steps, map[string]any{"step": i, "tool": "shell", "output": benchText(200), "ok": true})
		doc, _ := json.Marshal(map[string]any{"evidence": steps})
		if len(doc) >= 16<<10 {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, err := secrets.JSON(doc); err != nil {
					b.Fatal(err)
				}
			}
			return
		}
	}
}

func strconvItoa(n int) string {
	if n >= 1<<10 {
		return strings.TrimSpace(strings.Repeat(" ", 0)) + itoa(n>>10) + "KiB"
	}
	return itoa(n) + "B"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}
