package mr

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// gitFile is a file git reads its own configuration from, with the
// prefix Windows builds the fallback 8.3 short name of it from (git's
// is_ntfs_dotgitmodules and is_ntfs_dotgitattributes).
type gitFile struct {
	name          string // without the leading dot
	shortFallback string // "gi7eba" for .gitmodules: GI7EBA~1 and so on
}

var (
	dotGitmodules    = gitFile{name: "gitmodules", shortFallback: "gi7eba"}
	dotGitattributes = gitFile{name: "gitattributes", shortFallback: "gi7d29"}
	// .lfsconfig is git-lfs's configuration from the repository: its
	// lfs.url sends every clone's LFS traffic, credentials included, where
	// it says. Git knows no fallback short name for it.
	dotLfsconfig = gitFile{name: "lfsconfig", shortFallback: "lfscon"}
)

// matches reports whether component c names f on some file system git
// runs on, as git fsck and verify_path decide it: any case; HFS+ ignores
// zero-width and other default-ignorable code points; NTFS drops
// trailing dots and spaces, reads "name:stream" as the name, and knows
// the file by its 8.3 short name: the first six letters, '~' and 1-4
// ("GITMOD~1"), or, past four, a fallback of up to six letters of a
// hash-derived prefix, '~' and digits filling eight characters
// ("GI7EBA~5", "GI7~1234").
func (f gitFile) matches(c string) bool {
	var b strings.Builder
	for _, r := range c {
		if !unicode.Is(invisible, r) {
			b.WriteRune(r)
		}
	}
	n := b.String()
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	n = asciiLower(strings.TrimRight(n, ". "))
	if n == "."+f.name {
		return true
	}
	if len(n) != 8 {
		return false
	}
	if n[:6] == f.name[:6] && n[6] == '~' && n[7] >= '1' && n[7] <= '4' {
		return true
	}
	tilde := strings.IndexByte(n, '~')
	if tilde < 0 || tilde > 6 || n[:tilde] != f.shortFallback[:tilde] || n[tilde+1] < '1' || n[tilde+1] > '9' {
		return false
	}
	for i := tilde + 2; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}

// asciiLower lowers ASCII letters only, as the strncasecmp git compares
// these names with does: a non-ASCII letter never lowers into one.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// gitFileUse is how one action touches a git configuration file.
type gitFileUse struct {
	file    gitFile
	path    string
	content bool // the action writes content Inspect can read (create, update)
	moved   bool // the action moves other content in under the name
}

// checkGitFilePath refuses what path fp of action a does to .gitmodules
// or .gitattributes that no content could excuse, and otherwise returns
// which of them fp is, if either. A directory under either name is
// refused: git fsck reports a .gitmodules or .gitattributes that is not a
// blob (gitmodulesBlob, gitattributesBlob). Content moved in under either
// name cannot be read here, so a move is refused wherever the content
// would be checked.
func checkGitFilePath(a FileAction, fp string, p Policy) (*gitFileUse, *Refusal) {
	refuse := func(rule, format string, args ...any) (*gitFileUse, *Refusal) {
		return nil, &Refusal{Path: fp, Rule: rule, Message: fmt.Sprintf(format, args...)}
	}
	components := strings.Split(fp, "/")
	for i, c := range components {
		var f gitFile
		switch {
		case dotLfsconfig.matches(c):
			if p.AllowGitConfigFiles {
				continue
			}
			return refuse(RuleLfsconfigRefused, "%q names .lfsconfig, which points git-lfs (and the credentials it sends) at a server of its choosing, and this project does not take git configuration files from changes (allow_git_config_files)", c)
		case dotGitmodules.matches(c):
			f = dotGitmodules
		case dotGitattributes.matches(c):
			f = dotGitattributes
		default:
			continue
		}
		last := i == len(components)-1
		use := &gitFileUse{file: f, path: fp,
			content: last && fp == a.FilePath && (a.Action == ActionCreate || a.Action == ActionUpdate),
			moved:   last && fp == a.FilePath && a.Action == ActionMove}
		switch {
		case f == dotGitmodules && !p.AllowGitConfigFiles:
			return refuse(RuleGitmodulesRefused, "%q names .gitmodules, and this project does not take submodule configuration from changes (allow_git_config_files)", c)
		case !last && f == dotGitmodules:
			return refuse(RuleGitmodulesInvalid, "%q names .gitmodules, which git reads as a file; git fsck refuses it as a directory", c)
		case !last:
			return refuse(RuleGitattributesInvalid, "%q names .gitattributes, which git reads as a file; git fsck refuses it as a directory", c)
		case use.moved && f == dotGitmodules:
			return refuse(RuleGitmodulesInvalid, "a .gitmodules moved into place cannot be inspected; write it with create or update")
		case use.moved && !p.AllowGitConfigFiles:
			return refuse(RuleGitattributesDriver, "a .gitattributes moved into place cannot be inspected for drivers; write it with create or update")
		}
		return use, nil
	}
	return nil, nil
}

// checkContent applies the content rules of u's file to what the action
// writes there.
func (u *gitFileUse) checkContent(content string, p Policy) *Refusal {
	if u.file == dotGitmodules {
		if msg := checkGitmodules(content); msg != "" {
			return &Refusal{Path: u.path, Rule: RuleGitmodulesInvalid, Message: msg}
		}
		return nil
	}
	if rule, msg := checkGitattributes(content, p.AllowGitConfigFiles); rule != "" {
		return &Refusal{Path: u.path, Rule: rule, Message: msg}
	}
	return nil
}

// checkGitmodules applies git fsck's .gitmodules rules
// (fsck_gitmodules_fn) to content, and a few more that make a submodule
// fetch something other than a remote repository: for every submodule,
// a name that cannot escape .git/modules (no ".." component, as
// check_submodule_name), a path that is a path Inspect itself accepts
// (no leading '-', as fsck; no "..", no .git), no "update = !command", and
// a url that is a remote repository: not an option, not a file: URL or
// local path, not a transport helper ("ext::"), without a newline even
// once percent-decoded (check_submodule_url, CVE-2020-11008).
func checkGitmodules(content string) string {
	entries, err := parseGitConfig(content)
	if err != nil {
		return "does not parse as git config: " + err.Error()
	}
	for _, e := range entries {
		if e.Section == "include" || e.Section == "includeif" {
			return fmt.Sprintf("line %d: includes have no place in .gitmodules", e.Line)
		}
		if e.Section != "submodule" || !e.HasSub {
			continue
		}
		where := fmt.Sprintf("line %d: submodule %q", e.Line, e.Subsection)
		if msg := checkSubmoduleName(e.Subsection); msg != "" {
			return where + ": name " + msg
		}
		if !e.HasValue {
			continue
		}
		switch e.Key {
		case "path":
			if r := checkPath(e.Value); r != nil {
				return fmt.Sprintf("%s: path %q: %s", where, e.Value, r.Message)
			}
		case "url":
			if msg := checkSubmoduleURL(e.Value); msg != "" {
				return fmt.Sprintf("%s: url %q %s", where, e.Value, msg)
			}
		case "update":
			if strings.HasPrefix(strings.TrimSpace(e.Value), "!") {
				return where + ": update runs a command (\"!...\"), which git fsck refuses"
			}
		}
	}
	return ""
}

// checkSubmoduleName keeps a submodule name inside .git/modules, where
// git stores the submodule's repository under it: no empty name, no ".."
// component with either separator (git's check_submodule_name), and no
// control characters.
func checkSubmoduleName(name string) string {
	if name == "" {
		return "is empty"
	}
	for _, c := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if c == ".." {
			return "has a .. component, which escapes .git/modules"
		}
	}
	if hasControlChar(name) {
		return "holds a control character"
	}
	return ""
}

// checkSubmoduleURL returns why u is not a remote repository URL, or "".
// Accepted: http(s), ssh and git URLs, scp-like "host:path", and
// "./" or "../" URLs relative to the superproject's remote.
func checkSubmoduleURL(u string) string {
	if u == "" {
		return "is empty"
	}
	if strings.HasPrefix(u, "-") {
		return "starts with '-', which git would pass as an option (git fsck: gitmodulesUrl)"
	}
	if hasControlChar(u) {
		return "holds a control character such as a newline (git fsck: gitmodulesUrl)"
	}
	if decoded, err := url.PathUnescape(u); err == nil && hasControlChar(decoded) {
		return "holds a percent-encoded control character such as a newline (git fsck: gitmodulesUrl)"
	}
	if strings.Contains(u, `\`) {
		return "holds a backslash, a path separator on Windows"
	}
	if strings.HasPrefix(u, "./") || strings.HasPrefix(u, "../") {
		rest := u
		for {
			if r, ok := strings.CutPrefix(rest, "./"); ok {
				rest = r
			} else if r, ok := strings.CutPrefix(rest, "../"); ok {
				rest = r
			} else {
				break
			}
		}
		// "../../:x" or "../..//x" climbs past the remote's path into
		// its host part (git's check_submodule_url, CVE-2020-11008).
		if rest == "" || rest == "." || rest == ".." || strings.HasPrefix(rest, "/") || strings.HasPrefix(rest, ":") {
			return "climbs out of the superproject's remote URL"
		}
		return ""
	}
	scheme := 0
	for scheme < len(u) && (isASCIILetter(u[scheme]) || scheme > 0 && (isASCIIDigit(u[scheme]) || strings.IndexByte("+.-", u[scheme]) >= 0)) {
		scheme++
	}
	if scheme > 0 && strings.HasPrefix(u[scheme:], "::") {
		return "names a transport helper (" + u[:scheme] + "::), which runs a program"
	}
	if scheme > 0 && strings.HasPrefix(u[scheme:], "://") {
		switch strings.ToLower(u[:scheme]) {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
		case "file":
			return "is a file: URL: it reads a repository on the machine that clones"
		default:
			return "uses a scheme other than https, http, ssh or git"
		}
		parsed, err := url.Parse(u)
		if err != nil || parsed.Host == "" {
			return "is not a URL with a host"
		}
		if strings.HasPrefix(parsed.Host, "-") || strings.HasPrefix(parsed.User.Username(), "-") {
			return "has a host or user starting with '-', which ssh would read as an option"
		}
		return ""
	}
	// scp-like syntax, [user@]host:path, is git's when a colon comes
	// before any slash; anything else is a local path.
	colon, slash := strings.IndexByte(u, ':'), strings.IndexByte(u, '/')
	if colon <= 0 || (slash >= 0 && slash < colon) {
		return "is a local path: it reads a repository on the machine that clones"
	}
	host := u[:colon]
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		if strings.HasPrefix(host, "-") {
			return "has a user starting with '-', which ssh would read as an option"
		}
		host = host[at+1:]
	}
	switch {
	case host == "" || strings.HasPrefix(host, "-"):
		return "has an empty host or one starting with '-', which ssh would read as an option"
	case len(host) == 1 && isASCIILetter(host[0]):
		return "starts with a drive letter: on Windows it is a local path"
	}
	return ""
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isASCIIDigit(c byte) bool  { return c >= '0' && c <= '9' }

func hasControlChar(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0
}

// attrLineMax is git's ATTR_MAX_LINE_LENGTH: git ignores a longer
// .gitattributes line and fsck refuses it (gitattributesLineLength).
const attrLineMax = 2048

// attrFileMax is git's ATTR_MAX_FILE_SIZE: git ignores a larger
// .gitattributes and fsck refuses it (gitattributesLarge).
const attrFileMax = 100 << 20

// checkGitattributes returns why content is a .gitattributes this
// project may not receive, and the rule: a line git fsck refuses, or,
// unless drivers are allowed, a line that assigns a filter, diff or merge
// driver. A driver is configured outside the repository, but naming one
// from the repository picks which configured program runs on checkout,
// diff or merge, and "filter=lfs" changes what a checkout holds.
func checkGitattributes(content string, allowDrivers bool) (rule, msg string) {
	if len(content) > attrFileMax {
		return RuleGitattributesInvalid, fmt.Sprintf("it is %d bytes; git ignores a .gitattributes over %d and git fsck refuses it", len(content), attrFileMax)
	}
	content = strings.TrimPrefix(content, "\ufeff")
	for n, line := range strings.Split(content, "\n") {
		if len(line) >= attrLineMax {
			return RuleGitattributesInvalid, fmt.Sprintf("line %d is %d bytes; git ignores lines of %d or more and git fsck refuses them", n+1, len(line), attrLineMax)
		}
		if allowDrivers {
			continue
		}
		// A line whose first non-blank is '#' is a comment to git
		// (parse_attr_line). Anywhere else, "filter=" is looked for in
		// the whole line, not in parsed attributes: a quoted pattern can
		// end right before an attribute ("\"a\"filter=x"), and a macro
		// ("[attr]m filter=x") assigns a driver through its name.
		trimmed := strings.TrimLeft(line, " \t\r")
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		lowered := strings.ToLower(line)
		for _, driver := range []string{"filter=", "diff=", "merge="} {
			if strings.Contains(lowered, driver) {
				return RuleGitattributesDriver, fmt.Sprintf("line %d assigns a %s driver; this project does not take git drivers from changes (allow_git_config_files)", n+1, strings.TrimSuffix(driver, "="))
			}
		}
		// working-tree-encoding makes a checkout hold other bytes than the
		// repository (git re-encodes the file), so what was inspected is
		// not what lands on disk.
		if strings.Contains(lowered, "working-tree-encoding=") {
			return RuleGitattributesDriver, fmt.Sprintf("line %d sets working-tree-encoding, which makes a checkout hold other bytes than the repository; this project does not take that from changes (allow_git_config_files)", n+1)
		}
	}
	return "", ""
}
