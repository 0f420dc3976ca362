package forge_test

import (
	"slices"
	"testing"

	"github.com/workqueue-dev/workqueue/forge"
)

func TestClosingIssuesReadsTheKeywordsOfBothForges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want []int64
	}{
		{"Closes #3", []int64{3}},
		{"fixes #4, #5 and #6", []int64{4, 5, 6}},
		{"Resolves: #7", []int64{7}},
		{"This PR closed #1.\n\nAlso fixed #2 and resolving #9", []int64{1, 2, 9}},
		{"Closes issue #12", []int64{12}},
		{"Implements #8, and #10", []int64{8, 10}},
		{"close #2 fix #2", []int64{2}},
		{"closes #1 #2", []int64{1, 2}},
		{"See #5; closes nothing", nil},
		{"closes group/other#5", nil},
		{"closes https://gitea.example/o/r/issues/5", nil},
		{"enclosed #5 and prefixes #6", nil},
		{"closes #0", nil},
		{"closes #12abc", nil},
		{"", nil},
	} {
		if got := forge.ClosingIssues(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("ClosingIssues(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}
