package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/mr"
)

// postRaw posts body as it is, bytes the JSON encoder would never write
// included, and returns the status and the decoded answer.
func (w *apiWorld) postRaw(body string, header http.Header) (int, map[string]any) {
	w.t.Helper()
	h := http.Header{"Authorization": {"Bearer " + w.tokens["submit"]}}
	for k, v := range header {
		h[k] = v
	}
	status, out, answered, err := w.send("POST", "/api/v1/items", []byte(body), h)
	if err != nil && status == 0 {
		w.t.Fatal(err)
	}
	if ct := answered.Get("Content-Type"); status >= 400 && ct != "application/problem+json" {
		w.t.Errorf("%d answered as %q, want a problem document", status, ct)
	}
	return status, out
}

// branches lists the branches of the world's repository on the forge.
func (w *apiWorld) branches() []string {
	w.t.Helper()
	srv := testgitea.Get(w.t)
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		w.t.Fatal(err)
	}
	owner, name, _ := strings.Cut(w.repo, "/")
	bs, _, err := c.ListRepoBranches(owner, name, sdk.ListRepoBranchesOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	var names []string
	for _, b := range bs {
		names = append(names, b.Name)
	}
	return names
}

// TestStrictAPIRefusesInputItWouldOtherwiseFixUp sends bodies that
// encoding/json would accept after changing them, and branch names git
// would refuse: each is refused with its rule, nothing is stored and no
// branch is written. The same body without the defect is then accepted,
// so each refusal is the defect's and not the template's.
func TestStrictAPIRefusesInputItWouldOtherwiseFixUp(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) { c.Projects[0].AutoMerge = false })
	const branch = "workqueue/strict"
	template, _ := json.Marshal(map[string]any{"item_type": "mr", "forge": "gitea", "project": w.repo,
		"source_branch": branch, "target_branch": "main", "title": "Strict",
		"file_actions": []map[string]any{
			{"action": "create", "file_path": "ok.txt", "content": "fine\n"},
			{"action": "create", "file_path": "PATH", "content": "CONTENT"}}})
	body := func(old, new string) string { return strings.Replace(string(template), old, new, 1) }

	for _, tc := range []struct {
		name, body  string
		status      int
		rule, field string
		detail      string
	}{
		{"invalid UTF-8 in a path", body("PATH", "a\xffb.txt"), 422, "invalid_utf8", "file_actions[1].file_path", ""},
		{"an encoded surrogate in a path", body("PATH", "a\xed\xa0\x80.txt"), 422, "invalid_utf8", "file_actions[1].file_path", ""},
		{"invalid UTF-8 in content", body("CONTENT", "caf\xe9\\n"), 422, "invalid_utf8", "file_actions[1].content", ""},
		{"a lone high surrogate escape in a path", body("PATH", `x\ud800.txt`), 422, "invalid_utf8", "file_actions[1].file_path", ""},
		{"a lone low surrogate escape in content", body("CONTENT", `\uDC00`), 422, "invalid_utf8", "file_actions[1].content", ""},
		{"a lone surrogate escape in the title", body("Strict", `\uD83D`), 422, "invalid_utf8", "title", ""},
		{"a trailing ]", string(template) + "]", 422, "", "", "data after the JSON object"},
		{"a second object", string(template) + "{}", 422, "", "", "data after the JSON object"},
		{"a trailing word", string(template) + " x", 422, "", "", "data after the JSON object"},
		{"a member given twice", body(`"title":"Strict"`, `"title":"Strict","title":"Other"`), 422, "", "", "given twice"},
		{"a member name in another case", body(`"title"`, `"TITLE"`), 422, "", "", "case-sensitive"},
		{"source branch HEAD", body(branch, "HEAD"), 422, mr.RuleBranchNameInvalid, "source_branch", ""},
		{"source branch refs/heads/x", body(branch, "refs/heads/x"), 422, mr.RuleBranchNameInvalid, "source_branch", ""},
		{"source branch with ..", body(branch, "workqueue/a..b"), 422, mr.RuleBranchNameInvalid, "source_branch", ""},
		{"source branch with @{", body(branch, "workqueue/a@{1}"), 422, mr.RuleBranchNameInvalid, "source_branch", ""},
		{"source branch ending in .lock", body(branch, "workqueue/x.lock"), 422, mr.RuleBranchNameInvalid, "source_branch", ""},
		{"source branch with a component ending in .lock", body(branch, "workqueue/x.lock/y"), 422, mr.RuleBranchNameInvalid, "source_branch", ""},
		{"source branch with a control character", body(branch, `workqueue/a\u0007b`), 422, mr.RuleBranchNameInvalid, "source_branch", ""},
		{"source branch with a space", body(branch, "workqueue/a b"), 422, mr.RuleBranchNameInvalid, "source_branch", ""},
		{"source branch with a zero-width space", body(branch, `workqueue/a\u200bb`), 422, mr.RuleBranchNameInvalid, "source_branch", ""},
		{"source branch ending in /", body(branch, "workqueue/"), 422, mr.RuleBranchNameInvalid, "source_branch", ""},
		{"target branch @", body(`"target_branch":"main"`, `"target_branch":"@"`), 422, mr.RuleBranchNameInvalid, "target_branch", ""},
		{"target branch starting with -", body(`"target_branch":"main"`, `"target_branch":"-main"`), 422, mr.RuleBranchNameInvalid, "target_branch", ""},
		{"target branch with ~", body(`"target_branch":"main"`, `"target_branch":"main~1"`), 422, mr.RuleBranchNameInvalid, "target_branch", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, answer := w.postRaw(tc.body, nil)
			refusal, _ := answer["refusal"].(map[string]any)
			detail, _ := answer["detail"].(string)
			if status != tc.status || answer["code"] != "invalid" {
				t.Fatalf("%d %v, want %d invalid", status, answer, tc.status)
			}
			if tc.rule != "" && (refusal["rule"] != tc.rule || refusal["field"] != tc.field || !strings.HasPrefix(detail, tc.field+": "+tc.rule)) {
				t.Errorf("%v, want a refusal of %s by rule %s", answer, tc.field, tc.rule)
			}
			if tc.detail != "" && (refusal != nil || !strings.Contains(detail, tc.detail)) {
				t.Errorf("%v, want a detail saying %q", answer, tc.detail)
			}
		})
	}

	t.Run("two Authorization headers", func(t *testing.T) {
		status, answer := w.postRaw(string(template), http.Header{"Authorization": {"Bearer " + w.tokens["submit"], "Bearer " + w.tokens["read"]}})
		if status != http.StatusBadRequest || !strings.Contains(answer["detail"].(string), "more than one Authorization header") {
			t.Errorf("%d %v, want 400 naming the duplicate header", status, answer)
		}
	})

	if status, list, _ := w.do("GET", "/api/v1/items", w.tokens["read"], nil); status != http.StatusOK || len(list["items"].([]any)) != 0 {
		t.Fatalf("refused submissions were stored: %d %v", status, list)
	}
	if got := w.branches(); len(got) != 1 || got[0] != "main" {
		t.Fatalf("branches after refusals: %v, want only main", got)
	}

	// The template itself passes, with the scheme in lower case.
	clean := body("PATH", "b.txt")
	if status, answer := w.postRaw(clean, http.Header{"Authorization": {"bearer " + w.tokens["submit"]}}); status != http.StatusCreated {
		t.Fatalf("the clean body: %d %v, want 201", status, answer)
	}
	// Trailing whitespace is not trailing data.
	if status, answer := w.postRaw(clean+"\r\n \t", nil); status != http.StatusOK || answer["result"] != string(mr.ResultUnchanged) {
		t.Fatalf("the clean body with trailing whitespace: %d %v, want 200 unchanged", status, answer)
	}
}
