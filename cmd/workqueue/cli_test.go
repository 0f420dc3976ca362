package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runBinary runs the built workqueue with args, the environment extended
// by env, and stdin as its input; it returns what it printed on each
// stream and its exit status.
func runBinary(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("workqueue %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// commandPaths lists every command of the CLI, each as its words after
// "workqueue".
func commandPaths() [][]string {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(newRootCommand(nil, nil), nil)
	return paths
}

// Help names where the token comes from and never shows its value
// (issue 29, trap 1): with WORKQUEUE_TOKEN set, no command's --help
// prints it, and every command taking --token says it defaults to
// $WORKQUEUE_TOKEN.
func TestHelpOfEveryCommandNamesTheTokenVariableButNeverItsValue(t *testing.T) {
	const secret = "wq_helpmustnotshowthis0123456789"
	env := []string{"WORKQUEUE_TOKEN=" + secret, "WORKQUEUE_URL=http://127.0.0.1:1"}
	paths := commandPaths()
	if len(paths) < 40 {
		t.Fatalf("only %d commands found", len(paths))
	}
	withToken := 0
	for _, path := range paths {
		stdout, stderr, code := runBinary(t, env, "", append(path, "--help")...)
		if code != 0 {
			t.Errorf("workqueue %s --help exits %d:\n%s", strings.Join(path, " "), code, stderr)
		}
		if strings.Contains(stdout+stderr, secret) || strings.Contains(stdout+stderr, "wq_help") {
			t.Errorf("workqueue %s --help prints the token:\n%s", strings.Join(path, " "), stdout)
		}
		if strings.Contains(stdout, "--token") {
			withToken++
			if !strings.Contains(stdout, "$WORKQUEUE_TOKEN") {
				t.Errorf("workqueue %s --help does not name $WORKQUEUE_TOKEN:\n%s", strings.Join(path, " "), stdout)
			}
		}
	}
	if withToken < 30 {
		t.Errorf("only %d commands take --token; the client commands should", withToken)
	}
}

// An unknown subcommand is a usage error (issue 29, trap 2): exit 2,
// "unknown command", and the command meant when one is close, for
// every command group and the root; a group alone still shows its help.
func TestAnUnknownSubcommandExitsTwoSayingWhichCommandWasMeant(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"items", "get", "abc"}, `unknown command "get" for "workqueue items"; did you mean "show"?`},
		{[]string{"items", "lst"}, `unknown command "lst" for "workqueue items"; did you mean "list"?`},
		{[]string{"items", "nosuch"}, `unknown command "nosuch" for "workqueue items"`},
		{[]string{"leases", "nosuch"}, `unknown command "nosuch" for "workqueue leases"`},
		{[]string{"config", "chek"}, `unknown command "chek" for "workqueue config"; did you mean "check"?`},
		{[]string{"sesions"}, `unknown command "sesions" for "workqueue"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := runBinary(t, nil, "", tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, tc.want)
			}
			if strings.Contains(stdout, "Available Commands") {
				t.Errorf("printed help on stdout as if it succeeded:\n%s", stdout)
			}
		})
	}
	for _, path := range commandPaths() {
		c, _, err := newRootCommand(nil, nil).Find(path)
		if err != nil || !c.HasSubCommands() || len(path) == 0 {
			continue
		}
		if _, stderr, code := runBinary(t, nil, "", append(path, "nosuchsubcommand")...); code != exitUsage || !strings.Contains(stderr, "unknown command") {
			t.Errorf("workqueue %s nosuchsubcommand: exit %d, %q", strings.Join(path, " "), code, stderr)
		}
		if stdout, _, code := runBinary(t, nil, "", path...); code != 0 || !strings.Contains(stdout, "Available Commands") {
			t.Errorf("workqueue %s alone: exit %d, no help:\n%s", strings.Join(path, " "), code, stdout)
		}
	}
}

// Exit statuses as the README gives them (issue 29, trap 9): a database
// that does not answer is 3, a database URL of no known kind on the
// command line is 2, and hooks ensure with no webhook secret anywhere
// ensured nothing, which is 1 and said on stderr, not a quiet "skipped".
func TestExitStatusesSayWhatWentWrong(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want int
		says string
	}{
		{"migrate against a PostgreSQL that does not answer", []string{"migrate", "--db", "postgres://wq@127.0.0.1:1/wq?connect_timeout=5"}, exitTransport, "unreachable"},
		{"migrate with a database URL of no known kind", []string{"migrate", "--db", "mysql://x"}, exitUsage, "database:"},
		{"serve with a bad --listen", []string{"serve", "--listen", "nonsense", "--db", "sqlite:" + dir + "/x.db"}, exitUsage, "listen:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runBinary(t, []string{"WORKQUEUE_CONFIG="}, "", tc.args...)
			if code != tc.want || !strings.Contains(stderr, tc.says) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, stderr, tc.want, tc.says)
			}
		})
	}
	t.Run("hooks ensure when no forge has a webhook secret", func(t *testing.T) {
		cfg := dir + "/hooks.yaml"
		if err := os.WriteFile(cfg, []byte(`public_url: http://127.0.0.1:8080
handled_types: [mr]
forges:
  - {name: gitea, kind: gitea, url: "http://127.0.0.1:1", token_env: HOOKS_TEST_TOKEN}
projects:
  - {match: "team/**", forge: gitea}
`), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"hooks", "ensure", "--config", cfg}, {"hooks", "ensure", "--strict", "--config", cfg}} {
			stdout, stderr, code := runBinary(t, []string{"HOOKS_TEST_TOKEN=t"}, "", args...)
			if code != exitFailed || !strings.Contains(stderr, "gitea has no webhook secret") || !strings.Contains(stderr, "no hook was ensured") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 naming the forge without a secret", args, code, stdout, stderr)
			}
		}
	})
}

// token create says that serve must restart to accept the new entry
// (issue 29, trap 10): adding a token without one silently did nothing.
func TestTokenCreateSaysServeMustRestartToAcceptIt(t *testing.T) {
	stdout, _, code := runBinary(t, nil, "", "token", "create", "ci-bot", "--permissions", "read")
	if code != 0 || !strings.Contains(stdout, "restart serve (every instance)") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
	if stdout, _, _ = runBinary(t, nil, "", "token", "create", "--help"); !strings.Contains(stdout, "reads auth.tokens when it starts") {
		t.Errorf("token create --help does not say when tokens are read:\n%s", stdout)
	}
}
