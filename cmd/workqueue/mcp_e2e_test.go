package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/mcpserver/mcptest"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
)

// forgeWait bounds each wait on the real Gitea and the service's loops: a
// liveness bound, not a performance goal (a loaded two-core machine runs
// Gitea's mergeability checks and other packages' tests at once).
const forgeWait = 3 * time.Minute

// agentsWorld is a workqueue serve on the real Gitea, with a review
// account, whose agents reach it over MCP on one transport, holding agent
// tokens only; an operator syncs the inventory and a person uses Gitea.
type agentsWorld struct {
	*apiWorld
	t        *testing.T
	tokens   map[string]string // agent tokens by role, and "ops" (admin)
	connect  func(token string) *mcp.ClientSession
	person   *sdk.Client // the test Gitea's own account
	reviewer *sdk.Client // the review account, as a person
	owner    string
	name     string
	lap      time.Time // when the last step ended
}

// step logs how long the step just done took, for a run that is slow to
// say where.
func (a *agentsWorld) step(done string) {
	a.t.Helper()
	a.t.Logf("%-45s %v", done, time.Since(a.lap).Round(time.Millisecond))
	a.lap = time.Now()
}

// startAgents serves workqueue on a fresh repository of the real Gitea,
// configured with the review account's token (review_token_env), and
// connects agents over stdio (`workqueue mcp` in this process, on pipes)
// or else over Streamable HTTP at /mcp.
func startAgents(t *testing.T, overStdio bool) *agentsWorld {
	t.Helper()
	srv := testgitea.Get(t)
	// The review account's token must be in the environment when serve
	// starts, and the account needs the repository: so the repository is
	// made here, and the control plane is configured with it.
	repo := srv.NewRepo(t)
	reviewToken := srv.Reviewer(t, repo)
	t.Setenv("WQ_TEST_GITEA_REVIEW_TOKEN", reviewToken)
	tokens := map[string]string{}
	w := startAPI(t, "", func(c *config.Config) {
		c.Forges[0].ReviewTokenEnv = "WQ_TEST_GITEA_REVIEW_TOKEN"
		for name, perm := range map[string]string{"author": "agent", "reviewer": "agent", "merger": "agent", "ops": "admin"} {
			tok, hash, _ := auth.NewToken()
			tokens[name] = tok
			c.Auth.Tokens = append(c.Auth.Tokens, config.Token{Name: name + "-agent", SHA256: hash, Permissions: []string{perm}})
		}
		c.ControlPlane.SyncInterval = config.Duration(time.Hour) // the test syncs
		c.ControlPlane.Repos = []config.ControlPlaneRepo{{Forge: "gitea", Match: repo}}
		c.ControlPlane.RequireAssignment = true
		c.Projects[0].AutoMerge = false
		// No webhooks reach this service: the item learns of the merge by
		// looking.
		mrtype.In(c).ReconcileInterval = config.Duration(300 * time.Millisecond)
	})
	w.repo = repo
	a := &agentsWorld{apiWorld: w, t: t, tokens: tokens, lap: time.Now()}
	a.owner, a.name, _ = strings.Cut(repo, "/")
	var err error
	if a.person, err = sdk.NewClient(srv.URL, sdk.SetToken(srv.Token)); err != nil {
		t.Fatal(err)
	}
	if a.reviewer, err = sdk.NewClient(srv.URL, sdk.SetToken(reviewToken)); err != nil {
		t.Fatal(err)
	}
	a.connect = func(token string) *mcp.ClientSession { return mcptest.OverHTTP(t, w.base+"/mcp", token) }
	if overStdio {
		a.connect = func(token string) *mcp.ClientSession { return stdioSession(t, "--server", w.base, "--token", token) }
	}
	return a
}

// sync has the operator sync the inventory with Gitea.
func (a *agentsWorld) sync() {
	a.t.Helper()
	if status, out, _ := a.do("POST", "/api/v1/work/sync", a.tokens["ops"], nil); status != http.StatusOK {
		a.t.Fatalf("sync: %d %v", status, out)
	}
}

// syncMergeable waits until Gitea says pull request number is mergeable
// (it computes that after each push, asynchronously), then syncs: the
// allocator hands mergers only what the inventory holds as mergeable.
func (a *agentsWorld) syncMergeable(number int64) *wq.MergeRequest {
	a.t.Helper()
	pr := eventually.Value(a.t, forgeWait, "Gitea says the pull request is mergeable", func() (*wq.MergeRequest, bool) {
		pr, err := a.forge.GetMergeRequest(a.t.Context(), a.repo, number)
		return pr, err == nil && pr.Mergeable
	})
	a.sync()
	return pr
}

// pull reads a pull request from Gitea.
func (a *agentsWorld) pull(number int64) *sdk.PullRequest {
	a.t.Helper()
	pr, _, err := a.person.GetPullRequest(a.owner, a.name, number)
	if err != nil {
		a.t.Fatal(err)
	}
	return pr
}

// reviews lists a pull request's reviews in Gitea.
func (a *agentsWorld) reviews(number int64) []*sdk.PullReview {
	a.t.Helper()
	reviews, _, err := a.person.ListPullReviews(a.owner, a.name, number, sdk.ListPullReviewsOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	return reviews
}

// personPushes commits a file onto branch through Gitea, as a person
// would, and returns the branch's new head.
func (a *agentsWorld) personPushes(branch, path string) string {
	a.t.Helper()
	if _, _, err := a.person.CreateFile(a.owner, a.name, path, sdk.CreateFileOptions{FileOptions: sdk.FileOptions{
		BranchName: branch, Message: "a person's push"}, Content: base64.StdEncoding.EncodeToString([]byte("by hand\n"))}); err != nil {
		a.t.Fatal(err)
	}
	head, err := a.forge.BranchHead(a.t.Context(), a.repo, branch)
	if err != nil {
		a.t.Fatal(err)
	}
	return head
}

// toolArgs is a tool's arguments: base, with more added.
func toolArgs(base map[string]any, more ...any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(more); i += 2 {
		out[more[i].(string)] = more[i+1]
	}
	return out
}

// Three agents, each with an agent token and its own MCP connection, carry
// a Gitea issue to a merged pull request through the service only, on
// each transport: an author takes the issue and submits its change for
// the assignment (the pull request closes the issue); a reviewer, handed
// the pull request, approves it (its author may not); a merger, handed it
// on the terminal path, merges it at the pinned head, and Gitea closes the
// issue; the author's item completes as merged. Then a merge after a
// person pushed to a pull request's branch is refused head_moved, and
// nothing is merged.
func TestMCPAgentsCarryAnIssueToAMergedPullRequestOnGitea(t *testing.T) {
	for _, tc := range []struct {
		transport string
		overStdio bool
	}{{"Streamable HTTP", false}, {"stdio", true}} {
		t.Run("over "+tc.transport, func(t *testing.T) {
			began := time.Now()
			a := startAgents(t, tc.overStdio)
			a.lap = began
			a.step("started: a repository, the service")
			a.issueToMergedPullRequest()
			a.mergeAfterAPushIsRefused()
			t.Logf("over %s: %v", tc.transport, time.Since(began).Round(time.Millisecond))
		})
	}
}

// issueToMergedPullRequest is the loop of the three roles on one issue.
func (a *agentsWorld) issueToMergedPullRequest() {
	t := a.t
	issue, _, err := a.person.CreateIssue(a.owner, a.name, sdk.CreateIssueOption{Title: "Say hello", Body: "Add hello.txt."})
	if err != nil {
		t.Fatal(err)
	}
	a.sync()
	a.step("an issue, synced")

	// The author: the issue, the gate, the change for the assignment.
	author := a.connect(a.tokens["author"])
	as := mcptest.Call[cp.SessionView](t, author, "start_session", map[string]any{"role": "author", "name": "author"})
	mine := map[string]any{"session_id": as.ID}
	held := mcptest.Call[cp.Allocation](t, author, "allocate_work", toolArgs(mine, "repo", a.repo, "apply", true))
	if held.Outcome != cp.OutcomeAssigned || held.Work.Kind != cp.KindIssue || held.Work.Number != issue.Index || held.Assignment == nil {
		t.Fatalf("the author's allocation: %+v; want issue #%d assigned", held, issue.Index)
	}
	if d := mcptest.Call[cp.Decision](t, author, "check_gate", toolArgs(mine, "assignment_id", held.Assignment.ID, "action", "open_pr")); !d.Allowed {
		t.Fatalf("check_gate open_pr: %+v", d)
	}
	const branch = "workqueue/mcp-hello"
	submitted := mcptest.Call[api.Submitted](t, author, "submit_change", toolArgs(a.submission(branch), "assignment_id", held.Assignment.ID))
	if submitted.Result != "created" {
		t.Fatalf("submit_change: %+v", submitted)
	}
	var number int64
	eventually.True(t, forgeWait, "the item's pull request", func() (bool, any) {
		it := mcptest.Call[api.Item](t, author, "get_item", map[string]any{"id": submitted.ID})
		if it.Phase != wq.PhaseActive {
			t.Fatalf("the item ended before its pull request: %+v", it)
		}
		var detail struct {
			MRIID int64 `json:"mr_iid"`
		}
		json.Unmarshal(it.Detail, &detail)
		number = detail.MRIID
		return number != 0, it.Detail
	})
	a.step("the author's pull request opened")
	if body := a.pull(number).Body; !strings.Contains(body, "Closes #"+strconv.FormatInt(issue.Index, 10)) {
		t.Fatalf("the pull request's description does not close the issue:\n%s", body)
	}
	mcptest.Call[cp.Checkpoint](t, author, "write_checkpoint", toolArgs(mine, "forge", "gitea", "repo", a.repo, "work_kind", "issue",
		"work_number", issue.Index, "lease_id", held.Lease.ID, "assignment_id", held.Assignment.ID, "branch", branch,
		"workflow_stage", "in_review", "next_valid_action", "wait for the review"))
	head := a.syncMergeable(number).HeadSHA
	a.step("mergeable, synced")
	if work := mcptest.Call[struct{ Work []cp.Work }](t, author, "list_work", map[string]any{"repo": a.repo, "kind": "pr"}); len(work.Work) != 1 ||
		work.Work[0].Number != number || work.Work[0].AuthorSession != as.ID || !work.Work[0].Mergeable {
		t.Fatalf("the inventory's pull request: %+v; want #%d, mergeable, written by session %s", work.Work, number, as.ID)
	}

	// The reviewer is handed it; its author may not review it.
	reviewer := a.connect(a.tokens["reviewer"])
	rs := mcptest.Call[cp.SessionView](t, reviewer, "start_session", map[string]any{"role": "reviewer", "name": "reviewer"})
	toReview := mcptest.Call[cp.Allocation](t, reviewer, "allocate_work", map[string]any{"session_id": rs.ID, "apply": true})
	if toReview.Outcome != cp.OutcomeAssigned || toReview.Work.Number != number || toReview.Assignment.ExpectedHeadSHA != head {
		t.Fatalf("the reviewer's allocation: %+v; want #%d at %s", toReview, number, head)
	}
	if text := mcptest.Refused(t, author, "review_pull_request", toolArgs(mine, "assignment_id", toReview.Assignment.ID, "verdict", "approve")); !strings.Contains(text, "reason "+cp.ActionOwnPullRequest) {
		t.Errorf("a review by the pull request's author: %q, want reason own_pull_request", text)
	}
	if reviews := a.reviews(number); len(reviews) != 0 {
		t.Fatalf("reviews after the author's refused one: %d, want none", len(reviews))
	}
	approved := mcptest.Call[cp.ActionResult](t, reviewer, "review_pull_request", map[string]any{"session_id": rs.ID,
		"assignment_id": toReview.Assignment.ID, "verdict": "approve", "body": "Looks right."})
	if !approved.Released || approved.HeadSHA != head || approved.Work.ReviewState != cp.ReviewApproved {
		t.Fatalf("review_pull_request: %+v; want approved at %s, the lease released", approved, head)
	}
	reviews := a.reviews(number)
	if len(reviews) != 1 || reviews[0].State != sdk.ReviewStateApproved || reviews[0].CommitID != head || reviews[0].Reviewer.UserName != testgitea.ReviewerName {
		t.Fatalf("Gitea's reviews: %+v; want one approval at %s by %s", reviews, head, testgitea.ReviewerName)
	}
	a.step("reviewed")

	// The merger is handed it on the terminal path and merges it.
	merger := a.connect(a.tokens["merger"])
	ms := mcptest.Call[cp.SessionView](t, merger, "start_session", map[string]any{"role": "merger", "name": "merger"})
	toMerge := mcptest.Call[cp.Allocation](t, merger, "allocate_work", map[string]any{"session_id": ms.ID, "apply": true})
	if toMerge.Outcome != cp.OutcomeAssigned || toMerge.Work.Number != number || !slices.Contains(toMerge.Assignment.AllowedActions, cp.ActMerge) {
		t.Fatalf("the merger's allocation: %+v; want #%d with merge allowed", toMerge, number)
	}
	merged := mcptest.Call[cp.ActionResult](t, merger, "merge_pull_request", map[string]any{"session_id": ms.ID, "assignment_id": toMerge.Assignment.ID})
	if !merged.Released || merged.HeadSHA != head || merged.Work.State != cp.StateMerged {
		t.Fatalf("merge_pull_request: %+v; want merged at %s, the lease released", merged, head)
	}
	if pr := a.pull(number); !pr.HasMerged || pr.Head.Sha != head {
		t.Fatalf("in Gitea the pull request is not merged at %s: merged %t at %s", head, pr.HasMerged, pr.Head.Sha)
	}
	eventually.True(t, forgeWait, "Gitea closes the issue", func() (bool, any) {
		is, _, err := a.person.GetIssue(a.owner, a.name, issue.Index)
		return err == nil && is.State == sdk.StateClosed, is
	})
	a.step("merged, the issue closed")
	done := eventually.Value(t, forgeWait, "the author's item ends", func() (api.Item, bool) {
		it := mcptest.Call[api.Item](t, author, "get_item", map[string]any{"id": submitted.ID})
		return it, it.Phase != wq.PhaseActive
	})
	if done.Phase != wq.PhaseCompleted || done.Reason != "merged" {
		t.Errorf("the author's item: %s (%s), want completed (merged)", done.Phase, done.Reason)
	}
	a.step("the author's item completed")

	// The author lets its issue go, and the three stop.
	if l := mcptest.Call[cp.LeaseView](t, author, "release_lease", toolArgs(mine, "lease_id", held.Lease.ID)); l.State != cp.LeaseReleased {
		t.Errorf("the author's release: %+v", l)
	}
	for cs, id := range map[*mcp.ClientSession]string{author: as.ID, reviewer: rs.ID, merger: ms.ID} {
		if s := mcptest.Call[cp.SessionView](t, cs, "end_session", map[string]any{"session_id": id}); s.Status != cp.SessionEnded {
			t.Errorf("end_session: %+v", s)
		}
	}
}

// mergeAfterAPushIsRefused: a person's pull request, approved by a
// reviewer session and handed to a merger session; a person pushes to its
// branch after that allocation; the merge is refused head_moved, Gitea
// merges nothing, and the merger's lease holds until it lets go.
func (a *agentsWorld) mergeAfterAPushIsRefused() {
	t := a.t
	const branch = "by-hand"
	if _, _, err := a.person.CreateFile(a.owner, a.name, "hand.txt", sdk.CreateFileOptions{FileOptions: sdk.FileOptions{
		NewBranchName: branch, Message: "by hand"}, Content: base64.StdEncoding.EncodeToString([]byte("hand\n"))}); err != nil {
		t.Fatal(err)
	}
	pr, _, err := a.person.CreatePullRequest(a.owner, a.name, sdk.CreatePullRequestOption{Head: branch, Base: "main", Title: "By hand"})
	if err != nil {
		t.Fatal(err)
	}
	head := a.syncMergeable(pr.Index).HeadSHA
	a.step("a person's pull request, mergeable, synced")

	reviewer := a.connect(a.tokens["reviewer"])
	rs := mcptest.Call[cp.SessionView](t, reviewer, "start_session", map[string]any{"role": "reviewer"})
	toReview := mcptest.Call[cp.Allocation](t, reviewer, "allocate_work", map[string]any{"session_id": rs.ID, "apply": true})
	if toReview.Outcome != cp.OutcomeAssigned || toReview.Work.Number != pr.Index {
		t.Fatalf("the reviewer's allocation: %+v; want #%d", toReview, pr.Index)
	}
	mcptest.Call[cp.ActionResult](t, reviewer, "review_pull_request", map[string]any{"session_id": rs.ID,
		"assignment_id": toReview.Assignment.ID, "verdict": "approve", "body": "Fine."})

	merger := a.connect(a.tokens["merger"])
	ms := mcptest.Call[cp.SessionView](t, merger, "start_session", map[string]any{"role": "merger"})
	toMerge := mcptest.Call[cp.Allocation](t, merger, "allocate_work", map[string]any{"session_id": ms.ID, "apply": true})
	if toMerge.Outcome != cp.OutcomeAssigned || toMerge.Work.Number != pr.Index || toMerge.Assignment.ExpectedHeadSHA != head {
		t.Fatalf("the merger's allocation: %+v; want #%d at %s", toMerge, pr.Index, head)
	}
	mainBefore, err := a.forge.BranchHead(t.Context(), a.repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	a.step("approved, handed to a merger")
	moved := a.personPushes(branch, "after-the-allocation.txt")
	a.step("a person pushed")
	merge := map[string]any{"session_id": ms.ID, "assignment_id": toMerge.Assignment.ID}
	if text := mcptest.Refused(t, merger, "merge_pull_request", merge); !strings.Contains(text, "reason "+cp.GateHeadMoved) {
		t.Errorf("a merge after a push: %q, want reason head_moved", text)
	}
	if got := a.pull(pr.Index); got.HasMerged || got.State != sdk.StateOpen || got.Head.Sha != moved {
		t.Errorf("in Gitea after the refused merge: merged %t, state %s, head %s; want open and unmerged at the person's %s", got.HasMerged, got.State, got.Head.Sha, moved)
	}
	if mainAfter, err := a.forge.BranchHead(t.Context(), a.repo, "main"); err != nil || mainAfter != mainBefore {
		t.Errorf("main moved from %s to %s (%v): something was merged", mainBefore, mainAfter, err)
	}
	// The moved head ended the merger's right to merge: its lease is
	// released, and the approval, given at the old head, counts no more.
	l := mcptest.Call[cp.LeaseView](t, merger, "inspect_lease", map[string]any{"lease_id": toMerge.Lease.ID, "session_id": ms.ID})
	if l.State != cp.LeaseReleased || l.SafeNextAction != cp.NextAllocate {
		t.Errorf("the merger's lease after the refusal: %+v; want released, to allocate again", l)
	}
	if again := mcptest.Call[cp.Allocation](t, merger, "allocate_work", map[string]any{"session_id": ms.ID, "apply": true}); again.Outcome == cp.OutcomeAssigned {
		t.Errorf("after a push past its approval the pull request was handed to a merger again: %+v", again)
	}
	for cs, id := range map[*mcp.ClientSession]string{reviewer: rs.ID, merger: ms.ID} {
		if s := mcptest.Call[cp.SessionView](t, cs, "end_session", map[string]any{"session_id": id}); s.Status != cp.SessionEnded {
			t.Errorf("end_session: %+v", s)
		}
	}
	a.step("the merge refused head_moved")
}
