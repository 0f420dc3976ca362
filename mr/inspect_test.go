package mr

import (
	"encoding/base64"
	"fmt"
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

func text(s string) *string { return &s }

func create(path string) FileAction {
	return FileAction{Action: ActionCreate, FilePath: path, Content: text("hello\n")}
}

// wantRefusal checks that r refuses the action at index, naming path and
// rule, and says why.
func wantRefusal(t *testing.T, r *Refusal, index int, path, rule string) {
	t.Helper()
	if r == nil {
		t.Fatalf("accepted, want refusal %s", rule)
	}
	if r.Index != index || r.Path != path || r.Rule != rule {
		t.Errorf("refusal %d %q %s (%s), want %d %q %s", r.Index, r.Path, r.Rule, r.Message, index, path, rule)
	}
	if r.Message == "" {
		t.Error("refusal without a message")
	}
}

func TestInspectAcceptsOrdinaryChanges(t *testing.T) {
	yes := true
	actions := []FileAction{
		create("README.md"),
		{Action: ActionUpdate, FilePath: "src/main.go", Content: text("package main\n")},
		{Action: ActionCreate, FilePath: "empty.txt", Content: text("")},
		{Action: ActionDelete, FilePath: "old/file.txt"},
		{Action: ActionMove, FilePath: "new/name.go", PreviousPath: "old/name.go"},
		{Action: ActionChmod, FilePath: "scripts/run", ExecuteFilemode: &yes},
		{Action: ActionCreate, FilePath: "logo.txt", Content: text(base64.StdEncoding.EncodeToString([]byte("plain"))), Encoding: EncodingBase64},
		create(".github/workflows/ci.yml"), // .github is not .git
		create("docs/.gitignore"),          // nor is .gitignore
		create("héllo/wörld.txt"),
		create("a/git~2"),
	}
	if r := Inspect(actions, Policy{BlockedPaths: []string{"secrets/**"}, MaxFileBytes: 100, MaxTotalBytes: 1000}); r != nil {
		t.Fatalf("refused an ordinary change: %v", r)
	}
}

func TestInspectRefusesWithIndexPathAndRule(t *testing.T) {
	yes := true
	long := strings.Repeat("a", 256)
	binary := base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G', 0, 0, 0, 1})
	policy := Policy{BlockedPaths: []string{".gitlab-ci.yml", "**/CODEOWNERS", "secrets/**"}, MaxFileBytes: 10, MaxTotalBytes: 15}
	for _, tc := range []struct {
		name    string
		actions []FileAction
		index   int
		path    string
		rule    string
	}{
		{"nothing to do", nil, -1, "", RuleNoActions},
		{"unknown action", []FileAction{{Action: "symlink", FilePath: "a"}}, 0, "a", RuleUnknownAction},
		{"empty path", []FileAction{create("")}, 0, "", RulePathEmpty},
		{"absolute path", []FileAction{create("ok"), create("/etc/passwd")}, 1, "/etc/passwd", RulePathAbsolute},
		{"dot dot", []FileAction{create("a/../../b")}, 0, "a/../../b", RulePathDotDot},
		{"leading dot dot", []FileAction{create("../b")}, 0, "../b", RulePathDotDot},
		{"dot component", []FileAction{create("a/./b")}, 0, "a/./b", RulePathNotClean},
		{"doubled slash", []FileAction{create("a//b")}, 0, "a//b", RulePathNotClean},
		{"trailing slash", []FileAction{create("a/")}, 0, "a/", RulePathNotClean},
		{".git", []FileAction{create(".git/config")}, 0, ".git/config", RulePathGitDir},
		{".git deeper", []FileAction{create("sub/.git/hooks/pre-commit")}, 0, "sub/.git/hooks/pre-commit", RulePathGitDir},
		{".GIT upper case", []FileAction{create(".GIT/config")}, 0, ".GIT/config", RulePathGitDir},
		{".Git mixed case", []FileAction{create("x/.Git/HEAD")}, 0, "x/.Git/HEAD", RulePathGitDir},
		{"NTFS short name", []FileAction{create("git~1/config")}, 0, "git~1/config", RulePathGitDir},
		{"NTFS short name upper", []FileAction{create("GIT~1/config")}, 0, "GIT~1/config", RulePathGitDir},
		{"NTFS trailing dot", []FileAction{create(".git./config")}, 0, ".git./config", RulePathGitDir},
		{"NTFS trailing space", []FileAction{create(".git /config")}, 0, ".git /config", RulePathGitDir},
		{"NTFS trailing dots and spaces", []FileAction{create(".git. . /config")}, 0, ".git. . /config", RulePathGitDir},
		{"NTFS data stream", []FileAction{create(".git::$INDEX_ALLOCATION/config")}, 0, ".git::$INDEX_ALLOCATION/config", RulePathGitDir},
		{"HFS zero-width non-joiner", []FileAction{create(".g\u200cit/config")}, 0, ".g\u200cit/config", RulePathGitDir},
		{"HFS zero-width joiner", []FileAction{create(".gi\u200dt/config")}, 0, ".gi\u200dt/config", RulePathGitDir},
		{"HFS byte order mark", []FileAction{create("\ufeff.git/config")}, 0, "\ufeff.git/config", RulePathGitDir},
		{"HFS direction mark", []FileAction{create(".git\u202e/config")}, 0, ".git\u202e/config", RulePathGitDir},
		{"git dir as previous path", []FileAction{{Action: ActionMove, FilePath: "a", PreviousPath: ".git/config"}}, 0, ".git/config", RulePathGitDir},
		{"NUL", []FileAction{create("a\x00b")}, 0, "a\x00b", RulePathControlChar},
		{"newline", []FileAction{create("a\nb")}, 0, "a\nb", RulePathControlChar},
		{"escape", []FileAction{create("a\x1b[31mb")}, 0, "a\x1b[31mb", RulePathControlChar},
		{"DEL", []FileAction{create("a\x7f")}, 0, "a\x7f", RulePathControlChar},
		{"C1 control", []FileAction{create("a\u0085b")}, 0, "a\u0085b", RulePathControlChar},
		{"invalid UTF-8", []FileAction{create("a\xffb")}, 0, "a\xffb", RulePathInvalidUTF8},
		{"backslash", []FileAction{create(`..\..\x`)}, 0, `..\..\x`, RulePathBackslash},
		{"overlong component", []FileAction{create("a/" + long)}, 0, "a/" + long, RulePathTooLong},
		{"overlong path", []FileAction{create(strings.Repeat("abcdefgh/", 460))}, 0, strings.Repeat("abcdefgh/", 460), RulePathTooLong},
		{"same path twice", []FileAction{create("a"), {Action: ActionDelete, FilePath: "a"}}, 1, "a", RulePathDuplicate},
		{"move source touched again", []FileAction{{Action: ActionMove, FilePath: "b", PreviousPath: "a"}, create("a")}, 1, "a", RulePathDuplicate},
		{"paths differing only in case", []FileAction{create("Readme.md"), create("README.md")}, 1, "README.md", RulePathCaseCollision},
		{"move without previous path", []FileAction{{Action: ActionMove, FilePath: "b"}}, 0, "b", RulePreviousPath},
		{"previous path on create", []FileAction{{Action: ActionCreate, FilePath: "b", PreviousPath: "a", Content: text("")}}, 0, "b", RuleUnexpectedField},
		{"create without content", []FileAction{{Action: ActionCreate, FilePath: "b"}}, 0, "b", RuleContentRequired},
		{"update without content", []FileAction{{Action: ActionUpdate, FilePath: "b"}}, 0, "b", RuleContentRequired},
		{"delete with content", []FileAction{{Action: ActionDelete, FilePath: "b", Content: text("x")}}, 0, "b", RuleUnexpectedField},
		{"delete with filemode", []FileAction{{Action: ActionDelete, FilePath: "b", ExecuteFilemode: &yes}}, 0, "b", RuleUnexpectedField},
		{"chmod without filemode", []FileAction{{Action: ActionChmod, FilePath: "b"}}, 0, "b", RuleFilemodeRequired},
		{"unknown encoding", []FileAction{{Action: ActionCreate, FilePath: "b", Content: text("x"), Encoding: "hex"}}, 0, "b", RuleEncoding},
		{"bad base64", []FileAction{{Action: ActionCreate, FilePath: "b", Content: text("@@@"), Encoding: EncodingBase64}}, 0, "b", RuleBase64},
		{"blocked file", []FileAction{create(".gitlab-ci.yml")}, 0, ".gitlab-ci.yml", RulePathBlocked},
		{"blocked anywhere", []FileAction{create("a/b/CODEOWNERS")}, 0, "a/b/CODEOWNERS", RulePathBlocked},
		{"blocked directory", []FileAction{{Action: ActionDelete, FilePath: "secrets/prod/key"}}, 0, "secrets/prod/key", RulePathBlocked},
		{"moved out of a blocked directory", []FileAction{{Action: ActionMove, FilePath: "public/key", PreviousPath: "secrets/key"}}, 0, "secrets/key", RulePathBlocked},
		{"file too large", []FileAction{{Action: ActionCreate, FilePath: "b", Content: text("12345678901")}}, 0, "b", RuleFileTooLarge},
		{"base64 counts decoded", []FileAction{{Action: ActionCreate, FilePath: "b", Content: text(base64.StdEncoding.EncodeToString([]byte("12345678901"))), Encoding: EncodingBase64}}, 0, "b", RuleFileTooLarge},
		{"total too large", []FileAction{{Action: ActionCreate, FilePath: "a", Content: text("12345678")}, {Action: ActionCreate, FilePath: "b", Content: text("12345678")}}, 1, "b", RuleTotalTooLarge},
		{"binary", []FileAction{{Action: ActionCreate, FilePath: "p.png", Content: text(binary), Encoding: EncodingBase64}}, 0, "p.png", RuleBinary},
		{"invalid UTF-8 content", []FileAction{{Action: ActionCreate, FilePath: "t", Content: text("ab\xff")}}, 0, "t", RuleBinary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefusal(t, Inspect(tc.actions, policy), tc.index, tc.path, tc.rule)
		})
	}
}

func TestInspectAllowsBinaryWhenThePolicyDoes(t *testing.T) {
	binary := base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G', 0, 0})
	a := []FileAction{{Action: ActionCreate, FilePath: "p.png", Content: text(binary), Encoding: EncodingBase64}}
	if r := Inspect(a, Policy{AllowBinary: true}); r != nil {
		t.Errorf("refused binary content the policy allows: %v", r)
	}
}

func TestInspectRefusesTooManyActions(t *testing.T) {
	actions := make([]FileAction, MaxActions+1)
	for i := range actions {
		actions[i] = create(strings.Repeat("x", 1+i%200) + "/" + string(rune('a'+i%26)) + strings.Repeat("y", i/26))
	}
	if r := Inspect(actions, Policy{}); r == nil || r.Rule != RuleTooManyActions || r.Index != MaxActions {
		t.Errorf("got %v, want %s at index %d", r, RuleTooManyActions, MaxActions)
	}
}

func TestInspectRefusesPathClasses(t *testing.T) {
	long := strings.Repeat("é", 128) // 256 bytes in 128 characters
	for _, tc := range []struct {
		name    string
		actions []FileAction
		index   int
		path    string
		rule    string
	}{
		// Windows: drive letters, streams and colons anywhere.
		{"drive letter", []FileAction{create("C:x")}, 0, "C:x", RulePathColon},
		{"drive letter with slash", []FileAction{create("c:/windows/x")}, 0, "c:/windows/x", RulePathColon},
		{"colon inside a name", []FileAction{create("a:b")}, 0, "a:b", RulePathColon},
		{"colon in a directory", []FileAction{create("dir:x/a")}, 0, "dir:x/a", RulePathColon},
		{"NTFS data stream", []FileAction{create("a::$DATA")}, 0, "a::$DATA", RulePathColon},
		{"NTFS named stream", []FileAction{create("README.md:hidden")}, 0, "README.md:hidden", RulePathColon},
		{"colon as previous path", []FileAction{{Action: ActionMove, FilePath: "b", PreviousPath: "x:y"}}, 0, "x:y", RulePathColon},
		{"less than", []FileAction{create("a<b")}, 0, "a<b", RulePathReservedChar},
		{"greater than", []FileAction{create("a>b")}, 0, "a>b", RulePathReservedChar},
		{"double quote", []FileAction{create(`a"b`)}, 0, `a"b`, RulePathReservedChar},
		{"pipe", []FileAction{create("a|b")}, 0, "a|b", RulePathReservedChar},
		{"question mark", []FileAction{create("what?")}, 0, "what?", RulePathReservedChar},
		{"asterisk", []FileAction{create("d/*")}, 0, "d/*", RulePathReservedChar},
		// Windows device names, in any case, with any extension.
		{"NUL", []FileAction{create("NUL")}, 0, "NUL", RulePathReservedName},
		{"nul with an extension", []FileAction{create("nul.txt")}, 0, "nul.txt", RulePathReservedName},
		{"con in a directory", []FileAction{create("docs/con")}, 0, "docs/con", RulePathReservedName},
		{"aux as a directory", []FileAction{create("Aux/readme.md")}, 0, "Aux/readme.md", RulePathReservedName},
		{"prn mixed case", []FileAction{create("pRn.c")}, 0, "pRn.c", RulePathReservedName},
		{"COM1 two extensions", []FileAction{create("Com1.tar.gz")}, 0, "Com1.tar.gz", RulePathReservedName},
		{"COM9", []FileAction{create("com9")}, 0, "com9", RulePathReservedName},
		{"COM0", []FileAction{create("COM0.log")}, 0, "COM0.log", RulePathReservedName},
		{"LPT5", []FileAction{create("x/lpt5.md")}, 0, "x/lpt5.md", RulePathReservedName},
		{"COM superscript one", []FileAction{create("COM¹")}, 0, "COM¹", RulePathReservedName},
		{"com superscript two with extension", []FileAction{create("com².txt")}, 0, "com².txt", RulePathReservedName},
		{"LPT superscript three", []FileAction{create("Lpt³.x")}, 0, "Lpt³.x", RulePathReservedName},
		{"CONIN$", []FileAction{create("CONIN$")}, 0, "CONIN$", RulePathReservedName},
		{"conout$ with extension", []FileAction{create("a/conout$.log")}, 0, "a/conout$.log", RulePathReservedName},
		{"space before the extension", []FileAction{create("nul .txt")}, 0, "nul .txt", RulePathReservedName},
		{"spaces before the extension", []FileAction{create("CON   .md")}, 0, "CON   .md", RulePathReservedName},
		{"dot before the extension", []FileAction{create("aux..txt")}, 0, "aux..txt", RulePathReservedName},
		{"dot and space before the extension", []FileAction{create("lpt1. .c")}, 0, "lpt1. .c", RulePathReservedName},
		// Windows drops trailing dots and spaces from every component.
		{"trailing dot", []FileAction{create("a.")}, 0, "a.", RulePathTrailingDotOrSpace},
		{"trailing space", []FileAction{create("a ")}, 0, "a ", RulePathTrailingDotOrSpace},
		{"trailing dot on a directory", []FileAction{create("dir./a")}, 0, "dir./a", RulePathTrailingDotOrSpace},
		{"trailing space on a directory", []FileAction{create("src /main.go")}, 0, "src /main.go", RulePathTrailingDotOrSpace},
		{"trailing dot and space", []FileAction{create("x/b. ")}, 0, "x/b. ", RulePathTrailingDotOrSpace},
		{"trailing space and dot", []FileAction{create("x/b .")}, 0, "x/b .", RulePathTrailingDotOrSpace},
		{"three dots", []FileAction{create(".../a")}, 0, ".../a", RulePathTrailingDotOrSpace},
		{"a device name with a trailing space", []FileAction{create("nul ")}, 0, "nul ", RulePathTrailingDotOrSpace},
		{"overlong component in two-byte characters", []FileAction{create(long)}, 0, long, RulePathTooLong},
		// Options.
		{"leading dash", []FileAction{create("-rf")}, 0, "-rf", RulePathLeadingDash},
		{"leading double dash in a directory", []FileAction{create("a/--help/b")}, 0, "a/--help/b", RulePathLeadingDash},
		{"lone dash", []FileAction{create("x/-")}, 0, "x/-", RulePathLeadingDash},
		{"leading dash as previous path", []FileAction{{Action: ActionMove, FilePath: "b", PreviousPath: "-b"}}, 0, "-b", RulePathLeadingDash},
		// Unicode that changes how a path reads.
		{"right-to-left override", []FileAction{create("invoice\u202Efdp.exe")}, 0, "invoice\u202Efdp.exe", RulePathBidiControl},
		{"left-to-right embedding", []FileAction{create("a\u202Ab")}, 0, "a\u202Ab", RulePathBidiControl},
		{"first strong isolate", []FileAction{create("dir\u2068/x")}, 0, "dir\u2068/x", RulePathBidiControl},
		{"pop directional isolate", []FileAction{create("x\u2069")}, 0, "x\u2069", RulePathBidiControl},
		{"left-to-right mark", []FileAction{create("\u200Ea")}, 0, "\u200Ea", RulePathBidiControl},
		{"right-to-left mark", []FileAction{create("a\u200F")}, 0, "a\u200F", RulePathBidiControl},
		{"arabic letter mark", []FileAction{create("a\u061Cb")}, 0, "a\u061Cb", RulePathBidiControl},
		{"zero-width space", []FileAction{create("a\u200Bb")}, 0, "a\u200Bb", RulePathInvisibleChar},
		{"zero-width non-joiner outside .git", []FileAction{create("ab\u200C")}, 0, "ab\u200C", RulePathInvisibleChar},
		{"word joiner", []FileAction{create("a\u2060")}, 0, "a\u2060", RulePathInvisibleChar},
		{"invisible plus", []FileAction{create("a\u2064b")}, 0, "a\u2064b", RulePathInvisibleChar},
		{"byte order mark inside", []FileAction{create("a/\uFEFFb")}, 0, "a/\uFEFFb", RulePathInvisibleChar},
		{"soft hyphen", []FileAction{create("pass\u00ADwd")}, 0, "pass\u00ADwd", RulePathInvisibleChar},
		{"combining grapheme joiner", []FileAction{create("a\u034Fb")}, 0, "a\u034Fb", RulePathInvisibleChar},
		{"mongolian vowel separator", []FileAction{create("a\u180Eb")}, 0, "a\u180Eb", RulePathInvisibleChar},
		{"variation selector", []FileAction{create("a\uFE0F")}, 0, "a\uFE0F", RulePathInvisibleChar},
		{"supplementary variation selector", []FileAction{create("a\U000E0100")}, 0, "a\U000E0100", RulePathInvisibleChar},
		{"tag character", []FileAction{create("a\U000E0041")}, 0, "a\U000E0041", RulePathInvisibleChar},
		{"hangul choseong filler", []FileAction{create("\u115F")}, 0, "\u115F", RulePathInvisibleChar},
		{"hangul jungseong filler", []FileAction{create("a\u1160")}, 0, "a\u1160", RulePathInvisibleChar},
		{"hangul filler", []FileAction{create("a\u3164b")}, 0, "a\u3164b", RulePathInvisibleChar},
		{"halfwidth hangul filler", []FileAction{create("a/\uFFA0")}, 0, "a/\uFFA0", RulePathInvisibleChar},
		{"interlinear annotation", []FileAction{create("a\uFFF9b")}, 0, "a\uFFF9b", RulePathInvisibleChar},
		{"line separator", []FileAction{create("a\u2028b")}, 0, "a\u2028b", RulePathControlChar},
		{"unassigned", []FileAction{create("a\u0378")}, 0, "a\u0378", RulePathUnassignedChar},
		{"noncharacter", []FileAction{create("a\uFFFE")}, 0, "a\uFFFE", RulePathUnassignedChar},
		{"last noncharacter", []FileAction{create("a\U0010FFFF")}, 0, "a\U0010FFFF", RulePathUnassignedChar},
		{"decomposed e acute", []FileAction{create("e\u0301")}, 0, "e\u0301", RulePathNotNFC},
		{"decomposed in a directory", []FileAction{create("cafe\u0301/menu.md")}, 0, "cafe\u0301/menu.md", RulePathNotNFC},
		{"kelvin sign", []FileAction{create("\u212Aelvin")}, 0, "\u212Aelvin", RulePathNotNFC},
		{"angstrom sign", []FileAction{create("\u212B")}, 0, "\u212B", RulePathNotNFC},
		{"conjoining hangul jamo", []FileAction{create("\u1100\u1161")}, 0, "\u1100\u1161", RulePathNotNFC},
		{"marks out of canonical order", []FileAction{create("a\u0301\u0316")}, 0, "a\u0301\u0316", RulePathNotNFC},
		// One name as a file and as a directory: the forge keeps one.
		{"a file and a directory of one name", []FileAction{create("fd"), create("fd/x.txt")}, 1, "fd/x.txt", RulePathFileDirConflict},
		{"a directory and then a file of one name", []FileAction{create("a/b/c"), create("a/b")}, 1, "a/b", RulePathFileDirConflict},
		{"a deleted file and a directory of its name", []FileAction{{Action: ActionDelete, FilePath: "fd"}, create("fd/x")}, 1, "fd/x", RulePathFileDirConflict},
		{"a move onto a directory of the old name", []FileAction{{Action: ActionMove, FilePath: "old/new", PreviousPath: "old"}}, 0, "old", RulePathFileDirConflict},
		// Two spellings of one name, directories included.
		{"directories differing in case", []FileAction{create("Dir/a"), create("dir/b")}, 1, "dir/b", RulePathCaseCollision},
		{"deep directories differing in case", []FileAction{create("a/B/c/x"), create("a/b/c/y")}, 1, "a/b/c/y", RulePathCaseCollision},
		{"a file and a directory differing in case", []FileAction{create("x/Y"), create("x/y/z")}, 1, "x/y/z", RulePathCaseCollision},
		{"a directory and a file differing in case", []FileAction{create("x/y/z"), create("X")}, 1, "X", RulePathCaseCollision},
		{"sharp s and double s", []FileAction{create("straße.txt"), create("STRASSE.txt")}, 1, "STRASSE.txt", RulePathCaseCollision},
		{"capital sharp s", []FileAction{create("ẞ/a"), create("ss/b")}, 1, "ss/b", RulePathCaseCollision},
		{"dotless i", []FileAction{create("ı.md"), create("I.md")}, 1, "I.md", RulePathCaseCollision},
		{"greek final sigma", []FileAction{create("ΟΔΟΣ/a"), create("οδος/b")}, 1, "οδος/b", RulePathCaseCollision},
		{"accented directories differing in case", []FileAction{create("café/a"), create("CAFÉ/b")}, 1, "CAFÉ/b", RulePathCaseCollision},
		{"ligature and letters", []FileAction{create("ﬁle"), create("FILE")}, 1, "FILE", RulePathCaseCollision},
		{"a moved directory differing in case", []FileAction{create("Docs/a"), {Action: ActionMove, FilePath: "x", PreviousPath: "docs/b"}}, 1, "docs/b", RulePathCaseCollision},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefusal(t, Inspect(tc.actions, Policy{}), tc.index, tc.path, tc.rule)
		})
	}
}

func TestInspectAcceptsPortableNames(t *testing.T) {
	for _, paths := range [][]string{
		{"docs/café.md"},
		{"über/a.txt"},
		{"a-b"},
		{"x.con"},
		{"console.txt"},
		{"com10.txt"},
		{"lpt.txt"},
		{"com.txt", "auxiliary/nullable.go", "prnt", "conin", "CONOUT", "lpt1x", "com1-notes.md"},
		{"a/b.c"},
		{"a/.hidden", ".editorconfig", "x.y.z"},
		{"docs/日本語.md", "emoji-😀.txt", "Ωmega/ǅ.txt", "שלום.txt"},
		{"Dir/a", "Dir/b", "Dir/sub/c"},
		{"a", "b/a", "c/A"},
		{"ß.txt", "s.txt"},
		{"a~1", "gitmod~5", "x.gitmodules", ".gitmodules.bak", "gitattributes"},
		{"a b/c d.txt", "under_score", "plus+sign", "at@sign", "tilde~", "[brackets]", "(parens)", "#hash", "100%", "semi;colon", "comma,"},
	} {
		var actions []FileAction
		for _, p := range paths {
			actions = append(actions, create(p))
		}
		if r := Inspect(actions, Policy{}); r != nil {
			t.Errorf("refused %q: %v", paths, r)
		}
	}
}

func TestInspectGitConfigFilesWhenTheProjectRefusesThem(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name   string
		action FileAction
		path   string
		rule   string
	}{
		{".gitmodules", create(".gitmodules"), ".gitmodules", RuleGitmodulesRefused},
		{"upper case", create(".GITMODULES"), ".GITMODULES", RuleGitmodulesRefused},
		{"mixed case in a directory", create("sub/.GitModules"), "sub/.GitModules", RuleGitmodulesRefused},
		{"8.3 short name", create("GITMOD~1"), "GITMOD~1", RuleGitmodulesRefused},
		{"8.3 short name, fourth", create("gitmod~4"), "gitmod~4", RuleGitmodulesRefused},
		{"8.3 fallback short name", create("GI7EBA~1"), "GI7EBA~1", RuleGitmodulesRefused},
		{"8.3 fallback short name, ninth", create("gi7eba~9"), "gi7eba~9", RuleGitmodulesRefused},
		{"8.3 fallback short name, shortened", create("GI7~1234"), "GI7~1234", RuleGitmodulesRefused},
		{"update", FileAction{Action: ActionUpdate, FilePath: ".gitmodules", Content: text("")}, ".gitmodules", RuleGitmodulesRefused},
		{"delete", FileAction{Action: ActionDelete, FilePath: ".gitmodules"}, ".gitmodules", RuleGitmodulesRefused},
		{"chmod", FileAction{Action: ActionChmod, FilePath: ".gitmodules", ExecuteFilemode: &yes}, ".gitmodules", RuleGitmodulesRefused},
		{"moved in", FileAction{Action: ActionMove, FilePath: ".gitmodules", PreviousPath: "m"}, ".gitmodules", RuleGitmodulesRefused},
		{"moved out", FileAction{Action: ActionMove, FilePath: "m", PreviousPath: ".gitmodules"}, ".gitmodules", RuleGitmodulesRefused},
		{"as a directory", create(".gitmodules/x"), ".gitmodules/x", RuleGitmodulesRefused},
		{"trailing dot", create(".gitmodules."), ".gitmodules.", RulePathTrailingDotOrSpace},
		{"NTFS stream", create(".gitmodules::$DATA"), ".gitmodules::$DATA", RulePathColon},
		{"HFS ignorable", create(".gitmod\u200Cules"), ".gitmod\u200Cules", RulePathInvisibleChar},
		{"filter driver", FileAction{Action: ActionCreate, FilePath: ".gitattributes", Content: text("*.c filter=indent\n")}, ".gitattributes", RuleGitattributesDriver},
		{"working-tree-encoding", FileAction{Action: ActionCreate, FilePath: ".gitattributes", Content: text("*.ps1 text Working-Tree-Encoding=UTF-16LE\n")}, ".gitattributes", RuleGitattributesDriver},
		{".lfsconfig", create(".lfsconfig"), ".lfsconfig", RuleLfsconfigRefused},
		{".lfsconfig in another case", create(".LfsConfig"), ".LfsConfig", RuleLfsconfigRefused},
		{".lfsconfig in a directory", create("sub/.lfsconfig"), "sub/.lfsconfig", RuleLfsconfigRefused},
		{".lfsconfig by its short name", create("LFSCON~1"), "LFSCON~1", RuleLfsconfigRefused},
		{".lfsconfig moved into place", FileAction{Action: ActionMove, PreviousPath: "notes.txt", FilePath: ".lfsconfig"}, ".lfsconfig", RuleLfsconfigRefused},
		{"diff driver", FileAction{Action: ActionUpdate, FilePath: "src/.gitattributes", Content: text("# ok\n*.txt text\n*.md diff=markdown\n")}, "src/.gitattributes", RuleGitattributesDriver},
		{"merge driver", FileAction{Action: ActionCreate, FilePath: ".gitattributes", Content: text("CHANGELOG merge=union\n")}, ".gitattributes", RuleGitattributesDriver},
		{"driver in upper case", FileAction{Action: ActionCreate, FilePath: ".gitattributes", Content: text("  * FILTER=x\n")}, ".gitattributes", RuleGitattributesDriver},
		{"driver in a macro", FileAction{Action: ActionCreate, FilePath: ".gitattributes", Content: text("[attr]nice filter=x\n*.c nice\n")}, ".gitattributes", RuleGitattributesDriver},
		{"driver right after a quoted pattern", FileAction{Action: ActionCreate, FilePath: ".gitattributes", Content: text(`"a b"filter=x` + "\n")}, ".gitattributes", RuleGitattributesDriver},
		{"driver on a CRLF line", FileAction{Action: ActionCreate, FilePath: ".gitattributes", Content: text("*.txt text\r\n*.c filter=x\r\n")}, ".gitattributes", RuleGitattributesDriver},
		{"driver in base64", FileAction{Action: ActionCreate, FilePath: ".gitattributes", Content: text(base64.StdEncoding.EncodeToString([]byte("* filter=x"))), Encoding: EncodingBase64}, ".gitattributes", RuleGitattributesDriver},
		{"driver under an upper-case name", FileAction{Action: ActionCreate, FilePath: ".GITATTRIBUTES", Content: text("* filter=x\n")}, ".GITATTRIBUTES", RuleGitattributesDriver},
		{"driver under the 8.3 short name", FileAction{Action: ActionCreate, FilePath: "GITATT~1", Content: text("* filter=x\n")}, "GITATT~1", RuleGitattributesDriver},
		{"driver under the 8.3 fallback name", FileAction{Action: ActionCreate, FilePath: "a/gi7d29~7", Content: text("* diff=x\n")}, "a/gi7d29~7", RuleGitattributesDriver},
		{".gitattributes moved in", FileAction{Action: ActionMove, FilePath: ".gitattributes", PreviousPath: "attrs"}, ".gitattributes", RuleGitattributesDriver},
		{".gitattributes as a directory", create(".gitattributes/x"), ".gitattributes/x", RuleGitattributesInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefusal(t, Inspect([]FileAction{create("ok"), tc.action}, Policy{}), 1, tc.path, tc.rule)
		})
	}
	for _, content := range []string{"*.txt text eol=lf\n", "*.png binary\n*.bin -diff -merge\n", "# a filter=x comment\n", "   # diff=x indented comment\n", "*.go diff\n", ""} {
		for _, name := range []string{".gitattributes", "sub/.gitattributes"} {
			if r := Inspect([]FileAction{{Action: ActionCreate, FilePath: name, Content: text(content)}}, Policy{}); r != nil {
				t.Errorf("refused %s %q: %v", name, content, r)
			}
		}
	}
	if r := Inspect([]FileAction{{Action: ActionDelete, FilePath: ".gitattributes"}, {Action: ActionMove, FilePath: "attrs", PreviousPath: "a/.gitattributes"}}, Policy{}); r != nil {
		t.Errorf("refused removing .gitattributes: %v", r)
	}
}

func TestInspectGitmodulesContentWhenTheProjectAllowsIt(t *testing.T) {
	allow := Policy{AllowGitConfigFiles: true}
	for _, content := range []string{
		"[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n",
		"[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = ../lib.git\n\tbranch = main\n",
		"[submodule \"a\"]\n\tpath = a\n\turl = ./a\n[submodule \"b\"]\n\tpath = b\n\turl = git@example.com:org/b.git\n",
		"[submodule \"c\"]\n\tpath = c\n\turl = ssh://git@example.com:2222/c.git\n\tupdate = rebase\n",
		"; comment\n# comment\n[submodule \"d\"] path = d\nurl = \"git://example.com/d\" # trailing comment\n",
		"\ufeff[submodule \"e\"]\r\n\tpath = e\r\n\turl = http://example.com/e\r\n",
		"",
	} {
		if r := Inspect([]FileAction{{Action: ActionCreate, FilePath: ".gitmodules", Content: text(content)}}, allow); r != nil {
			t.Errorf("refused %q: %v", content, r)
		}
	}
	for _, tc := range []struct{ name, content string }{
		{"url is an option", "[submodule \"x\"]\n\tpath = x\n\turl = -upload-pack=touch /tmp/pwned\n"},
		{"quoted url is an option", "[submodule \"x\"]\n\turl = \"--config=x\"\n"},
		{"url is an option after a continuation", "[submodule \"x\"]\n\turl = \\\n-u\n"},
		{"url key in upper case", "[submodule \"x\"]\n\tURL = -x\n"},
		{"url on the header line", "[submodule \"x\"] url = -x\n"},
		{"dotted header", "[submodule.x]\n\turl = -x\n"},
		{"section name in upper case", "[SubModule \"x\"]\n\turl = -x\n"},
		{"path is an option", "[submodule \"x\"]\n\tpath = -x\n\turl = https://example.com/x\n"},
		{"path climbs out", "[submodule \"x\"]\n\tpath = ../escape\n\turl = https://example.com/x\n"},
		{"path climbs out deeper", "[submodule \"x\"]\n\tpath = a/../../b\n"},
		{"path is .git", "[submodule \"x\"]\n\tpath = .git\n"},
		{"path is absolute", "[submodule \"x\"]\n\tpath = /etc\n"},
		{"path names a device", "[submodule \"x\"]\n\tpath = nul\n"},
		{"name climbs out", "[submodule \"../../hooks\"]\n\turl = https://example.com/x\n"},
		{"name climbs out with backslashes", "[submodule \"a\\\\..\\\\..\\\\b\"]\n\turl = https://example.com/x\n"},
		{"name is ..", "[submodule \"..\"]\n\tpath = x\n"},
		{"name climbs out in dotted form", "[submodule.a/../..]\n\tpath = x\n"},
		{"file URL", "[submodule \"x\"]\n\turl = file:///etc/repo\n"},
		{"FILE URL", "[submodule \"x\"]\n\turl = FILE:///etc/repo\n"},
		{"local absolute path", "[submodule \"x\"]\n\turl = /srv/git/secret.git\n"},
		{"local relative path", "[submodule \"x\"]\n\turl = secret/repo\n"},
		{"home path", "[submodule \"x\"]\n\turl = ~/repo\n"},
		{"drive letter", "[submodule \"x\"]\n\turl = C:/repo\n"},
		{"windows path", "[submodule \"x\"]\n\turl = C:\\\\repo\n"},
		{"transport helper", "[submodule \"x\"]\n\turl = ext::sh -c touch% /tmp/pwned\n"},
		{"fd transport", "[submodule \"x\"]\n\turl = fd::3\n"},
		{"newline escape", "[submodule \"x\"]\n\turl = \"https://example.com/a\\nhost=evil\"\n"},
		{"percent-encoded newline", "[submodule \"x\"]\n\turl = https://example.com/a%0ahost=evil\n"},
		{"percent-encoded newline in a relative url", "[submodule \"x\"]\n\turl = ../a%0Ahost=evil\n"},
		{"relative url climbing into the host", "[submodule \"x\"]\n\turl = ../../:example.com/x\n"},
		{"relative url with an empty host", "[submodule \"x\"]\n\turl = ./..//x\n"},
		{"ssh host is an option", "[submodule \"x\"]\n\turl = ssh://-oProxyCommand=touch/x\n"},
		{"scp host is an option", "[submodule \"x\"]\n\turl = -oProxyCommand=x:y\n"},
		{"scp user is an option", "[submodule \"x\"]\n\turl = \"-oX@host:y\"\n"},
		{"unknown scheme", "[submodule \"x\"]\n\turl = ftp://example.com/x\n"},
		{"update runs a command", "[submodule \"x\"]\n\tpath = x\n\tupdate = !rm -rf /\n"},
		{"include", "[include]\n\tpath = /etc/gitconfig\n"},
		{"unterminated header", "[submodule \"x\"\n\turl = https://example.com\n"},
		{"unterminated quote", "[submodule \"x\"]\n\turl = \"https://example.com\n"},
		{"bad escape", "[submodule \"x\"]\n\turl = a\\qb\n"},
		{"variable outside a section", "url = https://example.com\n"},
		{"garbage", "{\"json\": true}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{".gitmodules", "GITMOD~1", "sub/.GITMODULES"} {
				r := Inspect([]FileAction{create("ok"), {Action: ActionUpdate, FilePath: name, Content: text(tc.content)}}, allow)
				if r == nil || r.Index != 1 || r.Path != name || r.Rule != RuleGitmodulesInvalid {
					t.Fatalf("%s: got %v, want %s", name, r, RuleGitmodulesInvalid)
				}
			}
		})
	}
	for _, tc := range []struct {
		name   string
		action FileAction
		rule   string
	}{
		{"as a directory", create(".gitmodules/x"), RuleGitmodulesInvalid},
		{"moved in", FileAction{Action: ActionMove, FilePath: ".gitmodules", PreviousPath: "m"}, RuleGitmodulesInvalid},
		{".gitattributes line too long", FileAction{Action: ActionCreate, FilePath: ".gitattributes", Content: text("* text\n" + strings.Repeat("x", attrLineMax) + "\n")}, RuleGitattributesInvalid},
	} {
		if r := Inspect([]FileAction{tc.action}, allow); r == nil || r.Rule != tc.rule {
			t.Errorf("%s: got %v, want %s", tc.name, r, tc.rule)
		}
	}
	if r := Inspect([]FileAction{{Action: ActionCreate, FilePath: ".gitattributes", Content: text("*.c filter=indent\n*.md diff=markdown merge=union\n")}}, allow); r != nil {
		t.Errorf("refused drivers the project allows: %v", r)
	}
}

func TestParseGitConfigReadsValuesAsGitDoes(t *testing.T) {
	got, err := parseGitConfig("\ufeff[Core]\n\tBare\n[remote \"Or\\\"igin\"] url = a b  \"c  d\" \\\n e ; comment\n[a.B.c]\nk=\"x\\ty\\\\\"\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []configEntry{
		{Section: "core", Key: "bare", Line: 2},
		{Section: "remote", Subsection: "Or\"igin", HasSub: true, Key: "url", Value: "a b  c  d  e", HasValue: true, Line: 3},
		{Section: "a", Subsection: "b.c", HasSub: true, Key: "k", Value: "x\ty\\", HasValue: true, Line: 6},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// FuzzInspect checks that inspection never panics and that whatever it
// accepts holds git's path invariants and every path class, as checked
// here independently of Inspect's own code: two actions, so that
// collisions between paths and their directories are reached too.
func FuzzInspect(f *testing.F) {
	f.Add("create", "a/b.txt", "", "hello", "", "", false)
	f.Add("move", "b", ".git/x", "", "", "", false)
	f.Add("update", ".g\u200cit/c", "", "x", "base64", "", false)
	f.Add("create", "GIT~1/c", "", "\x00", "text", "", false)
	f.Add("create", "C:x", "", "x", "", "", false)
	f.Add("create", "a::$DATA", "", "x", "", "", false)
	f.Add("create", "d/Com¹.tar.gz", "", "x", "", "", false)
	f.Add("create", "nul .txt", "", "x", "", "", false)
	f.Add("create", "a. /b", "", "x", "", "", false)
	f.Add("create", "a/-rf", "", "x", "", "", false)
	f.Add("create", "x\u202eexe.txt", "", "x", "", "", false)
	f.Add("create", "a\u00adb\U000e0041", "", "x", "", "", false)
	f.Add("create", "cafe\u0301/a", "", "x", "", "caf\u00e9/b", false)
	f.Add("create", "Dir/a", "", "x", "", "dir/b", false)
	f.Add("create", "stra\u00dfe", "", "x", "", "STRASSE", false)
	f.Add("create", "\u0131", "", "x", "", "I", false)
	f.Add("create", "GITMOD~1", "", "x", "", "", false)
	f.Add("create", "gi7eba~9", "", "[submodule \"x\"]\n\turl = -x\n", "", "", true)
	f.Add("create", ".gitmodules", "", "[submodule \"x\"]\n\tpath = x\n\turl = ../x.git\n", "", "", true)
	f.Add("update", ".GITATTRIBUTES", "", "*.c filter=x\n", "", "", false)
	f.Add("create", "a/.gitattributes", "", base64.StdEncoding.EncodeToString([]byte("* diff=x")), "base64", "", false)
	f.Fuzz(func(t *testing.T, action, filePath, previous, content, encoding, second string, allowGitConfig bool) {
		a := FileAction{Action: action, FilePath: filePath, PreviousPath: previous, Encoding: encoding}
		if content != "" || action == ActionCreate {
			a.Content = &content
		}
		actions := []FileAction{a}
		if second != "" {
			actions = append(actions, create(second))
		}
		r := Inspect(actions, Policy{BlockedPaths: []string{"secrets/**"}, AllowGitConfigFiles: allowGitConfig})
		if r != nil {
			if r.Rule == "" || r.Message == "" || r.Index < 0 || r.Index >= len(actions) {
				t.Fatalf("refusal without rule, message or a valid index: %+v", r)
			}
			return
		}
		var accepted []string
		for _, p := range []string{filePath, previous, second} {
			if p == "" {
				continue
			}
			accepted = append(accepted, p)
			for _, c := range strings.Split(p, "/") {
				if c == "" || c == "." || c == ".." || isDotGit(c) {
					t.Fatalf("accepted unsafe component %q in %q", c, p)
				}
			}
			if strings.HasPrefix(p, "secrets/") || strings.ContainsAny(p, "\x00\\\n") {
				t.Fatalf("accepted %q", p)
			}
			if why := breaksPathClass(p, allowGitConfig); why != "" {
				t.Fatalf("accepted %q: %s", p, why)
			}
		}
		if a, b, ok := twoSpellings(accepted); ok {
			t.Fatalf("accepted %q and %q, one name on a case-insensitive file system", a, b)
		}
		decoded := content
		if encoding == EncodingBase64 {
			b, _ := base64.StdEncoding.DecodeString(content)
			decoded = string(b)
		}
		if !allowGitConfig && (action == ActionCreate || action == ActionUpdate) && isGitattributesName(path.Base(filePath)) {
			for _, line := range strings.Split(strings.TrimPrefix(decoded, "\ufeff"), "\n") {
				l := strings.ToLower(line)
				if !strings.HasPrefix(strings.TrimLeft(l, " \t\r"), "#") && (strings.Contains(l, "filter=") || strings.Contains(l, "diff=") || strings.Contains(l, "merge=")) {
					t.Fatalf("accepted a driver in %q: %q", filePath, line)
				}
			}
		}
	})
}

// reservedDevice matches the Windows device names, written out here
// apart from the code under test.
var reservedDevice = regexp.MustCompile(`(?i)^(con|prn|aux|nul|conin\$|conout\$|com[0-9\x{b9}\x{b2}\x{b3}]|lpt[0-9\x{b9}\x{b2}\x{b3}]) *(\.|$)`)

// shortNames lists git's NTFS 8.3 spellings of .gitmodules (GITMOD~1 to
// ~4, then the hashed GI7EBA~N, shortened to keep eight characters).
func shortNames(name, fallback string) *regexp.Regexp {
	alternatives := []string{`\.` + name, name[:6] + `~[1-4]`}
	for k := 0; k <= 6; k++ {
		alternatives = append(alternatives, fmt.Sprintf(`%s~[1-9][0-9]{%d}`, fallback[:k], 6-k))
	}
	return regexp.MustCompile(`(?i)^(` + strings.Join(alternatives, "|") + `)$`)
}

var (
	gitmodulesName    = shortNames("gitmodules", "gi7eba")
	gitattributesName = shortNames("gitattributes", "gi7d29")
)

func isGitattributesName(c string) bool { return gitattributesName.MatchString(c) }

// breaksPathClass says which path class p is in, if any.
func breaksPathClass(p string, allowGitConfig bool) string {
	if strings.ContainsAny(p, `:<>"|?*`) {
		return "a character Windows refuses"
	}
	if !norm.NFC.IsNormalString(p) {
		return "not NFC"
	}
	for _, r := range p {
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Bidi_Control, unicode.Other_Default_Ignorable_Code_Point,
			unicode.Variation_Selector, unicode.Noncharacter_Code_Point) {
			return fmt.Sprintf("%U", r)
		}
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case len(c) > MaxComponentBytes:
			return "a long component"
		case strings.HasSuffix(c, ".") || strings.HasSuffix(c, " "):
			return "a trailing dot or space"
		case strings.HasPrefix(c, "-"):
			return "a leading dash"
		case reservedDevice.MatchString(c):
			return "a device name"
		case !allowGitConfig && gitmodulesName.MatchString(c):
			return ".gitmodules"
		}
	}
	return ""
}

// twoSpellings finds two paths with a directory or file of one name
// under Unicode's canonical caseless match, spelled two ways.
func twoSpellings(paths []string) (string, string, bool) {
	fold := cases.Fold()
	seen := map[string]string{}
	for _, p := range paths {
		for i := range len(p) + 1 {
			if i < len(p) && p[i] != '/' {
				continue
			}
			prefix := p[:i]
			key := norm.NFC.String(fold.String(norm.NFD.String(prefix)))
			if other, ok := seen[key]; ok && other != prefix {
				return other, prefix, true
			}
			seen[key] = prefix
		}
	}
	return "", "", false
}
