package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
)

// A change submitted while its lease was live, whose lease then expired
// (the clock moved ten minutes without a heartbeat) before ensure_mr
// ran: the item is cancelled with the gate's reason, and nothing reaches
// the real Gitea (no branch, no pull request).
func TestALeaseThatExpiredBeforeThePushCancelsTheChange(t *testing.T) {
	ctx := context.Background()
	srv := testgitea.Get(t)
	repo := srv.NewRepo(t)
	f, err := gitea.New(srv.URL, srv.Token, gitea.Options{})
	if err != nil {
		t.Fatal(err)
	}
	forges := map[string]wq.Forge{"gitea": f}
	clock := clockwork.NewFakeClockAt(time.Now())
	cps := &controlplane.Service{Store: testdb.ControlPlane(t, store.KindSQLite), Clock: clock, LeaseTTL: 10 * time.Minute,
		SessionTTL: time.Hour, Forges: forges}
	if err := cps.Store.UpsertWork(ctx, []controlplane.Work{{ID: "issue-1", WorkKey: controlplane.WorkKey{Forge: "gitea", Repo: repo,
		Kind: controlplane.KindIssue, Number: 1}, State: controlplane.StateOpen, Title: "Say hello", UpdatedAt: clock.Now()}}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	agent := controlplane.Caller{Identity: "agent"}
	sess, err := cps.RegisterSession(ctx, agent, controlplane.RoleAuthor, "author", nil)
	if err != nil {
		t.Fatal(err)
	}
	held, err := cps.Allocate(ctx, agent, sess.ID, "", true)
	if err != nil || held.Outcome != controlplane.OutcomeAssigned {
		t.Fatalf("allocate: %+v, %v", held, err)
	}

	db := testdb.Open(t, store.KindSQLite)
	gate := cps.AssignmentGate()
	api := mr.API(mr.APIOptions{Store: db, Assignments: gate,
		Project: func(string, string) (mr.Project, bool) { return mr.Project{Label: "managed"}, true }})
	sub, err := api.Decode([]byte(`{"item_type": "mr", "forge": "gitea", "project": "` + repo + `", "source_branch": "workqueue/hello",
		"target_branch": "main", "title": "Say hello", "assignment_id": "` + held.Assignment.ID + `",
		"file_actions": [{"action": "create", "file_path": "hello.txt", "content": "hello\n"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	it, _, err := api.Submit(ctx, sub, wq.Submitter{Identity: "agent"}, clock.Now())
	if err != nil {
		t.Fatalf("a submission under a live lease: %v", err)
	}

	clock.Advance(11 * time.Minute) // no heartbeat: the lease is past its expiry
	cfg := engine.DefaultConfig()
	cfg.Owner, cfg.HandledTypes, cfg.SweepInterval = t.Name(), []string{mr.ItemType}, 24*time.Hour
	e, err := engine.New(cfg, db, clock, testkit.CheckedAudit(t), testkit.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	e.Register(mr.Type(mr.Options{Store: db, Forges: forges, Assignments: gate, Log: testkit.Quiet()}))
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(context.Background()) })
	if _, err := e.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetItem(ctx, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != wq.PhaseCancelled || got.Reason != controlplane.GateLeaseExpired {
		t.Errorf("item %s %s, want cancelled with reason lease_expired", got.Phase, got.Reason)
	}
	if head, err := f.BranchHead(ctx, repo, "workqueue/hello"); !wq.IsForgeError(err, wq.ForgeNotFound) {
		t.Errorf("the branch exists at %q (%v): something was pushed after the lease expired", head, err)
	}
}
