package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
)

// herderSection decodes a document holding a herder section as the
// configuration file does: strictly.
func herderSection(t *testing.T, doc string) (config.Herder, error) {
	t.Helper()
	var file struct {
		Herder config.Herder `yaml:"herder"`
	}
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	err := dec.Decode(&file)
	return file.Herder, err
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHerderSectionOffByDefault(t *testing.T) {
	t.Parallel()
	var h config.Herder
	if h.Enabled() {
		t.Error("the zero section is enabled")
	}
	if err := h.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	compiled, err := h.Compile()
	if err != nil || compiled != nil {
		t.Errorf("Compile = %v, %v; want nil, nil", compiled, err)
	}
}

func TestHerderSectionInline(t *testing.T) {
	t.Parallel()
	h, err := herderSection(t, `
herder:
  retry_limit: 2
  retry_delays: [2m]
  matchers:
    - name: system
      failure_reason: runner_system_failure
    - name: oom
      messages: ['ERROR: Job failed: exit code 137']
      retry_delays: [30s]
`)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	compiled, err := h.Compile()
	if err != nil || compiled == nil {
		t.Fatalf("Compile = %v, %v", compiled, err)
	}
	job := wq.CIJob{Name: "test", Status: wq.CIJobFailed, FailureReason: "runner_system_failure", Retries: 1}
	v, err := compiled.Match(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Matcher != "system" || !v.Retry || v.RetryLimit != 2 || v.Delay != 2*time.Minute {
		t.Errorf("verdict %+v; want system, retried after the section's 2m, limit 2", v)
	}
	job.FailureReason, job.Retries = "script_failure", 0
	v, err = compiled.Match(job, func() (string, error) { return "ERROR: Job failed: exit code 137\n", nil })
	if err != nil {
		t.Fatal(err)
	}
	if v.Matcher != "oom" || v.Delay != 30*time.Second {
		t.Errorf("verdict %+v; want oom after its own 30s", v)
	}
}

func TestHerderSectionFromFile(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "herder.yaml", `
retry_delays: [1m, 10m]
matchers:
  - name: infra
    matchers:
      - name: runner-system-failure
        failure_reason: runner_system_failure
`)
	h, err := herderSection(t, "herder: {matchers_file: "+file+", retry_limit: 1}\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	compiled, err := h.Compile()
	if err != nil {
		t.Fatal(err)
	}
	v, err := compiled.Match(wq.CIJob{Status: wq.CIJobFailed, FailureReason: "runner_system_failure"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Matcher != "infra/runner-system-failure" || v.RetryLimit != 1 || v.Delay != time.Minute {
		t.Errorf("verdict %+v; want the file's matcher with the section's limit 1 and the file's 1m", v)
	}
}

func TestHerderSectionErrorsNameTheField(t *testing.T) {
	t.Parallel()
	badFile := writeFile(t, "bad.yaml", "matchers:\n  - name: ok\n    failure_reason: x\n  - description: no name\n    messages: ['/(/']\n")
	unknownKey := writeFile(t, "typo.yaml", "matchers:\n  - name: a\n    failure_reasons: x\n")
	withLimit := writeFile(t, "limit.yaml", "retry_limit: 2\nmatchers: [{name: a, failure_reason: x}]\n")
	negativeInFile := writeFile(t, "negative.yaml", "retry_limit: -1\nmatchers: [{name: a, failure_reason: x}]\n")
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "both inline matchers and a file",
			doc:  "herder: {matchers_file: " + withLimit + ", matchers: [{name: a, failure_reason: x}]}",
			want: []string{"herder: set at most one of matchers and matchers_file"},
		},
		{
			name: "retry settings without matchers",
			doc:  "herder: {retry_limit: 3, retry_delays: [1m]}",
			want: []string{"herder.retry_limit: set, but no matchers", "herder.retry_delays: set, but no matchers"},
		},
		{
			name: "an inline regex that does not compile",
			doc:  "herder: {matchers: [{name: a, matchers: [{name: b, messages: [fine, '/a(/']}]}]}",
			want: []string{"herder.matchers[0].matchers[0].messages[1]: invalid regex /a(/"},
		},
		{
			name: "inline names missing or repeated",
			doc:  "herder: {matchers: [{name: a, failure_reason: x}, {name: a, failure_reason: y}, {failure_reason: z}]}",
			want: []string{`herder.matchers[1].name: "a" is used by an earlier sibling`, "herder.matchers[2].name: must not be empty"},
		},
		{
			name: "an inline negative retry limit",
			doc:  "herder: {retry_limit: -1, matchers: [{name: a, failure_reason: x, tail_lines: -1}]}",
			want: []string{"herder.retry_limit: must be between 0 and 100, got -1", "herder.matchers[0].tail_lines: must not be negative"},
		},
		{
			name: "problems in the file are named by the file and the field in it",
			doc:  "herder: {matchers_file: " + badFile + "}",
			want: []string{"herder.matchers_file: " + badFile + ": matchers[1].name: must not be empty", "herder.matchers_file: " + badFile + ": matchers[1].messages[0]: invalid regex /(/"},
		},
		{
			name: "an unknown key in the file",
			doc:  "herder: {matchers_file: " + unknownKey + "}",
			want: []string{"herder.matchers_file: " + unknownKey + ": matchers[0].failure_reasons: line 3: unknown key"},
		},
		{
			name: "a file's bad default is the file's",
			doc:  "herder: {matchers_file: " + negativeInFile + "}",
			want: []string{"herder.matchers_file: " + negativeInFile + ": retry_limit: must be between 0 and 100, got -1"},
		},
		{
			name: "a default set both in the section and the file",
			doc:  "herder: {matchers_file: " + withLimit + ", retry_limit: 1}",
			want: []string{"herder.retry_limit: also set in matchers_file " + withLimit},
		},
		{
			name: "a file that is not there",
			doc:  "herder: {matchers_file: " + missing + "}",
			want: []string{"herder.matchers_file: open " + missing},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := herderSection(t, tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			verr := h.Validate()
			if verr == nil {
				t.Fatal("Validate found no problem")
			}
			lines := strings.Split(verr.Error(), "\n")
			for _, w := range tt.want {
				found := false
				for _, l := range lines {
					found = found || strings.HasPrefix(l, w)
				}
				if !found {
					t.Errorf("no problem starts with %q; got:\n%s", w, verr)
				}
			}
			if tt.name != "retry settings without matchers" {
				if _, err := h.Compile(); err == nil || err.Error() != verr.Error() {
					t.Errorf("Compile's error %v differs from Validate's %v", err, verr)
				}
			}
		})
	}
}

func TestHerderSectionDecodesStrictly(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		"herder: {matchers: [{name: a, mesages: [x]}]}",
		"herder: {matcher_file: x.yaml}",
		"herder: {retry_delays: [5]}",
	} {
		if _, err := herderSection(t, doc); err == nil {
			t.Errorf("%s: decoded without error", doc)
		}
	}
}

func TestHerderSectionRelativeFileIsFromTheWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte("matchers: [{name: a, failure_reason: x}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	compiled, err := config.Herder{MatchersFile: "rules.yaml"}.Compile()
	if err != nil || compiled == nil {
		t.Fatalf("Compile = %v, %v", compiled, err)
	}
}
