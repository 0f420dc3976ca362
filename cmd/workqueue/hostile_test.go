package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
)

// refusedWith fails t unless err is the API's refusal with reason.
func refusedWith(t *testing.T, what string, err error, reason string) {
	t.Helper()
	var e *wq.Error
	if !errors.As(err, &e) || e.Reason != reason {
		t.Errorf("%s: %v, want a refusal with reason %s", what, err, reason)
	}
}

// An agent is an attacker too (issue 25). On the real Gitea and both
// databases, over the REST API the MCP tools call: one identity's
// submission never rewrites another's item, nor does an issue
// assignment of its own let it; a pinned head is the forge's and a
// heartbeat naming another is refused; a review after a push is refused
// and ends the reviewer's lease; the sessions of one identity never
// review what it wrote; a live lease is neither adopted by a sibling
// session nor abandoned on asserted proof; another identity's lease is
// not found; an approval given before a push does not hand the pull
// request to a merger.
func TestAHostileAgentCannotTalkItsWayAroundTheGate(t *testing.T) {
	testdb.EachKindInTurn(t, func(t *testing.T, kind string) {
		srv := testgitea.Get(t)
		repo := srv.NewRepo(t)
		t.Setenv("WQ_TEST_GITEA_REVIEW_TOKEN", srv.Reviewer(t, repo))
		tokens := map[string]string{}
		w := startAPI(t, "", func(c *config.Config) {
			c.Database = testdb.URL(t, kind)
			c.Forges[0].ReviewTokenEnv = "WQ_TEST_GITEA_REVIEW_TOKEN"
			for _, name := range []string{"alice", "mallory", "meg", "ops"} {
				perm := "agent"
				if name == "ops" {
					perm = "admin"
				}
				tok, hash, _ := auth.NewToken()
				tokens[name] = tok
				c.Auth.Tokens = append(c.Auth.Tokens, config.Token{Name: name, SHA256: hash, Permissions: []string{perm}})
			}
			c.ControlPlane.SyncInterval = config.Duration(time.Hour) // the test syncs
			c.ControlPlane.Repos = []config.ControlPlaneRepo{{Forge: "gitea", Match: repo}}
			c.Projects[0].AutoMerge = false
		})
		w.repo = repo
		ctx := context.Background()
		as := func(name string) *client.Client { c, _ := client.New(w.base, tokens[name]); return c }
		alice, mallory, meg := as("alice"), as("mallory"), as("meg")
		gitea, _ := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
		owner, name, _ := strings.Cut(repo, "/")
		sync := func() {
			t.Helper()
			if status, out, _ := w.do("POST", "/api/v1/work/sync", tokens["ops"], nil); status != http.StatusOK {
				t.Fatalf("sync: %d %v", status, out)
			}
		}
		session := func(c *client.Client, role cptype.Role) string {
			t.Helper()
			s, err := c.RegisterSession(ctx, role, string(role), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s.ID
		}
		for _, title := range []string{"Alice's issue", "Mallory's issue"} {
			if _, _, err := gitea.CreateIssue(owner, name, sdk.CreateIssueOption{Title: title}); err != nil {
				t.Fatal(err)
			}
		}
		sync()
		aliceAuthor, malloryAuthor := session(alice, cptype.RoleAuthor), session(mallory, cptype.RoleAuthor)
		aliceIssue, err := alice.Allocate(ctx, aliceAuthor, repo, true)
		if err != nil || aliceIssue.Outcome != cptype.OutcomeAssigned {
			t.Fatalf("alice's allocation: %+v, %v", aliceIssue, err)
		}
		malloryIssue, err := mallory.Allocate(ctx, malloryAuthor, repo, true)
		if err != nil || malloryIssue.Outcome != cptype.OutcomeAssigned {
			t.Fatalf("mallory's allocation: %+v, %v", malloryIssue, err)
		}

		// Alice's change becomes a pull request.
		const branch = "workqueue/alice"
		sub := w.submission(branch)
		sub["assignment_id"] = aliceIssue.Assignment.ID
		status, out, _ := w.do("POST", "/api/v1/items", tokens["alice"], sub)
		if status != http.StatusCreated {
			t.Fatalf("alice's submission: %d %v", status, out)
		}
		itemID := out["id"].(string)
		_, number := w.waitPR(itemID)
		if number == 0 {
			t.Fatal("alice's change has no pull request")
		}

		// 1. Mallory cannot rewrite it, with or without an assignment of
		// her own.
		for _, assignment := range []string{malloryIssue.Assignment.ID, ""} {
			hostile := w.submission(branch, map[string]any{"action": "create", "file_path": "hello.txt", "content": "mallory was here\n"})
			hostile["title"] = "Mallory's now"
			if assignment != "" {
				hostile["assignment_id"] = assignment
			}
			status, out, _ := w.do("POST", "/api/v1/items", tokens["mallory"], hostile)
			if want := map[bool]int{true: http.StatusConflict, false: http.StatusForbidden}[assignment != ""]; status != want {
				t.Errorf("mallory's submission onto alice's branch (assignment %q): %d %v, want %d", assignment, status, out, want)
			}
		}
		if status, item, _ := w.do("GET", "/api/v1/items/"+itemID, tokens["ops"], nil); status != http.StatusOK ||
			item["caller_identity"] != "token:alice" || item["detail"].(map[string]any)["title"] != "Say hello" {
			t.Errorf("alice's item after mallory's tries: %d %v", status, item)
		}

		// 5. Alice's own reviewer and merger sessions never judge it.
		sync()
		aliceReviewer := session(alice, cptype.RoleReviewer)
		dry, err := alice.Allocate(ctx, aliceReviewer, repo, false)
		if err != nil || dry.Outcome == cptype.OutcomePreview {
			t.Fatalf("alice's reviewer session was offered %+v, %v", dry, err)
		}
		if !skippedAs(dry, number, cp.SkipOwnPR) {
			t.Errorf("alice's pull request is not skipped as own_pr for her reviewer session: %+v", dry.Candidates)
		}

		// Mallory's reviewer session is handed it.
		malloryReviewer := session(mallory, cptype.RoleReviewer)
		review, err := mallory.Allocate(ctx, malloryReviewer, repo, true)
		if err != nil || review.Outcome != cptype.OutcomeAssigned || review.Work.Number != number {
			t.Fatalf("mallory's review allocation: %+v, %v", review, err)
		}

		// 7. Alice cannot read mallory's lease; 6. nor adopt it, nor
		// abandon it on asserted proof, while mallory is live; nor can
		// another session of mallory's own.
		if _, err := alice.InspectLease(ctx, review.Lease.ID, ""); wq.ErrorCode(err) != wq.ENOTFOUND {
			t.Errorf("alice read mallory's lease: %v, want not found", err)
		}
		_, err = alice.AbandonLease(ctx, review.Lease.ID, api.LeaseRequest{SessionID: aliceReviewer, Proof: &api.AbandonProof{
			DeadProcess: true, MissingWorktree: true, NoOpenPR: true, NoLiveMutationRisk: true}})
		refusedWith(t, "alice abandons mallory's live lease with the full proof", err, cp.RefuseProof)
		_, err = alice.AdoptLease(ctx, review.Lease.ID, api.LeaseRequest{SessionID: aliceReviewer})
		refusedWith(t, "alice adopts mallory's live lease", err, cp.RefuseWaitForeignActive)
		_, err = mallory.AdoptLease(ctx, review.Lease.ID, api.LeaseRequest{SessionID: session(mallory, cptype.RoleReviewer)})
		refusedWith(t, "another of mallory's sessions adopts her live lease", err, cp.RefuseWaitForeignActive)

		// 2. Someone pushes to the pull request: the reviewer cannot
		// declare the new head, and its review is refused.
		pushed := personPushes(t, gitea, owner, name, branch, "someone.txt")
		_, err = mallory.HeartbeatLease(ctx, review.Lease.ID, api.LeaseRequest{SessionID: malloryReviewer, HeadSHA: pushed})
		refusedWith(t, "a heartbeat declaring the pushed head", err, cp.GateHeadMoved)
		_, err = mallory.HeartbeatLease(ctx, review.Lease.ID, api.LeaseRequest{SessionID: malloryReviewer, HeadSHA: "HEAD"})
		if wq.ErrorCode(err) != wq.EINVALID {
			t.Errorf("a heartbeat naming no commit: %v, want invalid", err)
		}
		_, err = mallory.Act(ctx, cptype.ActionRequest{SessionID: malloryReviewer, AssignmentID: review.Assignment.ID, Action: cptype.ActReview, Verdict: cptype.VerdictApprove})
		refusedWith(t, "an approval after the push", err, cp.GateHeadMoved)
		if reviews, _, _ := gitea.ListPullReviews(owner, name, number, sdk.ListPullReviewsOptions{}); len(reviews) != 0 {
			t.Errorf("Gitea holds %d reviews after the refused approval", len(reviews))
		}
		if l, err := mallory.InspectLease(ctx, review.Lease.ID, malloryReviewer); err != nil || l.State == cptype.LeaseActive {
			t.Errorf("the reviewer's lease after the head moved: %+v, %v; want ended", l, err)
		}

		// 3. Reviewed again at the new head, then pushed again: the
		// approval counts no more, and no merger is handed it.
		again, err := mallory.Allocate(ctx, malloryReviewer, repo, true)
		if err != nil || again.Outcome != cptype.OutcomeAssigned || again.Assignment.ExpectedHeadSHA != pushed {
			t.Fatalf("the review allocated again: %+v, %v; want it pinned at %s", again, err, pushed)
		}
		if _, err := mallory.Act(ctx, cptype.ActionRequest{SessionID: malloryReviewer, AssignmentID: again.Assignment.ID, Action: cptype.ActReview,
			Verdict: cptype.VerdictApprove}); err != nil {
			t.Fatal(err)
		}
		personPushes(t, gitea, owner, name, branch, "someone-else.txt")
		megMerger := session(meg, cptype.RoleMerger)
		if m, err := meg.Allocate(ctx, megMerger, repo, true); err != nil || m.Outcome == cptype.OutcomeAssigned {
			t.Errorf("a merger was handed the pull request past its approval: %+v, %v", m, err)
		}
		if pr, _, _ := gitea.GetPullRequest(owner, name, number); pr.HasMerged {
			t.Errorf("#%d was merged", number)
		}
	})
}

// skippedAs reports whether the allocation passed over pull request number
// for reason.
func skippedAs(a *cptype.Allocation, number int64, reason string) bool {
	for _, c := range a.Candidates {
		if c.Work.Kind == cptype.KindPR && c.Work.Number == number {
			return c.Reason == reason
		}
	}
	return false
}

// personPushes commits a file to branch as a person would, and returns
// the branch's new head.
func personPushes(t *testing.T, c *sdk.Client, owner, name, branch, file string) string {
	t.Helper()
	resp, _, err := c.CreateFile(owner, name, file, sdk.CreateFileOptions{FileOptions: sdk.FileOptions{
		BranchName: branch, Message: "a person's push"}, Content: "eA=="})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Commit.SHA
}
