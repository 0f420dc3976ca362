package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/cmd/workqueue-swarm/swarm"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
)

// The swarm demo's core (scripts/demo agents, issues 13 and 25), small,
// against the real Gitea: three honest agent sessions with agent-only
// tokens work every issue to a merged pull request over /mcp (an author
// submits for its assignments, a reviewer approves through the review
// account, a merger merges), the inventory following Gitea by webhook,
// while a hostile session, with a token of its own and the author's
// token too, tries every way around the gate against their work. The
// service refuses every attempt, and the audit finds each issue closed
// by exactly one pull request, no work held twice at once, every forge
// write under a lease of its role, every merge at a head another
// identity approved, no identity judging its own pull request and no
// write on another's item.
func TestSwarmWithAHostileSessionMergesEveryIssueSafely(t *testing.T) {
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
		// The shortest lease, so that the hostile session's bait expires
		// within the run (the honest sessions heartbeat theirs);
		// require_assignment is left at its default (true).
		c.ControlPlane.LeaseTTL = config.Duration(time.Minute)
		database = c.Database
	})
	srv.Reviewer(t, w.repo)
	if _, err := w.forge.EnsureWebhook(context.Background(), w.repo, w.base+"/webhooks/gitea", hookSecret); err != nil {
		t.Fatal(err)
	}
	// The audit reads the control plane's event log from the database,
	// as the demo's swarm does.
	stores, err := assemble().openStores(t.Context(), database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stores.queue.Close() })

	// Three issues for one honest author and the hostile one: a review
	// lease the hostile session lets expire holds one pull request for
	// the lease TTL. A merge route stuck on Gitea's stale mergeability is
	// synced after 15 s.
	var out bytes.Buffer
	report, err := swarm.Run(t.Context(), swarm.Config{Service: w.base, AgentTokens: agentTokens, AdminToken: adminTok,
		Forge: "gitea", Repo: w.repo, GiteaURL: srv.URL, GiteaToken: srv.Token, Events: stores.cp,
		Issues: 3, Sessions: 4, Hostile: 1, Timeout: 4 * time.Minute, Stall: 15 * time.Second, Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report.Summary(&out)
	t.Logf("the swarm:\n%s", out.String())
	if !report.OK() {
		t.Fatal("the swarm did not finish, a hostile attempt got through or a safety check failed (see the log)")
	}
	if report.IssuesClosed != 3 || report.PRsOpened != 3 || report.PRsMerged != 3 {
		t.Errorf("issues closed %d, pull requests opened %d and merged %d; want 3 each", report.IssuesClosed, report.PRsOpened, report.PRsMerged)
	}
	// Not "submitted": an issue whose pull request merged may be handed
	// out again before the forge's close reaches the inventory, and its
	// author submits again (the gate or the engine stops it). Not
	// "approved" either: a pull request pushed to after its approval is
	// approved again.
	for _, kind := range []string{"opened", "merged"} {
		if report.Events[kind] != 3 {
			t.Errorf("%d %s events, want 3: %v", report.Events[kind], kind, report.Events)
		}
	}
	if len(report.Checks) != 6 {
		t.Errorf("%d safety checks, want 6", len(report.Checks))
	}
	// The classes the hostile session tries whatever the timing (the
	// stale approval needs its partner to beat the honest merger to the
	// pull request), and the rule each must meet.
	for class, reason := range map[string]string{
		swarm.ClassSubmitUnassigned:        "assignment_required",
		swarm.ClassSubmitForeignUnassigned: "assignment_required",
		swarm.ClassHeartbeatForeign:        "not_owner",
		swarm.ClassHeartbeatBadHead:        "invalid",
		swarm.ClassHeartbeatMovedHead:      "head_moved",
		swarm.ClassAbandonLive:             "insufficient_proof",
		swarm.ClassReadForeignLease:        "not_found",
		swarm.ClassAdoptLive:               "wait_foreign_active",
		swarm.ClassReclaimLive:             "wait_foreign_active",
		swarm.ClassJudgeOwnAllocate:        "own_pr",
		swarm.ClassJudgeOwnAction:          "own_pull_request",
		swarm.ClassSubmitForeignIssue:      "owner_conflict",
		swarm.ClassReclaimOtherRole:        "wrong_role",
		swarm.ClassReclaimOwnPR:            "own_pr",
	} {
		if report.Attempts[class] == 0 {
			t.Errorf("no %s attempt", class)
		}
		if report.HostileRefusals[reason] == 0 {
			t.Errorf("no hostile attempt was refused %s (the rule %s meets): %v", reason, class, report.HostileRefusals)
		}
	}
	for _, line := range []string{"reviewer-1  approved", "hostile-1   refused"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("no progress line %q:\n%s", line, out.String())
		}
	}
}
