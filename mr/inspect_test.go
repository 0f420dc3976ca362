package mr

import (
	"encoding/base64"
	"strings"
	"testing"
)

func text(s string) *string { return &s }

func create(path string) FileAction {
	return FileAction{Action: ActionCreate, FilePath: path, Content: text("hello\n")}
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
			r := Inspect(tc.actions, policy)
			if r == nil {
				t.Fatalf("accepted, want refusal %s", tc.rule)
			}
			if r.Index != tc.index || r.Path != tc.path || r.Rule != tc.rule {
				t.Errorf("refusal %d %q %s (%s), want %d %q %s", r.Index, r.Path, r.Rule, r.Message, tc.index, tc.path, tc.rule)
			}
			if r.Message == "" {
				t.Error("refusal without a message")
			}
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

// FuzzInspect checks that inspection never panics and that whatever it
// accepts holds git's path invariants.
func FuzzInspect(f *testing.F) {
	f.Add("create", "a/b.txt", "", "hello", "")
	f.Add("move", "b", ".git/x", "", "")
	f.Add("update", ".g\u200cit/c", "", "x", "base64")
	f.Add("create", "GIT~1/c", "", "\x00", "text")
	f.Fuzz(func(t *testing.T, action, filePath, previous, content, encoding string) {
		a := FileAction{Action: action, FilePath: filePath, PreviousPath: previous, Encoding: encoding}
		if content != "" || action == ActionCreate {
			a.Content = &content
		}
		r := Inspect([]FileAction{a}, Policy{BlockedPaths: []string{"secrets/**"}})
		if r != nil {
			return
		}
		for _, p := range []string{filePath, previous} {
			if p == "" {
				continue
			}
			for _, c := range strings.Split(p, "/") {
				if c == "" || c == "." || c == ".." || isDotGit(c) {
					t.Fatalf("accepted unsafe component %q in %q", c, p)
				}
			}
			if strings.HasPrefix(p, "secrets/") || strings.ContainsAny(p, "\x00\\\n") {
				t.Fatalf("accepted %q", p)
			}
		}
	})
}
