package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// serveYAML runs workqueue serve in process on a fresh SQLite database
// with the configuration doc (decoded as a file is, over the defaults)
// and returns its base URL. The forge it names is never reached: nothing
// here processes items.
func serveYAML(t *testing.T, doc string) string {
	t.Helper()
	t.Setenv("WQ_TEST_UNREACHED_TOKEN", "unused")
	cfg, err := config.Parse(strings.NewReader("listen: 127.0.0.1:0\ndatabase: sqlite://"+
		filepath.Join(t.TempDir(), "wq.db")+"\n"+doc), assemble().known())
	if err != nil {
		t.Fatal(err)
	}
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return "http://" + m.Addr()
}

// postJSON sends body as JSON with a bearer token and decodes the answer.
func postJSON(t *testing.T, u, token string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", u, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, resp.Header
}

const unreachedForge = `forges: [{name: gitea, kind: gitea, url: 'http://127.0.0.1:1', token_env: WQ_TEST_UNREACHED_TOKEN}]
projects: [{match: 'team/**', forge: gitea}]
control_plane: {repos: [{forge: gitea, match: 'team/**'}], sync_interval: 1h%s}
`

// Issue 25: with the control plane configured, an agent-only token
// submits only for an assignment unless the file says
// require_assignment: false, and config check says which.
func TestAgentOnlyTokensSubmitOnlyForAnAssignmentUnlessTheFileSaysOtherwise(t *testing.T) {
	agent, agentHash, _ := auth.NewToken()
	tokens := "auth: {tokens: [{name: agents, sha256: " + agentHash + ", permissions: [agent]}]}\n"
	sub := map[string]any{"item_type": "mr", "forge": "gitea", "project": "team/app", "source_branch": "workqueue/unassigned",
		"target_branch": "main", "title": "T", "file_actions": []map[string]any{{"action": "create", "file_path": "a.txt", "content": "a\n"}}}
	for _, tc := range []struct {
		name, setting string
		status        int
		reason, note  string
	}{
		{"by default", "", http.StatusForbidden, "assignment_required",
			"agent-only tokens submit changes only for an assignment (control_plane.require_assignment: true, the default)"},
		{"with an explicit false", ", require_assignment: false", http.StatusCreated, "",
			"agent-only tokens may submit changes without an assignment (control_plane.require_assignment: false)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := tokens + strings.Replace(unreachedForge, "%s", tc.setting, 1)
			base := serveYAML(t, doc)
			status, out, _ := postJSON(t, base+"/api/v1/items", agent, sub)
			if status != tc.status || (tc.reason != "" && out["reason"] != tc.reason) {
				t.Errorf("an agent-only submission without assignment_id: %d %v; want %d %q", status, out, tc.status, tc.reason)
			}
			printed, _, _ := runCLI(t, "config", "check", writeConfig(t, doc))
			if !strings.Contains(printed, tc.note) {
				t.Errorf("config check does not say %q:\n%s", tc.note, printed)
			}
		})
	}
}

var loginCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// The serve process wires one failure limiter into the API and the
// dashboard, from auth.failure_limit, counted in the metrics.
func TestServeThrottlesTokenGuessingOnTheAPIAndTheLoginForm(t *testing.T) {
	reader, readerHash, _ := auth.NewToken()
	scraper, scraperHash, _ := auth.NewToken()
	base := serveYAML(t, "example: {enabled: true}\nauth: {failure_limit: 4, tokens: [{name: reader, sha256: "+readerHash+
		", permissions: [read]}, {name: scraper, sha256: "+scraperHash+", permissions: [metrics]}]}\n")
	get := func(path, token string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	for _, tok := range []string{reader, scraper} {
		if status, _, _ := get("/me", tok); status != http.StatusOK {
			t.Fatalf("a valid token: %d", status)
		}
	}
	for i := range 4 {
		if status, _, _ := get("/api/v1/items", "wq_guess"); status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i+1, status)
		}
	}
	status, header, _ := get("/api/v1/items", "wq_guess")
	if retry, err := strconv.Atoi(header.Get("Retry-After")); status != http.StatusTooManyRequests || err != nil || retry < 1 || retry > 60 {
		t.Errorf("the fifth guess: %d, Retry-After %q; want 429 and at most a minute", status, header.Get("Retry-After"))
	}

	// The login form, from the same address, is throttled too.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + "/ui/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := loginCSRF.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no login form:\n%s", page)
	}
	resp, err = c.PostForm(base+"/ui/login", url.Values{"token": {"wq_guess"}, "csrf": {string(m[1])}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a login guess from the throttled address: %d, want 429 with Retry-After", resp.StatusCode)
	}

	if status, _, _ := get("/api/v1/items", reader); status != http.StatusOK {
		t.Errorf("the reader's token from the throttled address: %d, want 200", status)
	}
	if _, _, metrics := get("/metrics", scraper); !strings.Contains(metrics, "\nworkqueue_auth_throttled_total 2\n") {
		t.Errorf("the metrics do not count two throttled attempts:\n%s", metrics)
	}
}
