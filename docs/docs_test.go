// Package docs_test keeps the documentation's references true: every
// design decision (DDR-n) that a user-facing file cites is summarised in
// docs/decisions.md, and the file points there.
package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// citation matches DDR-n, DDR-n/m (two decisions) and DDR-n..m (a range).
var citation = regexp.MustCompile(`DDR-(\d+)(?:(/|\.\.)(\d+))?`)

// cited lists the decision numbers text cites.
func cited(text string) []int {
	var out []int
	for _, m := range citation.FindAllStringSubmatch(text, -1) {
		from, _ := strconv.Atoi(m[1])
		to := from
		if m[3] != "" {
			to, _ = strconv.Atoi(m[3])
		}
		switch m[2] {
		case "/":
			out = append(out, from, to)
		default:
			for n := from; n <= to; n++ {
				out = append(out, n)
			}
		}
	}
	return out
}

func TestCited(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"(DDR-25)":                "[25]",
		"DDR-17/28 and DDR-4":     "[17 28 4]",
		"rules (DDR-21..23)":      "[21 22 23]",
		"no decision: DDR-n here": "[]",
	} {
		if got := fmt.Sprint(cited(text)); got != want {
			t.Errorf("cited(%q) = %s, want %s", text, got, want)
		}
	}
}

// userFacing lists the files people read: the README, the example
// config, the docs, the deployment files and the CLI's sources (help
// texts), relative to the repository's root.
func userFacing(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"README.md", "CHANGELOG.md", "workqueue.example.yaml", "docs/*.md",
		"deploy/kubernetes/*.yaml", "deploy/systemd/*", "examples/*", "cmd/workqueue/*.go"} {
		m, err := filepath.Glob(filepath.Join("..", pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	if len(files) < 5 {
		t.Fatalf("found only %q: not run from docs/?", files)
	}
	return files
}

// TestDecisionsCitedAreSummarised fails when a user-facing file cites a
// decision that docs/decisions.md does not summarise, or cites decisions
// without saying where they are.
func TestDecisionsCitedAreSummarised(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("decisions.md")
	if err != nil {
		t.Fatal(err)
	}
	decisions := string(body)
	for _, file := range userFacing(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if strings.HasSuffix(file, ".go") {
			// Code comments are for developers; only the strings a user
			// sees (help texts) count.
			var kept []string
			for _, line := range strings.Split(text, "\n") {
				if !strings.HasPrefix(strings.TrimSpace(line), "//") {
					kept = append(kept, line)
				}
			}
			text = strings.Join(kept, "\n")
		}
		nums := cited(text)
		if len(nums) == 0 || filepath.Base(file) == "decisions.md" {
			continue
		}
		if !strings.Contains(text, "decisions.md") {
			t.Errorf("%s cites DDR-%d but never points to docs/decisions.md", file, nums[0])
		}
		for _, n := range nums {
			if !strings.Contains(decisions, `<a id="ddr-`+strconv.Itoa(n)+`"></a>`) {
				t.Errorf("%s cites DDR-%d, which docs/decisions.md does not summarise", file, n)
			}
		}
	}
}
