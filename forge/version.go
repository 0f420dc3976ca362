package forge

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Version is a forge's server version as read from its version endpoint.
type Version struct {
	// Raw is the string as the forge reported it, for messages.
	Raw string
	// Major, Minor and Patch are its numbers; valid only when Parsed.
	Major, Minor, Patch int
	// PreRelease is true for a release candidate, beta or alpha
	// ("1.26.0-rc1"): it comes before the release of its numbers.
	PreRelease bool
	// Parsed is false when Raw holds no version ("development", "").
	Parsed bool
}

// versionPattern is a version's leading numbers, an optional "v", and
// what follows: a pre-release ("-rc1"), an edition ("-ee", "-ce", "-pre"
// of a GitLab nightly) or build metadata ("+dev-123-gabc").
var versionPattern = regexp.MustCompile(`^v?(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?(.*)$`)

// preRelease matches the suffixes that make a version come before its
// release.
var preRelease = regexp.MustCompile(`(?i)^-(rc|beta|alpha)[.\d-]*`)

// forgejoGitea is the Gitea version a Forgejo server names in build
// metadata ("11.0.0+gitea-1.22.0"): its own numbers are not Gitea's.
var forgejoGitea = regexp.MustCompile(`\+gitea-(\d+\.\d+(?:\.\d+)?)`)

// ParseVersion reads a version string as GitLab and Gitea report them:
// "1.26.0", "v1.26.1", "1.27.0+dev-123-gabc" (a build of the branch
// towards 1.27.0, read as 1.27.0), "1.26.0-rc1" (before 1.26.0),
// "17.5.0-ee" (an edition, not a pre-release), "11.0.0+gitea-1.22.0"
// (Forgejo: read as the Gitea version it names). Anything else
// ("development", "", garbage) is not Parsed.
func ParseVersion(raw string) Version {
	v := Version{Raw: raw}
	s := strings.TrimSpace(raw)
	if m := forgejoGitea.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		return v
	}
	rest := m[4]
	if rest != "" && rest[0] != '-' && rest[0] != '+' && rest[0] != ' ' {
		return v // "1.2x": not a version
	}
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	v.PreRelease = preRelease.MatchString(rest)
	v.Parsed = true
	return v
}

// Less reports whether v comes before w; both must be Parsed.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	if v.Patch != w.Patch {
		return v.Patch < w.Patch
	}
	return v.PreRelease && !w.PreRelease
}

// String is the version's numbers ("1.26.0"), or Raw when it holds none.
func (v Version) String() string {
	if !v.Parsed {
		return v.Raw
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// VersionVerdict says whether a forge's version is one the adapter works
// with.
type VersionVerdict int

// Verdicts of CheckVersion.
const (
	VersionSupported VersionVerdict = iota // at or above the kind's minimum
	VersionTooOld                          // below it: serve refuses to start
	VersionUnknown                         // unreadable: a warning, as it cannot be held to the minimum
)

// CheckVersion holds raw, as a forge of kind reported it, to minimum, the
// oldest version its adapter supports (wq.VersionReader.MinServerVersion),
// and says in words what it found. An empty minimum supports every
// version.
func CheckVersion(kind, minimum, raw string) (VersionVerdict, string) {
	got := ParseVersion(raw)
	if minimum == "" {
		return VersionSupported, fmt.Sprintf("%s %s", kind, quoteVersion(raw))
	}
	least := ParseVersion(minimum)
	switch {
	case !got.Parsed:
		return VersionUnknown, fmt.Sprintf("%s reports version %s, which is not a version number: it cannot be held to the minimum %s (see docs/forge-checks.md)",
			kind, quoteVersion(raw), minimum)
	case got.Less(least):
		return VersionTooOld, fmt.Sprintf("%s %s is older than %s, the oldest this service supports: upgrade the forge (see docs/forge-checks.md)",
			kind, quoteVersion(raw), minimum)
	}
	return VersionSupported, fmt.Sprintf("%s %s (at least %s)", kind, quoteVersion(raw), minimum)
}

// quoteVersion shows a version string as the forge sent it, bounded and
// quoted when it is not plain: a forge's answer is not ours to print
// whole.
func quoteVersion(raw string) string {
	if len(raw) > 64 {
		raw = raw[:64] + "…"
	}
	if raw == "" || strings.ContainsFunc(raw, func(r rune) bool { return r < 0x21 || r == '"' || r > 0x7e }) {
		return strconv.Quote(raw)
	}
	return raw
}
