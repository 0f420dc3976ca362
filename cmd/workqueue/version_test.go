package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVersionTextSaysTheRevisionAndWhetherItWasModified(t *testing.T) {
	t.Parallel()
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123abcd"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"a release build names its version and revision",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("false")},
			"workqueue v1.2.3\nrevision:  0123abcd\ncommitted: 2026-01-02T03:04:05Z\ngo:        go1.26.8\n"},
		{"a build from uncommitted changes says modified",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			"workqueue (devel)\nrevision:  0123abcd (modified)\ncommitted: 2026-01-02T03:04:05Z\ngo:        go1.26.8\n"},
		{"a build without VCS information says so",
			&debug.BuildInfo{GoVersion: "go1.26.8"},
			"workqueue (devel)\nrevision:  unknown (built without VCS information)\ngo:        go1.26.8\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, versionText(tc.info, true)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := versionText(nil, false); !strings.Contains(got, "no build information") {
		t.Errorf("without build information: %q", got)
	}
}

func TestVersionCommandAndFlagPrintThisBinarysBuildInfo(t *testing.T) {
	cmdOut, err := runCommand(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	flagOut, err := runCommand(t, "--version")
	if err != nil {
		t.Fatal(err)
	}
	if cmdOut != flagOut {
		t.Errorf("version and --version differ:\n%s\n%s", cmdOut, flagOut)
	}
	if !strings.HasPrefix(cmdOut, "workqueue ") || !strings.Contains(cmdOut, "go:        "+runtime.Version()+"\n") {
		t.Errorf("version output:\n%s", cmdOut)
	}
}

// checkConfig runs workqueue config check on a file holding doc.
func checkConfig(t *testing.T, doc string) (string, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "workqueue.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return runCommand(t, "config", "check", file)
}

func TestConfigCheckPrintsTheResolvedConfigWithoutSecrets(t *testing.T) {
	const token, webhookSecret, dbPassword = "glpat-very-secret-token-value", "hook-secret-value", "db-pass-value"
	t.Setenv("WQ_CHECK_TOKEN", token)
	t.Setenv("WQ_CHECK_HOOK", webhookSecret)
	secretFile := filepath.Join(t.TempDir(), "s3-secret")
	os.WriteFile(secretFile, []byte("s3-secret-value\n"), 0o600)
	t.Setenv("WQ_CHECK_S3_ACCESS", "s3-access-value")
	out, err := checkConfig(t, `
database: postgres://wq:`+dbPassword+`@db:5432/wq
forges: [{name: gl, kind: gitlab, url: 'https://gitlab.example.com', token_env: WQ_CHECK_TOKEN, webhook_secret_env: WQ_CHECK_HOOK}]
audit:
  sinks:
    - kind: log
    - kind: s3
      endpoint: 127.0.0.1:9000
      bucket: audit
      access_key_env: WQ_CHECK_S3_ACCESS
      secret_key_file: `+secretFile+`
`)
	if err != nil {
		t.Fatalf("a good config: %v\n%s", err, out)
	}
	for _, want := range []string{
		"batch_interval: 1m0s", // a default filled in
		"workers: 10",          // another
		"bucket: audit",        // a value from the file
		"forges[gl].token: env WQ_CHECK_TOKEN: set",
		"forges[gl].webhook_secret: env WQ_CHECK_HOOK: set",
		"audit.sinks[1].access_key: env WQ_CHECK_S3_ACCESS: set",
		"audit.sinks[1].secret_key: file " + secretFile + ": readable",
		": ok\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{token, webhookSecret, dbPassword, "s3-secret-value", "s3-access-value"} {
		if strings.Contains(out, secret) {
			t.Errorf("the output shows a secret value %q:\n%s", secret, out)
		}
	}
}

func TestConfigCheckReportsEveryProblemAndExitsNonZero(t *testing.T) {
	t.Setenv("WQ_CHECK_UNSET", "")
	out, err := checkConfig(t, `
listen: nowhere
processing: {workers: 0}
forges: [{name: gl, kind: gitlab, url: 'https://gitlab.example.com', token_env: WQ_CHECK_UNSET}]
audit:
  batch_interval: 0s
  sinks: [{kind: s3, bucket: x}]
`)
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("want exit status 1, got %v\n%s", err, out)
	}
	for _, want := range []string{
		"listen: want host:port",
		"processing.workers: must be between 1 and 1000",
		"audit.batch_interval: must be between 1s and 1h",
		"audit.sinks[0].endpoint: want host[:port]",
		"audit.sinks[0].bucket: want an S3 bucket name",
		"audit.sinks[0]: set exactly one of access_key_env and access_key_file",
		"forges[gl].token: env WQ_CHECK_UNSET: empty or unset",
		"problems:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, err = checkConfig(t, "nonsense_key: 1\n")
	if !errors.As(err, &exit) || !strings.Contains(out, "nonsense_key") {
		t.Errorf("an unknown key: %v\n%s", err, out)
	}
}
