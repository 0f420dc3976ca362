package main

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
)

// Against the real Gitea, with an hour between syncs so that only
// webhooks can carry the changes: an issue opened in Gitea becomes
// allocatable, and closing a held issue, pushing to a held pull request
// and merging a held pull request each make the gate refuse. How long each
// took is logged (about a second on this machine; the acceptance is 2 s):
// the wait allows more, because Gitea queues its deliveries and a loaded
// CI machine delays them, and latency is measured, not asserted.
const webhookWait = 15 * time.Second

func TestTheInventoryFollowsGiteaWithinSeconds(t *testing.T) {
	agentTok, agentHash, _ := auth.NewToken()
	t.Setenv("WQ_TEST_HOOK_SECRET", hookSecret)
	w := startAPI(t, "", func(c *config.Config) {
		c.Forges[0].WebhookSecretEnv = "WQ_TEST_HOOK_SECRET"
		c.Auth.Tokens = append(c.Auth.Tokens, config.Token{Name: "agents", SHA256: agentHash, Permissions: []string{"agent"}})
		c.ControlPlane.SyncInterval = config.Duration(time.Hour)
		c.ControlPlane.Repos = []config.ControlPlaneRepo{{Forge: "gitea", Match: thisRepo}}
	})
	ctx := context.Background()
	if _, err := w.forge.EnsureWebhook(ctx, w.repo, w.base+"/webhooks/gitea", hookSecret); err != nil {
		t.Fatal(err)
	}
	agents, _ := client.New(w.base, agentTok)
	author, err := agents.RegisterSession(ctx, cptype.RoleAuthor, "author", nil)
	if err != nil {
		t.Fatal(err)
	}
	reviewer, err := agents.RegisterSession(ctx, cptype.RoleReviewer, "reviewer", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := testgitea.Get(t)
	gitea, _ := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	owner, name, _ := strings.Cut(w.repo, "/")

	// An issue opened in Gitea: allocatable within 2 s.
	issue, _, err := gitea.CreateIssue(owner, name, sdk.CreateIssueOption{Title: "Fix the flaky test"})
	if err != nil {
		t.Fatal(err)
	}
	var held *cptype.Allocation
	opened := time.Now()
	eventually.True(t, webhookWait, "the new issue allocatable", func() (bool, any) {
		a, err := agents.Allocate(ctx, author.ID, w.repo, true)
		if err != nil {
			t.Fatal(err)
		}
		held = a
		return a.Outcome == cptype.OutcomeAssigned && a.Work.Number == issue.Index, a.Outcome
	})
	t.Logf("an opened issue was allocatable after %v", time.Since(opened).Round(time.Millisecond))
	gateSays := func(session string, a *cptype.Allocation, action cptype.Action, want string) {
		t.Helper()
		since := time.Now()
		defer func() { t.Logf("the gate refused with %s after %v", want, time.Since(since).Round(time.Millisecond)) }()
		eventually.True(t, webhookWait, "the gate refusing with "+want, func() (bool, any) {
			d, err := agents.Gate(ctx, session, a.Assignment.ID, action, "")
			if err != nil {
				t.Fatal(err)
			}
			return !d.Allowed && d.Reason == want, d
		})
	}
	if d, err := agents.Gate(ctx, author.ID, held.Assignment.ID, cptype.ActComment, ""); err != nil || !d.Allowed {
		t.Fatalf("gate on the held issue: %+v, %v", d, err)
	}
	closed := sdk.StateClosed
	if _, _, err := gitea.EditIssue(owner, name, issue.Index, sdk.EditIssueOption{State: &closed}); err != nil {
		t.Fatal(err)
	}
	gateSays(author.ID, held, cptype.ActComment, cp.GateWorkTerminal)

	// Pull requests a person opens await review: a reviewer holds each.
	openPR := func(branch string) *cptype.Allocation {
		t.Helper()
		if _, err := w.forge.CommitFiles(ctx, wq.CommitRequest{Project: w.repo, Base: "main", Branch: branch, Message: "work",
			Changes: []wq.FileChange{{Action: "create", Path: branch + ".txt", Content: []byte("x\n")}}}); err != nil {
			t.Fatal(err)
		}
		pr, _, err := gitea.CreatePullRequest(owner, name, sdk.CreatePullRequestOption{Head: branch, Base: "main", Title: "Work on " + branch})
		if err != nil {
			t.Fatal(err)
		}
		var a *cptype.Allocation
		eventually.True(t, webhookWait, "the pull request allocatable", func() (bool, any) {
			if a, err = agents.Allocate(ctx, reviewer.ID, w.repo, true); err != nil {
				t.Fatal(err)
			}
			return a.Outcome == cptype.OutcomeAssigned && a.Work.Number == pr.Index, a.Outcome
		})
		if d, err := agents.Gate(ctx, reviewer.ID, a.Assignment.ID, cptype.ActReview, ""); err != nil || !d.Allowed || !d.HeadChecked {
			t.Fatalf("gate on the held pull request: %+v, %v", d, err)
		}
		return a
	}
	pushed := openPR("feature-push")
	// Someone else pushes a commit to the held pull request's branch.
	if _, _, err := gitea.CreateFile(owner, name, "other.txt", sdk.CreateFileOptions{FileOptions: sdk.FileOptions{BranchName: "feature-push",
		Message: "someone else's push"}, Content: base64.StdEncoding.EncodeToString([]byte("y\n"))}); err != nil {
		t.Fatal(err)
	}
	gateSays(reviewer.ID, pushed, cptype.ActReview, cp.GateHeadMoved)

	merged := openPR("feature-merge")
	eventually.True(t, 30*time.Second, "a person merges", func() (bool, any) {
		ok, _, err := gitea.MergePullRequest(owner, name, merged.Work.Number, sdk.MergePullRequestOption{Style: sdk.MergeStyleMerge})
		return err == nil && ok, err
	})
	gateSays(reviewer.ID, merged, cptype.ActReview, cp.GateWorkTerminal)
}
