package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

// serveAgents runs a workqueue serve on the database at dbURL with one
// agent token, and returns a client with it.
func serveAgents(t *testing.T, dbURL string) *client.Client {
	t.Helper()
	c, _, _ := serveAgentsAt(t, dbURL)
	return c
}

// serveAgentsAt is serveAgents, also returning the server's URL and the
// token.
func serveAgentsAt(t *testing.T, dbURL string) (*client.Client, string, string) {
	t.Helper()
	tok, hash, _ := auth.NewToken()
	cfg := config.Default()
	cfg.Listen, cfg.Database = "127.0.0.1:0", dbURL
	cfg.Auth.Tokens = []config.Token{{Name: "agents", SHA256: hash, Permissions: []string{"agent"}}}
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	c, err := client.New("http://"+m.Addr(), tok)
	if err != nil {
		t.Fatal(err)
	}
	return c, "http://" + m.Addr(), tok
}

// The control-plane commands, as an agent's script uses them: register,
// a dry run that names every candidate, an applied allocation, the gate
// (exit status 1 when refused), a lease's safe next action, its release.
func TestCLIAllocatesGatesAndReleases(t *testing.T) {
	dbURL := testdb.URL(t, store.KindSQLite)
	_, base, tok := serveAgentsAt(t, dbURL)
	t.Setenv("WORKQUEUE_URL", base)
	t.Setenv("WORKQUEUE_TOKEN", tok)
	ctx := context.Background()
	if err := testdb.ControlPlaneURL(t, dbURL).UpsertWork(ctx, []cp.Work{
		{ID: "w1", WorkKey: cp.WorkKey{Forge: "gitea", Repo: "o/r", Kind: cp.KindIssue, Number: 1}, State: cp.StateOpen, Title: "first", UpdatedAt: time.Now()},
		{ID: "w2", WorkKey: cp.WorkKey{Forge: "gitea", Repo: "o/r", Kind: cp.KindIssue, Number: 2}, State: cp.StateOpen, Title: "second", UpdatedAt: time.Now()},
	}, time.Now()); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := runCommand(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	var sess cp.SessionView
	json.Unmarshal([]byte(run("sessions", "register", "--role", "author", "--name", "cli", "-o", "json")), &sess)
	if sess.ID == "" || sess.Status != cp.SessionActive {
		t.Fatalf("register: %+v", sess)
	}
	if out := run("allocate", "--session", sess.ID); !strings.HasPrefix(out, "preview: issue o/r#") || !strings.Contains(out, "passed over issue o/r#") {
		t.Errorf("dry run:\n%s", out)
	}
	var a cp.Allocation
	json.Unmarshal([]byte(run("allocate", "--session", sess.ID, "--apply", "-o", "json")), &a)
	if a.Outcome != cp.OutcomeAssigned || a.Lease == nil || a.Assignment == nil {
		t.Fatalf("apply: %+v", a)
	}
	if out := run("gate", "--session", sess.ID, "--assignment", a.Assignment.ID, "--action", "open_pr"); out != "allowed\n" {
		t.Errorf("gate on an allowed action: %q", out)
	}
	out, err := runCommand(t, "gate", "--session", sess.ID, "--assignment", a.Assignment.ID, "--action", "merge")
	var exit exitError
	if !errors.As(err, &exit) || exit.code != exitFailed || out != "refused: action_not_allowed\n" {
		t.Errorf("gate on a refused action: %q, %v; want exit status 1 and the reason", out, err)
	}
	if out := run("leases", "show", a.Lease.ID, "--session", sess.ID); !strings.Contains(out, "next: continue") {
		t.Errorf("leases show:\n%s", out)
	}
	// A checkpoint written from a YAML file, with a token pasted in, and
	// what a restarted session makes of it before and after its lease ends.
	file := filepath.Join(t.TempDir(), "checkpoint.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf("session_id: %s\nforge: gitea\nrepo: o/r\nwork_kind: issue\nwork_number: %d\nlease_id: %s\n"+
		"workflow_stage: implement\nnext_valid_action: open_pr\nrecovery_instructions: push with glpat-AbCdEfGhIjKlMnOpQrSt\n",
		sess.ID, a.Work.Number, a.Lease.ID)), 0o600)
	if out := run("checkpoints", "write", "-f", file, "--require-complete"); !strings.Contains(out, "next valid action: open_pr") || strings.Contains(out, "glpat-") {
		t.Errorf("checkpoints write:\n%s", out)
	}
	key := []string{"--session", sess.ID, "--forge", "gitea", "--repo", "o/r", "--work-kind", "issue", "--work-number", fmt.Sprint(a.Work.Number)}
	if out := run(append([]string{"checkpoints", "show"}, key...)...); !strings.Contains(out, "stage: implement") {
		t.Errorf("checkpoints show:\n%s", out)
	}
	if out := run(append([]string{"checkpoints", "reconcile"}, key...)...); !strings.HasPrefix(out, "resume: stale false") {
		t.Errorf("checkpoints reconcile with the lease live:\n%s", out)
	}
	if out := run("leases", "release", a.Lease.ID, "--session", sess.ID); !strings.Contains(out, ": released,") {
		t.Errorf("leases release:\n%s", out)
	}
	if out := run(append([]string{"checkpoints", "reconcile"}, key...)...); !strings.HasPrefix(out, "reacquire: stale true") {
		t.Errorf("checkpoints reconcile after the release:\n%s", out)
	}
	if out := run("checkpoints", "list", "--session", sess.ID); !strings.Contains(out, "issue #") {
		t.Errorf("checkpoints list:\n%s", out)
	}
	if out := run("work", "list", "--repo", "o/r"); !strings.Contains(out, "first") || !strings.Contains(out, "second") {
		t.Errorf("work list:\n%s", out)
	}
	if out := run("sessions", "end", sess.ID); !strings.Contains(out, "ended") {
		t.Errorf("sessions end:\n%s", out)
	}
}

// Hard rule 2 over the API: twenty sessions allocating at once on a
// repository with one open issue get exactly one assignment; the others
// are told to wait. Twenty rounds, on each database, and on PostgreSQL
// through two serve instances sharing it.
func TestTwentySessionsRacingForOneIssueGetOneAssignment(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		instances int
	}{{store.KindSQLite, 1}, {store.KindPostgres, 1}, {store.KindPostgres, 2}} {
		t.Run(fmt.Sprintf("%s/%d instances", tc.kind, tc.instances), func(t *testing.T) {
			dbURL := testdb.URL(t, tc.kind)
			var clients []*client.Client
			for range tc.instances {
				clients = append(clients, serveAgents(t, dbURL))
			}
			inventory := testdb.ControlPlaneURL(t, dbURL)
			ctx := context.Background()
			const sessions = 20
			ids := make([]string, sessions)
			for i := range ids {
				s, err := clients[i%len(clients)].RegisterSession(ctx, cptype.RoleAuthor, fmt.Sprint("agent-", i), nil)
				if err != nil {
					t.Fatal(err)
				}
				ids[i] = s.ID
			}
			for round := range 20 {
				repo := fmt.Sprintf("o/round-%d", round)
				if err := inventory.UpsertWork(ctx, []cp.Work{{ID: fmt.Sprintf("w%d", round), State: cp.StateOpen, Title: "the only one",
					WorkKey: cp.WorkKey{Forge: "gitea", Repo: repo, Kind: cp.KindIssue, Number: 1}, UpdatedAt: time.Now()}}, time.Now()); err != nil {
					t.Fatal(err)
				}
				outcomes := make([]cptype.Outcome, sessions)
				errs := make([]error, sessions)
				testkit.AtOnce(sessions, func(i int) {
					a, err := clients[i%len(clients)].Allocate(ctx, ids[i], repo, true)
					if err == nil {
						outcomes[i] = a.Outcome
					}
					errs[i] = err
				})
				count := map[cptype.Outcome]int{}
				for i, o := range outcomes {
					if errs[i] != nil {
						t.Fatalf("round %d, session %d: %v", round, i, errs[i])
					}
					count[o]++
				}
				if count[cptype.OutcomeAssigned] != 1 || count[cptype.OutcomeWait] != sessions-1 {
					t.Fatalf("round %d: %v, want one assigned and %d told to wait", round, count, sessions-1)
				}
			}
		})
	}
}

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
	author, err := agents.RegisterSession(ctx, cptype.RoleAuthor, "author", nil)
	if err != nil {
		t.Fatal(err)
	}
	held, err := agents.Allocate(ctx, author.ID, w.repo, true)
	if err != nil || held.Outcome != cptype.OutcomeAssigned || held.Work.Number != issue.Index {
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
	reviewer, _ := sdk.NewClient(srv.URL, sdk.SetToken(srv.Reviewer(t, w.repo)))
	if _, _, err := reviewer.CreatePullReview(owner, name, number, sdk.CreatePullReviewOptions{State: sdk.ReviewStateRequestChanges,
		Body: "Say it twice.", CommitID: pr.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	sync()
	var released map[string]any
	if err := agents.Call(ctx, "POST", "/api/v1/leases/"+held.Lease.ID+"/release", nil, map[string]any{"session_id": author.ID}, &released); err != nil {
		t.Fatal(err)
	}
	back, err := agents.Allocate(ctx, author.ID, w.repo, true)
	if err != nil || back.Outcome != cptype.OutcomeAssigned || back.Work.Number != number {
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

// countingProxy forwards to target and counts the requests it forwards.
func countingProxy(t *testing.T, target string) (string, *atomic.Int64) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// The incident bridge against the real Gitea: a signed Sentry alert
// posted ten times at once files exactly one issue and one link; a dry
// run makes no forge call and writes nothing; a forged signature is 401
// and files nothing; the issue filed is then handed to an author session
// like any other. The bridge reaches Gitea through a forge entry of its
// own, behind a counting proxy, so that its calls are counted exactly.
func TestSentryAlertsFileExactlyOneIssueThatAnAgentIsThenHanded(t *testing.T) {
	srv := testgitea.Get(t)
	counted, calls := countingProxy(t, srv.URL)
	const secret = "sentry-client-secret"
	t.Setenv("WQ_TEST_SENTRY_SECRET", secret)
	incTok, incHash, _ := auth.NewToken()
	agentTok, agentHash, _ := auth.NewToken()
	adminTok, adminHash, _ := auth.NewToken()
	w := startAPI(t, "", func(c *config.Config) {
		c.Forges = append(c.Forges, config.Forge{Name: "gitea-incidents", Kind: "gitea", URL: counted, TokenEnv: "WQ_TEST_GITEA_TOKEN"})
		c.Auth.Tokens = append(c.Auth.Tokens,
			config.Token{Name: "monitoring", SHA256: incHash, Permissions: []string{"incidents"}},
			config.Token{Name: "agents", SHA256: agentHash, Permissions: []string{"agent"}},
			config.Token{Name: "ops", SHA256: adminHash, Permissions: []string{"admin"}})
		c.ControlPlane.SyncInterval = config.Duration(time.Hour)
		c.ControlPlane.Repos = []config.ControlPlaneRepo{{Forge: "gitea", Match: thisRepo}}
		c.Incidents = config.Incidents{Sentry: config.IncidentSecret{SecretEnv: "WQ_TEST_SENTRY_SECRET"},
			Projects: []config.IncidentProject{{Provider: "sentry", Organization: "shopco", Project: "checkout",
				Forge: "gitea-incidents", Repo: thisRepo, Labels: []string{"incident"}}}}
	})
	alert, err := os.ReadFile("../../controlplane/incident/testdata/sentry_issue_created.json")
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(alert)
	signature := hex.EncodeToString(mac.Sum(nil))
	post := func(sig string) (int, map[string]any) {
		t.Helper()
		status, out, _, err := w.send("POST", "/webhooks/incidents/sentry", alert,
			http.Header{"Sentry-Hook-Resource": {"issue"}, "Sentry-Hook-Signature": {sig}})
		if err != nil && status == 0 {
			t.Fatal(err)
		}
		return status, out
	}
	obs := map[string]any{"provider": "sentry", "organization": "shopco", "project": "checkout", "fingerprint": "4431907265",
		"title": "TypeError: Cannot read properties of undefined (reading 'total')"}
	dryRun := func() map[string]any {
		t.Helper()
		status, out, _ := w.do("POST", "/api/v1/incidents/reconcile", incTok, map[string]any{"observation": obs, "apply": false})
		if status != http.StatusOK {
			t.Fatalf("dry run: %d %v", status, out)
		}
		return out
	}

	before := calls.Load()
	if out := dryRun(); out["outcome"] != "would_create" || out["issue"] == nil {
		t.Fatalf("dry run before any alert: %v", out)
	}
	if status, out := post(strings.Repeat("0", 64)); status != http.StatusUnauthorized {
		t.Errorf("a forged signature: %d %v, want 401", status, out)
	}
	if status, out, _ := w.do("POST", "/api/v1/incidents/reconcile", agentTok, map[string]any{"observation": obs, "apply": true}); status != http.StatusForbidden {
		t.Errorf("reconcile without permission incidents: %d %v", status, out)
	}
	if out := dryRun(); out["outcome"] != "would_create" || calls.Load() != before {
		t.Fatalf("after two dry runs and a forged alert: %v and %d forge calls; want would_create (no link) and none", out, calls.Load()-before)
	}

	outcomes := map[any]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			status, out := post(signature)
			mu.Lock()
			defer mu.Unlock()
			if status != http.StatusOK {
				t.Errorf("a signed alert: %d %v", status, out)
				return
			}
			for _, r := range out["results"].([]any) {
				outcomes[r.(map[string]any)["outcome"]]++
			}
		})
	}
	wg.Wait()
	t.Logf("ten signed alerts at once: %v, %d forge calls", outcomes, calls.Load()-before)
	if outcomes["created"] != 1 {
		t.Errorf("ten signed alerts at once: outcomes %v, want exactly one created", outcomes)
	}
	gitea, _ := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	owner, name, _ := strings.Cut(w.repo, "/")
	issues, _, err := gitea.ListRepoIssues(owner, name, sdk.ListIssueOption{Type: sdk.IssueTypeIssue, State: sdk.StateAll})
	if err != nil {
		t.Fatal(err)
	}
	if len(issues) != 1 || !strings.Contains(issues[0].Title, "Cannot read properties") || len(issues[0].Labels) != 1 {
		t.Fatalf("issues in the repository: %d, want exactly one, titled for the alert and labelled", len(issues))
	}
	// The CLI says the same, and files nothing more.
	t.Setenv("WORKQUEUE_URL", w.base)
	t.Setenv("WORKQUEUE_TOKEN", incTok)
	file := filepath.Join(t.TempDir(), "obs.json")
	raw, _ := json.Marshal(obs)
	os.WriteFile(file, raw, 0o600)
	if got, err := runCommand(t, "incidents", "reconcile", "-f", file, "--apply"); err != nil || !strings.HasPrefix(got, "linked: gitea-incidents "+w.repo+"#") {
		t.Errorf("workqueue incidents reconcile --apply: %v\n%s", err, got)
	}
	out := dryRun()
	link, _ := out["link"].(map[string]any)
	if out["outcome"] != "would_update" || link == nil || link["issue_number"] != float64(issues[0].Index) {
		t.Errorf("after the alerts: %v; want would_update naming issue #%d", out, issues[0].Index)
	}
	if strings.Contains(issues[0].Body, secret) || !strings.Contains(issues[0].Body, "checkout") {
		t.Errorf("the issue body:\n%s", issues[0].Body)
	}

	// The issue is work like any other: after a sync, an author session
	// is handed it.
	if status, out, _ := w.do("POST", "/api/v1/work/sync", adminTok, nil); status != http.StatusOK {
		t.Fatalf("sync: %d %v", status, out)
	}
	agents, _ := client.New(w.base, agentTok)
	author, err := agents.RegisterSession(t.Context(), cptype.RoleAuthor, "author", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agents.Allocate(t.Context(), author.ID, w.repo, true)
	if err != nil || a.Outcome != cptype.OutcomeAssigned || a.Work.Kind != cptype.KindIssue || a.Work.Number != issues[0].Index {
		t.Fatalf("allocate: %+v, %v; want the incident's issue #%d", a, err, issues[0].Index)
	}
}
