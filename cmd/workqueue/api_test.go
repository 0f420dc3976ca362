package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
	"github.com/workqueue-dev/workqueue/policy"
)

// apiWorld is a running workqueue serve in process, on a real Gitea.
type apiWorld struct {
	t      testing.TB
	base   string
	tokens map[string]string // by permission
	forge  *gitea.Forge
	repo   string
}

// thisRepo, as a control_plane.repos match or an incidents.projects repo
// in startAPI's edit, stands for
// the world's repository, which is made before the configuration.
const thisRepo = "{this repository}"

func startAPI(t testing.TB, forgeURL string, edit func(*config.Config)) *apiWorld {
	t.Helper()
	srv := testgitea.Get(t)
	if forgeURL == "" {
		forgeURL = srv.URL
	}
	t.Setenv("WQ_TEST_GITEA_TOKEN", srv.Token)
	w := &apiWorld{t: t, tokens: map[string]string{}, repo: srv.NewRepo(t)}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Database = "sqlite://" + filepath.Join(t.TempDir(), "wq.db")
	cfg.HandledTypes = []string{mr.ItemType}
	cfg.Processing.SweepInterval = config.Duration(100 * time.Millisecond)
	mrtype.In(&cfg).MergeRecheckInterval = config.Duration(200 * time.Millisecond)
	cfg.Forges = []config.Forge{{Name: "gitea", Kind: "gitea", URL: forgeURL, TokenEnv: "WQ_TEST_GITEA_TOKEN"}}
	cfg.Projects = []config.Project{{Match: "workqueue/**", Forge: "gitea", BlockedPaths: []string{"secrets/**", "**/CODEOWNERS"},
		MaxFileBytes: 1000, MaxTotalBytes: 1500, AutoMerge: true}}
	for _, p := range []auth.Permission{auth.Read, auth.Submit, auth.Retry} {
		tok, hash, _ := auth.NewToken()
		w.tokens[string(p)] = tok
		cfg.Auth.Tokens = append(cfg.Auth.Tokens, config.Token{Name: string(p) + "-bot", SHA256: hash, Permissions: []string{string(p), "read"}})
	}
	if edit != nil {
		edit(&cfg)
	}
	for i, r := range cfg.ControlPlane.Repos {
		if r.Match == thisRepo {
			cfg.ControlPlane.Repos[i].Match = w.repo
		}
	}
	for i, p := range cfg.Incidents.Projects {
		if p.Repo == thisRepo {
			cfg.Incidents.Projects[i].Repo = w.repo
		}
	}
	if err := cfg.Validate(assemble().known()); err != nil {
		t.Fatal(err)
	}
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	w.base = "http://" + m.Addr()
	var err error
	if w.forge, err = gitea.New(srv.URL, srv.Token, gitea.Options{}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *apiWorld) do(method, path, token string, body any) (int, map[string]any, http.Header) {
	w.t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	header := http.Header{}
	if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	status, out, h, err := w.send(method, path, b, header)
	if err != nil && status == 0 { // an answer that is not JSON decodes to nil
		w.t.Fatal(err)
	}
	return status, out, h
}

// send sends a request with body (nil for none) and header, from any
// goroutine, and returns the status and the decoded answer.
func (w *apiWorld) send(method, path string, body []byte, header http.Header) (int, map[string]any, http.Header, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, w.base+path, r)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	err = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, resp.Header, err
}

func (w *apiWorld) submission(branch string, actions ...map[string]any) map[string]any {
	if len(actions) == 0 {
		actions = []map[string]any{{"action": "create", "file_path": "hello.txt", "content": "hello\n"}}
	}
	return map[string]any{"item_type": "mr", "forge": "gitea", "project": w.repo, "source_branch": branch,
		"target_branch": "main", "title": "Say hello", "file_actions": actions}
}

// waitPhase polls GET /api/v1/items/{id} until cond holds.
func (w *apiWorld) waitItem(id, what string, cond func(map[string]any) bool) map[string]any {
	w.t.Helper()
	// A liveness bound, not a performance goal: a loaded two-core CI
	// machine runs Gitea's mergeability checks and every package's tests
	// at once, and an item that must rebuild after others merged waits
	// for each of them.
	return eventually.Value(w.t, 3*time.Minute, what, func() (map[string]any, bool) {
		status, item, _ := w.do("GET", "/api/v1/items/"+id, w.tokens["read"], nil)
		if status != http.StatusOK {
			w.t.Fatalf("GET item: %d %v", status, item)
		}
		return item, cond(item)
	})
}

// waitPR waits until the item has a pull request or has ended, and
// returns it with the pull request's number (0 if it has none).
func (w *apiWorld) waitPR(id string) (map[string]any, int64) {
	w.t.Helper()
	item := w.waitItem(id, "a pull request or the end", func(it map[string]any) bool {
		d, _ := it["detail"].(map[string]any)
		return it["phase"] != "active" || d["mr_iid"] != nil
	})
	number, _ := item["detail"].(map[string]any)["mr_iid"].(float64)
	return item, int64(number)
}

// personMerges merges the pull request through the forge as a person
// would, once the forge says it is mergeable.
func (w *apiWorld) personMerges(number int64) {
	w.t.Helper()
	ctx := context.Background()
	eventually.True(w.t, 30*time.Second, "merge through the forge", func() (bool, any) {
		pr, err := w.forge.GetMergeRequest(ctx, w.repo, number)
		return err == nil && pr.Mergeable && w.forge.MergeMergeRequest(ctx, w.repo, number, pr.HeadSHA) == nil, pr
	})
}

func TestAPIRefusesCallersWithoutTheRightToken(t *testing.T) {
	w := startAPI(t, "", nil)
	sub := w.submission("workqueue/auth")
	status, body, hdr := w.do("POST", "/api/v1/items", "", sub)
	if status != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") || body["code"] != "unauthorized" {
		t.Errorf("no token: %d %v %q", status, body, hdr.Get("WWW-Authenticate"))
	}
	if status, _, _ := w.do("GET", "/api/v1/items", "wq_not-a-token", nil); status != http.StatusUnauthorized {
		t.Errorf("bad token: %d", status)
	}
	if status, body, _ := w.do("POST", "/api/v1/items", w.tokens["read"], sub); status != http.StatusForbidden || body["code"] != "forbidden" {
		t.Errorf("read token submitting: %d %v", status, body)
	}
	if status, body, _ := w.do("GET", "/api/v1/items", w.tokens["read"], nil); status != http.StatusOK || len(body["items"].([]any)) != 0 {
		t.Errorf("after refused submissions: %d %v", status, body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, _, _ := w.do("GET", path, "", nil); status != http.StatusOK {
			t.Errorf("%s without a token: %d", path, status)
		}
	}
}

func TestAPISubmissionIsMergedAndShown(t *testing.T) {
	w := startAPI(t, "", nil)
	status, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("workqueue/hello"))
	if status != http.StatusCreated || body["result"] != "created" || body["id"] == "" {
		t.Fatalf("submit: %d %v", status, body)
	}
	id := body["id"].(string)
	item := w.waitItem(id, "completion", func(it map[string]any) bool { return it["phase"] != "active" })
	detail, _ := item["detail"].(map[string]any)
	if item["phase"] != "completed" || item["reason"] != "merged" || item["attempts"] != float64(0) || item["item_type"] != "mr" ||
		detail["mr_iid"] == nil || !strings.Contains(fmt.Sprint(detail["mr_url"]), "/pulls/") || item["dimensions"] == nil {
		t.Errorf("item %v", item)
	}
	if status, again, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("workqueue/hello")); status != http.StatusCreated || again["generation"] != float64(2) {
		t.Errorf("the same change after a merge: %d %v (a new generation)", status, again)
	}
	status, list, _ := w.do("GET", "/api/v1/items?item_type=mr&phase=completed&project="+url.QueryEscape(w.repo), w.tokens["read"], nil)
	if items, _ := list["items"].([]any); status != http.StatusOK || len(items) != 1 {
		t.Errorf("list: %d %v", status, list)
	}
	if status, body, _ := w.do("GET", "/api/v1/items?phase=done", w.tokens["read"], nil); status != http.StatusUnprocessableEntity || !strings.HasPrefix(body["detail"].(string), "phase:") {
		t.Errorf("bad filter: %d %v", status, body)
	}
}

func TestAPIInspectionRefusalsNameIndexPathAndRuleAndPushNothing(t *testing.T) {
	w := startAPI(t, "", nil)
	ok := map[string]any{"action": "create", "file_path": "fine.txt", "content": "fine\n"}
	for _, tc := range []struct {
		action map[string]any
		path   string
		rule   string
	}{
		{map[string]any{"action": "symlink", "file_path": "a"}, "a", mr.RuleUnknownAction},
		{map[string]any{"action": "create", "file_path": "", "content": "x"}, "", mr.RulePathEmpty},
		{map[string]any{"action": "create", "file_path": "/etc/passwd", "content": "x"}, "/etc/passwd", mr.RulePathAbsolute},
		{map[string]any{"action": "create", "file_path": "a//b", "content": "x"}, "a//b", mr.RulePathNotClean},
		{map[string]any{"action": "create", "file_path": "../x", "content": "x"}, "../x", mr.RulePathDotDot},
		{map[string]any{"action": "create", "file_path": ".git/config", "content": "x"}, ".git/config", mr.RulePathGitDir},
		{map[string]any{"action": "create", "file_path": "GIT~1/config", "content": "x"}, "GIT~1/config", mr.RulePathGitDir},
		{map[string]any{"action": "create", "file_path": ".git. /hooks/x", "content": "x"}, ".git. /hooks/x", mr.RulePathGitDir},
		{map[string]any{"action": "create", "file_path": ".g\u200cit/config", "content": "x"}, ".g\u200cit/config", mr.RulePathGitDir},
		{map[string]any{"action": "create", "file_path": "a\u0001b", "content": "x"}, "a\u0001b", mr.RulePathControlChar},
		{map[string]any{"action": "create", "file_path": `a\b`, "content": "x"}, `a\b`, mr.RulePathBackslash},
		{map[string]any{"action": "create", "file_path": strings.Repeat("x", 300), "content": "x"}, strings.Repeat("x", 300), mr.RulePathTooLong},
		{map[string]any{"action": "create", "file_path": "fine.txt", "content": "x"}, "fine.txt", mr.RulePathDuplicate},
		{map[string]any{"action": "create", "file_path": "FINE.txt", "content": "x"}, "FINE.txt", mr.RulePathCaseCollision},
		{map[string]any{"action": "create", "file_path": "secrets/key", "content": "x"}, "secrets/key", mr.RulePathBlocked},
		{map[string]any{"action": "delete", "file_path": "team/CODEOWNERS"}, "team/CODEOWNERS", policy.RuleProtectedPath}, // the built-in list comes before the blocklist
		{map[string]any{"action": "move", "file_path": "b"}, "b", mr.RulePreviousPath},
		{map[string]any{"action": "create", "file_path": "b", "previous_path": "a", "content": "x"}, "b", mr.RuleUnexpectedField},
		{map[string]any{"action": "update", "file_path": "b"}, "b", mr.RuleContentRequired},
		{map[string]any{"action": "chmod", "file_path": "b"}, "b", mr.RuleFilemodeRequired},
		{map[string]any{"action": "create", "file_path": "b", "content": "x", "encoding": "hex"}, "b", mr.RuleEncoding},
		{map[string]any{"action": "create", "file_path": "b", "content": "!!", "encoding": "base64"}, "b", mr.RuleBase64},
		{map[string]any{"action": "create", "file_path": "b", "content": "AAEC", "encoding": "base64"}, "b", mr.RuleBinary},
		{map[string]any{"action": "create", "file_path": "b", "content": strings.Repeat("x", 1001)}, "b", mr.RuleFileTooLarge},
		{map[string]any{"action": "create", "file_path": "b", "content": strings.Repeat("x", 999)}, "b", mr.RuleTotalTooLarge},
	} {
		t.Run(tc.rule+" "+tc.path, func(t *testing.T) {
			branch := "workqueue/refused"
			big := map[string]any{"action": "create", "file_path": "big.txt", "content": strings.Repeat("y", 600)}
			actions := []map[string]any{ok, tc.action}
			if tc.rule == mr.RuleTotalTooLarge {
				actions = []map[string]any{big, tc.action}
			}
			status, body, hdr := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch, actions...))
			refusal, _ := body["refusal"].(map[string]any)
			if status != http.StatusUnprocessableEntity || hdr.Get("Content-Type") != "application/problem+json" ||
				refusal["index"] != float64(1) || refusal["path"] != tc.path || refusal["rule"] != tc.rule {
				t.Fatalf("%d %v, want 422 refusing action 1 %q for %s", status, body, tc.path, tc.rule)
			}
			if _, err := w.forge.BranchHead(context.Background(), w.repo, branch); !wq.IsForgeError(err, wq.ForgeNotFound) {
				t.Errorf("a branch exists after a refusal: %v", err)
			}
		})
	}
	if status, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], map[string]any{"item_type": "mr", "forge": "gitea",
		"project": "someone/else", "source_branch": "x", "target_branch": "main", "title": "t", "file_actions": []any{ok}}); status != http.StatusUnprocessableEntity || !strings.HasPrefix(body["detail"].(string), "project:") {
		t.Errorf("unconfigured project: %d %v", status, body)
	}
	if status, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], map[string]any{"item_type": "mr", "surprise": 1}); status != http.StatusUnprocessableEntity || !strings.Contains(body["detail"].(string), "surprise") {
		t.Errorf("unknown field: %d %v", status, body)
	}
	if status, body, _ := w.do("GET", "/api/v1/items", w.tokens["read"], nil); status != http.StatusOK || len(body["items"].([]any)) != 0 {
		t.Errorf("refused submissions were stored: %v", body)
	}
}

func TestAPIIdenticalSubmissionsAtOnceMakeOneItemAndOnePullRequest(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) { c.Projects[0].AutoMerge = false })
	ids := make([]string, 6)
	testkit.AtOnce(len(ids), func(i int) {
		_, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("workqueue/twins"))
		ids[i], _ = body["id"].(string)
	})
	for i, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("submission %d got item %q, submission 0 got %q", i, id, ids[0])
		}
	}
	w.waitPR(ids[0])
	pr, err := w.forge.FindMergeRequest(context.Background(), w.repo, "workqueue/twins", "main")
	if err != nil || pr == nil || pr.Number != 1 {
		t.Errorf("pull requests: %+v %v; want exactly #1", pr, err)
	}
}

func TestAPIForgeOutageKeepsItemsActiveUntilTheForgeReturns(t *testing.T) {
	srv := testgitea.Get(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the forge's address refuses connections for now
	w := startAPI(t, "http://"+addr, func(c *config.Config) {
		c.Processing.MaxAttempts = 2
		c.Processing.BackoffBase = config.Duration(200 * time.Millisecond)
		c.Processing.BackoffMax = config.Duration(400 * time.Millisecond)
	})
	// A person's branch inside the prefix, made straight on Gitea: an item
	// for it must fail for good once the forge answers, the outage or not.
	if _, err := w.forge.CommitFiles(context.Background(), wq.CommitRequest{Project: w.repo, Base: "main", Branch: "workqueue/persons",
		Message: "by hand", Changes: []wq.FileChange{{Action: "create", Path: "by-hand.txt", Content: []byte("hand\n")}}}); err != nil {
		t.Fatal(err)
	}
	_, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("workqueue/outage"))
	id := body["id"].(string)
	_, body, _ = w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("workqueue/persons"))
	persons := body["id"].(string)

	// With max attempts 2, counting the outage would fail the item at its
	// second try: it goes on backing off instead, round after round.
	rounds := map[any]bool{}
	w.waitItem(id, "five backoff rounds", func(it map[string]any) bool {
		if it["retry_after"] == nil {
			return false // not tried yet
		}
		if it["phase"] != "active" || it["attempts"] != float64(0) || !strings.Contains(fmt.Sprint(it["error"]), "transient") {
			t.Fatalf("during the outage: %v; want active, attempts 0, a transient error and a retry_after", it)
		}
		rounds[it["retry_after"]] = true
		return len(rounds) >= 5
	})
	other := w.waitItem(persons, "a try", func(it map[string]any) bool { return it["retry_after"] != nil })
	if other["phase"] != "active" || other["attempts"] != float64(0) {
		t.Errorf("the other item during the outage: %v; want active, attempts 0", other)
	}

	// The forge comes back at the same address. Nobody calls retry.
	back, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(srv.URL)
	proxy := &http.Server{Handler: httputil.NewSingleHostReverseProxy(target)}
	go proxy.Serve(back)
	t.Cleanup(func() { proxy.Close() })
	done := w.waitItem(id, "completion once the forge is back", func(it map[string]any) bool { return it["phase"] != "active" })
	if done["phase"] != "completed" || done["reason"] != "merged" || done["attempts"] != float64(0) || done["error"] != nil || done["retry_after"] != nil {
		t.Errorf("after the outage: %v; want completed/merged with no error or retry_after left", done)
	}
	if _, found, err := w.forge.ReadFile(context.Background(), w.repo, "main", "hello.txt"); err != nil || !found {
		t.Errorf("hello.txt is not on main after the merge (%v)", err)
	}
	if status, body, _ := w.do("POST", "/api/v1/items/"+id+"/retry", w.tokens["retry"], nil); status != http.StatusConflict {
		t.Errorf("retry of a completed item: %d %v", status, body)
	}

	// A refusal is not an outage: the person's branch fails its item at
	// once, and only a caller with the retry permission may retry it.
	failed := w.waitItem(persons, "failure on a branch the service does not own", func(it map[string]any) bool { return it["phase"] != "active" })
	if failed["phase"] != "failed" || failed["attempts"] != float64(1) || !strings.Contains(fmt.Sprint(failed["error"]), "did not create") {
		t.Errorf("the item for a person's branch: %v; want failed after one attempt, saying why", failed)
	}
	if status, body, _ := w.do("POST", "/api/v1/items/"+persons+"/retry", w.tokens["read"], nil); status != http.StatusForbidden {
		t.Errorf("retry with a read token: %d %v", status, body)
	}
	if status, body, _ := w.do("POST", "/api/v1/items/"+persons+"/retry", w.tokens["retry"], nil); status != http.StatusOK || body["phase"] != "active" {
		t.Errorf("retry with a retry token: %d %v", status, body)
	}
}

func TestAPIRetryReopensAPullRequestAPersonClosed(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) {
		c.Projects[0].AutoMerge = false
		mrtype.In(c).ReconcileInterval = config.Duration(200 * time.Millisecond)
	})
	_, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("workqueue/closed"))
	id := body["id"].(string)
	_, number := w.waitPR(id)
	closed := wq.MergeRequestClosed
	if _, err := w.forge.UpdateMergeRequest(context.Background(), w.repo, number, wq.MergeRequestUpdate{State: &closed}); err != nil {
		t.Fatal(err)
	}
	cancelled := w.waitItem(id, "cancellation", func(it map[string]any) bool { return it["phase"] != "active" })
	if cancelled["phase"] != "cancelled" || cancelled["reason"] != "closed" {
		t.Fatalf("after a person closed the pull request: %v", cancelled)
	}
	if status, body, _ := w.do("POST", "/api/v1/items/"+id+"/retry", w.tokens["retry"], nil); status != http.StatusOK || body["phase"] != "active" {
		t.Fatalf("retry: %d %v", status, body)
	}
	eventually.True(t, 30*time.Second, "the pull request reopened", func() (bool, any) {
		pr, err := w.forge.GetMergeRequest(context.Background(), w.repo, number)
		return err == nil && pr.State == wq.MergeRequestOpen, pr
	})
	// Cancel winds the item down: the service closes its pull request
	// with a note, then the item is cancelled.
	if status, body, _ := w.do("POST", "/api/v1/items/"+id+"/cancel", w.tokens["retry"], nil); status != http.StatusOK || body["phase"] != "active" {
		t.Fatalf("cancel: %d %v, want the request taken with the item still active", status, body)
	}
	done := w.waitItem(id, "cancellation", func(it map[string]any) bool { return it["phase"] != "active" })
	if done["phase"] != "cancelled" || done["reason"] != "cancelled by token:retry-bot" {
		t.Errorf("after cancel: %v/%v, want cancelled by the caller", done["phase"], done["reason"])
	}
	if pr, err := w.forge.GetMergeRequest(context.Background(), w.repo, number); err != nil || pr.State != wq.MergeRequestClosed {
		t.Errorf("the pull request after cancel: %+v %v, want closed", pr, err)
	}
}

func TestCLISubmitsWatchesAndShowsAnItem(t *testing.T) {
	w := startAPI(t, "", nil)
	file := filepath.Join(t.TempDir(), "change.yaml")
	doc := fmt.Sprintf(`item_type: mr
forge: gitea
project: %s
source_branch: workqueue/cli
target_branch: main
title: From the command line
file_actions:
  - {action: create, file_path: cli.txt, content: "hello from the CLI\n"}
`, w.repo)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCommand(t, "items", "submit", "-f", file, "--server", w.base, "--token", w.tokens["submit"], "-o", "json")
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["result"] != "created" {
		t.Fatalf("submit output %q: %v", out, err)
	}
	id := res["id"].(string)
	out, err = runCommand(t, "items", "watch", id, "--server", w.base, "--token", w.tokens["read"], "--interval", "100ms")
	if err != nil || !strings.Contains(out, "completed (merged)") || !strings.Contains(out, "/pulls/") {
		t.Fatalf("watch: %v\n%s", err, out)
	}
	out, err = runCommand(t, "items", "show", id, "--server", w.base, "--token", w.tokens["read"])
	if err != nil || !strings.Contains(out, "completed") || !strings.Contains(out, "merge request") {
		t.Errorf("show: %v\n%s", err, out)
	}
	out, err = runCommand(t, "items", "list", "--server", w.base, "--token", w.tokens["read"], "--phase", "completed", "-o", "json")
	if err != nil || !strings.Contains(out, id) {
		t.Errorf("list: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"summary"`) || !strings.Contains(out, `"title": "From the command line"`) {
		t.Errorf("list: want each mr item's summary (title, merge request):\n%s", out)
	}
	// The table's title and merge request come from the list's summaries,
	// in the one request.
	out, err = runCommand(t, "items", "list", "--server", w.base, "--token", w.tokens["read"], "--phase", "completed")
	if err != nil || !strings.Contains(out, "From the command line") || !strings.Contains(out, "/pulls/") {
		t.Errorf("list table: want the title and the merge request: %v\n%s", err, out)
	}
	out, err = runCommand(t, "items", "list", "--server", w.base, "--token", w.tokens["read"], "--title", "From the*", "-q")
	if err != nil || strings.TrimSpace(out) != id {
		t.Errorf("list --title: %v\n%s; want only %s", err, out, id)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "docs", "guide.md"), []byte("# guide\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("notes\n"), 0o644)
	out, err = runCommand(t, "items", "submit", "--dir", dir, "--forge", "gitea", "--project", w.repo, "--source-branch", "workqueue/dir",
		"--target-branch", "main", "--title", "From a directory", "--server", w.base, "--token", w.tokens["submit"], "-o", "json")
	if err != nil {
		t.Fatalf("submit --dir: %v\n%s", err, out)
	}
	json.Unmarshal([]byte(out), &res)
	if files := res["detail"].(map[string]any)["files"].([]any); len(files) != 2 {
		t.Errorf("submit --dir made %d file actions, want 2: %v", len(files), files)
	}
	if _, err := runCommand(t, "items", "submit", "--dir", dir, "-f", file, "--server", w.base, "--token", w.tokens["submit"]); err == nil {
		t.Error("--dir and --file together were accepted")
	}
	if _, err := runCommand(t, "items", "list", "--server", w.base, "--token", ""); err == nil || !strings.Contains(err.Error(), "WORKQUEUE_TOKEN") {
		t.Errorf("no token: %v", err)
	}
	if _, err := runCommand(t, "items", "submit", "-f", file, "--server", w.base, "--token", w.tokens["read"]); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a read token submitting: %v", err)
	}
}
