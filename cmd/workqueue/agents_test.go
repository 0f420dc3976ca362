package main

import (
	"context"
	"encoding/base64"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
)

// Against the real Gitea, through the service only: an author session
// holding an issue submits its change with an agent-only token and the
// pull request closes the issue and is the session's; a session holding
// a pull request whose branch someone else pushed to after the
// allocation is refused head_moved, and nothing is pushed.
func TestChangesForAssignmentsPassTheGate(t *testing.T) {
	agentTok, agentHash, _ := auth.NewToken()
	adminTok, adminHash, _ := auth.NewToken()
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "wq.db")
	w := startAPI(t, "", func(c *config.Config) {
		c.Database = dbURL
		c.Auth.Tokens = append(c.Auth.Tokens,
			config.Token{Name: "agents", SHA256: agentHash, Permissions: []string{"agent"}},
			config.Token{Name: "ops", SHA256: adminHash, Permissions: []string{"admin"}})
		c.ControlPlane.SyncInterval = config.Duration(time.Hour)
		c.ControlPlane.Repos = []config.ControlPlaneRepo{{Forge: "gitea", Match: thisRepo}}
		c.ControlPlane.RequireAssignment = true
		c.Projects[0].AutoMerge = false
	})
	ctx := context.Background()
	srv := testgitea.Get(t)
	gitea, _ := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	owner, name, _ := strings.Cut(w.repo, "/")
	agents, _ := client.New(w.base, agentTok)
	sync := func() {
		t.Helper()
		if status, out, _ := w.do("POST", "/api/v1/work/sync", adminTok, nil); status != http.StatusOK {
			t.Fatalf("sync: %d %v", status, out)
		}
	}

	// An issue, allocated to an author session.
	issue, _, err := gitea.CreateIssue(owner, name, sdk.CreateIssueOption{Title: "Say hello"})
	if err != nil {
		t.Fatal(err)
	}
	sync()
	author, err := agents.RegisterSession(ctx, cp.RoleAuthor, "author", nil)
	if err != nil {
		t.Fatal(err)
	}
	held, err := agents.Allocate(ctx, author.ID, w.repo, true)
	if err != nil || held.Outcome != cp.OutcomeAssigned || held.Work.Number != issue.Index {
		t.Fatalf("allocate the issue: %+v, %v", held, err)
	}

	// Without an assignment an agent-only caller may not submit
	// (require_assignment); with it, the pull request closes the issue.
	sub := w.submission("workqueue/hello-issue")
	if status, out, _ := w.do("POST", "/api/v1/items", agentTok, sub); status != http.StatusForbidden || out["reason"] != "assignment_required" {
		t.Errorf("an agent's submission without an assignment: %d %v", status, out)
	}
	sub["assignment_id"] = held.Assignment.ID
	status, out, _ := w.do("POST", "/api/v1/items", agentTok, sub)
	if status != http.StatusCreated {
		t.Fatalf("an agent's submission for its assignment: %d %v", status, out)
	}
	item, number := w.waitPR(out["id"].(string))
	if number == 0 {
		t.Fatalf("no pull request: %v", item)
	}
	pr, err := w.forge.GetMergeRequest(ctx, w.repo, number)
	if err != nil || !strings.Contains(pr.Description, "Closes #"+strconv.FormatInt(issue.Index, 10)) {
		t.Fatalf("the pull request's description does not close the issue: %v\n%s", err, pr.Description)
	}
	sync()
	var work struct {
		Work []cp.Work `json:"work"`
	}
	if err := agents.Call(ctx, "GET", "/api/v1/work", map[string][]string{"kind": {"pr"}}, nil, &work); err != nil {
		t.Fatal(err)
	}
	if len(work.Work) != 1 || work.Work[0].Number != number || work.Work[0].AuthorSession != author.ID {
		t.Fatalf("the inventory's pull request: %+v; want #%d authored by session %s", work.Work, number, author.ID)
	}

	// The author is handed its pull request back (changes requested), and
	// someone else pushes to its branch before the author's change.
	store := testdb.ControlPlaneURL(t, dbURL)
	prWork := work.Work[0]
	prWork.ReviewState, prWork.UpdatedAt = cp.ReviewChangesRequested, time.Now()
	if err := store.UpsertWork(ctx, []cp.Work{prWork}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var released map[string]any
	if err := agents.Call(ctx, "POST", "/api/v1/leases/"+held.Lease.ID+"/release", nil, map[string]any{"session_id": author.ID}, &released); err != nil {
		t.Fatal(err)
	}
	back, err := agents.Allocate(ctx, author.ID, w.repo, true)
	if err != nil || back.Outcome != cp.OutcomeAssigned || back.Work.Number != number {
		t.Fatalf("allocate the pull request back to its author: %+v, %v", back, err)
	}
	if _, _, err := gitea.CreateFile(owner, name, "someone.txt", sdk.CreateFileOptions{FileOptions: sdk.FileOptions{
		BranchName: "workqueue/hello-issue", Message: "someone else's push"}, Content: base64.StdEncoding.EncodeToString([]byte("x\n"))}); err != nil {
		t.Fatal(err)
	}
	foreign, err := w.forge.BranchHead(ctx, w.repo, "workqueue/hello-issue")
	if err != nil {
		t.Fatal(err)
	}
	sub["assignment_id"] = back.Assignment.ID
	sub["file_actions"] = []map[string]any{{"action": "create", "file_path": "hello.txt", "content": "hello, again\n"}}
	if status, out, _ := w.do("POST", "/api/v1/items", agentTok, sub); status != http.StatusConflict || out["reason"] != cp.GateHeadMoved {
		t.Errorf("a change onto a pull request whose head moved: %d %v, want 409 head_moved", status, out)
	}
	if head, err := w.forge.BranchHead(ctx, w.repo, "workqueue/hello-issue"); err != nil || head != foreign {
		t.Errorf("the branch moved from the foreign push %s to %s (%v): something was pushed", foreign, head, err)
	}
}
