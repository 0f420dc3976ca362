package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/swarm"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
)

// The swarm demo's core (scripts/demo agents, issue 13), small, against
// the real Gitea: agent sessions with agent-only tokens work every issue
// to a merged pull request over /mcp (authors submit for their
// assignments, a reviewer approves through the review account, a merger
// merges), the inventory following Gitea by webhook, and the audit finds
// each issue closed by exactly one pull request, no work held twice at
// once, every forge write under a lease of its role, every merge at a
// head another identity approved, no identity judging its own pull
// request and no write on another's item.
func TestASwarmOfAgentSessionsMergesEveryIssueSafely(t *testing.T) {
	srv := testgitea.Get(t)
	// The review account's token is made once per test process; the
	// repository startAPI makes is let in below.
	t.Setenv("WQ_TEST_REVIEW_TOKEN", srv.Reviewer(t, srv.NewRepo(t)))
	t.Setenv("WQ_TEST_HOOK_SECRET", hookSecret)
	adminTok, adminHash, _ := auth.NewToken()
	var agentTokens []string
	var database string
	w := startAPI(t, "", func(c *config.Config) {
		c.Forges[0].WebhookSecretEnv = "WQ_TEST_HOOK_SECRET"
		c.Forges[0].ReviewTokenEnv = "WQ_TEST_REVIEW_TOKEN"
		c.Auth.Tokens = append(c.Auth.Tokens, config.Token{Name: "ops", SHA256: adminHash, Permissions: []string{"admin"}})
		for _, name := range []string{"agent-1", "agent-2", "agent-3", "agent-4"} {
			tok, hash, _ := auth.NewToken()
			agentTokens = append(agentTokens, tok)
			c.Auth.Tokens = append(c.Auth.Tokens, config.Token{Name: name, SHA256: hash, Permissions: []string{"agent"}})
		}
		c.ControlPlane.Repos = []config.ControlPlaneRepo{{Forge: "gitea", Match: thisRepo}}
		c.ControlPlane.SyncInterval = config.Duration(time.Hour) // webhooks carry every change
		c.ControlPlane.RequireAssignment = true
		database = c.Database
	})
	srv.Reviewer(t, w.repo)
	if _, err := w.forge.EnsureWebhook(context.Background(), w.repo, w.base+"/webhooks/gitea", hookSecret); err != nil {
		t.Fatal(err)
	}
	// The audit reads the control plane's event log from the database,
	// as the demo's swarm does.
	stores, err := openStores(t.Context(), database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stores.queue.Close() })

	// Three issues for two authors: each author allocates again. A merge
	// route stuck on Gitea's stale mergeability is synced after 15 s.
	var out bytes.Buffer
	report, err := swarm.Run(t.Context(), swarm.Config{Service: w.base, AgentTokens: agentTokens, AdminToken: adminTok,
		Forge: "gitea", Repo: w.repo, GiteaURL: srv.URL, GiteaToken: srv.Token, Events: stores.cp,
		Issues: 3, Sessions: 4, Timeout: 2 * time.Minute, Stall: 15 * time.Second, Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report.Summary(&out)
	t.Logf("the swarm:\n%s", out.String())
	if !report.OK() {
		t.Fatal("the swarm did not finish, or a safety check failed (see the log)")
	}
	if report.IssuesClosed != 3 || report.PRsOpened != 3 || report.PRsMerged != 3 {
		t.Errorf("issues closed %d, pull requests opened %d and merged %d; want 3 each", report.IssuesClosed, report.PRsOpened, report.PRsMerged)
	}
	// Not "submitted": an issue whose pull request merged may be handed
	// out again before the forge's close reaches the inventory, and its
	// author submits again (the gate or the engine stops it).
	for _, kind := range []string{"opened", "approved", "merged"} {
		if report.Events[kind] != 3 {
			t.Errorf("%d %s events, want 3: %v", report.Events[kind], kind, report.Events)
		}
	}
	if len(report.Checks) != 6 {
		t.Errorf("%d safety checks, want 6", len(report.Checks))
	}
	if !strings.Contains(out.String(), "reviewer-1  approved") {
		t.Errorf("no progress line of an approval:\n%s", out.String())
	}
}
