package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/forgecheck"
	"github.com/workqueue-dev/workqueue/internal/eventually"
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

	// The merge method is reported with what it means, never warned of.
	edit("", map[string]any{"merge_method": "ff"}, "PUT")
	out, _, _ := runCLI(t, "config", "check", "--online", "-o", "json", file)
	var online struct {
		Online []string `json:"online"`
	}
	json.Unmarshal([]byte(out), &online)
	if !slices.ContainsFunc(online.Online, func(l string) bool {
		return strings.Contains(l, "merge_method = ff: the branch must sit on the target's head")
	}) {
		t.Errorf("a fast-forward project: --online says %q, want merge_method = ff with its meaning", online.Online)
	}
	if got := problemsAbout(check(), "merge_method"); len(got) != 0 {
		t.Errorf("merge_method warned: %q", got)
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

// hookWorld is serve with its hook check on one repository of the test
// Gitea, its time driven by a fake clock.
type hookWorld struct {
	m       *Main
	clock   *clockwork.FakeClock
	sdk     *sdk.Client
	repo    string
	hookURL string
}

func startHookCheck(t *testing.T, repair bool) *hookWorld {
	t.Helper()
	return startHookCheckAt(t, repair, "http://127.0.0.1:9/", "127.0.0.1:0")
}

// startHookCheckAt is startHookCheck with serve's public_url and listen
// address.
func startHookCheckAt(t *testing.T, repair bool, publicURL, listen string) *hookWorld {
	t.Helper()
	return startHookCheckOn(t, testgitea.Get(t).NewRepo(t), repair, publicURL, listen)
}

// startHookCheckOn is startHookCheckAt on a repository of the test's.
func startHookCheckOn(t *testing.T, repo string, repair bool, publicURL, listen string) *hookWorld {
	t.Helper()
	srv := testgitea.Get(t)
	t.Setenv("WQ_TEST_GITEA_TOKEN", srv.Token)
	t.Setenv("WQ_TEST_HOOK_SECRET", hookSecret)
	cfg := giteaConfig(t, srv.URL, srv.User)
	cfg.Projects[0].Match = repo
	cfg.Forges[0].WebhookSecretEnv = "WQ_TEST_HOOK_SECRET"
	cfg.PublicURL, cfg.Listen = publicURL, listen
	cfg.Hooks = config.Hooks{CheckInterval: config.Duration(10 * time.Second), Repair: repair}
	w := &hookWorld{clock: clockwork.NewFakeClock(), repo: repo, hookURL: strings.TrimRight(publicURL, "/") + "/webhooks/gitea"}
	w.m = NewMain(cfg, testkit.Quiet())
	w.m.Clock = w.clock
	if err := w.m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.m.Close() })
	var err error
	if w.sdk, err = sdk.NewClient(srv.URL, sdk.SetToken(srv.Token)); err != nil {
		t.Fatal(err)
	}
	return w
}

// checked waits for a check of the repository made at the fake clock's
// now, and returns what it found.
func (w *hookWorld) checked(t *testing.T) forgecheck.HookStatus {
	t.Helper()
	return eventually.Value(t, 20*time.Second, "a check of "+w.repo+" at "+w.clock.Now().String(), func() (forgecheck.HookStatus, bool) {
		for _, s := range w.m.checks.hooks.Status() {
			if s.Project == w.repo && s.CheckedAt.Equal(w.clock.Now()) {
				return s, true
			}
		}
		return forgecheck.HookStatus{}, false
	})
}

func (w *hookWorld) hooks(t *testing.T) []*sdk.Hook {
	t.Helper()
	owner, name, _ := strings.Cut(w.repo, "/")
	got, _, err := w.sdk.ListRepoHooks(owner, name, sdk.ListHooksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestServeBringsBackADisabledAndADeletedHookWithinOneInterval(t *testing.T) {
	w := startHookCheck(t, true)
	owner, name, _ := strings.Cut(w.repo, "/")

	// At start the project had no hook: serve made it.
	if s := w.checked(t); s.Outcome != forgecheck.HookRepaired || !slices.Equal(s.Problems, []wq.WebhookProblem{wq.WebhookMissing}) {
		t.Fatalf("the start's check: %+v, want the missing hook repaired", s)
	}
	got := w.hooks(t)
	if len(got) != 1 || !got[0].Active || got[0].Config["url"] != w.hookURL {
		t.Fatalf("after the start's check: %+v, want one active hook to %s", got, w.hookURL)
	}

	// A person disables it: one interval later it is active again.
	off := false
	if _, err := w.sdk.EditRepoHook(owner, name, got[0].ID, sdk.EditHookOption{Active: &off}); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(10 * time.Second)
	// (Gitea's edit without events also drops the hook's events.)
	if s := w.checked(t); s.Outcome != forgecheck.HookRepaired || !slices.Contains(s.Problems, wq.WebhookDisabled) {
		t.Errorf("the check after the hook was disabled: %+v, want it repaired", s)
	}
	if got := w.hooks(t); len(got) != 1 || !got[0].Active || slices.ContainsFunc(gitea.HookEvents, func(e string) bool { return !slices.Contains(got[0].Events, e) }) {
		t.Errorf("one interval after the hook was disabled: active %v, events %v, want it active with %v", got[0].Active, got[0].Events, gitea.HookEvents)
	}

	// A person deletes it: one interval later it is back.
	if _, err := w.sdk.DeleteRepoHook(owner, name, got[0].ID); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(10 * time.Second)
	if s := w.checked(t); s.Outcome != forgecheck.HookRepaired || !slices.Equal(s.Problems, []wq.WebhookProblem{wq.WebhookMissing}) {
		t.Errorf("the check after the hook was deleted: %+v, want it repaired", s)
	}
	if got := w.hooks(t); len(got) != 1 || !got[0].Active || got[0].Config["url"] != w.hookURL {
		t.Errorf("one interval after the hook was deleted: %+v, want it back", got)
	}

	// Right, it is left alone.
	w.clock.Advance(10 * time.Second)
	if s := w.checked(t); s.Outcome != forgecheck.HookOK {
		t.Errorf("the check of a right hook: %+v, want ok", s)
	}
}

func TestServeWithRepairOffReportsAWrongHookOnReadyzAndInItsMetrics(t *testing.T) {
	w := startHookCheck(t, false)
	if s := w.checked(t); s.Outcome != forgecheck.HookBroken {
		t.Fatalf("the start's check with repair off: %+v, want broken", s)
	}
	if n := len(w.hooks(t)); n != 0 {
		t.Errorf("repair off made %d hooks", n)
	}
	resp, err := http.Get("http://" + w.m.Addr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ready struct {
		Status   string       `json:"status"`
		Webhooks api.Webhooks `json:"webhooks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ready); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/readyz: %d %v", resp.StatusCode, err)
	}
	if b := ready.Webhooks.Broken; !ready.Webhooks.Checked || len(b) != 1 || b[0].Project != w.repo || !slices.Equal(b[0].Problems, []string{"missing"}) {
		t.Errorf("/readyz webhooks: %+v, want %s broken: missing", ready.Webhooks, w.repo)
	}
	rec := httptest.NewRecorder()
	w.m.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`workqueue_webhook_broken_projects{forge="gitea"} 1`, `workqueue_webhook_checks_total{forge="gitea",outcome="broken"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// testDelivery has Gitea send the hook's test delivery (a push event,
// signed with the hook's secret) and returns once it was sent.
func (w *hookWorld) testDelivery(t *testing.T, id int64) {
	t.Helper()
	srv := testgitea.Get(t)
	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/v1/repos/%s/hooks/%d/tests", srv.URL, w.repo, id), nil)
	req.Header.Set("Authorization", "token "+srv.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("test delivery of hook %d: %v %v", id, resp, err)
	}
	resp.Body.Close()
}

// deliveries counts the webhook deliveries to gitea of an outcome.
func (w *hookWorld) deliveries(outcome string) string {
	rec := httptest.NewRecorder()
	w.m.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, `workqueue_webhook_deliveries_total{forge="gitea",outcome="`+outcome+`"} `) {
			return strings.TrimSpace(l[strings.LastIndex(l, " "):])
		}
	}
	return "0"
}

func TestServeMakesAgainAHookWhoseDeliveriesItRefusedForTheirSecret(t *testing.T) {
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	srv := testgitea.Get(t)
	// The project's hook was made with the secret of before a rotation:
	// it looks right, and its deliveries are refused.
	repo := srv.NewRepo(t)
	owner, name, _ := strings.Cut(repo, "/")
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := c.CreateRepoHook(owner, name, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: true, Events: gitea.HookEvents,
		Config: map[string]string{"url": base + "/webhooks/gitea", "content_type": "json", "secret": "the-secret-before-rotation"}})
	if err != nil {
		t.Fatal(err)
	}
	w := startHookCheckOn(t, repo, true, base+"/", fmt.Sprintf("127.0.0.1:%d", port))
	if s := w.checked(t); s.Outcome != forgecheck.HookOK {
		t.Fatalf("the start's check of a hook that looks right: %+v, want ok", s)
	}
	w.testDelivery(t, old.ID)
	eventually.True(t, 20*time.Second, "the delivery signed with the old secret refused", func() (bool, any) {
		return w.deliveries("refused_signature") == "1", w.deliveries("refused_signature")
	})

	// The next check makes the hook again with the service's secret; its
	// delivery is taken.
	w.clock.Advance(10 * time.Second)
	if s := w.checked(t); s.Outcome != forgecheck.HookRepaired || !slices.Equal(s.Problems, []wq.WebhookProblem{wq.WebhookSecretRefused}) {
		t.Errorf("the check after a refused delivery: %+v, want the secret repaired", s)
	}
	got := w.hooks(t)
	if len(got) != 1 || got[0].ID == old.ID {
		t.Fatalf("after the repair: %+v, want one new hook", got)
	}
	w.testDelivery(t, got[0].ID)
	eventually.True(t, 20*time.Second, "the new hook's delivery taken", func() (bool, any) {
		return w.deliveries("ignored") != "0" || w.deliveries("stored") != "0", w.deliveries("refused_signature")
	})
	if got := w.deliveries("refused_signature"); got != "1" {
		t.Errorf("refused deliveries after the repair: %s, want still 1", got)
	}
	w.clock.Advance(10 * time.Second)
	if s := w.checked(t); s.Outcome != forgecheck.HookOK {
		t.Errorf("the check after the repair: %+v, want ok (no refusal since)", s)
	}
}

func TestServeReportsTheSettingsSafetyReliesOnForTheDashboard(t *testing.T) {
	srv := testgitea.Get(t)
	repo := srv.NewRepo(t)
	t.Setenv("WQ_TEST_GITEA_TOKEN", srv.Token)
	cfg := giteaConfig(t, srv.URL, srv.User)
	cfg.Projects[0].Match = repo
	var logs strings.Builder
	out := &syncWriter{w: &logs}
	m := NewMain(cfg, slog.New(slog.NewTextHandler(out, nil)))
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reports := eventually.Value(t, 20*time.Second, "the settings read at start", func() ([]forgecheck.Report, bool) {
		r := m.checks.Reports()
		return r, r != nil
	})
	if len(reports) != 1 || reports[0].VersionStatus != "supported" || len(reports[0].Projects) != 1 || reports[0].Projects[0].Project != repo {
		t.Fatalf("reports %+v, want the forge supported and the one project", reports)
	}
	s := reports[0].Projects[0].Settings
	if len(s) != 1 || s[0].Name != "branch_protection(main)" || s[0].Safe {
		t.Errorf("the unprotected repository's settings %+v, want branch_protection(main) unsafe", s)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if !strings.Contains(logs.String(), "forge check: forges[gitea] "+repo+": branch_protection(main) = none") {
		t.Errorf("the start's log does not warn of the unprotected branch:\n%s", logs.String())
	}
}
