package mr_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
)

// harness runs the mr type in an engine whose clock the test moves, on
// SQLite, against a fakeForge: forge calls can be counted over hours of
// fake time without sleeping.
type harness struct {
	t       *testing.T
	ctx     context.Context
	store   *testdb.Store
	clock   *clockwork.FakeClock
	forge   *fakeForge
	engine  *engine.Engine
	project mr.Project
}

func newHarness(t *testing.T, opts mr.Options) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), store: testdb.Open(t, store.KindSQLite),
		clock: clockwork.NewFakeClockAt(t0), forge: newFakeForge(),
		project: mr.Project{Label: "managed-by-workqueue", AutoMerge: true, FileModes: true}}
	opts.Store = h.store
	if opts.Forges == nil { // a test may wrap h.forge: see newCIHarness
		opts.Forges = map[string]wq.Forge{"fake": h.forge}
	}
	h.engine = startEngine(t, h.store, h.clock, opts, 24*time.Hour) // the test sweeps (settle); the ticker must not race it
	return h
}

// startEngine runs an engine with the mr type on s, stopped when the test
// ends. clock nil is the real clock.
func startEngine(t *testing.T, s *testdb.Store, clock clockwork.Clock, opts mr.Options, sweep time.Duration) *engine.Engine {
	t.Helper()
	if opts.Log == nil {
		opts.Log = testkit.Quiet()
	}
	cfg := engine.DefaultConfig()
	cfg.Owner = t.Name()
	cfg.HandledTypes = []string{mr.ItemType}
	cfg.SweepInterval = sweep
	e, err := engine.New(cfg, s, clock, testkit.CheckedAudit(t), opts.Log)
	if err != nil {
		t.Fatal(err)
	}
	e.Register(mr.Type(opts))
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(context.Background()) })
	// The first sweep runs as the engine starts: wait for it, so that it
	// cannot find the test's first item behind the test's back.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.WaitSwept(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// submit submits sub to the fake forge's project and lets the engine
// settle.
func (h *harness) submit(sub mr.Submission) *wq.Item {
	h.t.Helper()
	sub.Forge, sub.Project = "fake", "o/r"
	it, _, err := mr.Submit(h.ctx, h.store, sub, h.project, "test", h.clock.Now())
	if err != nil {
		h.t.Fatalf("Submit: %v", err)
	}
	h.settle()
	return it
}

// settle sweeps and waits until the engine has nothing queued or running.
func (h *harness) settle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	for range 2 { // an item the first sweep finished may be due again at once
		if err := h.engine.WaitIdle(ctx); err != nil {
			h.t.Fatalf("engine did not go idle: %v", err)
		}
		if _, err := h.engine.Sweep(ctx); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := h.engine.WaitIdle(ctx); err != nil {
		h.t.Fatalf("engine did not go idle: %v", err)
	}
}

// advance moves the clock by d in steps of step, settling after each, as
// the sweep would find due items every step.
func (h *harness) advance(d, step time.Duration) {
	h.t.Helper()
	for end := h.clock.Now().Add(d); h.clock.Now().Before(end); {
		h.clock.Advance(min(step, end.Sub(h.clock.Now())))
		h.settle()
	}
}

func (h *harness) get(id wq.ItemID) (*wq.Item, *mr.Detail) {
	h.t.Helper()
	return getItem(h.t, h.store, id)
}

// getItem reads an item and its detail.
func getItem(t testing.TB, s *testdb.Store, id wq.ItemID) (*wq.Item, *mr.Detail) {
	t.Helper()
	it, err := s.GetItem(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.GetMRDetail(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return it, d
}

// wantEnded stops the test unless the item reached phase with reason.
func wantEnded(t testing.TB, it *wq.Item, phase wq.Phase, reason string) {
	t.Helper()
	if it.Phase != phase || it.Reason != reason {
		t.Fatalf("item %s/%s (error %q), want %s/%s", it.Phase, it.Reason, it.Error, phase, reason)
	}
}

// reconcileRow is the item's needs_reconcile row and its detail.
func (h *harness) reconcileRow(id wq.ItemID) (wq.Dimension, mr.ReconcileDetail) {
	h.t.Helper()
	it, _ := h.get(id)
	row := it.Dimensions[wq.DimensionKey{Dimension: mr.DimReconcile}]
	var detail mr.ReconcileDetail
	if len(row.Detail) > 0 {
		if err := json.Unmarshal(row.Detail, &detail); err != nil {
			h.t.Fatal(err)
		}
	}
	return row, detail
}

// event stores a forge event for the item, as a webhook delivery does,
// and lets the engine apply it.
func (h *harness) event(id wq.ItemID, eventType, body, delivery string) {
	h.t.Helper()
	if _, err := h.store.InsertDelivery(h.ctx, "fake", delivery, []wq.Event{{ItemID: id, EventType: forge.EventType,
		Body: neutral(h.t, eventType, body)}}, h.clock.Now()); err != nil {
		h.t.Fatal(err)
	}
	h.settle()
}

// cancel asks for the item to be cancelled as the service does for a type
// with a CancelDimension: the dimension true with the request as detail,
// and the item woken.
func (h *harness) cancel(id wq.ItemID, reason string) {
	h.t.Helper()
	requestCancel(h.t, h.ctx, h.store, id, reason, h.clock.Now())
	h.engine.Notify(mr.ItemType, id)
	h.settle()
}

// requestCancel asks for the item's cancel as the service does for a
// type with a CancelDimension.
func requestCancel(t *testing.T, ctx context.Context, s *testdb.Store, id wq.ItemID, reason string, now time.Time) {
	t.Helper()
	detail, _ := json.Marshal(wq.CancelRequest{Reason: reason})
	if _, err := s.RequestCancel(ctx, id, []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: mr.DimClose},
		Status: wq.StatusTrue, Detail: detail}}, now); err != nil {
		t.Fatal(err)
	}
}

// wantBranchGone fails the test if branch still exists on the forge.
func (h *harness) wantBranchGone(branch, when string) {
	h.t.Helper()
	if h.forge.head(branch) != "" {
		h.t.Errorf("%s: branch %s is still there", when, branch)
	}
}

// neutral is a forge's payload of an event type as the webhook receiver
// stores it: read at receipt by its kind (forge.Plugin.DecodeEvent) into
// the forge-neutral event.
func neutral(t testing.TB, eventType, body string) []byte {
	t.Helper()
	for _, p := range []forge.Plugin{gitea.Plugin, gitlab.Plugin} {
		if !slices.Contains(p.EventTypes, eventType) {
			continue
		}
		e, err := p.DecodeEvent(eventType, []byte(body))
		if err != nil {
			t.Fatalf("%s payload: %v", eventType, err)
		}
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	t.Fatalf("no kind reads %s events", eventType)
	return nil
}
