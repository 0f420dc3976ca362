package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

func writeConfig(t *testing.T, doc string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "workqueue.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

type checkReport struct {
	OK       bool              `json:"ok"`
	Problems []config.Problem  `json:"problems"`
	Secrets  map[string]string `json:"secrets"`
}

func TestConfigCheckJSONListsEveryProblemWithItsLine(t *testing.T) {
	t.Setenv("WQ_CHECK_UNSET", "")
	file := writeConfig(t, `lisen: 127.0.0.1:8080
handled_types: [mrs]
forges: [{name: gl, kind: gitlab, url: 'https://gitlab.example.com', token_env: WQ_CHECK_UNSET}]
projects: [{match: 'a/*', forge: github}]
`)
	out, stderr, code := runCLI(t, "config", "check", "-o", "json", file)
	var r checkReport
	if code != exitFailed || json.Unmarshal([]byte(out), &r) != nil || r.OK {
		t.Fatalf("exit %d, want 1 and a report:\n%s%s", code, out, stderr)
	}
	var got []string
	for _, p := range r.Problems {
		got = append(got, strings.Join([]string{p.Field, string(rune('0' + p.Line))}, "@"))
	}
	// handled_types@2 is the warning that mr items would wait: mrs is no
	// type; forges[gl].url@3 the warning that its host is a placeholder.
	want := []string{"lisen@1", "handled_types[0]@2", "handled_types@2", "forges[gl].url@3", "forges[gl].token@3", "projects[0].forge@4"}
	if !slices.Equal(got, want) {
		t.Errorf("problems %v, want %v", got, want)
	}
	if r.Secrets["forges[gl].token"] == "" {
		t.Errorf("the report says nothing of the secret: %v", r.Secrets)
	}
	out, _, code = runCLI(t, "config", "check", "-o", "yaml", file)
	var y checkReport
	if code != exitFailed || yaml.Unmarshal([]byte(out), &y) != nil || len(y.Problems) != 6 {
		t.Errorf("-o yaml: exit %d\n%s", code, out)
	}
}

func TestConfigCheckTakesTheFileFromTheEnvironment(t *testing.T) {
	t.Setenv("WORKQUEUE_CONFIG", writeConfig(t, "listen: 127.0.0.1:9999\n"))
	out, stderr, code := runCLI(t, "config", "check")
	if code != exitOK || !strings.Contains(out, "listen: 127.0.0.1:9999") {
		t.Errorf("exit %d:\n%s%s", code, out, stderr)
	}
	t.Setenv("WORKQUEUE_CONFIG", "")
	if _, _, code := runCLI(t, "config", "check"); code != exitUsage {
		t.Errorf("no file at all: exit %d, want %d", code, exitUsage)
	}
}

func TestConfigProblemsStopServeBeforeItOpensTheDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "wq.db")
	file := writeConfig(t, "database: sqlite://"+db+"\nprocessing: {wrokers: 2}\nlog: {level: loud}\n")
	_, stderr, code := runCLI(t, "serve", "--config", file, "--listen", "127.0.0.1:0")
	if code != exitFailed {
		t.Fatalf("serve: exit %d, want 1\n%s", code, stderr)
	}
	for _, want := range []string{"2 problems, not starting", `line 2: processing.wrokers: unknown key; did you mean "workers"?`, "line 3: log.level: want debug"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("serve created the database before refusing: %v", err)
	}
}

func TestConfigItemTypesAreWhatServeRegisters(t *testing.T) {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Database = "sqlite://" + filepath.Join(t.TempDir(), "wq.db")
	var names []string
	for _, t := range assemble().known().ItemTypes {
		names = append(names, t.Name)
	}
	cfg.HandledTypes = slices.Clone(names)
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.Engine.Types(); !slices.Equal(got, names) {
		t.Errorf("serve registers %v; the configuration may name %v", got, names)
	}
}

func TestConfigCheckOnlineCallsEachForge(t *testing.T) {
	srv := testgitea.Get(t)
	repo := srv.NewRepo(t)
	t.Setenv("WQ_CHECK_GITEA_TOKEN", srv.Token)
	owner, _, _ := strings.Cut(repo, "/")
	file := writeConfig(t, `handled_types: [mr]
forges:
  - {name: gitea, kind: gitea, url: '`+srv.URL+`', token_env: WQ_CHECK_GITEA_TOKEN}
  - {name: down, kind: gitea, url: 'http://127.0.0.1:1', token_env: WQ_CHECK_GITEA_TOKEN}
projects:
  - {match: '`+owner+`/**', forge: gitea}
  - {match: 'nobody-has/this-repo', forge: gitea}
`)
	out, stderr, code := runCLI(t, "config", "check", "--online", "-o", "json", file)
	var r checkReport
	if code != exitFailed || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("exit %d:\n%s%s", code, out, stderr)
	}
	var fields []string
	for _, p := range r.Problems {
		if !p.Warning { // the settings' warnings: forgechecks_test.go
			fields = append(fields, p.Field)
		}
	}
	if want := []string{"projects[1].match", "forges[down]"}; !slices.Equal(fields, want) {
		t.Errorf("problems %+v, want %v", r.Problems, want)
	}
	if _, _, code := runCLI(t, "config", "check", file); code != exitOK {
		t.Errorf("offline, the same file: exit %d, want 0", code)
	}
}

func TestConfigCheckPassesOnTheExampleOnceItsSecretsAreSet(t *testing.T) {
	_, _, code := runCLI(t, "config", "check", "../../workqueue.example.yaml")
	if code != exitFailed {
		t.Errorf("the example without its secrets in the environment: exit %d, want 1", code)
	}
	t.Setenv("WORKQUEUE_GITEA_TOKEN", "a-token")
	t.Setenv("WORKQUEUE_GITEA_WEBHOOK_SECRET", "a-secret")
	out, stderr, code := runCLI(t, "config", "check", "../../workqueue.example.yaml")
	if code != exitOK || strings.Contains(out, "warning") || !strings.HasSuffix(out, ": ok\n") {
		t.Errorf("the example: exit %d\n%s%s", code, out, stderr)
	}
}

// config check's smaller traps (issue 29, trap 10), through the built
// binary: one problem is "1 problem"; a project's unset branch_prefix
// and delete_source_branch resolve to what serve uses, not null; and a
// passing --online says what it checked.
func TestConfigCheckSaysWhatItResolvedAndCheckedInPlainWords(t *testing.T) {
	srv := testgitea.Get(t)
	repo := srv.NewRepo(t)
	owner, _, _ := strings.Cut(repo, "/")
	file := writeConfig(t, `handled_types: [mr]
forges:
  - {name: gitea, kind: gitea, url: '`+srv.URL+`', token_env: WQ_CHECK_GITEA_TOKEN}
projects:
  - {match: '`+owner+`/**', forge: gitea}
`)
	stdout, _, code := runBinary(t, []string{"WQ_CHECK_GITEA_TOKEN="}, "", "config", "check", file)
	if code != exitFailed || !strings.Contains(stdout, ": 1 problem:\n") {
		t.Errorf("one unset secret: exit %d, want 1 and \"1 problem:\"\n%s", code, stdout)
	}
	for _, want := range []string{"branch_prefix: " + config.DefaultBranchPrefix + "\n", "delete_source_branch: true\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the resolved configuration lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, ": null\n") {
		t.Errorf("the resolved configuration shows null for a value it resolves:\n%s", stdout)
	}
	stdout, stderr, code := runBinary(t, []string{"WQ_CHECK_GITEA_TOKEN=" + srv.Token}, "", "config", "check", "--online", file)
	if code != 0 {
		t.Fatalf("--online: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"# online", "forges[gitea]: " + srv.URL + " answers and takes the token", `projects[0].match: "` + owner + `/**" matches`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("a passing --online does not say %q:\n%s", want, stdout)
		}
	}
}
