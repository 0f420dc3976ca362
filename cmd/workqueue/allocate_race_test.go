package main

import (
	"context"
	"fmt"
	"sync"
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
	return c
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
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range sessions {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						a, err := clients[i%len(clients)].Allocate(ctx, ids[i], repo, true)
						if err == nil {
							outcomes[i] = a.Outcome
						}
						errs[i] = err
					}()
				}
				close(start)
				wg.Wait()
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
