package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/workqueue-dev/workqueue/config"
)

// checkDoc runs config.Check on a file holding doc.
func checkDoc(t *testing.T, doc string) (config.Config, config.Problems) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "workqueue.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return config.Check(file, known)
}

func problemLines(ps config.Problems) []string {
	var out []string
	for _, p := range ps {
		s := p.Error()
		if p.Warning {
			s = "warning: " + s
		}
		out = append(out, s)
	}
	return out
}

func TestConfigCheckReportsEveryProblemClassInOneRunWithLines(t *testing.T) {
	t.Setenv("WQ_TEST_UNSET_TOKEN", "")
	_, problems := checkDoc(t, `listen: 127.0.0.1:8080
lisen: 0.0.0.0:80
handled_types: [mr, merge_request]
processing:
  wrokers: 3
  lease: 30
  max_attempts: many
  backoff_base: soon
forges:
  - name: gitea
    kind: gitea
    url: http://127.0.0.1:3000
    token_env: WQ_TEST_UNSET_TOKEN
    tokn_file: /x
projects:
  - match: "demo/**"
    forge: gittea
  - match: "other/*"
    forge: gitea
    auto_merge: yes please
`)
	want := []string{
		`line 2: lisen: unknown key; did you mean "listen"?`,
		`line 3: handled_types[1]: "merge_request" is not an item type this instance can process; want one of example, mr`,
		`line 5: processing.wrokers: unknown key; did you mean "workers"?`,
		`line 6: processing.lease: want a duration such as 30s, 5m or 1h30m, got "30"`,
		`line 7: processing.max_attempts: want a whole number, got "many"`,
		`line 8: processing.backoff_base: want a duration such as 30s, 5m or 1h30m, got "soon"`,
		`line 13: forges[gitea].token: env WQ_TEST_UNSET_TOKEN: empty or unset`,
		`line 14: forges[0].tokn_file: unknown key; did you mean "token_file"?`,
		`line 17: projects[0].forge: "gittea" is not a configured forge`,
		`line 20: projects[1].auto_merge: want true or false, got "yes please"`,
	}
	if diff := cmp.Diff(want, problemLines(problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestConfigProblemsNeverNameGoTypes(t *testing.T) {
	for _, doc := range []string{
		"processing: {workers: ten}",
		"processing: [1, 2]",
		"handled_types: {a: b}",
		"forges: {name: x}",
		"projects: [{match: 'a/*', forge: g, max_file_bytes: lots}]",
		"auth: {tokens: [{name: ci, permissions: read}]}",
		"auth: {rules: [{claims: [a]}]}",
		"mr: {reconcile_interval: 5}",
		"metrics: {enabled: 1}",
		"listen: [a, b]",
	} {
		_, err := config.Parse(strings.NewReader(doc), known)
		if err == nil {
			t.Errorf("Parse(%q) accepted it", doc)
			continue
		}
		for _, goWords := range []string{"unmarshal", "!!", "config.", "[]string", "int64", "struct", "time.Duration"} {
			if strings.Contains(err.Error(), goWords) {
				t.Errorf("Parse(%q) = %q, which names Go's %q", doc, err, goWords)
			}
		}
		if !strings.Contains(err.Error(), "line 1: ") {
			t.Errorf("Parse(%q) = %q, without its line", doc, err)
		}
	}
}

func TestConfigSyntaxErrorHasItsLine(t *testing.T) {
	_, problems := checkDoc(t, "listen: a:1\nprocessing:\n  workers: 2\n workers: 3\n")
	if len(problems) != 1 || problems[0].Line == 0 || strings.Contains(problems[0].Message, "yaml:") {
		t.Errorf("problems = %v, want one with its line and without the library's prefix", problemLines(problems))
	}
}

func TestConfigWarnsOfTypesNoInstanceHere_Processes(t *testing.T) {
	_, problems := checkDoc(t, `handled_types: []
forges: [{name: g, kind: gitea, url: 'http://x', token_file: /dev/null}]
projects: [{match: 'a/*', forge: g}]
`)
	var warned bool
	for _, p := range problems {
		if p.Warning && p.Field == "handled_types" && p.Line == 1 && strings.Contains(p.Message, "mr items wait") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning that mr items would wait: %v", problemLines(problems))
	}
	if _, err := config.Parse(strings.NewReader("handled_types: []\nforges: [{name: g, kind: gitea, url: 'http://x', token_env: T}]\nprojects: [{match: 'a/*', forge: g}]"), known); err != nil {
		t.Errorf("a warning failed Parse: %v", err)
	}
}

func TestConfigValidationProblemsCarryTheLineOfTheirField(t *testing.T) {
	_, problems := checkDoc(t, "listen: 127.0.0.1:8080\nlog:\n  level: loud\n")
	if len(problems) != 1 || problems[0].Line != 3 || problems[0].Field != "log.level" {
		t.Errorf("problems = %v, want log.level on line 3", problemLines(problems))
	}
}

func TestConfigAliasBombDoesNotRunAway(t *testing.T) {
	// A thousand projects, each a thousand blocked paths, in a few
	// kilobytes: a walk that followed every alias would visit a million
	// nodes.
	doc := "paths: &paths [" + strings.Repeat("x, ", 999) + "x]\n" +
		"p: &p {match: 'a/*', forge: g, blocked_paths: *paths}\n" +
		"projects: [" + strings.Repeat("*p, ", 999) + "*p]\n"
	start := time.Now()
	_, err := config.Parse(strings.NewReader(doc), known)
	if err == nil || !strings.Contains(err.Error(), "too large or repeats aliases") {
		t.Errorf("an alias bomb: %.300v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("an alias bomb took %s", d)
	}
}

func TestConfigHerderDurationsAreDurations(t *testing.T) {
	if _, err := config.Parse(strings.NewReader("herder: {retry_delays: [90s, 5m], matchers: [{name: a, job_name: x}]}"), known); err != nil {
		t.Errorf("herder durations refused: %v", err)
	}
	_, err := config.Parse(strings.NewReader("herder: {retry_delays: [90], matchers: [{name: a, job_name: x}]}"), known)
	if err == nil || !strings.Contains(err.Error(), `line 1: herder.retry_delays[0]: want a duration such as 30s, 5m or 1h30m, got "90"`) {
		t.Errorf("a herder duration without a unit: %v", err)
	}
}
