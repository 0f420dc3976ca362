package forge_test

import (
	"slices"
	"strings"
	"testing"
	"time"

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

func TestClosingReferencesReadEveryFormEitherForgeCloses(t *testing.T) {
	t.Parallel()
	type ref = forge.ClosingRef
	for _, tc := range []struct {
		text string
		want []ref
	}{
		// Keywords of both forges, in any case.
		{"close #1", []ref{{"", 1, "#1"}}},
		{"Closes #1", []ref{{"", 1, "#1"}}},
		{"closed #1", []ref{{"", 1, "#1"}}},
		{"CLOSING #1", []ref{{"", 1, "#1"}}},
		{"fix #2", []ref{{"", 2, "#2"}}},
		{"Fixes #2", []ref{{"", 2, "#2"}}},
		{"fixed #2", []ref{{"", 2, "#2"}}},
		{"fixing #2", []ref{{"", 2, "#2"}}},
		{"resolve #3", []ref{{"", 3, "#3"}}},
		{"Resolves #3", []ref{{"", 3, "#3"}}},
		{"resolved #3", []ref{{"", 3, "#3"}}},
		{"resolving #3", []ref{{"", 3, "#3"}}},
		{"implement #4", []ref{{"", 4, "#4"}}},
		{"Implements #4", []ref{{"", 4, "#4"}}},
		{"implemented #4", []ref{{"", 4, "#4"}}},
		{"Implementing #4", []ref{{"", 4, "#4"}}},
		{"cLoSeS #5", []ref{{"", 5, "#5"}}},
		// Go's case folding, which Gitea's keyword pattern uses: ſ is s.
		{"cloſes #5", []ref{{"", 5, "#5"}}},
		// Colon, issue words, blank space.
		{"Closes: #6", []ref{{"", 6, "#6"}}},
		{"Fixes issue #6", []ref{{"", 6, "#6"}}},
		{"Fixes: issues #6 and #7", []ref{{"", 6, "#6"}, {"", 7, "#7"}}},
		{"Closes   #6", []ref{{"", 6, "#6"}}},
		{"Closes\t#6", []ref{{"", 6, "#6"}}},
		{"Closes\n#6", []ref{{"", 6, "#6"}}},
		{"Closes\r\n  #6", []ref{{"", 6, "#6"}}},
		// Lists, as GitLab reads them.
		{"Fixes #1, #2 and #3", []ref{{"", 1, "#1"}, {"", 2, "#2"}, {"", 3, "#3"}}},
		{"closes #1 #2", []ref{{"", 1, "#1"}, {"", 2, "#2"}}},
		{"closes #1,#2, and #3", []ref{{"", 1, "#1"}, {"", 2, "#2"}, {"", 3, "#3"}}},
		{"closes #1, issue #2", []ref{{"", 1, "#1"}, {"", 2, "#2"}}},
		{"Closes #1, fixes #2", []ref{{"", 1, "#1"}, {"", 2, "#2"}}},
		// Gitea reads ! as #.
		{"closes !8", []ref{{"", 8, "!8"}}},
		// Other projects.
		{"Closes owner/repo#12", []ref{{"owner/repo", 12, "owner/repo#12"}}},
		{"closes group/sub/project#12", []ref{{"group/sub/project", 12, "group/sub/project#12"}}},
		{"fixes sibling#3", []ref{{"sibling", 3, "sibling#3"}}},
		{"fixes Owner/Re.po_-x!4", []ref{{"Owner/Re.po_-x", 4, "Owner/Re.po_-x!4"}}},
		{"Closes #1 and other/repo#2", []ref{{"", 1, "#1"}, {"other/repo", 2, "other/repo#2"}}},
		// URLs, bare, linked and autolinked.
		{"Closes https://gitea.example/o/r/issues/5", []ref{{"o/r", 5, "https://gitea.example/o/r/issues/5"}}},
		{"Closes https://gitlab.example/group/sub/project/-/issues/12.", []ref{{"group/sub/project", 12, "https://gitlab.example/group/sub/project/-/issues/12"}}},
		{"fixes http://h:3000/o/r/pulls/7#issuecomment-1", []ref{{"o/r", 7, "http://h:3000/o/r/pulls/7#issuecomment-1"}}},
		{"resolves https://gitlab.example/g/p/-/work_items/9?x=1", []ref{{"g/p", 9, "https://gitlab.example/g/p/-/work_items/9?x=1"}}},
		{"Closes [the bug](https://h/o/r/issues/5)", []ref{{"o/r", 5, "[the bug](https://h/o/r/issues/5)"}}},
		{"Closes <https://h/o/r/issues/5>", []ref{{"o/r", 5, "<https://h/o/r/issues/5>"}}},
		{"Closes [it](/o/r/issues/5 \"title\")", []ref{{"o/r", 5, "[it](/o/r/issues/5 \"title\")"}}},
		{"fixes [it](</g/p/-/issues/6>)", []ref{{"g/p", 6, "[it](</g/p/-/issues/6>)"}}},
		{"[a closes [b](https://h/o/r/issues/1)", []ref{{"o/r", 1, "[b](https://h/o/r/issues/1)"}}},
		{"closes [a [b] c](https://h/o/r/issues/1)", []ref{{"o/r", 1, "[a [b] c](https://h/o/r/issues/1)"}}},
		{"closes [a \\] b](https://h/o/r/issues/1)", []ref{{"o/r", 1, "[a \\] b](https://h/o/r/issues/1)"}}},
		{"closes [a](https://h/o/r/issues/1", nil},
		{"closes /o/r/issues/5", nil},
		{"closes [it](https://h/o/r/merge_requests/5)", nil},
		{"Closes #1 and https://h/o/r/issues/2", []ref{{"", 1, "#1"}, {"o/r", 2, "https://h/o/r/issues/2"}}},
		// Emphasis, read though neither forge closes through all of it.
		{"**Closes #9**", []ref{{"", 9, "#9"}}},
		{"**Closes** #9", []ref{{"", 9, "#9"}}},
		{"Closes **#9**", []ref{{"", 9, "#9"}}},
		{"_Fixes_: _#9_", []ref{{"", 9, "#9"}}},
		{"~~closes~~ #9", []ref{{"", 9, "#9"}}},
		// Where it stops.
		{"Closes #9.", []ref{{"", 9, "#9"}}},
		{"(closes #9)", []ref{{"", 9, "#9"}}},
		{"closes #007", []ref{{"", 7, "#007"}}},
		{"Closes #12abc", nil},
		{"Closes #12_x", nil},
		{"closes #12é", nil},
		{"closes #0", nil},
		{"closes #99999999999999999999", nil},
		{"enclosed #5 and prefixes #6", nil},
		{"closesx #5", nil},
		{"Closes:#5", nil},
		{"Closes\n\n#5", nil},
		{"See #5; closes nothing", nil},
		{"closes https://h/issues/5", nil},
		{"closes https://h/o/r/merge_requests/5", nil},
		{"closes ABC-123", nil},
		{"", nil},
	} {
		if got := forge.ClosingReferences(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("ClosingReferences(%q) = %+v, want %+v", tc.text, got, tc.want)
		}
	}
}

func TestClosingIssuesAreTheSameProjectsHashReferences(t *testing.T) {
	t.Parallel()
	text := "Closes #3, !4, o/r#5 and https://h/o/r/issues/6.\nFixes **#2** and #3"
	if got, want := forge.ClosingIssues(text), []int64{2, 3}; !slices.Equal(got, want) {
		t.Errorf("ClosingIssues(%q) = %v, want %v", text, got, want)
	}
}

// FuzzClosingReferences holds, for any text, that every reference found
// is in the text as written, names an issue above 0, and is found again
// after "Closes " alone.
func FuzzClosingReferences(f *testing.F) {
	for _, s := range []string{"Fixes #1, #2 and #3", "closes group/sub/project#12", "Closes [x](https://h/o/r/issues/5)",
		"**Closes** #9", "Closes\n#6", "resolves https://gitlab.example/g/p/-/work_items/9?x=1", "closes #12abc", "Closes <https://h/o/r/issues/5>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, r := range forge.ClosingReferences(text) {
			if r.Number <= 0 || !strings.Contains(text, r.Text) || r.Text == "" {
				t.Fatalf("ClosingReferences(%q): %+v", text, r)
			}
			again := forge.ClosingReferences("Closes " + r.Text)
			if len(again) != 1 || again[0] != r {
				t.Fatalf("ClosingReferences(%q) finds %+v, but Closes %s reads %+v", text, r, r.Text, again)
			}
		}
	})
}

// A description may be 64 KiB of keywords: each is read from where it
// stands, never by searching the rest of the text again (a Markdown
// link's search from every "fixes [" took 18 s). The bound is loose, for
// a busy machine; the quadratic reading exceeded it a hundredfold.
func TestClosingReferencesOfALongTextTakeLinearTime(t *testing.T) {
	t.Parallel()
	for _, unit := range []string{"closes www.", "fixes [", "fixes [a](", "fixes [a](x \"", "closes [[]", "closes ****", "closes #1 ", "closes " + strings.Repeat("a/", 20),
		"Closes https://h", "fix <", "closes issue "} {
		text := strings.Repeat(unit, 64<<10/len(unit))
		start := time.Now()
		forge.ClosingReferences(text)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("64 KiB of %q took %v", unit, took)
		}
	}
}
