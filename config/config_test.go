package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/workqueue-dev/workqueue/config"
)

func TestExampleConfigLoads(t *testing.T) {
	cfg, err := config.Load("../workqueue.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default()
	want.HandledTypes = []string{"example"}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("example config differs from the defaults it claims to show (-want +got):\n%s", diff)
	}
}

func TestEmptyDocumentGivesDefaults(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(config.Default(), cfg); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	e := cfg.Engine()
	if e.Heartbeat != e.Lease/3 || e.Workers != 10 || e.MaxAttempts != 5 || len(e.HandledTypes) != 0 {
		t.Errorf("engine config %+v", e)
	}
}

func TestValuesOverrideDefaults(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`
database: postgres://wq@db:5432/wq
handled_types: [example]
processing: {workers: 3, lease: 30s, heartbeat: 5s}
`))
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Engine()
	if e.Workers != 3 || e.Lease != 30*time.Second || e.Heartbeat != 5*time.Second || e.HandledTypes[0] != "example" {
		t.Errorf("engine config %+v", e)
	}
}

func TestBadConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown key", "lisen: x", "field lisen not found"},
		{"unknown nested key", "processing: {wrokers: 2}", "field wrokers not found"},
		{"bare number as duration", "processing: {lease: 30}", `want a duration such as 30s or 5m, got "30"`},
		{"bad duration", "processing: {lease: soon}", `got "soon"`},
		{"workers", "processing: {workers: 0}", "processing.workers: must be between 1 and 1000"},
		{"heartbeat", "processing: {lease: 10s, heartbeat: 10s}", "processing.heartbeat: must be shorter than processing.lease"},
		{"backoff", "processing: {backoff_base: 1m, backoff_max: 1s}", "processing.backoff_max: must be at least processing.backoff_base"},
		{"listen", "listen: 8080", "listen: want host:port"},
		{"database", "database: mysql://x", "database: want sqlite:///absolute/path.db"},
		{"database password not echoed", "database: 'mysql://u:hunter2@x/db'", "database: want"},
		{"repeated type", "handled_types: [example, example]", "handled_types[1]: empty or repeated"},
		{"log level", "log: {level: loud}", "log.level: want debug, info, warn or error"},
		{"two documents", "listen: a:1\n---\nlisten: b:2", "want one YAML document"},
		{"wrong type", "handled_types: example", "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse(strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tc.doc, err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error echoes a password: %v", err)
			}
		})
	}
}

func TestEveryProblemIsReported(t *testing.T) {
	_, err := config.Parse(strings.NewReader("processing: {workers: 0, max_attempts: 0}\nlog: {format: xml}"))
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
		cfg, err := config.Parse(strings.NewReader(doc))
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that Validate refuses: %v", err)
		}
		_ = cfg.Redacted()
	})
}
