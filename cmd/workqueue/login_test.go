package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// workqueue login keeps a token the way gh does (issue 29, trap 11): read
// from standard input, checked with the server, saved in the user's
// configuration directory with mode 0600 and never printed; client
// commands then need neither --token nor $WORKQUEUE_TOKEN, and a token
// the server refuses is not saved.
func TestLoginSavesATokenThatClientCommandsThenUse(t *testing.T) {
	base, tokens, _ := serveMCP(t)
	home := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + home, "HOME=" + home, "WORKQUEUE_TOKEN=", "WORKQUEUE_URL="}
	file := filepath.Join(home, "workqueue", "hosts.yaml")

	stdout, stderr, code := runBinary(t, env, "not-a-token\n", "login", "--server", base)
	if code != exitTransport {
		t.Errorf("login with a refused token exits %d, want %d:\n%s%s", code, exitTransport, stdout, stderr)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("a refused token was saved")
	}

	stdout, stderr, code = runBinary(t, env, tokens["ops"]+"\n", "login", "--server", base+"/")
	if code != 0 || !strings.Contains(stdout, "logged in to "+base+" as token:ops") {
		t.Fatalf("login exits %d:\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, tokens["ops"]) {
		t.Errorf("login printed the token:\n%s%s", stdout, stderr)
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatalf("no logins file: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("logins file mode %v, want 0600", info.Mode().Perm())
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), tokens["ops"]) {
		t.Errorf("the logins file lacks the token:\n%s", b)
	}

	// Neither --server nor --token: the server logged in to last, and
	// its token.
	stdout, stderr, code = runBinary(t, env, "", "whoami", "-q")
	if code != 0 || strings.TrimSpace(stdout) != "token:ops" {
		t.Errorf("whoami after login exits %d, says %q:\n%s", code, stdout, stderr)
	}
	// The environment's token comes before the saved one.
	stdout, _, _ = runBinary(t, append(env, "WORKQUEUE_TOKEN="+tokens["reader"]), "", "whoami", "-q")
	if strings.TrimSpace(stdout) != "token:reader" {
		t.Errorf("whoami with WORKQUEUE_TOKEN set says %q, want reader", stdout)
	}

	if stdout, stderr, code = runBinary(t, env, "", "logout"); code != 0 {
		t.Fatalf("logout exits %d:\n%s%s", code, stdout, stderr)
	}
	if _, stderr, code = runBinary(t, append(env, "WORKQUEUE_URL="+base), "", "whoami"); code != exitTransport || !strings.Contains(stderr, "workqueue login") {
		t.Errorf("whoami after logout exits %d, want %d naming login:\n%s", code, exitTransport, stderr)
	}
}
