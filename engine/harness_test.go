package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

type harness struct {
	t     *testing.T
	ctx   context.Context
	store wq.Store
	clock *clockwork.FakeClock
	audit *audit.Memory
}

func newHarness(t *testing.T, kind string) *harness {
	t.Helper()
	return &harness{t: t, ctx: context.Background(), store: testdb.Open(t, kind).Queue, clock: clockwork.NewFakeClockAt(t0), audit: testkit.CheckedAudit(t)}
}

func testConfig(owner string) engine.Config {
	cfg := engine.DefaultConfig()
	cfg.Owner = owner
	cfg.Workers = 4
	cfg.HandledTypes = []string{"test"}
	// Tests sweep explicitly (harness.settle); the engine's own ticker
	// must not race them when they move the clock.
	cfg.SweepInterval = 24 * time.Hour
	return cfg
}

// engine starts an engine for typ on the harness's store and clock, and
// stops it when the test ends.
func (h *harness) engine(cfg engine.Config, typ wq.ItemType) *engine.Engine {
	h.t.Helper()
	e, err := engine.New(cfg, h.store, h.clock, h.audit, testkit.Quiet())
	if err != nil {
		h.t.Fatal(err)
	}
	e.Register(typ)
	h.t.Cleanup(func() { e.Stop(context.Background()) })
	return e
}

func (h *harness) start(e *engine.Engine) {
	h.t.Helper()
	if err := e.Start(h.ctx); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) create(n wq.NewItem) *wq.Item {
	h.t.Helper()
	if n.ItemType == "" {
		n.ItemType = "test"
	}
	it, err := h.store.CreateItem(h.ctx, n, h.clock.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	return it
}

func (h *harness) get(id wq.ItemID) *wq.Item {
	h.t.Helper()
	it, err := h.store.GetItem(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return it
}

func (h *harness) insertEvent(id wq.ItemID, delivery, eventType string, at time.Time) {
	h.t.Helper()
	// Deliveries are deduplicated per source: a source per item keeps the
	// tests' delivery names per item.
	if _, err := h.store.InsertDelivery(h.ctx, "test/"+id.String(), delivery, []wq.Event{{ItemID: id, EventType: eventType,
		Body: []byte(`{}`), EventTS: at}}, h.clock.Now()); err != nil {
		h.t.Fatal(err)
	}
}

// settle sweeps and waits until the engine has nothing queued or running.
// run creates an item, starts e and lets it settle: the item's first
// round of processing.
func (h *harness) run(e *engine.Engine, n wq.NewItem) *wq.Item {
	h.t.Helper()
	it := h.create(n)
	h.start(e)
	h.settle(e)
	return it
}

func (h *harness) settle(e *engine.Engine) int {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	if err := e.WaitIdle(ctx); err != nil {
		h.t.Fatalf("engine did not go idle: %v", err)
	}
	n, err := e.Sweep(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := e.WaitIdle(ctx); err != nil {
		h.t.Fatalf("engine did not go idle: %v", err)
	}
	return n
}

// forEachDB runs a test on SQLite and on PostgreSQL.
func forEachDB(t *testing.T, test func(t *testing.T, h *harness)) {
	testdb.EachKind(t, func(t *testing.T, kind string) { test(t, newHarness(t, kind)) })
}

func dim(name, variant, status string) wq.DimensionUpdate {
	return wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: name, Variant: variant}, Status: status}
}

// oneAction is a type whose decider asks for "act" while needs_act is not
// false, and then for nothing; act runs exec.
func oneAction(exec wq.Executor) wq.ItemType {
	return wq.ItemType{
		Name: "test",
		Decide: func(it *wq.Item, now time.Time) string {
			if it.Dimensions.Needs("needs_act", "", now) {
				return "act"
			}
			return ""
		},
		Executors: map[string]wq.Executor{"act": exec},
	}
}

func markActed(ctx context.Context, x *wq.Execution) error {
	return x.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{dim("needs_act", "", wq.StatusFalse)}})
}
