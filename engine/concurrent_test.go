// Tests of engines and writers running at once, on real clocks: events
// racing the exit decision, several instances sharing one PostgreSQL.
package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

// TestEventsRacingTheExitAreNeverOrphaned inserts events from several
// goroutines while the engine's loops are deciding to exit. The per-item
// lock and the revision check (DDR-34, DDR-49) must leave no event behind
// an item that is no longer actionable: such an event would wait for
// nobody.
func TestEventsRacingTheExitAreNeverOrphaned(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		s := testdb.Open(t, kind)
		var log eventLog
		cfg := testConfig("a")
		cfg.Workers = 8
		e, err := engine.New(cfg, s.Queue, clockwork.NewRealClock(), &audit.Memory{}, testkit.Quiet())
		if err != nil {
			t.Fatal(err)
		}
		e.Register(log.itemType(markActed))
		t.Cleanup(func() { e.Stop(ctx) })
		ids := make([]wq.ItemID, 20)
		for i := range ids {
			it, err := s.CreateItem(ctx, wq.NewItem{ItemType: "test"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = it.ID
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		const perWriter = 40
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range perWriter {
					id := ids[rand.IntN(len(ids))]
					if _, err := s.InsertDelivery(ctx, "test", fmt.Sprintf("%d-%d", w, n), []wq.Event{{ItemID: id, EventType: "note",
						Body: []byte(`{}`), EventTS: time.Now()}}, time.Now()); err != nil {
						t.Error(err)
						return
					}
					e.Notify("test", id) // what the webhook handler does after the commit
				}
			}()
		}
		wg.Wait()
		if err := e.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			it, err := s.GetItem(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := s.NextEvent(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if ev != nil && !it.Actionable {
				t.Errorf("item %s: event %s orphaned behind a non-actionable item", id, ev.DeliveryID)
			}
			if ev != nil {
				t.Errorf("item %s: event %s left unprocessed after the engine went idle", id, ev.DeliveryID)
			}
		}
		if got := len(log.got()); got != 4*perWriter {
			t.Errorf("handled %d events, want %d", got, 4*perWriter)
		}
	})
}

// overlapDetector counts executions of one item that overlap in time.
type overlapDetector struct {
	mu       sync.Mutex
	running  map[wq.ItemID]string
	overlaps atomic.Int32
}

func (d *overlapDetector) enter(id wq.ItemID, who string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, busy := d.running[id]; busy {
		d.overlaps.Add(1)
	}
	d.running[id] = who
}

func (d *overlapDetector) leave(id wq.ItemID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.running, id)
}

func TestTwoEnginesOnOnePostgresNeverOverlap(t *testing.T) {
	const items = 1000
	ctx := context.Background()
	url := testdb.URL(t, store.KindPostgres)
	det := &overlapDetector{running: map[wq.ItemID]string{}}
	var completed atomic.Int32
	allDone := make(chan struct{})

	var engines []*engine.Engine
	for _, name := range []string{"a", "b"} {
		s := testdb.OpenURL(t, url) // each instance has its own pool, as separate processes would
		cfg := testConfig(name)
		cfg.Workers = 10
		cfg.SweepInterval = 200 * time.Millisecond
		e, err := engine.New(cfg, s.Queue, clockwork.NewRealClock(), &audit.Memory{}, testkit.Quiet())
		if err != nil {
			t.Fatal(err)
		}
		e.Register(oneAction(func(ctx context.Context, x *wq.Execution) error {
			det.enter(x.Item.ID, name)
			defer det.leave(x.Item.ID)
			if err := x.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: "done by " + name}); err != nil {
				return err
			}
			if completed.Add(1) == items {
				close(allDone)
			}
			return nil
		}))
		engines = append(engines, e)
		t.Cleanup(func() { e.Stop(ctx) })
	}

	s := testdb.OpenURL(t, url)
	ids := make([]wq.ItemID, items)
	for i := range ids {
		it, err := s.CreateItem(ctx, wq.NewItem{ItemType: "test"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = it.ID
	}
	for _, e := range engines {
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Both instances hear about every item, as with NOTIFY to all listeners.
	for _, id := range ids {
		for _, e := range engines {
			e.Notify("test", id)
		}
	}
	select {
	case <-allDone:
	case <-time.After(2 * time.Minute):
		t.Fatalf("only %d of %d items completed", completed.Load(), items)
	}
	for _, e := range engines {
		if err := e.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}

	if n := det.overlaps.Load(); n != 0 {
		t.Errorf("%d overlapping executions of the same item", n)
	}
	if n := completed.Load(); n != items {
		t.Errorf("%d executions completed an item, want exactly %d", n, items)
	}
	by := map[string]int{}
	for _, id := range ids {
		it, err := s.GetItem(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if it.Phase != wq.PhaseCompleted || it.Actionable || it.LeaseOwner != "" {
			t.Fatalf("item %s not finished: %+v", id, it)
		}
		by[it.Reason]++
	}
	if by["done by a"] == 0 || by["done by b"] == 0 {
		t.Errorf("work split %v: one engine did nothing, so overlap was never tested", by)
	}
	t.Logf("work split: %v", by)
}

// TestAnotherInstancesWritesWakeThisEngineAtOnce: on PostgreSQL, work
// that another instance enqueues (a new item, an event) reaches this
// engine through NOTIFY, long before its sweep would (24 h here).
func TestAnotherInstancesWritesWakeThisEngineAtOnce(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t, store.KindPostgres)
	worker := testdb.OpenURL(t, url)
	api := testdb.OpenURL(t, url) // the instance that takes the request
	var log eventLog
	cfg := testConfig("worker") // sweep interval 24h
	e, err := engine.New(cfg, worker.Queue, clockwork.NewRealClock(), &audit.Memory{}, testkit.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	e.Register(log.itemType(markActed))
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(ctx) })
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.WaitListening(waitCtx); err != nil { // a wake-up sent before would only be found by the sweep
		t.Fatal(err)
	}

	it, err := api.CreateItem(ctx, wq.NewItem{ItemType: "test"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, cond func(*wq.Item) bool) {
		t.Helper()
		eventually.Value(t, 5*time.Second, what, func() (*wq.Item, bool) {
			got, err := api.GetItem(ctx, it.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got, cond(got)
		})
	}
	waitFor("a new item processed", func(got *wq.Item) bool {
		return got.Dimensions[wq.DimensionKey{Dimension: "needs_act"}].Status == wq.StatusFalse && !got.Actionable
	})
	if _, err := api.InsertDelivery(ctx, "test", "d", []wq.Event{{ItemID: it.ID, EventType: "close", Body: []byte(`{}`),
		EventTS: time.Now()}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor("an event applied", func(got *wq.Item) bool { return got.Phase == wq.PhaseCancelled })
}

// An instance that crashed keeps a share of the ready set for a few
// minutes (until its record ages out). The instance that replaces it
// must still burn down the whole backlog at once: once its own share
// cannot fill a sweep, the sweep tops it up from the others', instead of
// leaving the crashed instance's items to the sweep interval. The clock
// never moves here, so the engine's ticker never fires: only sweeps that
// follow full ones can find the items.
func TestABacklogIsBurnedDownWhileACrashedInstanceStillHoldsAShare(t *testing.T) {
	const items = 60
	h := newHarness(t, store.KindPostgres)
	if err := h.store.(wq.HandlerRegistry).RecordHandlers(h.ctx, "crashed", []string{"test"}, t0); err != nil {
		t.Fatal(err)
	}
	for range items {
		h.create(wq.NewItem{})
	}
	cfg := testConfig("restarted")
	cfg.Workers = 2
	cfg.SweepBatch = 10
	e := h.engine(cfg, oneAction(markActed))
	h.start(e)
	eventually.True(t, 20*time.Second, "every item acted on, none left to the sweep interval", func() (bool, any) {
		n := e.Stats().ActionsExecuted
		return n == items, fmt.Sprintf("%d of %d acted on", n, items)
	})
}

// On a store that claims due items itself (PostgreSQL), a backlog larger
// than a sweep is burned down by the claimers: the sweep that found it
// full hands it over, and the next looks only once a claim came back
// short, instead of sweeping back to back ids that are then claimed by
// id. Every item is acted on once. The clock never moves, so the
// engine's ticker never fires.
func TestABacklogIsClaimedFromTheStoreWithoutSweepingItAgain(t *testing.T) {
	const items = 200
	h := newHarness(t, store.KindPostgres)
	if _, ok := h.store.(wq.DueClaimer); !ok {
		t.Fatal("the PostgreSQL store does not claim due items")
	}
	for range items {
		h.create(wq.NewItem{})
	}
	det := &overlapDetector{running: map[wq.ItemID]string{}}
	var acted sync.Map
	cfg := testConfig("a")
	cfg.Workers = 3
	cfg.SweepBatch = 10
	cfg.ClaimBatch = 7
	e := h.engine(cfg, oneAction(func(ctx context.Context, x *wq.Execution) error {
		det.enter(x.Item.ID, "a")
		defer det.leave(x.Item.ID)
		if _, again := acted.LoadOrStore(x.Item.ID, true); again {
			t.Errorf("item %s acted on twice", x.Item.ID)
		}
		return markActed(ctx, x)
	}))
	sweeps := &sweepCounter{}
	e.SetMetrics(sweeps)
	h.start(e)
	eventually.True(t, 30*time.Second, "every item acted on", func() (bool, any) {
		n := e.Stats().ActionsExecuted
		return n == items, fmt.Sprintf("%d of %d acted on", n, items)
	})
	if err := e.WaitIdle(h.ctx); err != nil {
		t.Fatal(err)
	}
	if n := det.overlaps.Load(); n != 0 {
		t.Errorf("%d overlapping executions", n)
	}
	if n := sweeps.n.Load(); n > 3 {
		t.Errorf("%d sweeps for a backlog of %d in sweeps of %d; want the one that found it, and one or two after the claims ran dry", n, items, cfg.SweepBatch)
	}
}

// sweepCounter counts the engine's sweeps.
type sweepCounter struct{ n atomic.Int64 }

func (s *sweepCounter) Swept(time.Duration, int, error)                { s.n.Add(1) }
func (s *sweepCounter) Executed(string, string, string, time.Duration) {}
func (s *sweepCounter) DimensionCleared(string, string, time.Duration) {}
func (s *sweepCounter) EventApplied(string, time.Duration)             {}
func (s *sweepCounter) LeaseLost(string)                               {}

// A store whose claims of due items fail still has its backlog burned
// down: the engine claims it by id, as it would from a store that cannot
// claim due items, and does not go round trying the failing claim.
func TestABacklogIsClaimedByIDWhenTheStoresClaimOfDueItemsFails(t *testing.T) {
	const items = 60
	h := newHarness(t, store.KindPostgres)
	for range items {
		h.create(wq.NewItem{})
	}
	failing := &failingDueClaimer{Store: h.store}
	cfg := testConfig("a")
	cfg.Workers = 2
	cfg.SweepBatch = 10
	e, err := engine.New(cfg, failing, h.clock, h.audit, testkit.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	e.Register(oneAction(markActed))
	t.Cleanup(func() { e.Stop(context.Background()) })
	h.start(e)
	eventually.True(t, 30*time.Second, "every item acted on", func() (bool, any) {
		n := e.Stats().ActionsExecuted
		return n == items, fmt.Sprintf("%d of %d acted on", n, items)
	})
	if n, full := failing.calls.Load(), int64(items/cfg.SweepBatch); n == 0 || n > full/2+1 {
		t.Errorf("%d failed claims of due items for %d full sweeps; want one for every other sweep at most", n, full)
	}
}

// failingDueClaimer is a store whose claims of due items fail.
type failingDueClaimer struct {
	wq.Store
	calls atomic.Int64
}

func (f *failingDueClaimer) ClaimDueItems(context.Context, string, []string, string, time.Time, time.Duration, int) ([]wq.Claim, error) {
	f.calls.Add(1)
	return nil, errors.New("the claim of due items broke")
}

// The engine's sweeps need the shared sweeper too, as the store has it.
func (f *failingDueClaimer) DueItemsOf(ctx context.Context, instance string, types []string, now time.Time, limit int) ([]wq.ItemID, error) {
	return f.Store.(wq.SharedSweeper).DueItemsOf(ctx, instance, types, now, limit)
}
