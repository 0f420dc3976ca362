package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
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
// (exit status 3 when refused), a lease's safe next action, its release.
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
	if !errors.As(err, &exit) || exit.code != 3 || out != "refused: action_not_allowed\n" {
		t.Errorf("gate on a refused action: %q, %v; want exit status 3 and the reason", out, err)
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
				s, err := clients[i%len(clients)].RegisterSession(ctx, cp.RoleAuthor, fmt.Sprint("agent-", i), nil)
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
				outcomes := make([]cp.Outcome, sessions)
				errs := make([]error, sessions)
				testkit.AtOnce(sessions, func(i int) {
					a, err := clients[i%len(clients)].Allocate(ctx, ids[i], repo, true)
					if err == nil {
						outcomes[i] = a.Outcome
					}
					errs[i] = err
				})
				count := map[cp.Outcome]int{}
				for i, o := range outcomes {
					if errs[i] != nil {
						t.Fatalf("round %d, session %d: %v", round, i, errs[i])
					}
					count[o]++
				}
				if count[cp.OutcomeAssigned] != 1 || count[cp.OutcomeWait] != sessions-1 {
					t.Fatalf("round %d: %v, want one assigned and %d told to wait", round, count, sessions-1)
				}
			}
		})
	}
}
