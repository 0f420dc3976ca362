package forge

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ClosingRef is one closing reference in a text: an issue that the text
// says it closes, as Gitea or GitLab would read it.
type ClosingRef struct {
	// Repo is the project the reference names, as written: "" for the
	// project of the text itself ("#12"); "owner/repo", "group/sub/project"
	// or a sibling "project" for a cross-project reference; for a URL, the
	// path of the project in it (the host left out: neither forge acts on
	// another host's URL). Forges compare project paths without regard to
	// case, so should a caller: a reference to the text's own project by
	// its path is not "".
	Repo string
	// Number is the issue's number (its iid on GitLab).
	Number int64
	// Text is the reference as written ("#12", "o/r#12", the URL, the
	// Markdown link), for messages.
	Text string
}

// closingKeyword finds a closing keyword: the union of Gitea's default
// close keywords (close, closes, closed, fix, fixes, fixed, resolve,
// resolves, resolved; modules/references, setting
// repository.pull-request.CLOSE_KEYWORDS) and GitLab's default
// issue_closing_pattern (which adds closing, fixing, resolving and
// implement, implements, implemented, implementing). Any case: Gitea reads
// keywords without regard to case (GitLab only the first letter's). That
// it starts a word is checked apart (ClosingReferences).
var closingKeyword = regexp.MustCompile(`(?i)(?:clos(?:e[sd]?|ing)|fix(?:e[sd]|ing)?|resolv(?:e[sd]?|ing)|implement(?:s|ed|ing)?)`)

var (
	// issueRef is a reference by number: "#12", "!12", "project#12",
	// "owner/repo#12", "group/sub/project#12". A path segment is what both
	// forges allow in a name. The number ends at a character that is not
	// a word's (GitLab's lookahead; Gitea's delimiters are all such).
	issueRef = regexp.MustCompile(`^((?:[A-Za-z0-9_.][A-Za-z0-9_.-]*/)*[A-Za-z0-9_.][A-Za-z0-9_.-]*)?([#!])([0-9]+)`)
	// issueURL is the URL of an issue: …/owner/repo/issues/12 (Gitea, and
	// GitLab's older form), …/group/project/-/issues/12 (GitLab), the same
	// with work_items (GitLab's newer issues), and …/owner/repo/pulls/12,
	// which Gitea reads as !12 and closes as it does #12. A query or an
	// anchor may follow.
	issueURL = regexp.MustCompile(`(?i)^(?:https?://|www\.)[^\s/?#<>()\[\]]+((?:/[^\s/?#<>()\[\]]+)+?)/(?:-/)?(?:issues|pulls|work_items)/([0-9]+)(?:[/?#][^\s<>()\[\]]*)?`)
	// issuePath is an issue's URL without its host, as a Markdown link or
	// an autolink may hold it: Gitea reads a link without a host as one to
	// itself.
	issuePath = regexp.MustCompile(`(?i)^((?:/[^\s/?#<>()\[\]]+)+?)/(?:-/)?(?:issues|pulls|work_items)/([0-9]+)(?:[/?#][^\s<>()\[\]]*)?$`)
	// linkDest is what follows a Markdown link's text: (url "title");
	// autoLink is <url>.
	linkDest = regexp.MustCompile(`^\([ \t]*<?([^\s()<>]+)>?(?:[ \t]+"[^"\n]*")?[ \t]*\)`)
	autoLink = regexp.MustCompile(`^<([^\s<>]+)>`)
	// listSep joins the references of one keyword, as GitLab's pattern
	// does: "#1, #2 and #3", "#1 #2", "#1,#2", "#1, and #2".
	listSep = regexp.MustCompile(`(?i)^(?:[ \t]*,?[ \t]+and[ \t]+|[ \t]*,?[ \t]*)`)
	// issueWord is GitLab's optional "issue"/"issues" before a reference.
	issueWord = regexp.MustCompile(`(?i)^issues?[ \t]+`)
)

// ClosingReferences returns every closing reference of text, in the order
// written (a reference written twice is returned twice): each issue that
// Gitea or GitLab would close when a pull request with text as its
// description (or, on Gitea, its title) merges, or a commit with text as
// its message lands on the default branch. It reads what either forge
// reads, and a little more where reading more is safe:
//
//   - a closing keyword of either forge (see closingKeyword), in any case,
//     starting a word (after no letter or digit), then an optional colon,
//     then blank space;
//   - then one reference or, as GitLab reads them, a list of them ("Fixes
//     #1, #2 and #3", "closes #1 #2"), each optionally preceded by "issue"
//     or "issues" ("Closes issue #12");
//   - a reference is "#12" or "!12" (Gitea reads "!" as "#"), a project's
//     "owner/repo#12" or GitLab's "group/sub/project#12" and sibling
//     "project#12", an issue's URL (see issueURL), bare, as a Markdown
//     link "[text](url)" (Gitea reads those after a keyword, and a link
//     without a host as one to itself: "[x](/o/r/issues/3)") or as an
//     autolink "<url>"; the number must end there ("#12abc" is none) and
//     be above 0.
//
// Reading more than the forges: Markdown emphasis (*, _, ~) around the
// keyword, the colon or a reference is skipped, and a single line break
// counts as blank space between the keyword and its reference. Neither
// forge closes through these today ("**Closes** #1": Gitea strips the
// emphasis into a break, GitLab wants spaces), but a person reads them as
// closing, Markdown renders a line break as a space, and a refusal of one
// costs a rewording where missing one would close an issue. A URL is read
// whatever its host, and references inside code are read too: the host
// and the rendering are the forge's business, the refusal ours.
//
// Not read: references of external trackers (ABC-123), and keywords that
// do not start a word ("prefixes #6").
func ClosingReferences(text string) []ClosingRef {
	p := refParser{text: text}
	var out []ClosingRef
	for _, m := range closingKeyword.FindAllStringIndex(text, -1) {
		// A keyword starts a word: after no letter or digit ("prefixes
		// #6" closes nothing). "_" may precede it, as emphasis.
		if before, _ := utf8.DecodeLastRuneInString(text[:m[0]]); m[0] > 0 && wordRune(before) {
			continue
		}
		out = append(out, p.referencesAfter(text[m[1]:])...)
	}
	return out
}

// refParser reads the references of one text. Every string it is given
// is a suffix of text, so its offset there is len(text)-len(s).
type refParser struct {
	text    string
	closers map[int]int // the offset of each "[" → that of its "]"; nil until needed
}

// link returns the Markdown link at the start of s, [text](url), and its
// URL. The brackets of the whole text are matched once (matchBrackets):
// a search for the "]" from each keyword would read a long line again for
// each.
func (p *refParser) link(s string) (link, url string, ok bool) {
	if !strings.HasPrefix(s, "[") {
		return "", "", false
	}
	if p.closers == nil {
		p.closers = matchBrackets(p.text)
	}
	open := len(p.text) - len(s)
	end, ok := p.closers[open]
	if !ok {
		return "", "", false
	}
	m := linkDest.FindStringSubmatchIndex(p.text[end+1:])
	if m == nil {
		return "", "", false
	}
	return p.text[open : end+1+m[1]], p.text[end+1+m[2] : end+1+m[3]], true
}

// matchBrackets pairs the square brackets of text, nested ones too, within
// a line, as a link's text holds them ("[a [b] c](url)"); a bracket after
// a backslash is text.
func matchBrackets(text string) map[int]int {
	out := map[int]int{}
	var open []int
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\\':
			i++
		case '\n':
			open = open[:0]
		case '[':
			open = append(open, i)
		case ']':
			if n := len(open); n > 0 {
				out[open[n-1]] = i
				open = open[:n-1]
			}
		}
	}
	return out
}

// referencesAfter reads the references that follow a closing keyword in
// rest (see ClosingReferences).
func (p *refParser) referencesAfter(rest string) []ClosingRef {
	rest = skipEmphasis(rest)
	rest = strings.TrimPrefix(rest, ":")
	rest = skipEmphasis(rest)
	var ok bool
	if rest, ok = blank(rest); !ok {
		return nil
	}
	var out []ClosingRef
	for {
		r, after, ok := p.reference(rest)
		if !ok {
			return out
		}
		out = append(out, r...)
		sep := listSep.FindString(after)
		rest = after[len(sep):]
	}
}

// blank skips the blank space between a keyword and its reference: spaces
// and tabs with at most one line break among them, at least one of them.
func blank(s string) (string, bool) {
	t := strings.TrimLeft(s, " \t")
	if rest, ok := strings.CutPrefix(t, "\r\n"); ok {
		t = strings.TrimLeft(rest, " \t")
	} else if rest, ok := strings.CutPrefix(t, "\n"); ok {
		t = strings.TrimLeft(rest, " \t")
	}
	return t, len(t) < len(s)
}

// skipEmphasis skips Markdown emphasis markers.
func skipEmphasis(s string) string { return strings.TrimLeft(s, "*_~") }

// reference reads one reference at the start of s (after "issue(s) " and
// emphasis); it returns what follows it.
func (p *refParser) reference(s string) ([]ClosingRef, string, bool) {
	if loc := issueWord.FindStringIndex(s); loc != nil {
		s = s[loc[1]:]
	}
	s = skipEmphasis(s)
	if link, url, ok := p.link(s); ok {
		if r, ok := urlReference(url, true); ok {
			r.Text = link
			return []ClosingRef{r}, skipEmphasis(s[len(link):]), true
		}
		return nil, s, false
	}
	if m := autoLink.FindStringSubmatch(s); m != nil {
		if r, ok := urlReference(m[1], true); ok {
			r.Text = m[0]
			return []ClosingRef{r}, skipEmphasis(s[len(m[0]):]), true
		}
		return nil, s, false
	}
	if m := issueURL.FindStringSubmatchIndex(s); m != nil {
		if r, ok := urlReference(s[:m[1]], false); ok && !wordNext(s[m[1]:]) {
			return []ClosingRef{r}, skipEmphasis(s[m[1]:]), true
		}
		return nil, s, false
	}
	m := issueRef.FindStringSubmatchIndex(s)
	if m == nil || wordNext(s[m[1]:]) {
		return nil, s, false
	}
	n, err := strconv.ParseInt(s[m[6]:m[7]], 10, 64)
	if err != nil || n <= 0 {
		return nil, s, false
	}
	r := ClosingRef{Number: n, Text: s[:m[1]]}
	if m[2] >= 0 {
		r.Repo = s[m[2]:m[3]]
	}
	return []ClosingRef{r}, skipEmphasis(s[m[1]:]), true
}

// urlReference reads an issue's URL (see issueURL) as a reference; in a
// link, a URL without a host too (see issuePath).
func urlReference(u string, link bool) (ClosingRef, bool) {
	m := issueURL.FindStringSubmatch(u)
	if m == nil && link {
		m = issuePath.FindStringSubmatch(u)
	}
	if m == nil || len(m[0]) != len(u) {
		return ClosingRef{}, false
	}
	n, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil || n <= 0 {
		return ClosingRef{}, false
	}
	return ClosingRef{Repo: strings.Trim(m[1], "/"), Number: n, Text: u}, true
}

// wordNext reports whether s starts, after any emphasis markers, with a
// letter, digit or mark, which would make the number before it part of
// something else ("#12abc"), as GitLab's lookahead reads it.
func wordNext(s string) bool {
	r, _ := utf8.DecodeRuneInString(skipEmphasis(s))
	return r != utf8.RuneError && wordRune(r)
}

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) }

// ClosingIssues returns the issues of the same project that a pull
// request's description says it closes ("Closes #3", "fixes #4, #5 and
// #6", "Resolves: #7"), in ascending order without repeats: the
// references of ClosingReferences written "#N" without a project.
// References to other projects (group/project#8), full URLs and "!N" are
// left out: the inventory links work within one project, and GitLab reads
// "!N" as a merge request. It reads text only, so it costs no forge call
// (GitLab's closes_issues would cost one per merge request).
func ClosingIssues(description string) []int64 {
	var out []int64
	for _, r := range ClosingReferences(description) {
		if r.Repo == "" && strings.HasPrefix(r.Text, "#") {
			out = append(out, r.Number)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
