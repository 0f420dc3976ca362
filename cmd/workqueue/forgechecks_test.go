package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mr"
)

// versionProxy is the real test Gitea behind a reverse proxy that changes
// only the answer of GET /api/v1/version: a Gitea that reports an older
// release and behaves as the real one otherwise.
func versionProxy(t *testing.T, target, version string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/version" {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]string{"version": version})
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// giteaConfig is serve's configuration for one Gitea at forgeURL and the
// test owner's repositories.
func giteaConfig(t *testing.T, forgeURL, owner string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Database = "sqlite://" + filepath.Join(t.TempDir(), "wq.db")
	cfg.HandledTypes = []string{mr.ItemType}
	cfg.Forges = []config.Forge{{Name: "gitea", Kind: "gitea", URL: forgeURL, TokenEnv: "WQ_TEST_GITEA_TOKEN"}}
	cfg.Projects = []config.Project{{Match: owner + "/**", Forge: "gitea"}}
	return cfg
}

func TestServeRefusesAGiteaOlderThanTheOldestSupportedNamingBoth(t *testing.T) {
	srv := testgitea.Get(t)
	t.Setenv("WQ_TEST_GITEA_TOKEN", srv.Token)
	old := versionProxy(t, srv.URL, "1.25.3")
	m := NewMain(giteaConfig(t, old, srv.User), testkit.Quiet())
	err := m.Run(context.Background())
	m.Close()
	if err == nil || !strings.Contains(err.Error(), "1.25.3") || !strings.Contains(err.Error(), gitea.ServerVersion) {
		t.Fatalf("serve against Gitea 1.25.3: %v, want a refusal naming 1.25.3 and %s", err, gitea.ServerVersion)
	}

	// The same server reporting its real version, or a build of the
	// branch towards the next release, starts.
	for _, v := range []string{"", "1.27.0+dev-12-gabcdef"} {
		forgeURL := srv.URL
		if v != "" {
			forgeURL = versionProxy(t, srv.URL, v)
		}
		m := NewMain(giteaConfig(t, forgeURL, srv.User), testkit.Quiet())
		if err := m.Run(context.Background()); err != nil {
			t.Errorf("serve against Gitea %q: %v", v, err)
		}
		m.Close()
	}
}

func TestServeStartsWithAForgeWhoseVersionIsGarbageAndSaysSo(t *testing.T) {
	srv := testgitea.Get(t)
	t.Setenv("WQ_TEST_GITEA_TOKEN", srv.Token)
	var logs strings.Builder
	out := &syncWriter{w: &logs}
	m := NewMain(giteaConfig(t, versionProxy(t, srv.URL, "development"), srv.User), slog.New(slog.NewTextHandler(out, nil)))
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("serve against a Gitea reporting \"development\": %v, want a start with a warning", err)
	}
	m.Close()
	out.mu.Lock()
	defer out.mu.Unlock()
	if !strings.Contains(logs.String(), "forge version unreadable") || !strings.Contains(logs.String(), "development") {
		t.Errorf("no warning names the unreadable version:\n%s", logs.String())
	}
}

func TestConfigCheckOnlineReportsAnOlderGiteaAsAProblem(t *testing.T) {
	srv := testgitea.Get(t)
	srv.NewRepo(t)
	t.Setenv("WQ_CHECK_GITEA_TOKEN", srv.Token)
	file := writeConfig(t, `handled_types: [mr]
forges:
  - {name: gitea, kind: gitea, url: '`+versionProxy(t, srv.URL, "1.24.6")+`', token_env: WQ_CHECK_GITEA_TOKEN}
projects:
  - {match: '`+srv.User+`/**', forge: gitea}
`)
	out, stderr, code := runCLI(t, "config", "check", "--online", "-o", "json", file)
	var r checkReport
	if code != exitFailed || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("exit %d, want 1:\n%s%s", code, out, stderr)
	}
	var found bool
	for _, p := range r.Problems {
		if p.Field == "forges[gitea]" && !p.Warning && strings.Contains(p.Message, "1.24.6") && strings.Contains(p.Message, gitea.ServerVersion) {
			found = true
		}
	}
	if !found {
		t.Errorf("no error on forges[gitea] names 1.24.6 and %s: %+v", gitea.ServerVersion, r.Problems)
	}
}

// problemsAbout are the messages of the warnings that name setting.
func problemsAbout(r checkReport, setting string) []string {
	var out []string
	for _, p := range r.Problems {
		if p.Warning && strings.Contains(p.Message, setting) {
			out = append(out, p.Message)
		}
	}
	return out
}

func TestConfigCheckOnlineWarnsOfEachGitLabSettingSafetyReliesOn(t *testing.T) {
	gl := gitlabtest.New()
	defer gl.Close()
	gl.CreateProject("g/p")
	t.Setenv("WQ_CHECK_GITLAB_TOKEN", gl.Token)
	file := writeConfig(t, `handled_types: [mr]
forges:
  - {name: gl, kind: gitlab, url: '`+gl.URL+`', token_env: WQ_CHECK_GITLAB_TOKEN}
projects:
  - {match: 'g/p', forge: gl}
`)
	check := func() checkReport {
		t.Helper()
		out, stderr, code := runCLI(t, "config", "check", "--online", "-o", "json", file)
		var r checkReport
		if json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("exit %d:\n%s%s", code, out, stderr)
		}
		return r
	}
	edit := func(path string, body map[string]any, method string) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, gl.URL+"/api/v4/projects/g%2Fp"+path, strings.NewReader(string(b)))
		req.Header.Set("PRIVATE-TOKEN", gl.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s %s: %v %v", method, path, resp, err)
		}
		resp.Body.Close()
	}

	// A new GitLab project: approvals reset on push, pipelines need not
	// succeed.
	r := check()
	if !r.OK {
		t.Fatalf("GitLab %s: not ok: %+v", gitlabtest.DefaultVersion, r.Problems)
	}
	if got := problemsAbout(r, "reset_approvals_on_push"); len(got) != 0 {
		t.Errorf("reset_approvals_on_push on: warned %q", got)
	}
	if got := problemsAbout(r, "only_allow_merge_if_pipeline_succeeds = false"); len(got) != 1 {
		t.Errorf("pipelines need not succeed: warnings %q, want one", got)
	}

	edit("/approvals", map[string]any{"reset_approvals_on_push": false}, "POST")
	edit("", map[string]any{"only_allow_merge_if_pipeline_succeeds": true}, "PUT")
	r = check()
	if got := problemsAbout(r, "reset_approvals_on_push = false"); len(got) != 1 || !strings.Contains(got[0], "survives a push") {
		t.Errorf("reset_approvals_on_push off: warnings %q, want one saying an approval survives a push", got)
	}
	if got := problemsAbout(r, "only_allow_merge_if_pipeline_succeeds"); len(got) != 0 {
		t.Errorf("pipelines must succeed: warned %q", got)
	}

	// GitLab Free has no approvals API: the setting is unknown, and said so.
	gl.SetFreeTier(true)
	r = check()
	if got := problemsAbout(r, "reset_approvals_on_push: not read"); len(got) != 1 {
		t.Errorf("on GitLab Free: warnings %+v, want reset_approvals_on_push not read", r.Problems)
	}

	// An instance below the oldest supported release is a problem.
	gl.SetVersion("16.11.2-ee")
	if r := check(); r.OK {
		t.Errorf("GitLab 16.11.2: ok, want a problem naming it and %s", gitlab.MinServerVersion)
	} else if !strings.Contains(r.Problems[0].Message, "16.11.2-ee") || !strings.Contains(r.Problems[0].Message, gitlab.MinServerVersion) {
		t.Errorf("GitLab 16.11.2: %+v, want the first problem to name 16.11.2-ee and %s", r.Problems, gitlab.MinServerVersion)
	}
}

func TestConfigCheckOnlineSaysWhetherGiteaBranchProtectionHoldsTheServicesMerges(t *testing.T) {
	srv := testgitea.Get(t)
	repo := srv.NewRepo(t)
	t.Setenv("WQ_CHECK_GITEA_TOKEN", srv.Token)
	file := writeConfig(t, `handled_types: [mr]
forges:
  - {name: gitea, kind: gitea, url: '`+srv.URL+`', token_env: WQ_CHECK_GITEA_TOKEN}
projects:
  - {match: '`+repo+`', forge: gitea}
`)
	check := func() checkReport {
		t.Helper()
		out, stderr, code := runCLI(t, "config", "check", "--online", "-o", "json", file)
		var r checkReport
		if code != exitOK || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("exit %d:\n%s%s", code, out, stderr)
		}
		return r
	}
	if got := problemsAbout(check(), "branch_protection(main) = none"); len(got) != 1 || !strings.Contains(got[0], "needs no approval") {
		t.Errorf("an unprotected main: warnings %q, want one saying a merge needs no approval", got)
	}

	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	owner, name, _ := strings.Cut(repo, "/")
	if _, _, err := c.CreateBranchProtection(owner, name, sdk.CreateBranchProtectionOption{RuleName: "main", RequiredApprovals: 1,
		EnableStatusCheck: true, StatusCheckContexts: []string{"ci/*"}}); err != nil {
		t.Fatal(err)
	}
	r := check()
	if got := problemsAbout(r, "branch_protection(main) = none"); len(got) != 0 {
		t.Errorf("a protected main: still warned %q", got)
	}
	if got := problemsAbout(r, "dismiss_stale_approvals = false"); len(got) != 1 {
		t.Errorf("stale approvals kept: warnings %+v, want one on dismiss_stale_approvals", r.Problems)
	}
	if got := problemsAbout(r, "required_approvals"); len(got) != 0 {
		t.Errorf("one approval required: warned %q", got)
	}
}

// syncWriter is a writer the process's goroutines may share.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
