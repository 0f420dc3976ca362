package mr_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/mr"
)

// branchNames is the corpus both CheckBranchName and git judge. ok is
// CheckBranchName's answer; stricter marks names git accepts that the
// service refuses on purpose (see CheckBranchName).
var branchNames = []struct {
	name     string
	ok       bool
	stricter bool
}{
	{name: "main", ok: true},
	{name: "workqueue/update-a", ok: true},
	{name: "workqueue/feature/x.y", ok: true},
	{name: "workqueue/a-b_c+d=e,f", ok: true},
	{name: "workqueue/ünïcödé", ok: true},
	{name: "workqueue/a@b", ok: true},
	{name: "workqueue/@", ok: true},
	{name: "workqueue/{x}", ok: true},
	{name: "workqueue/x.locked", ok: true},
	{name: "workqueue/lock", ok: true},
	{name: "workqueue/a.b.c", ok: true},
	{name: "workqueue/HEAD", ok: true},
	{name: "head", ok: true},
	{name: "x-", ok: true},
	{name: "a/-b", ok: true},
	{name: "0123456789abcdef0123456789abcdef0123456", ok: true}, // 39 hex digits
	{name: strings.Repeat("a", 255), ok: true},

	{name: ""},
	{name: "HEAD"},
	{name: "-"},
	{name: "-rf"},
	{name: "--force"},
	{name: "a..b"},
	{name: ".."},
	{name: "a/../b"},
	{name: "x@{1}"},
	{name: "@{-1}"},
	{name: "a@{"},
	{name: ".hidden"},
	{name: "a/.hidden"},
	{name: "a/.b/c"},
	{name: "x.lock"},
	{name: "a.lock/b"},
	{name: "a/b.lock"},
	{name: ".lock"},
	{name: "a."},
	{name: "a/b."},
	{name: "a./b", ok: true},
	{name: "a/"},
	{name: "/a"},
	{name: "a//b"},
	{name: "/"},
	{name: "a\x01b"},
	{name: "a\tb"},
	{name: "a\nb"},
	{name: "a\x1fb"},
	{name: "a\x7fb"},
	{name: "a b"},
	{name: "a~1"},
	{name: "a^"},
	{name: "a:b"},
	{name: "a?"},
	{name: "a*"},
	{name: "a[b"},
	{name: "a\\b"},

	{name: "@", stricter: true},
	{name: "refs/heads/main", stricter: true},
	{name: "refs/x", stricter: true},
	{name: "0123456789abcdef0123456789abcdef01234567", stricter: true},
	{name: strings.Repeat("ab", 32), stricter: true},
	{name: strings.Repeat("a", 256), stricter: true},
	{name: "a\u202eb", stricter: true},       // right-to-left override
	{name: "a\u200bb", stricter: true},       // zero-width space
	{name: "a\ufeffb", stricter: true},       // byte order mark
	{name: "a\u00a0b", stricter: true},       // no-break space
	{name: "a\u0085b", stricter: true},       // C1 control
	{name: "a\xffb", stricter: true},         // not UTF-8
	{name: "a\xed\xa0\x80b", stricter: true}, // an encoded surrogate
}

func TestBranchNamesGitRefusesAreRefused(t *testing.T) {
	for _, tc := range branchNames {
		err := mr.CheckBranchName(tc.name)
		if got := err == nil; got != tc.ok {
			t.Errorf("CheckBranchName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestBranchNameCheckAgreesWithGit runs the corpus through the real
// `git check-ref-format --branch`: every name it refuses is refused, and
// every name it accepts is accepted unless marked stricter.
func TestBranchNameCheckAgreesWithGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	// Outside any repository, so that --branch does not expand @{-1}
	// from a reflog.
	dir := t.TempDir()
	env := append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	for _, tc := range branchNames {
		if strings.ContainsRune(tc.name, 0) || tc.name == "" {
			continue // not expressible as an argument
		}
		cmd := exec.Command(git, "check-ref-format", "--branch", tc.name)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("git: %v", err)
		}
		gitOK := err == nil
		ours := mr.CheckBranchName(tc.name) == nil
		switch {
		case !gitOK && ours:
			t.Errorf("%q: git refuses it (%s) and we accept it", tc.name, strings.TrimSpace(string(out)))
		case gitOK && !ours && !tc.stricter:
			t.Errorf("%q: git accepts it and we refuse it without meaning to", tc.name)
		case !gitOK && tc.stricter:
			t.Errorf("%q: marked stricter than git, but git refuses it too", tc.name)
		}
	}
}

func TestBranchNameRefusalNamesFieldAndRule(t *testing.T) {
	s := testdb.Open(t, "sqlite")
	for _, tc := range []struct {
		field string
		edit  func(*mr.Submission)
	}{
		{"source_branch", func(s *mr.Submission) { s.SourceBranch = "HEAD" }},
		{"source_branch", func(s *mr.Submission) { s.SourceBranch = "refs/heads/x" }},
		{"source_branch", func(s *mr.Submission) { s.SourceBranch = "workqueue/x.lock" }},
		{"target_branch", func(s *mr.Submission) { s.TargetBranch = "main@{1}" }},
		{"target_branch", func(s *mr.Submission) { s.TargetBranch = "ma\u200bin" }},
	} {
		sub := submission("x")
		tc.edit(&sub)
		_, _, err := mr.Submit(context.Background(), s, sub, project, "c", t0)
		var r *mr.Refusal
		if !errors.As(err, &r) || r.Field != tc.field || r.Rule != mr.RuleBranchNameInvalid || r.Index != -1 {
			t.Errorf("%s %q/%q: err %v, want a %s refusal of %s", tc.field, sub.SourceBranch, sub.TargetBranch, err, mr.RuleBranchNameInvalid, tc.field)
		}
	}
}
