package mr_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/workqueue-dev/workqueue/mr"
)

// A push reads of the target only the directories on the way to the paths
// it touches (issue 53): a one-file change costs the forge the same calls
// from submission to its merge request, whether the repository holds ten
// files or two thousand, beside it and in other directories, and the
// whole tree is never read.
func TestAPushCostsTheSameInASmallAndALargeRepository(t *testing.T) {
	calls := map[int]map[string]int{}
	for _, n := range []int{10, 2000} {
		t.Run(fmt.Sprintf("%d files", n), func(t *testing.T) {
			h := newHarness(t, mr.Options{})
			h.project.AutoMerge = false
			files := map[string]string{}
			for i := range n {
				switch i % 3 {
				case 0:
					files[fmt.Sprintf("src/pkg/f%04d.txt", i)] = "x\n"
				case 1:
					files[fmt.Sprintf("src/other/d%02d/f%04d.txt", i%40, i)] = "x\n"
				default:
					files[fmt.Sprintf("docs/f%04d.md", i)] = "x\n"
				}
			}
			h.forge.push("main", files)
			h.forge.resetCounts()
			sub := fakeSubmission("")
			sub.FileActions = []mr.FileAction{{Action: mr.ActionCreate, FilePath: "src/pkg/new.txt", Content: text("new\n")}}
			h.openMR(sub)
			if n := h.forge.count("ReadTree"); n != 0 {
				t.Errorf("the whole tree was read %d times", n)
			}
			if n := h.forge.count("ListDirectory"); n != 3 {
				t.Errorf("%d directories listed, want 3: the root, src and src/pkg", n)
			}
			calls[n] = maps.Clone(h.forge.calls)
		})
	}
	t.Logf("forge calls of a one-file change: %v", calls[10])
	if !maps.Equal(calls[10], calls[2000]) {
		t.Errorf("forge calls grow with the repository: 10 files %v, 2000 files %v", calls[10], calls[2000])
	}
}
