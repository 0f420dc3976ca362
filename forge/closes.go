package forge

import (
	"regexp"
	"slices"
	"strconv"
)

// closing matches a closing keyword and the issue references that follow
// it: the union of Gitea's keywords (close, closes, closed, fix, fixes,
// fixed, resolve, resolves, resolved) and GitLab's default closing pattern
// (which adds closing, fixing, resolving and implement[s|ed|ing], an
// optional colon, "issue"/"issues", and lists such as "#1, #2 and #3").
var closing = regexp.MustCompile(`(?i)\b(?:clos(?:e[sd]?|ing)|fix(?:e[sd]|ing)?|resolv(?:e[sd]?|ing)|implement(?:s|ed|ing)?):?[ \t]+(?:issues?[ \t]+)?(#\d+\b(?:(?:[ \t]*,?[ \t]+and[ \t]+|[ \t]*,[ \t]*|[ \t]+)#\d+\b)*)`)

var issueRef = regexp.MustCompile(`#(\d+)`)

// ClosingIssues returns the issues of the same project that a pull
// request's description says it closes ("Closes #3", "fixes #4, #5 and
// #6", "Resolves: #7"), in ascending order without repeats. References to
// other projects (group/project#8) and full URLs are not read: the
// inventory links work within one project. It reads text only, so it
// costs no forge call (GitLab's closes_issues would cost one per merge
// request).
func ClosingIssues(description string) []int64 {
	var out []int64
	for _, m := range closing.FindAllStringSubmatch(description, -1) {
		for _, ref := range issueRef.FindAllStringSubmatch(m[1], -1) {
			if n, err := strconv.ParseInt(ref[1], 10, 64); err == nil && n > 0 {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
