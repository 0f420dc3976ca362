package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

// serve wires the budgets and freezes: an admin freezes an identity with
// the CLI, its submissions are refused until it is unfrozen, and its
// budget, from the configuration, bounds what it submits in the hour.
func TestAnAdminFreezesAndUnfreezesAnIdentityWithTheCLIAndServeKeepsItsBudget(t *testing.T) {
	cfg := config.Default()
	cfg.Listen, cfg.Database = "127.0.0.1:0", testdb.URL(t, store.KindSQLite)
	example.In(&cfg).Enabled = true
	cfg.Limits.SubmissionsPerHour = 3
	admin, adminHash, _ := auth.NewToken()
	bot, botHash, _ := auth.NewToken()
	cfg.Auth.Tokens = []config.Token{{Name: "ops", SHA256: adminHash, Permissions: []string{"admin"}},
		{Name: "bot", SHA256: botHash, Permissions: []string{"submit", "read"}}}
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	base := "http://" + m.Addr()
	env := []string{"WORKQUEUE_URL=" + base, "WORKQUEUE_TOKEN=" + admin}
	c, _ := client.New(base, bot)
	submit := func() error {
		_, err := c.Submit(t.Context(), []byte(`{"item_type":"example","steps":1}`))
		return err
	}

	if err := submit(); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runBinary(t, env, "", "identities", "freeze", "token:bot", "--reason", "a loop")
	if code != 0 || !strings.Contains(stdout, "token:bot is frozen by token:ops") {
		t.Fatalf("identities freeze: exit %d\n%s%s", code, stdout, stderr)
	}
	if err := submit(); wq.ErrorReason(err) != identity.ReasonFrozen {
		t.Errorf("a frozen identity's submission: %v, want refused %s", err, identity.ReasonFrozen)
	}
	if stdout, _, _ := runBinary(t, env, "", "identities", "frozen"); !strings.Contains(stdout, "token:bot") || !strings.Contains(stdout, "a loop") {
		t.Errorf("identities frozen:\n%s\nwant token:bot and its reason", stdout)
	}
	if stdout, stderr, code := runBinary(t, env, "", "identities", "unfreeze", "token:bot"); code != 0 || !strings.Contains(stdout, "token:bot is not frozen") {
		t.Fatalf("identities unfreeze: exit %d\n%s%s", code, stdout, stderr)
	}
	if err := submit(); err != nil {
		t.Fatalf("after the unfreeze: %v", err)
	}
	if err := submit(); err != nil {
		t.Fatalf("the budget's third submission: %v", err)
	}
	err := submit()
	var refused *client.Error
	if !errors.As(err, &refused) || refused.Status != 429 || refused.Problem.Reason != identity.ReasonSubmissionsBudget {
		t.Errorf("a fourth submission in the hour with limits.submissions_per_hour 3: %v, want 429 %s", err, identity.ReasonSubmissionsBudget)
	}
	if _, stderr, code := runBinary(t, []string{"WORKQUEUE_URL=" + base, "WORKQUEUE_TOKEN=" + bot}, "", "identities", "freeze", "token:ops"); code == 0 {
		t.Errorf("a token without admin froze an identity:\n%s", stderr)
	}
}
