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

func TestTheExamplesAuditSectionLoadsUncommented(t *testing.T) {
	doc := exampleSection(t, "audit")
	cfg, err := config.Parse(strings.NewReader(doc), known)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	want := config.Audit{
		Sinks: []config.AuditSink{{Kind: "log"}, {Kind: "dir", Path: "/var/lib/workqueue/audit"},
			{Kind: "s3", Endpoint: "s3.us-east-1.amazonaws.com", Bucket: "workqueue-audit", Prefix: "prod/audit", Region: "us-east-1",
				AccessKeyEnv: "WORKQUEUE_AUDIT_S3_ACCESS_KEY", SecretKeyEnv: "WORKQUEUE_AUDIT_S3_SECRET_KEY"}},
		BatchBytes: 4 << 20, BatchInterval: config.Duration(time.Minute), BufferEntries: 100000, BufferBytes: 64 << 20,
		HistoryRetention: config.Duration(720 * time.Hour),
	}
	if diff := cmp.Diff(want, cfg.Audit); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAuditDefaultsToTheLogAlone(t *testing.T) {
	a := config.Default().Audit
	if diff := cmp.Diff([]config.AuditSink{{Kind: "log"}}, a.Sinks); diff != "" {
		t.Errorf("default sinks (-want +got):\n%s", diff)
	}
	if a.BatchBytes <= 0 || a.BatchInterval <= 0 || a.BufferEntries <= 0 || a.BufferBytes < a.BatchBytes {
		t.Errorf("defaults %+v", a)
	}
}

func TestBadAuditConfigNamesEveryField(t *testing.T) {
	_, err := config.Parse(strings.NewReader(`
audit:
  sinks:
    - kind: log
      path: /tmp/x
    - kind: dir
    - kind: s3
      endpoint: https://s3.example.com/
      bucket: Bad_Bucket
      prefix: /audit/
      access_key_env: A
      access_key_file: /a
    - kind: dir
      path: ./b
    - kind: ftp
  instance: "a b"
  batch_bytes: 10
  batch_interval: 0s
  buffer_entries: 0
  buffer_bytes: 5
`), known)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"audit.sinks[0].path: not a setting of a log sink",
		"audit.sinks[1].path: want the archive's directory",
		"audit.sinks[2].endpoint: want host[:port]",
		"audit.sinks[2].bucket: want an S3 bucket name",
		"audit.sinks[2].prefix: want path segments",
		"audit.sinks[2]: set exactly one of access_key_env and access_key_file",
		"audit.sinks[2]: set exactly one of secret_key_env and secret_key_file",
		`audit.sinks[3].kind: "dir" is configured twice (also audit.sinks[1])`,
		`audit.sinks[4].kind: want log, dir or s3, got "ftp"`,
		"audit.instance: want up to 64",
		"audit.batch_bytes: must be between 1024",
		"audit.batch_interval: must be between 1s and 1h",
		"audit.buffer_entries: must be at least 1",
		"audit.buffer_bytes: must be at least audit.batch_bytes",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if _, err := config.Parse(strings.NewReader("audit: {sinks: []}"), known); err == nil || !strings.Contains(err.Error(), "audit.sinks: want at least one sink") {
		t.Errorf("no sinks: %v", err)
	}
}

func TestAuditS3CredentialsComeFromTheEnvironmentOrAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(file, []byte("from-file\n"), 0o600)
	t.Setenv("WQ_TEST_AUDIT_ACCESS", "from-env")
	s := config.AuditSink{Kind: "s3", AccessKeyEnv: "WQ_TEST_AUDIT_ACCESS", SecretKeyFile: file}
	access, secret, err := s.Credentials("audit.sinks[1]")
	if err != nil || access != "from-env" || secret != "from-file" {
		t.Errorf("got %q %q %v", access, secret, err)
	}
	s.AccessKeyEnv = "WQ_TEST_AUDIT_UNSET"
	if _, _, err := s.Credentials("audit.sinks[1]"); err == nil || !strings.Contains(err.Error(), "audit.sinks[1].access_key_env") {
		t.Errorf("an unset variable: %v", err)
	}
}
