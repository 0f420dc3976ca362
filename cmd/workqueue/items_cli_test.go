package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

// serveUnprocessed runs a serve on SQLite that takes example items but
// processes none, so that they stay as a test leaves them; it returns
// the server's URL, an admin token and the process.
func serveUnprocessed(t *testing.T) (string, string, *Main) {
	t.Helper()
	cfg := config.Default()
	cfg.Listen, cfg.Database = "127.0.0.1:0", testdb.URL(t, store.KindSQLite)
	example.In(&cfg).Enabled = true
	tok, hash, _ := auth.NewToken()
	cfg.Auth.Tokens = []config.Token{{Name: "ops", SHA256: hash, Permissions: []string{"admin"}}}
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return "http://" + m.Addr(), tok, m
}

// submitExample submits an example item of steps steps and returns its id.
func submitExample(t *testing.T, base, token string, body string) string {
	t.Helper()
	c, _ := client.New(base, token)
	got, err := c.Submit(context.Background(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return got.ID
}

// items show lists what is still to do only for an active item (issue
// 29, trap 7): once cancelled, its needs_* rows, still true, are not
// shown as work to do.
func TestItemsShowListsWhatIsToDoOnlyForAnActiveItem(t *testing.T) {
	base, token, _ := serveUnprocessed(t)
	env := []string{"WORKQUEUE_URL=" + base, "WORKQUEUE_TOKEN=" + token}
	id := submitExample(t, base, token, `{"item_type":"example","steps":2}`)
	stdout, stderr, code := runBinary(t, env, "", "items", "show", id)
	if code != 0 || !strings.Contains(stdout, "needs_step") {
		t.Fatalf("items show of an active item: exit %d, no needs_step:\n%s%s", code, stdout, stderr)
	}
	if _, stderr, code := runBinary(t, env, "", "items", "cancel", id); code != exitFailed && code != 0 {
		t.Fatalf("items cancel: exit %d\n%s", code, stderr)
	}
	stdout, _, _ = runBinary(t, env, "", "items", "show", id)
	if !strings.Contains(stdout, "cancelled") || strings.Contains(stdout, "needs_") {
		t.Errorf("items show of a cancelled item:\n%s\nwant its phase and no needs_* rows", stdout)
	}
	if stdout, _, _ = runBinary(t, env, "", "items", "show", id, "-o", "json"); !strings.Contains(stdout, `"needs_step"`) {
		t.Errorf("-o json is the API's item, rows and all:\n%s", stdout)
	}
}

// A submission with a misspelled member is refused saying which member
// was meant, as config check does for a key (issue 29, trap 10).
func TestASubmissionWithAMisspelledMemberSaysWhichWasMeant(t *testing.T) {
	base, token, _ := serveUnprocessed(t)
	env := []string{"WORKQUEUE_URL=" + base, "WORKQUEUE_TOKEN=" + token}
	dir := t.TempDir()
	for _, tc := range []struct{ body, want string }{
		{`{"item_type":"example","stesp":2}`, `unknown field "stesp"; did you mean "steps"?`},
		{`{"item_type":"mr","forge":"gitea","project":"team/app","source_branch":"workqueue/x","target_branch":"main","title":"T",` +
			`"file_actions":[{"action":"create","fiel_path":"a.txt","content":"a"}]}`,
			`unknown field "fiel_path" (in file_actions[0]); did you mean "file_path"?`},
	} {
		file := dir + "/submission.json"
		if err := os.WriteFile(file, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runBinary(t, env, "", "items", "submit", "-f", file)
		if code != exitFailed || !strings.Contains(stderr, tc.want) {
			t.Errorf("submit %s: exit %d, %q; want 1 and %q", tc.body, code, stderr, tc.want)
		}
	}
}

// A short item id, a unique prefix as git takes, works wherever an id
// does (issue 29, trap 11): items show and cancel through the built
// binary, and a prefix two items share is refused naming both.
func TestItemCommandsTakeAUniquePrefixOfAnItemID(t *testing.T) {
	base, token, _ := serveUnprocessed(t)
	env := []string{"WORKQUEUE_URL=" + base, "WORKQUEUE_TOKEN=" + token}
	first := submitExample(t, base, token, `{"item_type":"example","steps":1}`)
	second := submitExample(t, base, token, `{"item_type":"example","steps":1}`)
	n := 0
	for n < len(first) && first[n] == second[n] {
		n++
	}
	short := strings.TrimSuffix(second[:n+1], "-")
	if len(short) < 4 {
		short = second[:4]
	}
	stdout, stderr, code := runBinary(t, env, "", "items", "show", short)
	if code != 0 || !strings.Contains(stdout, second) {
		t.Errorf("items show %s: exit %d, want item %s:\n%s%s", short, code, second, stdout, stderr)
	}
	if _, stderr, code = runBinary(t, env, "", "items", "cancel", short); code != exitFailed && code != 0 {
		t.Errorf("items cancel %s: exit %d\n%s", short, code, stderr)
	}
	if stdout, _, _ = runBinary(t, env, "", "items", "show", second); !strings.Contains(stdout, "cancelled") {
		t.Errorf("the item cancelled by its short id is not cancelled:\n%s", stdout)
	}
	if n >= 4 {
		shared := first[:4]
		_, stderr, code = runBinary(t, env, "", "items", "show", shared)
		if code != exitFailed || !strings.Contains(stderr, "give more digits") || !strings.Contains(stderr, first) || !strings.Contains(stderr, second) {
			t.Errorf("items show %s (both items): exit %d, %q; want 1 naming both", shared, code, stderr)
		}
	}
}

// items cancel --all and retry --all act on every item the filters
// match (issue 29, trap 11): they count them, ask for a confirmation
// (an answer other than yes does nothing), act, and say how many.
func TestBulkCancelAndRetryCountConfirmAndActOnTheFilteredItems(t *testing.T) {
	base, token, _ := serveUnprocessed(t)
	env := []string{"WORKQUEUE_URL=" + base, "WORKQUEUE_TOKEN=" + token}
	var ids []string
	for range 3 {
		ids = append(ids, submitExample(t, base, token, `{"item_type":"example","steps":1}`))
	}
	phases := func() map[string]int {
		stdout, _, _ := runBinary(t, env, "", "items", "list", "-o", "json")
		n := map[string]int{}
		for _, id := range ids {
			if !strings.Contains(stdout, id) {
				t.Fatalf("item %s not listed", id)
			}
		}
		n["cancelled"] = strings.Count(stdout, `"phase": "cancelled"`) + strings.Count(stdout, `"phase":"cancelled"`)
		n["active"] = strings.Count(stdout, `"phase": "active"`) + strings.Count(stdout, `"phase":"active"`)
		return n
	}
	stdout, stderr, code := runBinary(t, env, "n\n", "items", "cancel", "--all", "--phase", "active")
	if code != exitFailed || !strings.Contains(stderr, "cancel 3 items? [y/N]") || !strings.Contains(stderr, "nothing done") {
		t.Errorf("cancel --all answered no: exit %d\n%s%s", code, stdout, stderr)
	}
	if n := phases(); n["active"] != 3 {
		t.Errorf("after a cancel not confirmed: %v, want 3 active", n)
	}
	stdout, stderr, code = runBinary(t, env, "y\n", "items", "cancel", "--all", "--phase", "active")
	if code != 0 || !strings.Contains(stdout, "3 items of 3") {
		t.Errorf("cancel --all answered yes: exit %d\n%s%s", code, stdout, stderr)
	}
	if n := phases(); n["cancelled"] != 3 {
		t.Errorf("after cancel --all: %v, want 3 cancelled", n)
	}
	stdout, stderr, code = runBinary(t, env, "", "items", "retry", "--all", "--yes", "-q")
	if code != 0 || len(strings.Fields(stdout)) != 3 {
		t.Errorf("retry --all --yes -q: exit %d, want the 3 ids\n%s%s", code, stdout, stderr)
	}
	if n := phases(); n["active"] != 3 {
		t.Errorf("after retry --all: %v, want 3 active", n)
	}
	if _, stderr, code = runBinary(t, env, "", "items", "retry", ids[0], "--all"); code != exitUsage {
		t.Errorf("an ID and --all: exit %d, want %d\n%s", code, exitUsage, stderr)
	}
}
