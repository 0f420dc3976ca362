package mr

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/workqueue-dev/workqueue/secrets"
)

// RuleBranchNameInvalid refuses a source or target branch name that git
// would refuse as a branch (git check-ref-format --branch) or that the
// service refuses on top of git: see CheckBranchName.
const RuleBranchNameInvalid = "branch_name_invalid"

// maxBranchBytes bounds a branch name. Loose refs are files, so a longer
// name can fail on the forge's filesystem after git accepted it.
const maxBranchBytes = 255

// CheckBranchName returns nil if name may be used as a branch, and
// otherwise an error saying which rule it breaks (without repeating the
// name). It accepts no name that `git check-ref-format --branch` refuses
// (git's check_refname_component rules on refs/heads/<name>, plus its
// refusal of HEAD and a leading dash), and refuses these names git accepts:
//
//   - empty, longer than 255 bytes, or not valid UTF-8 (forges store and
//     show names as text);
//   - "@" alone, which git reads as HEAD;
//   - a name starting with "refs/": refs/heads/refs/heads/x is legal, but
//     "refs/heads/x" then names two refs, and forges refuse it;
//   - 40 or 64 hexadecimal digits, which git resolves as an object id
//     before it looks for a branch;
//   - Unicode control, format (bidirectional controls, zero-width
//     characters) and space characters, which make a name display as
//     another one.
func CheckBranchName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("required")
	case len(name) > maxBranchBytes:
		return fmt.Errorf("at most %d bytes", maxBranchBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("not valid UTF-8")
	case name == "HEAD":
		return fmt.Errorf("HEAD is not a branch name")
	case name == "@":
		return fmt.Errorf("a lone @ means HEAD to git")
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("starts with -, which git reads as an option")
	case strings.HasPrefix(name, "refs/"):
		return fmt.Errorf("starts with refs/, which makes it ambiguous with a full ref name")
	case isObjectID(name):
		return fmt.Errorf("looks like a commit id, which git resolves before any branch")
	}
	for i, r := range name {
		switch {
		case r < 0x20 || r == 0x7f:
			return fmt.Errorf("control character %U at byte %d", r, i)
		case strings.ContainsRune(" ~^:?*[\\", r):
			return fmt.Errorf("character %q at byte %d is reserved by git", r, i)
		case r >= 0x80 && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r)):
			return fmt.Errorf("invisible or space character %U at byte %d", r, i)
		}
	}
	switch {
	case strings.Contains(name, ".."):
		return fmt.Errorf("contains ..")
	case strings.Contains(name, "@{"):
		return fmt.Errorf("contains @{, git's reflog syntax")
	case strings.HasSuffix(name, "."):
		return fmt.Errorf("ends with a dot")
	}
	// Git checks refs/heads/<name> component by component: none may be
	// empty (a leading, trailing or doubled slash), start with a dot, or
	// end in .lock (git's own lock files).
	for c := range strings.SplitSeq(name, "/") {
		switch {
		case c == "":
			return fmt.Errorf("empty path component (a leading, trailing or doubled /)")
		case strings.HasPrefix(c, "."):
			return fmt.Errorf("component %q starts with a dot", secrets.Text(c))
		case strings.HasSuffix(c, ".lock"):
			return fmt.Errorf("component %q ends with .lock", secrets.Text(c))
		}
	}
	return nil
}

// isObjectID reports whether name is spelled like a full SHA-1 or
// SHA-256 object id.
func isObjectID(name string) bool {
	if len(name) != 40 && len(name) != 64 {
		return false
	}
	for _, c := range []byte(name) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
