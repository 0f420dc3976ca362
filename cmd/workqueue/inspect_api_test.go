package main

import (
	"context"
	"net/http"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/mr"
)

// TestAPIHostilePathClassesAreRefusedWithNothingWritten submits one path
// of every class inspection refuses (issue 9, defect 6) through HTTP:
// each is a 422 naming the action, the path and the rule, and no branch
// appears on the forge. The per-project switch for git configuration
// files is shown both ways.
func TestAPIHostilePathClassesAreRefusedWithNothingWritten(t *testing.T) {
	create := func(path string) map[string]any {
		return map[string]any{"action": "create", "file_path": path, "content": "x\n"}
	}
	write := func(path, content string) map[string]any {
		return map[string]any{"action": "create", "file_path": path, "content": content}
	}
	ok := create("fine.txt")
	validGitmodules := "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n"
	type refusal struct {
		name    string
		actions []map[string]any
		index   int
		path    string
		rule    string
	}
	for _, world := range []struct {
		allowGitConfigFiles bool
		cases               []refusal
	}{
		{false, []refusal{
			{"drive letter", []map[string]any{ok, create("C:x")}, 1, "C:x", mr.RulePathColon},
			{"character Windows refuses", []map[string]any{ok, create("a|b")}, 1, "a|b", mr.RulePathReservedChar},
			{"trailing dot on a directory", []map[string]any{ok, create("dir./a")}, 1, "dir./a", mr.RulePathTrailingDotOrSpace},
			{"device name", []map[string]any{ok, create("Com1.tar.gz")}, 1, "Com1.tar.gz", mr.RulePathReservedName},
			{"superscript device name", []map[string]any{ok, create("lpt\u00b3.txt")}, 1, "lpt\u00b3.txt", mr.RulePathReservedName},
			{"leading dash", []map[string]any{ok, create("docs/-rf")}, 1, "docs/-rf", mr.RulePathLeadingDash},
			{"a file and a directory of one name", []map[string]any{create("fd"), create("fd/x.txt")}, 1, "fd/x.txt", mr.RulePathFileDirConflict},
			// Gitea's API cannot set the executable bit: refused at submit,
			// not accepted and failed at the push.
			{"chmod on Gitea", []map[string]any{ok, {"action": "chmod", "file_path": "README.md", "execute_filemode": true}}, 1, "README.md", mr.RuleFileModeUnsupported},
			{"an executable file on Gitea", []map[string]any{ok, {"action": "create", "file_path": "run.sh", "content": "#!/bin/sh\n", "execute_filemode": true}}, 1, "run.sh", mr.RuleFileModeUnsupported},
			{"right-to-left override", []map[string]any{ok, create("invoice\u202Efdp.txt")}, 1, "invoice\u202Efdp.txt", mr.RulePathBidiControl},
			{"zero-width space", []map[string]any{ok, create("a\u200Bb")}, 1, "a\u200Bb", mr.RulePathInvisibleChar},
			{"unassigned code point", []map[string]any{ok, create("a\u0378")}, 1, "a\u0378", mr.RulePathUnassignedChar},
			{"decomposed accent", []map[string]any{ok, create("cafe\u0301.md")}, 1, "cafe\u0301.md", mr.RulePathNotNFC},
			{"line separator", []map[string]any{ok, create("a\u2028b")}, 1, "a\u2028b", mr.RulePathControlChar},
			{"directories differing in case", []map[string]any{create("Dir/a"), create("dir/b")}, 1, "dir/b", mr.RulePathCaseCollision},
			{"sharp s and double s", []map[string]any{create("stra\u00dfe.txt"), create("STRASSE.txt")}, 1, "STRASSE.txt", mr.RulePathCaseCollision},
			{".gitmodules", []map[string]any{ok, write(".gitmodules", validGitmodules)}, 1, ".gitmodules", mr.RuleGitmodulesRefused},
			{".gitmodules by its 8.3 name", []map[string]any{ok, write("GITMOD~1", validGitmodules)}, 1, "GITMOD~1", mr.RuleGitmodulesRefused},
			{".gitattributes filter driver", []map[string]any{ok, write("src/.gitattributes", "*.c filter=indent\n")}, 1, "src/.gitattributes", mr.RuleGitattributesDriver},
			{".gitattributes as a directory", []map[string]any{ok, create(".gitattributes/x")}, 1, ".gitattributes/x", mr.RuleGitattributesInvalid},
		}},
		{true, []refusal{
			{"submodule url is an option", []map[string]any{ok, write(".gitmodules", "[submodule \"x\"]\n\tpath = x\n\turl = -upload-pack=touch /tmp/pwned\n")}, 1, ".gitmodules", mr.RuleGitmodulesInvalid},
			{"submodule path climbs out", []map[string]any{ok, write(".GITMODULES", "[submodule \"x\"]\n\tpath = ../x\n\turl = https://example.com/x.git\n")}, 1, ".GITMODULES", mr.RuleGitmodulesInvalid},
			{"submodule name climbs out", []map[string]any{ok, write(".gitmodules", "[submodule \"../../hooks\"]\n\tpath = x\n\turl = https://example.com/x.git\n")}, 1, ".gitmodules", mr.RuleGitmodulesInvalid},
			{"submodule url is local", []map[string]any{ok, write(".gitmodules", "[submodule \"x\"]\n\tpath = x\n\turl = file:///srv/git/secret.git\n")}, 1, ".gitmodules", mr.RuleGitmodulesInvalid},
		}},
	} {
		w := startAPI(t, "", func(c *config.Config) { c.Projects[0].AllowGitConfigFiles = world.allowGitConfigFiles })
		for _, tc := range world.cases {
			t.Run(tc.name, func(t *testing.T) {
				branch := "workqueue/hostile"
				status, body, hdr := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch, tc.actions...))
				refusal, _ := body["refusal"].(map[string]any)
				if status != http.StatusUnprocessableEntity || hdr.Get("Content-Type") != "application/problem+json" ||
					refusal["index"] != float64(tc.index) || refusal["path"] != tc.path || refusal["rule"] != tc.rule {
					t.Fatalf("%d %v, want 422 refusing action %d %q for %s", status, body, tc.index, tc.path, tc.rule)
				}
				if _, err := w.forge.BranchHead(context.Background(), w.repo, branch); !wq.IsForgeError(err, wq.ForgeNotFound) {
					t.Errorf("a branch exists after a refusal: %v", err)
				}
			})
		}
		if status, body, _ := w.do("GET", "/api/v1/items", w.tokens["read"], nil); status != http.StatusOK || len(body["items"].([]any)) != 0 {
			t.Errorf("refused submissions were stored: %v", body)
		}
		if world.allowGitConfigFiles {
			// The switch reaches inspection: the .gitmodules refused
			// above is taken where the project allows it.
			status, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"],
				w.submission("workqueue/submodule", write(".gitmodules", validGitmodules), write(".gitattributes", "*.c filter=indent\n")))
			if status != http.StatusCreated || body["result"] != "created" {
				t.Errorf("a valid .gitmodules and a driver where the project allows them: %d %v, want 201 created", status, body)
			}
		}
	}
}
