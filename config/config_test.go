package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gopkg.in/yaml.v3"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
)

// known is what the program links, as its composition root registers it:
// the kinds of forge and item types a configuration may name.
var known = testapi.Known()

// unresolved compares sections as the file says them: what a section
// resolves from the rest of the configuration (config.Resolver) is left out.
var unresolved = cmpopts.IgnoreUnexported(mrtype.MR{})

func TestExampleConfigLoads(t *testing.T) {
	cfg, err := config.Load("../workqueue.example.yaml", known)
	if err != nil {
		t.Fatal(err)
	}
	want := config.DefaultFor(known)
	want.HandledTypes = []string{"mr", "example"}
	want.PublicURL = "http://127.0.0.1:8080"
	want.Forges = []config.Forge{{Name: "gitea", Kind: "gitea", URL: "http://127.0.0.1:3000",
		TokenEnv: "WORKQUEUE_GITEA_TOKEN", WebhookSecretEnv: "WORKQUEUE_GITEA_WEBHOOK_SECRET"}}
	want.Projects = []config.Project{{Match: "demo/**", Forge: "gitea", BlockedPaths: []string{"secrets/**"},
		MaxFileBytes: 1048576, MaxTotalBytes: 10485760, AutoMerge: true,
		ProtectedPaths: config.ProtectedPaths{Mode: config.ProtectedRefuse, Add: []string{}}}}
	want.Auth.Tokens = []config.Token{}
	// The example runs as the README's third step: it keeps the admin
	// token of the first, and its rules and introspection, whose hosts
	// are placeholders, are commented out (issue 55).
	want.Auth.AdminTokenFile = "workqueue-admin.token"
	if diff := cmp.Diff(want, cfg, unresolved); diff != "" {
		t.Errorf("example config differs from the defaults it claims to show (-want +got):\n%s", diff)
	}

	// Uncommented, the rules and introspection it shows still parse as
	// the rules they document.
	b, err := os.ReadFile("../workqueue.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var shown struct {
		Auth struct {
			Rules         []config.Rule `yaml:"rules"`
			Introspection struct {
				URL string `yaml:"url"`
			} `yaml:"introspection"`
		} `yaml:"auth"`
	}
	if err := yaml.Unmarshal([]byte(uncommentAuth(string(b))), &shown); err != nil {
		t.Fatalf("the example with its commented keys shown: %v", err)
	}
	wantRules := []config.Rule{
		{Name: "app-ci", Issuer: "https://gitlab.example.com", IdentityClaim: "project_path", Permissions: []string{"submit", "read"},
			Projects: []string{"group/app"}, Claims: map[string]any{"aud": "workqueue", "project_path": "group/app", "ref_protected": true}},
		{Name: "ci-pods", Issuer: "k8s", Permissions: []string{"submit", "read"},
			Claims: map[string]any{"aud": "workqueue", "/kubernetes.io/namespace": "ci"}},
		{Name: "admins", Groups: []string{"wq-admins"}, Permissions: []string{"admin"}},
	}
	if diff := cmp.Diff(wantRules, shown.Auth.Rules); diff != "" {
		t.Errorf("the example's commented rules (-want +got):\n%s", diff)
	}
	if got, want := shown.Auth.Introspection.URL, "https://api.cluster.example.com:6443/apis/user.openshift.io/v1/users/~"; got != want {
		t.Errorf("the example's commented introspection url = %q, want %q", got, want)
	}
}

// uncommentAuth shows the example's commented-out auth.rules and
// auth.introspection.url: it removes one "# " from each of their lines.
func uncommentAuth(example string) string {
	lines := strings.Split(example, "\n")
	rules := false
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		switch {
		case strings.HasPrefix(t, "# rules:"):
			rules = true
		case !strings.HasPrefix(t, "#"):
			rules = false
		}
		if rules || strings.HasPrefix(t, "# url:") {
			lines[i] = l[:len(l)-len(t)] + strings.TrimPrefix(t, "# ")
		}
	}
	return strings.Join(lines, "\n")
}

func TestEmptyDocumentGivesDefaults(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(""), known)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(config.DefaultFor(known), cfg, unresolved); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if p := cfg.Processing; p.Heartbeat != 0 || p.Workers != 10 || p.MaxAttempts != 5 || len(cfg.HandledTypes) != 0 {
		t.Errorf("processing %+v, handled_types %v", p, cfg.HandledTypes)
	}
}

func TestValuesOverrideDefaults(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`
database: postgres://wq@db:5432/wq
handled_types: [example]
processing: {workers: 3, lease: 30s, heartbeat: 5s}
`), known)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Processing
	if p.Workers != 3 || p.Lease != config.Duration(30*time.Second) || p.Heartbeat != config.Duration(5*time.Second) || cfg.HandledTypes[0] != "example" {
		t.Errorf("processing %+v, handled_types %v", p, cfg.HandledTypes)
	}
}

func TestRulesBecomeAuthRulesWithClaimsAsLowercaseStrings(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`auth:
  rules:
    - {issuer: 'https://gitlab.example.com', claims: {aud: [WQ, other], project_id: 42, ref_protected: true}, permissions: [submit]}
`), known)
	if err != nil {
		t.Fatal(err)
	}
	rules := cfg.AuthRules()
	if len(rules) != 1 || rules[0].Name != "rules[0]" || rules[0].Permissions[0] != auth.Submit {
		t.Fatalf("rules %+v", rules)
	}
	want := map[string][]string{"aud": {"wq", "other"}, "project_id": {"42"}, "ref_protected": {"true"}}
	if diff := cmp.Diff(want, rules[0].Claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
}

func TestBadConfigErrorsNameTheField(t *testing.T) {
	const forges = "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown forge", "control_plane: {repos: [{forge: nope, match: 'org/*'}]}", `control_plane.repos[0].forge: "nope" is not a configured forge`},
		{"empty match", forges + "control_plane: {repos: [{forge: g, match: 'org/*'}, {forge: g}]}", `control_plane.repos[1].match: want a glob`},
		{"bad glob", forges + "control_plane: {repos: [{forge: g, match: 'org/['}]}", `control_plane.repos[0].match`},
		{"sync too often", "control_plane: {sync_interval: 30s}", "control_plane.sync_interval: must be at least 1m0s, got 30s"},
		{"lease ttl", "control_plane: {lease_ttl: 0s}", "control_plane.lease_ttl: must be at least 1m0s"},
		{"session ttl", "control_plane: {session_ttl: 10s}", "control_plane.session_ttl: must be at least 1m0s"},
		{"a control_plane duration without a unit", "control_plane: {lease_ttl: 30}", "want a duration"},
		{"empty blocked label", "control_plane: {blocked_labels: [wip, ' ']}", "control_plane.blocked_labels[1]: want a label name"},
		{"unknown control_plane key", "control_plane: {repo: []}", "control_plane.repo: unknown key"},
		{"incident provider", forges + "incidents: {projects: [{provider: datadog, organization: o, project: p, forge: g, repo: o/r}]}", `incidents.projects[0].provider: want sentry or glitchtip, got "datadog"`},
		{"incident forge", "incidents: {projects: [{provider: sentry, organization: o, project: p, forge: nope, repo: o/r}]}", `incidents.projects[0].forge: "nope" is not a configured forge`},
		{"incident repo", forges + "incidents: {projects: [{provider: sentry, organization: o, project: p, forge: g}]}", `incidents.projects[0].repo: want a name`},
		{"incident label", forges + "incidents: {projects: [{provider: sentry, organization: o, project: p, forge: g, repo: o/r, labels: ['a,b']}]}", `incidents.projects[0].labels[0]`},
		{"incident project twice", forges + "incidents: {projects: [{provider: sentry, organization: o, project: p, forge: g, repo: o/r}, {provider: sentry, organization: o, project: p, forge: g, repo: o/s}]}", `incidents.projects[1]: sentry o/p is configured twice (also incidents.projects[0])`},
		{"incident secret twice", "incidents: {sentry: {secret_env: A, secret_file: /b}}", "incidents.sentry: set at most one of secret_env and secret_file"},
		{"incident inline secret", "incidents: {glitchtip: {secret: hunter2}}", "incidents.glitchtip.secret: unknown key"},
		{"unknown key", "lisen: x", `line 1: lisen: unknown key; did you mean "listen"?`},
		{"unknown nested key", "processing: {wrokers: 2}", `line 1: processing.wrokers: unknown key; did you mean "workers"?`},
		{"bare number as duration", "processing: {lease: 30}", `line 1: processing.lease: want a duration such as 30s, 5m or 1h30m, got "30"`},
		{"bad duration", "processing: {lease: soon}", `got "soon"`},
		{"workers", "processing: {workers: 0}", "processing.workers: must be between 1 and 1000"},
		{"heartbeat", "processing: {lease: 10s, heartbeat: 10s}", "processing.heartbeat: must be shorter than processing.lease"},
		{"backoff", "processing: {backoff_base: 1m, backoff_max: 1s}", "processing.backoff_max: must be at least processing.backoff_base"},
		{"delivery retention", "processing: {delivery_retention: 5m}", "processing.delivery_retention: must be at least 1h"},
		{"claim batch", "processing: {claim_batch: 0}", "processing.claim_batch: must be between 1 and 1000"},
		{"listen", "listen: 8080", "listen: want host:port"},
		{"database", "database: mysql://x", "database: want sqlite:///absolute/path.db"},
		{"database password not echoed", "database: 'mysql://u:hunter2@x/db'", "database: want"},
		{"repeated type", "handled_types: [example, example]", "handled_types[1]: empty or repeated"},
		{"log level", "log: {level: loud}", "log.level: want debug, info, warn or error"},
		{"two documents", "listen: a:1\n---\nlisten: b:2", "want one YAML document"},
		{"wrong type", "handled_types: example", `line 1: handled_types: want a list, such as [a, b], got "example"`},
		{"forge kind", "forges: [{name: g, kind: github, url: 'http://x', token_env: T}]", "forges[0].kind: want gitea or gitlab"},
		{"forge url", "forges: [{name: g, kind: gitea, url: 'x', token_env: T}]", "forges[0].url: want http(s)"},
		{"forge url credentials", "forges: [{name: g, kind: gitea, url: 'http://u:hunter2@x', token_env: T}]", "forges[0].url"},
		{"forge token", "forges: [{name: g, kind: gitea, url: 'http://x'}]", "forges[0]: set exactly one of token_env and token_file"},
		{"forge name twice", "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}, {name: g, kind: gitea, url: 'http://y', token_env: T}]", "forges[1].name: \"g\" is configured twice"},
		{"project forge", "projects: [{match: 'a/*', forge: nope}]", "projects[0].forge: \"nope\" is not a configured forge"},
		{"project glob", "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\nprojects: [{match: 'a/[', forge: g}]", "projects[0].match"},
		{"blocked glob", "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\nprojects: [{match: 'a/*', forge: g, blocked_paths: ['[']}]", "projects[0].blocked_paths[0]"},
		{"required check glob", "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\nprojects: [{match: 'a/*', forge: g, required_checks: ['ci/[']}]", "projects[0].required_checks[0]: want a check context or glob"},
		{"required check twice", "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\nprojects: [{match: 'a/*', forge: g, required_checks: [ci, ci]}]", "projects[0].required_checks[1]: \"ci\" is listed twice"},
		{"track label", "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\nprojects: [{match: 'a/*', forge: g, track_label: 'a,b'}]", "projects[0].track_label: want a label name"},
		{"train batch", "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\nprojects: [{match: 'a/*', forge: g, merge_train: {enabled: true, batch_size: 99}}]", "projects[0].merge_train.batch_size: want 1 to 32"},
		{"train without prefix", "forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\nprojects: [{match: 'a/*', forge: g, branch_prefix: '', merge_train: {enabled: true}}]", "projects[0].merge_train.enabled: a merge train needs a branch_prefix"},
		{"public url", "public_url: nope", "public_url: want http(s)"},
		{"mr interval", "mr: {reconcile_interval: 1ms}", "mr: reconcile_interval"},
		{"failure limit", "auth: {failure_limit: -1}", "auth.failure_limit: want between 0 (no limit) and 100000, got -1"},
		{"no submissions budget", "limits: {submissions_per_hour: 0}", "limits.submissions_per_hour: want 1 to 1000000, got 0"},
		{"no actions budget", "limits: {actions_per_hour: -5}", "limits.actions_per_hour: want 1 to 1000000, got -5"},
		{"failure window", "auth: {failure_window: 0s}", "auth.failure_window: want between 1s and 24h, got 0s"},
		{"cookie key twice", "dashboard: {cookie_key_env: K, cookie_key_file: /k}", "dashboard: set at most one of cookie_key_env and cookie_key_file"},
		{"inline cookie key", "dashboard: {cookie_key: hunter2}", "dashboard.cookie_key: unknown key"},
		{"token hash", "auth: {tokens: [{name: ci, sha256: abc, permissions: [read]}]}", "auth.tokens[0].sha256"},
		{"token permission", "auth: {tokens: [{name: ci, sha256: '" + strings.Repeat("a", 64) + "', permissions: [root]}]}", "auth.tokens[0].permissions[0]: want one of"},
		{"token without permissions", "auth: {tokens: [{name: ci, sha256: '" + strings.Repeat("a", 64) + "'}]}", "auth.tokens[0].permissions"},
		{"issuer rule without aud", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {issuer: 'https://gitlab.example.com', claims: {project_id: 42}, permissions: [submit]}]}`, `auth.rules[2].claims: issuer rule must bind aud`},
		{"groups and issuer", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {groups: [x], issuer: 'https://i', claims: {aud: a}, permissions: [read]}]}`, `auth.rules[2]: a rule has either groups, or issuer and claims`},
		{"neither", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {permissions: [read]}]}`, `auth.rules[2]: a rule needs groups, or issuer and claims`},
		{"issuer not a URL", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {issuer: gitlab, claims: {aud: a}, permissions: [read]}]}`, `auth.rules[2].issuer: want the issuer's URL`},
		{"bad pointer", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {issuer: k8s, claims: {aud: a, '/x~2': b}, permissions: [read]}]}`, `auth.rules[2].claims["/x~2"]: not a valid JSON pointer`},
		{"structured claim value", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {issuer: k8s, claims: {aud: a, ns: {x: 1}}, permissions: [read]}]}`, `auth.rules[2].claims["ns"]: want a string`},
		{"rule permission", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {groups: [x], permissions: [root]}]}`, `auth.rules[2].permissions[0]: want one of`},
		{"rule without permissions", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {groups: [x]}]}`, `auth.rules[2].permissions: at least one`},
		{"rule project glob", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {groups: [x], permissions: [read], projects: ['a/[']}]}`, `auth.rules[2].projects[0]: not a valid glob`},
		{"rule name twice", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {name: a, groups: [x], permissions: [read]}]}`, `auth.rules[2].name: "a" is used twice`},
		{"identity claim on a group rule", `auth: {introspection: {url: 'https://api:6443/apis/user.openshift.io/v1/users/~'}, rules: [
  {name: a, issuer: 'https://gitlab.example.com', claims: {aud: wq}, permissions: [read]},
  {name: b, groups: [admins], permissions: [admin]},
  {groups: [x], identity_claim: sub, permissions: [read]}]}`, `auth.rules[2].identity_claim`},
		{"group rules need introspection", "auth: {rules: [{groups: [x], permissions: [read]}]}", "auth.rules[0].groups: group rules need auth.introspection.url"},
		{"introspection url", "auth: {introspection: {url: nope}}", "auth.introspection.url: want an http(s) URL"},
		{"introspection ttl", "auth: {introspection: {ttl: 2h}}", "auth.introspection.ttl: want between 0 and 1h"},
		{"jwt leeway", "auth: {jwt: {leeway: 1h}}", "auth.jwt.leeway: want between 0 and 5m"},
		{"proxy header", "auth: {proxy_access_token_header: 'X Bad'}", "auth.proxy_access_token_header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse(strings.NewReader(tc.doc), known)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tc.doc, err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error echoes a password: %v", err)
			}
		})
	}
}

func TestProjectForPicksTheFirstMatchOnTheForge(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`
forges:
  - {name: a, kind: gitea, url: 'http://a', token_env: A}
  - {name: b, kind: gitlab, url: 'https://b', token_file: /dev/null}
projects:
  - {match: 'team/secret', forge: a, allow_binary: true}
  - {match: 'team/**', forge: a, max_file_bytes: 10}
  - {match: 'team/**', forge: b, max_file_bytes: 20}
`), known)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		forge, project string
		ok             bool
		maxFile        int64
		binary         bool
	}{
		{"a", "team/secret", true, 0, true},
		{"a", "team/sub/repo", true, 10, false},
		{"b", "team/repo", true, 20, false},
		{"a", "other/repo", false, 0, false},
		{"c", "team/repo", false, 0, false},
	} {
		p, ok := cfg.ProjectFor(tc.forge, tc.project)
		if ok != tc.ok || p.MaxFileBytes != tc.maxFile || p.AllowBinary != tc.binary {
			t.Errorf("ProjectFor(%s, %s) = %+v, %v", tc.forge, tc.project, p, ok)
		}
	}
}

func TestForgeSecretsComeFromTheEnvironmentOrAFile(t *testing.T) {
	t.Setenv("WQ_TEST_TOKEN", "from-env")
	file := t.TempDir() + "/token"
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := (config.Forge{Name: "g", TokenEnv: "WQ_TEST_TOKEN"}).Token(); err != nil || tok != "from-env" {
		t.Errorf("env token = %q, %v", tok, err)
	}
	if tok, err := (config.Forge{Name: "g", TokenFile: file}).Token(); err != nil || tok != "from-file" {
		t.Errorf("file token = %q, %v", tok, err)
	}
	if _, err := (config.Forge{Name: "g", TokenEnv: "WQ_TEST_UNSET"}).Token(); err == nil || !strings.Contains(err.Error(), "forges[g].token_env") {
		t.Errorf("unset env: %v", err)
	}
	if _, err := (config.Forge{Name: "g", TokenFile: file + ".missing"}).Token(); err == nil || !strings.Contains(err.Error(), "forges[g].token_file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestEveryProblemIsReported(t *testing.T) {
	_, err := config.Parse(strings.NewReader("processing: {workers: 0, max_attempts: 0}\nlog: {format: xml}"), known)
	for _, field := range []string{"processing.workers", "processing.max_attempts", "log.format"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("error %v does not name %s", err, field)
		}
	}
}

func TestRedactedHidesDatabasePassword(t *testing.T) {
	cfg := config.Default()
	cfg.Database = "postgres://wq:s3cret@db/wq"
	if out := cfg.Redacted(); strings.Contains(out, "s3cret") || !strings.Contains(out, "postgres://wq:xxxxx@db/wq") {
		t.Errorf("Redacted() =\n%s", out)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("listen: 127.0.0.1:1\nprocessing: {lease: 1m}")
	f.Add("handled_types: [a, b]\nlog: {level: debug}")
	f.Add("processing:\n  workers: 99999999999999999999")
	f.Fuzz(func(t *testing.T, doc string) {
		cfg, err := config.Parse(strings.NewReader(doc), known)
		if err != nil {
			return
		}
		if err := cfg.Validate(known); err != nil {
			t.Fatalf("Parse accepted a config that Validate refuses: %v", err)
		}
		_ = cfg.Redacted()
	})
}

// Per-project switches: delete_source_branch is on unless a project turns
// it off; git config files are refused unless a project allows them.
func TestProjectSwitchesHaveSafeDefaults(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`
forges:
  - {name: a, kind: gitea, url: 'http://a', token_env: A}
projects:
  - {match: 'keep/**', forge: a, delete_source_branch: false}
  - {match: 'tidy/**', forge: a, delete_source_branch: true}
  - {match: 'team/open', forge: a, allow_git_config_files: true}
  - {match: '**', forge: a}
`), known)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		project                 string
		deletes, allowsGitFiles bool
	}{
		{"keep/r", false, false},
		{"tidy/r", true, false},
		{"team/open", true, true},
		{"team/other", true, false},
	} {
		p, ok := cfg.ProjectFor("a", tc.project)
		if !ok || p.DeletesSourceBranch() != tc.deletes || p.AllowGitConfigFiles != tc.allowsGitFiles {
			t.Errorf("%s: deletes the source branch %v, allows git config files %v; want %v, %v",
				tc.project, p.DeletesSourceBranch(), p.AllowGitConfigFiles, tc.deletes, tc.allowsGitFiles)
		}
	}
}

func TestControlPlaneDefaults(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(""), known)
	if err != nil {
		t.Fatal(err)
	}
	// Agent-only callers need an assignment unless the file says
	// otherwise (issue 25); the labels are the ones the example shows as
	// defaults (issue 48).
	want := config.ControlPlane{SyncInterval: config.Duration(10 * time.Minute), LeaseTTL: config.Duration(30 * time.Minute),
		SessionTTL: config.Duration(15 * time.Minute), RequireAssignment: true, MaxCheckpointsPerSession: 50, HolderNotes: true,
		BlockedLabels: []string{"do-not-automate"}, PriorityLabels: []string{"priority/high", "priority/medium"}}
	if diff := cmp.Diff(want, cfg.ControlPlane); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAnExplicitFalseLetsAgentsSubmitWithoutAnAssignmentAndSaysSo(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		require bool
		note    string
	}{
		{"", true, "agent-only tokens submit changes only for an assignment (control_plane.require_assignment: true, the default), and with no control_plane.repos"},
		{"control_plane: {require_assignment: true}", true, "only for an assignment"},
		{"control_plane: {require_assignment: false}", false, "agent-only tokens may submit changes without an assignment (control_plane.require_assignment: false)"},
	} {
		cfg, err := config.Parse(strings.NewReader(tc.doc), known)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ControlPlane.RequireAssignment != tc.require {
			t.Errorf("%q: require_assignment %v, want %v", tc.doc, cfg.ControlPlane.RequireAssignment, tc.require)
		}
		if notes := strings.Join(cfg.Notes(), "\n"); !strings.Contains(notes, tc.note) {
			t.Errorf("%q: the notes do not say %q:\n%s", tc.doc, tc.note, notes)
		}
	}
}

// exampleSection is the example config's commented-out section named
// key, uncommented, after a forge named gitea.
func exampleSection(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile("../workqueue.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var section []string
	for i, l := range lines {
		if l == "# "+key+":" {
			for _, l := range lines[i:] {
				if !strings.HasPrefix(l, "# ") {
					break
				}
				section = append(section, strings.TrimPrefix(l, "# "))
			}
		}
	}
	if len(section) == 0 {
		t.Fatalf("no commented %s section in the example", key)
	}
	return "forges: [{name: gitea, kind: gitea, url: 'http://127.0.0.1:3000', token_env: T}]\n" + strings.Join(section, "\n")
}

func TestTheExamplesIncidentsSectionLoadsUncommented(t *testing.T) {
	doc := exampleSection(t, "incidents")
	cfg, err := config.Parse(strings.NewReader(doc), known)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	want := config.Incidents{Projects: []config.IncidentProject{{Provider: "sentry", Organization: "shopco", Project: "checkout",
		Forge: "gitea", Repo: "demo/shop", Labels: []string{"incident"}}},
		Sentry: config.IncidentSecret{SecretEnv: "SENTRY_CLIENT_SECRET"}, GlitchTip: config.IncidentSecret{SecretEnv: "GLITCHTIP_WEBHOOK_SECRET"}}
	if diff := cmp.Diff(want, cfg.Incidents); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestTheExamplesControlPlaneSectionLoadsUncommented(t *testing.T) {
	// The section is commented out in the example (the inventory is off
	// until repos are configured); uncommented, it must say what it shows.
	doc := exampleSection(t, "control_plane")
	cfg, err := config.Parse(strings.NewReader(doc), known)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	want := config.ControlPlane{Repos: []config.ControlPlaneRepo{{Forge: "gitea", Match: "demo/**"}},
		SyncInterval: config.Duration(10 * time.Minute), LeaseTTL: config.Duration(30 * time.Minute),
		SessionTTL: config.Duration(15 * time.Minute), BlockedLabels: []string{"do-not-automate"},
		PriorityLabels: []string{"priority/high", "priority/medium"}, RequireAssignment: true, MaxCheckpointsPerSession: 50,
		HolderNotes: true}
	if diff := cmp.Diff(want, cfg.ControlPlane); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestIncidentProjectsComeInlineAndFromAFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "incidents.yaml")
	os.WriteFile(file, []byte("- {provider: glitchtip, organization: o, project: web, forge: g, repo: o/web, labels: [bug]}\n"), 0o600)
	cfg, err := config.Parse(strings.NewReader("forges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\n"+
		"incidents: {projects: [{provider: sentry, organization: o, project: api, forge: g, repo: o/api}], projects_file: "+file+"}"), known)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.IncidentProjects()
	if err != nil {
		t.Fatal(err)
	}
	want := []config.IncidentProject{{Provider: "sentry", Organization: "o", Project: "api", Forge: "g", Repo: "o/api"},
		{Provider: "glitchtip", Organization: "o", Project: "web", Forge: "g", Repo: "o/web", Labels: []string{"bug"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	os.WriteFile(file, []byte("- {provider: sentry, organization: o, project: api, forge: nope, repo: o/x, colour: red}\n"), 0o600)
	if _, err := cfg.IncidentProjects(); err == nil || !strings.Contains(err.Error(), "line 1: [0].colour: unknown key") {
		t.Errorf("an unknown key in the file: %v", err)
	}
	os.WriteFile(file, []byte("- {provider: sentry, organization: o, project: api, forge: nope, repo: o/x}\n"), 0o600)
	if _, err := cfg.IncidentProjects(); err == nil || !strings.Contains(err.Error(), `incidents.projects[1].forge: "nope"`) {
		t.Errorf("a bad project in the file: %v", err)
	}
}

// A project that says nothing of sizes gets documented defaults, not
// unlimited (issue 28, defect 8); one that says is taken at its word.
func TestAProjectsSizeLimitsHaveDefaults(t *testing.T) {
	cfg := config.Default()
	cfg.Forges = []config.Forge{{Name: "a", Kind: "gitea", URL: "https://git.example.com", TokenEnv: "T"}}
	cfg.Projects = []config.Project{{Match: "team/**", Forge: "a"}, {Match: "big/**", Forge: "a", MaxFileBytes: 50 << 20, MaxTotalBytes: 60 << 20}}
	p, _ := cfg.MRProject("a", "team/app")
	if p.Policy.MaxFileBytes != config.DefaultMaxFileBytes || p.Policy.MaxTotalBytes != config.DefaultMaxTotalBytes ||
		config.DefaultMaxFileBytes != 10<<20 || config.DefaultMaxTotalBytes != 20<<20 {
		t.Errorf("unset limits: %d per file, %d in all; want 10 MiB and 20 MiB", p.Policy.MaxFileBytes, p.Policy.MaxTotalBytes)
	}
	if p, _ := cfg.MRProject("a", "big/app"); p.Policy.MaxFileBytes != 50<<20 || p.Policy.MaxTotalBytes != 60<<20 {
		t.Errorf("set limits: %d, %d", p.Policy.MaxFileBytes, p.Policy.MaxTotalBytes)
	}
}

func TestHooksCheckIntervalIsAtLeastTenSecondsAndRepairIsOnByDefault(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(""), known)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hooks.CheckInterval != config.Duration(10*time.Minute) || !cfg.Hooks.Repair {
		t.Errorf("defaults: %+v, want check_interval 10m and repair on", cfg.Hooks)
	}
	if _, err := config.Parse(strings.NewReader("hooks: {check_interval: 10s, repair: false}\n"), known); err != nil {
		t.Errorf("10s: %v, want accepted", err)
	}
	_, err = config.Parse(strings.NewReader("hooks: {check_interval: 9s}\n"), known)
	if err == nil || !strings.Contains(err.Error(), "hooks.check_interval") {
		t.Errorf("9s: %v, want refused naming hooks.check_interval", err)
	}
	_, err = config.Parse(strings.NewReader("hooks: {repiar: true}\n"), known)
	if err == nil || !strings.Contains(err.Error(), "repair") {
		t.Errorf("a misspelt key: %v, want refused suggesting repair", err)
	}
}
