package mr

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	wq "github.com/workqueue-dev/workqueue"
)

// Rules a refusal names. They are stable: callers and tests match on them.
const (
	RuleNoActions         = "no_actions"
	RuleTooManyActions    = "too_many_actions"
	RuleUnknownAction     = "unknown_action"
	RulePathEmpty         = "path_empty"
	RulePathAbsolute      = "path_absolute"
	RulePathNotClean      = "path_not_clean"
	RulePathDotDot        = "path_dotdot"
	RulePathGitDir        = "path_git_dir"
	RulePathControlChar   = "path_control_char"
	RulePathInvalidUTF8   = "path_invalid_utf8"
	RulePathBackslash     = "path_backslash"
	RulePathTooLong       = "path_too_long"
	RulePathDuplicate     = "path_duplicate"
	RulePathCaseCollision = "path_case_collision"
	// RulePathFileDirConflict refuses one name used as a file and as a
	// directory in one submission ("fd" and "fd/x.txt").
	RulePathFileDirConflict = "path_file_dir_conflict"
	RulePathBlocked         = "path_blocked"
	RulePreviousPath        = "previous_path_required"
	RuleUnexpectedField     = "unexpected_field"
	RuleContentRequired     = "content_required"
	RuleEncoding            = "encoding_invalid"
	RuleBase64              = "base64_invalid"
	RuleFilemodeRequired    = "execute_filemode_required"
	RuleBinary              = "binary_content"
	RuleFileTooLarge        = "file_too_large"
	RuleTotalTooLarge       = "total_too_large"

	// Paths that cannot be checked out as themselves on Windows (git's
	// verify_path with core.protectNTFS) or read as an option.
	RulePathColon              = "path_colon"                 // "C:x", "a:b", "a::$DATA"
	RulePathReservedChar       = "path_reserved_char"         // < > " | ? *
	RulePathTrailingDotOrSpace = "path_trailing_dot_or_space" // "a./b", "a "
	RulePathReservedName       = "path_reserved_name"         // "nul.txt", "Com1.tar.gz", "LPT¹", "con .x"
	RulePathLeadingDash        = "path_leading_dash"          // "-rf", "a/--help"

	// Paths whose Unicode changes what they mean or how they read.
	RulePathBidiControl    = "path_bidi_control"    // U+202E and the other Bidi_Control code points
	RulePathInvisibleChar  = "path_invisible_char"  // U+200B, U+00AD and all Default_Ignorable_Code_Point and Cf
	RulePathUnassignedChar = "path_unassigned_char" // unassigned code points and noncharacters
	RulePathNotNFC         = "path_not_nfc"         // "e\u0301" for "\u00e9"

	// git's own configuration files (git fsck's .gitmodules and
	// .gitattributes rules, and the per-project switch).
	RuleGitmodulesRefused    = "gitmodules_refused"    // any .gitmodules while the project refuses git configuration files
	RuleGitmodulesInvalid    = "gitmodules_invalid"    // a .gitmodules git fsck refuses, or a submodule URL that is not remote
	RuleGitattributesDriver  = "gitattributes_driver"  // "*.c filter=x" while the project refuses git configuration files
	RuleGitattributesInvalid = "gitattributes_invalid" // a .gitattributes git fsck refuses
	RuleLfsconfigRefused     = "lfsconfig_refused"     // any .lfsconfig while the project refuses git configuration files
)

// Bounds that hold whatever the project settings say.
const (
	MaxActions        = 1000
	MaxPathBytes      = 4096
	MaxComponentBytes = 255
)

// Policy is the per-project part of inspection. Its zero value is the
// strictest policy.
type Policy struct {
	BlockedPaths  []string // doublestar globs (** crosses directories), matched against every path an action touches
	MaxFileBytes  int64    // decoded size of one file's content; 0: no limit
	MaxTotalBytes int64    // decoded size of all contents; 0: no limit
	AllowBinary   bool
	// AllowGitConfigFiles lets a change write .gitmodules (whose
	// content must still pass git fsck's rules) and .gitattributes lines
	// that name filter, diff or merge drivers. Off, any action on a
	// .gitmodules is refused, in any directory and under any name a file
	// system reads as it: a submodule makes a clone fetch from where the
	// submitter says, and a driver picks which program runs on checkout.
	AllowGitConfigFiles bool
	// AllowSecrets turns push protection off: file contents holding a
	// secret are pushed as submitted. SecretAllowlist lets findings
	// through by path and rule instead.
	AllowSecrets    bool
	SecretAllowlist []SecretAllow
}

// Refusal says which action broke which rule, and why.
// Refusal is the root package's: refusals of the mr type name an action
// or a field of the submission.
type Refusal = wq.Refusal

// Inspect checks a submission's file actions against git's own path
// protections and the project's policy. It is pure and runs before
// anything is stored or any forge is called; it refuses, it never fixes up
// (a normalised path is not the path that was checked). The first
// refusal, in action order, is returned; nil means the actions are safe.
// It is InspectAll's first refusal.
func Inspect(actions []FileAction, p Policy) *Refusal {
	if rs := InspectAll(actions, p); len(rs) > 0 {
		return rs[0]
	}
	return nil
}

// MaxRefusals bounds the refusals InspectAll returns.
const MaxRefusals = 100

// InspectAll is Inspect reporting every refused action, in action order,
// each with the first rule it breaks (up to MaxRefusals), so that a
// caller fixes them all in one go; none means the actions are safe. An
// action's later checks depend on its earlier ones (its content is sized
// only once its encoding is known), so one action gets one refusal.
func InspectAll(actions []FileAction, p Policy) []*Refusal {
	if len(actions) == 0 {
		return []*Refusal{{Index: -1, Rule: RuleNoActions, Message: "a change needs at least one file action"}}
	}
	if len(actions) > MaxActions {
		return []*Refusal{{Index: MaxActions, Path: actions[MaxActions].FilePath, Rule: RuleTooManyActions,
			Message: fmt.Sprintf("at most %d file actions per change", MaxActions)}}
	}
	var out []*Refusal
	st := inspection{seen: map[string]int{}}
	for i, a := range actions {
		if r := st.action(i, a, p); r != nil {
			if out = append(out, r); len(out) == MaxRefusals {
				break
			}
		}
	}
	return out
}

// inspection is what Inspect remembers from one action to the next.
type inspection struct {
	seen  map[string]int // exact path → index
	names foldTree
	total int64
}

// action checks action i; it returns the first rule the action breaks,
// or nil.
func (st *inspection) action(i int, a FileAction, p Policy) *Refusal {
	seen, names := st.seen, &st.names
	refuse := func(p, rule, format string, args ...any) *Refusal {
		return &Refusal{Index: i, Path: p, Rule: rule, Message: fmt.Sprintf(format, args...)}
	}
	paths := []string{a.FilePath}
	switch a.Action {
	case ActionCreate, ActionUpdate, ActionDelete, ActionChmod:
		if a.PreviousPath != "" {
			return refuse(a.FilePath, RuleUnexpectedField, "previous_path is only for move")
		}
	case ActionMove:
		if a.PreviousPath == "" {
			return refuse(a.FilePath, RulePreviousPath, "move needs previous_path")
		}
		paths = append(paths, a.PreviousPath)
	default:
		return refuse(a.FilePath, RuleUnknownAction, "action must be create, update, delete, move or chmod, got %q", a.Action)
	}
	var gitFileContent *gitFileUse // a .gitmodules or .gitattributes whose content needs reading
	for _, fp := range paths {
		if r := checkPath(fp); r != nil {
			r.Index = i
			return r
		}
		if j, dup := seen[fp]; dup {
			return refuse(fp, RulePathDuplicate, "path already changed by action %d", j)
		}
		// Every directory counts, not only whole paths: "Dir/a"
		// and "dir/b" check out into one directory of two names
		// on a case-insensitive file system.
		switch prefix, earlier, conflict := names.add(fp, i); conflict {
		case spellingConflict:
			what := "path"
			if prefix != fp {
				what = "directory"
			}
			return refuse(fp, RulePathCaseCollision, "%s %q differs only in case or Unicode normalisation from %q in %q of action %d; a case-insensitive file system (Windows, macOS) holds one of them",
				what, prefix, earlier.spelling, earlier.path, earlier.index)
		case fileDirConflict:
			mine, theirs := "a file", "a directory"
			if prefix != fp {
				mine, theirs = theirs, mine
			}
			return refuse(fp, RulePathFileDirConflict, "%q is %s here but %s in %q of action %d; one commit cannot hold both, and a forge would silently drop one",
				prefix, mine, theirs, earlier.path, earlier.index)
		}
		seen[fp] = i
		for _, glob := range p.BlockedPaths {
			if ok, _ := doublestar.Match(glob, fp); ok {
				return refuse(fp, RulePathBlocked, "matches the project's blocked path %q", glob)
			}
		}
		use, r := checkGitFilePath(a, fp, p)
		if r != nil {
			r.Index = i
			return r
		}
		if use != nil && use.content {
			gitFileContent = use
		}
	}
	if a.Encoding != "" && a.Encoding != EncodingText && a.Encoding != EncodingBase64 {
		return refuse(a.FilePath, RuleEncoding, "encoding must be text or base64, got %q", a.Encoding)
	}
	switch a.Action {
	case ActionCreate, ActionUpdate:
		if a.Content == nil {
			return refuse(a.FilePath, RuleContentRequired, "%s needs content (\"\" for an empty file)", a.Action)
		}
	case ActionDelete, ActionChmod:
		if a.Content != nil || a.Encoding != "" {
			return refuse(a.FilePath, RuleUnexpectedField, "%s takes no content", a.Action)
		}
	case ActionMove:
		// The forges do not agree on a move's content: GitLab's
		// Commits API writes it, Gitea's ChangeFiles rename does not
		// apply it as given. What reaches the forge must be what was
		// inspected and recorded, on every forge, so a move carries
		// none: a file that moves and changes is a delete of the old
		// path and a create of the new one.
		if a.Content != nil || a.Encoding != "" {
			return refuse(a.FilePath, RuleUnexpectedField, "move takes no content; to move a file and change it, delete %q and create %q with the new content", a.PreviousPath, a.FilePath)
		}
	}
	if a.Action == ActionChmod && a.ExecuteFilemode == nil {
		return refuse(a.FilePath, RuleFilemodeRequired, "chmod needs execute_filemode")
	}
	if a.Action == ActionDelete && a.ExecuteFilemode != nil {
		return refuse(a.FilePath, RuleUnexpectedField, "delete takes no execute_filemode")
	}
	if a.ReplaceType && a.Action != ActionUpdate && a.Action != ActionMove {
		return refuse(a.FilePath, RuleUnexpectedField, "replace_type is only for update and move")
	}
	var content []byte
	if a.Content != nil {
		content = []byte(*a.Content)
	}
	if a.Encoding == EncodingBase64 {
		decoded, err := base64.StdEncoding.DecodeString(string(content))
		if err != nil {
			return refuse(a.FilePath, RuleBase64, "content is not valid base64: %v", err)
		}
		content = decoded
	}
	size := int64(len(content))
	if p.MaxFileBytes > 0 && size > p.MaxFileBytes {
		return refuse(a.FilePath, RuleFileTooLarge, "content is %d bytes, the project allows %d per file", size, p.MaxFileBytes)
	}
	st.total += size
	if p.MaxTotalBytes > 0 && st.total > p.MaxTotalBytes {
		return refuse(a.FilePath, RuleTotalTooLarge, "contents reach %d bytes here, the project allows %d per change", st.total, p.MaxTotalBytes)
	}
	if !p.AllowBinary && isBinary(content) {
		return refuse(a.FilePath, RuleBinary, "content looks binary (a NUL byte or invalid UTF-8); the project allows text only")
	}
	if gitFileContent != nil {
		if r := gitFileContent.checkContent(string(content), p); r != nil {
			r.Index = i
			return r
		}
	}
	return nil
}

// checkPath applies git's path protections and ours to one path: git's
// verify_path with both core.protectNTFS and core.protectHFS, as git for
// Windows and macOS check out, and the Unicode and option-injection
// classes of portable.go.
func checkPath(p string) *Refusal {
	refuse := func(rule, format string, args ...any) *Refusal {
		return &Refusal{Path: p, Rule: rule, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case p == "":
		return refuse(RulePathEmpty, "a path is required")
	case len(p) > MaxPathBytes:
		return refuse(RulePathTooLong, "path is %d bytes, at most %d", len(p), MaxPathBytes)
	case !utf8.ValidString(p):
		return refuse(RulePathInvalidUTF8, "path is not valid UTF-8")
	}
	for _, r := range p {
		// U+2028 and U+2029 break a line wherever a path is shown, as
		// a newline does.
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 {
			return refuse(RulePathControlChar, "path holds control character %U", r)
		}
	}
	if strings.Contains(p, `\`) {
		return refuse(RulePathBackslash, `backslash is a directory separator on Windows checkouts`)
	}
	if strings.HasPrefix(p, "/") {
		return refuse(RulePathAbsolute, "path must be relative to the repository root")
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "":
			return refuse(RulePathNotClean, "path has an empty component (a doubled or trailing /)")
		case c == ".":
			return refuse(RulePathNotClean, "path has a . component")
		case c == "..":
			return refuse(RulePathDotDot, "path has a .. component")
		case len(c) > MaxComponentBytes:
			return refuse(RulePathTooLong, "a path component is %d bytes, at most %d", len(c), MaxComponentBytes)
		case isDotGit(c):
			return refuse(RulePathGitDir, "component %q is, or is read by some file system as, .git", c)
		}
	}
	if path.Clean(p) != p {
		return refuse(RulePathNotClean, "path is not in clean form")
	}
	if r := checkCharacters(p); r != nil {
		return r
	}
	for _, c := range strings.Split(p, "/") {
		if r := checkComponent(p, c); r != nil {
			return r
		}
	}
	return nil
}

// isDotGit reports whether a path component names .git on some file
// system git runs on, following git's verify_path: any case; NTFS drops
// trailing dots and spaces, reads an alternate data stream suffix
// (".git::$INDEX_ALLOCATION") as the file itself, and knows .git by its
// 8.3 short name GIT~1; HFS+ ignores zero-width and direction code points
// (".g\u200cit").
func isDotGit(c string) bool {
	var b strings.Builder
	for _, r := range c {
		if !hfsIgnorable(r) {
			b.WriteRune(r)
		}
	}
	n := strings.ToLower(b.String())
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimRight(n, ". ")
	return n == ".git" || n == "git~1"
}

// hfsIgnorable lists the code points HFS+ ignores when comparing names
// (git's is_hfs_dotgit).
func hfsIgnorable(r rune) bool {
	switch {
	case r == 0x200c, r == 0x200d, r == 0x200e, r == 0x200f, r == 0xfeff:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f:
		return true
	}
	return false
}

// isBinary reports a NUL byte anywhere in content, or invalid UTF-8: a
// forge's text API would mangle either. It looks at the whole content,
// not git's first 8000 bytes: what is judged text must be what push
// protection reads as text, whatever the size (a NUL placed past a
// window made a file text here and binary to a scanner). Push
// protection scans binary content too (secrets.Scan), so that no shape
// of content turns it off.
func isBinary(content []byte) bool {
	return bytes.IndexByte(content, 0) >= 0 || !utf8.Valid(content)
}
