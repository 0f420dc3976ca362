package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/engine"
)

// eventLog is a type with no actions whose "note" events are recorded in
// the order the handler sees them, and whose "close" events cancel it.
type eventLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *eventLog) itemType(exec wq.Executor) wq.ItemType {
	typ := oneAction(exec)
	typ.EventHandlers = map[string]wq.EventHandler{
		"note": func(_ context.Context, it *wq.Item, ev *wq.Event) (wq.EventResult, error) {
			l.mu.Lock()
			l.seen = append(l.seen, ev.DeliveryID)
			l.mu.Unlock()
			return wq.EventResult{Dimensions: []wq.DimensionUpdate{dim("needs_seen", ev.DeliveryID, wq.StatusFalse)}}, nil
		},
		"close": func(context.Context, *wq.Item, *wq.Event) (wq.EventResult, error) {
			return wq.EventResult{Phase: wq.PhaseCancelled, Reason: "closed"}, nil
		},
	}
	return typ
}

func (l *eventLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

func TestIdleDeciderDrainsPendingEventsBeforeExiting(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		var log eventLog
		var selfEvent sync.Once
		var it *wq.Item
		// The one action posts an event for its own item, as a webhook
		// arriving mid-processing would; the decider then returns none while
		// that event is pending.
		e := h.engine(testConfig("a"), log.itemType(func(ctx context.Context, x *wq.Execution) error {
			selfEvent.Do(func() { h.insertEvent(x.Item.ID, "mid", "note", h.clock.Now()) })
			return markActed(ctx, x)
		}))
		it = h.create(wq.NewItem{})
		for _, d := range []string{"first", "second", "third"} {
			h.insertEvent(it.ID, d, "note", h.clock.Now())
		}
		h.start(e)
		h.settle(e)

		if got, want := strings.Join(log.got(), ","), "first,second,third,mid"; got != want {
			t.Errorf("handled events %s, want %s", got, want)
		}
		if ev, err := h.store.NextEvent(h.ctx, it.ID); err != nil || ev != nil {
			t.Errorf("events left after exit: %+v %v", ev, err)
		}
		got := h.get(it.ID)
		if got.Actionable || !got.LeasedUntil.IsZero() || got.Phase != wq.PhaseActive {
			t.Errorf("after exit: actionable %v, leased until %v, phase %s", got.Actionable, got.LeasedUntil, got.Phase)
		}
		if n := len(got.Dimensions); n != 5 {
			t.Errorf("dimensions %v, want needs_act and four needs_seen", got.Dimensions)
		}
	})
}

func TestWorkerKilledAfterDeletingAnEventLeavesItemForTheSweep(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		var log eventLog
		e := h.engine(testConfig("a"), log.itemType(markActed))
		var died atomic.Bool
		e.SetCrashAfterEventApplied(func(wq.ItemID) bool { return died.CompareAndSwap(false, true) })
		it := h.create(wq.NewItem{})
		h.insertEvent(it.ID, "one", "note", h.clock.Now())
		h.insertEvent(it.ID, "two", "note", h.clock.Now())
		h.start(e)
		h.settle(e)

		if !died.Load() {
			t.Fatal("the fault hook never fired")
		}
		crashed := h.get(it.ID)
		if !crashed.Actionable || crashed.LeasedUntil.IsZero() {
			t.Fatalf("after the crash: actionable %v leased until %v; want actionable and still leased", crashed.Actionable, crashed.LeasedUntil)
		}
		if n := h.settle(e); n != 0 {
			t.Fatalf("sweep found %d items while the dead worker's lease holds", n)
		}
		h.clock.Advance(engine.DefaultConfig().Lease + time.Second)
		if n := h.settle(e); n != 1 {
			t.Fatalf("sweep after the lease expired found %d items, want 1", n)
		}
		got := h.get(it.ID)
		if got.Actionable || !got.LeasedUntil.IsZero() {
			t.Errorf("after recovery: actionable %v leased until %v", got.Actionable, got.LeasedUntil)
		}
		if strings.Join(log.got(), ",") != "one,two" {
			t.Errorf("handled %v, want one then two", log.got())
		}
		if d := got.Dimensions[wq.DimensionKey{Dimension: "needs_act"}]; d.Status != wq.StatusFalse {
			t.Errorf("the action did not run after recovery: %+v", got.Dimensions)
		}
	})
}

func TestExpiredLeaseIsReclaimedBySweep(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		var runs atomic.Int32
		e := h.engine(testConfig("a"), oneAction(func(ctx context.Context, x *wq.Execution) error {
			runs.Add(1)
			return markActed(ctx, x)
		}))
		it := h.create(wq.NewItem{})
		// A worker of a dead instance holds the item.
		if _, err := h.store.ClaimItem(h.ctx, it.ID, "dead", h.clock.Now(), time.Minute); err != nil {
			t.Fatal(err)
		}
		h.start(e)
		if n := h.settle(e); n != 0 || runs.Load() != 0 {
			t.Fatalf("processed a leased item: sweep %d runs %d", n, runs.Load())
		}
		h.clock.Advance(time.Minute + time.Second)
		h.settle(e)
		if runs.Load() != 1 {
			t.Fatalf("runs = %d after the lease expired, want 1", runs.Load())
		}
		if got := h.get(it.ID); got.Actionable || got.LeaseOwner != "" {
			t.Errorf("not finished: %+v", got)
		}
	})
}

func TestPendingUntilDefersADimensionUntilTheClockPassesIt(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		var runs atomic.Int32
		// The action reschedules itself ten minutes out, as reconcile_mr does.
		e := h.engine(testConfig("a"), oneAction(func(ctx context.Context, x *wq.Execution) error {
			runs.Add(1)
			d := dim("needs_act", "", wq.StatusTrue)
			d.PendingUntil = x.Now.Add(10 * time.Minute)
			return x.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{d}})
		}))
		it := h.run(e, wq.NewItem{})
		if runs.Load() != 1 {
			t.Fatalf("runs = %d, want 1", runs.Load())
		}
		if got := h.get(it.ID); got.Actionable {
			t.Error("an item whose only need is deferred stayed actionable")
		}
		h.clock.Advance(9 * time.Minute)
		if n := h.settle(e); n != 0 || runs.Load() != 1 {
			t.Fatalf("before pending_until: sweep found %d, runs %d", n, runs.Load())
		}
		h.clock.Advance(time.Minute)
		if n := h.settle(e); n != 1 || runs.Load() != 2 {
			t.Fatalf("at pending_until: sweep found %d, runs %d; want 1 and 2", n, runs.Load())
		}
	})
}

func TestFailuresBackOffThenFailTheItemAtMaxAttempts(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		cfg.MaxAttempts = 3
		var runs atomic.Int32
		e := h.engine(cfg, oneAction(func(ctx context.Context, x *wq.Execution) error {
			return fmt.Errorf("forge said no (%d)", runs.Add(1))
		}))
		it := h.run(e, wq.NewItem{})

		got := h.get(it.ID)
		lo, hi := h.clock.Now().Add(cfg.BackoffBase/2), h.clock.Now().Add(cfg.BackoffBase)
		if got.Attempts != 1 || got.RetryAfter.Before(lo) || got.RetryAfter.After(hi) || got.Error != "act: forge said no (1)" {
			t.Fatalf("after one failure: attempts %d retry_after %v (want in [%v, %v]) error %q", got.Attempts, got.RetryAfter, lo, hi, got.Error)
		}
		if n := h.settle(e); n != 0 {
			t.Fatalf("sweep found %d items during backoff", n)
		}
		h.clock.Advance(cfg.BackoffBase)
		h.settle(e)
		got = h.get(it.ID)
		lo, hi = h.clock.Now().Add(cfg.BackoffBase), h.clock.Now().Add(2*cfg.BackoffBase)
		if got.Attempts != 2 || got.RetryAfter.Before(lo) || got.RetryAfter.After(hi) {
			t.Fatalf("after two failures: attempts %d retry_after %v, want in [%v, %v]", got.Attempts, got.RetryAfter, lo, hi)
		}
		h.clock.Advance(2 * cfg.BackoffBase)
		h.settle(e)
		got = h.get(it.ID)
		if got.Phase != wq.PhaseFailed || got.Attempts != 3 || got.Error != "act: forge said no (3)" || got.FinishedAt.IsZero() {
			t.Fatalf("at max attempts: %+v", got)
		}
		if got.Actionable {
			t.Error("a failed item stayed actionable")
		}
		h.clock.Advance(time.Hour)
		if n := h.settle(e); n != 0 || runs.Load() != 3 {
			t.Errorf("a failed item was processed again: sweep %d runs %d", n, runs.Load())
		}
		if len(h.audit.Entries(wq.AuditActionFailed)) != 3 {
			t.Errorf("audited %d failures, want 3", len(h.audit.Entries(wq.AuditActionFailed)))
		}
	})
}

func TestSuccessAfterFailureResetsAttempts(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		var runs atomic.Int32
		e := h.engine(testConfig("a"), oneAction(func(ctx context.Context, x *wq.Execution) error {
			if runs.Add(1) == 1 {
				return errors.New("flaky")
			}
			return markActed(ctx, x)
		}))
		it := h.run(e, wq.NewItem{})
		if got := h.get(it.ID); got.Attempts != 1 {
			t.Fatalf("attempts %d after one failure", got.Attempts)
		}
		h.clock.Advance(time.Hour)
		h.settle(e)
		got := h.get(it.ID)
		if got.Attempts != 0 || got.Error != "" || !got.RetryAfter.IsZero() || got.Actionable {
			t.Errorf("after success: attempts %d error %q retry_after %v actionable %v", got.Attempts, got.Error, got.RetryAfter, got.Actionable)
		}
	})
}

func TestPermanentErrorFailsAtOnce(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		e := h.engine(testConfig("a"), oneAction(func(context.Context, *wq.Execution) error {
			return fmt.Errorf("%w: project gone", wq.ErrPermanent)
		}))
		it := h.run(e, wq.NewItem{})
		if got := h.get(it.ID); got.Phase != wq.PhaseFailed || got.Attempts != 1 {
			t.Errorf("phase %s attempts %d, want failed after one attempt", got.Phase, got.Attempts)
		}
	})
}

func TestUnknownActionFailsTheItem(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		typ := oneAction(markActed)
		typ.Decide = func(*wq.Item, time.Time) string { return "teleport" }
		e := h.engine(testConfig("a"), typ)
		it := h.run(e, wq.NewItem{})
		got := h.get(it.ID)
		if got.Phase != wq.PhaseFailed || !strings.Contains(got.Error, `unknown action "teleport"`) {
			t.Errorf("phase %s error %q", got.Phase, got.Error)
		}
	})
}

func TestEventForTerminalItemChangesNothing(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		var log eventLog
		e := h.engine(testConfig("a"), log.itemType(markActed))
		it := h.create(wq.NewItem{})
		h.insertEvent(it.ID, "c", "close", h.clock.Now())
		h.insertEvent(it.ID, "late", "note", h.clock.Now())
		h.start(e)
		h.settle(e)
		got := h.get(it.ID)
		if got.Phase != wq.PhaseCancelled || got.Reason != "closed" {
			t.Fatalf("phase %s reason %q, want cancelled/closed", got.Phase, got.Reason)
		}
		if len(log.got()) != 0 || len(got.Dimensions) != 0 {
			t.Errorf("the late event was applied to a cancelled item: handled %v dims %v", log.got(), got.Dimensions)
		}
		if len(h.audit.Entries(wq.AuditEventIgnored)) != 1 {
			t.Errorf("want one event_ignored audit entry")
		}
	})
}

func TestWorkerThatLostItsLeaseCannotWrite(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		started, release := make(chan struct{}), make(chan struct{})
		var writeErr error
		done := make(chan struct{})
		// Engine a's worker is paused mid-action, long enough to lose its lease.
		a := h.engine(testConfig("a"), oneAction(func(ctx context.Context, x *wq.Execution) error {
			close(started)
			<-release
			writeErr = x.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCancelled, Reason: "stale writer"})
			close(done)
			return writeErr
		}))
		a.PauseHeartbeats()
		b := h.engine(testConfig("b"), oneAction(func(ctx context.Context, x *wq.Execution) error {
			return x.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: "fresh writer"})
		}))
		it := h.create(wq.NewItem{})
		h.start(a)
		<-started
		h.start(b)
		h.clock.Advance(engine.DefaultConfig().Lease + time.Second)
		h.settle(b)
		if got := h.get(it.ID); got.Phase != wq.PhaseCompleted {
			t.Fatalf("engine b did not take over: phase %s", got.Phase)
		}
		close(release)
		<-done
		h.settle(a)

		if !errors.Is(writeErr, wq.ErrLeaseLost) {
			t.Errorf("stale write returned %v, want ErrLeaseLost", writeErr)
		}
		got := h.get(it.ID)
		if got.Phase != wq.PhaseCompleted || got.Reason != "fresh writer" || got.Attempts != 0 {
			t.Errorf("the stale writer changed the item: %+v", got)
		}
		refused := h.audit.Entries(wq.AuditWriteRefused)
		if len(refused) == 0 || !strings.HasPrefix(refused[0].Actor, "a/") || refused[0].ItemID != it.ID.String() {
			t.Errorf("refused write not audited for engine a: %+v", refused)
		}
		if a.Stats().WritesRefused == 0 {
			t.Error("engine a counted no refused write")
		}
	})
}

func TestFailingAuditSinkNeverBreaksProcessing(t *testing.T) {
	h := newHarness(t, "sqlite")
	e, err := engine.New(testConfig("a"), h.store, h.clock, panickySink{}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	e.Register(oneAction(markActed))
	t.Cleanup(func() { e.Stop(context.Background()) })
	it := h.run(e, wq.NewItem{})
	if got := h.get(it.ID); got.Actionable || got.Dimensions[wq.DimensionKey{Dimension: "needs_act"}].Status != wq.StatusFalse {
		t.Errorf("item not processed: %+v", got)
	}
}

type panickySink struct{}

func (panickySink) WriteAudit(context.Context, wq.AuditEntry) error { panic("sink down") }

func TestStopReleasesLeasesOfAbandonedItems(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		started := make(chan struct{})
		e := h.engine(testConfig("a"), oneAction(func(ctx context.Context, x *wq.Execution) error {
			close(started)
			<-ctx.Done() // a slow forge call, cut by shutdown
			return ctx.Err()
		}))
		it := h.create(wq.NewItem{})
		h.start(e)
		<-started
		// A caller out of patience: the grace period ends at once.
		ctx, cancel := context.WithCancel(h.ctx)
		cancel()
		e.Stop(ctx)
		got := h.get(it.ID)
		if !got.LeasedUntil.IsZero() || got.LeaseOwner != "" {
			t.Errorf("lease kept after Stop: until %v owner %q", got.LeasedUntil, got.LeaseOwner)
		}
		if !got.Actionable || got.Phase != wq.PhaseActive {
			t.Errorf("abandoned item not left for the sweep: %+v", got)
		}
	})
}

func TestItemDeadlineYieldsTheWorker(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		var runs atomic.Int32
		// Each step takes 25 s of clock time; the item needs 5 steps, so it
		// crosses the 60 s deadline and must go back to the queue.
		typ := oneAction(nil)
		typ.Decide = func(it *wq.Item, now time.Time) string {
			if it.Dimensions.Needs("needs_act", fmt.Sprint(len(it.Dimensions)), now) && len(it.Dimensions) < 5 {
				return "act"
			}
			return ""
		}
		typ.Executors["act"] = func(ctx context.Context, x *wq.Execution) error {
			runs.Add(1)
			h.clock.Advance(25 * time.Second)
			return x.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{dim("needs_act", fmt.Sprint(len(x.Item.Dimensions)), wq.StatusFalse)}})
		}
		e := h.engine(testConfig("a"), typ)
		it := h.run(e, wq.NewItem{})
		if runs.Load() != 5 {
			t.Errorf("runs %d, want 5", runs.Load())
		}
		if got := h.get(it.ID); got.Actionable {
			t.Error("item still actionable")
		}
		if n := e.Stats().DeadlineYields; n < 1 {
			t.Errorf("the loop crossed the 60 s deadline without yielding its worker (yields: %d)", n)
		}
	})
}

func TestRegisterTwicePanics(t *testing.T) {
	e, err := engine.New(testConfig("a"), nil, nil, nil, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	e.Register(oneAction(markActed))
	defer func() {
		if recover() == nil {
			t.Error("second Register did not panic")
		}
	}()
	e.Register(oneAction(markActed))
}

func TestStartRefusesAnUnregisteredHandledType(t *testing.T) {
	cfg := testConfig("a")
	cfg.HandledTypes = []string{"mr"}
	e, err := engine.New(cfg, nil, nil, nil, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err == nil || !strings.Contains(err.Error(), `"mr"`) {
		t.Errorf("Start = %v, want an error naming mr", err)
	}
}

func TestOldWebhookDeliveriesAreForgottenAfterTheRetention(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		cfg.DeliveryRetention = 24 * time.Hour
		e := h.engine(cfg, oneAction(markActed))
		it := h.create(wq.NewItem{})
		ev := []wq.Event{{ItemID: it.ID, EventType: "e", Body: []byte(`{}`)}}
		deliver := func(id string, at time.Time) (dup bool) {
			t.Helper()
			dup, err := h.store.InsertDelivery(h.ctx, "gitea", id, ev, at)
			if err != nil {
				t.Fatal(err)
			}
			return dup
		}
		deliver("old", h.clock.Now().Add(-25*time.Hour))
		deliver("recent", h.clock.Now().Add(-23*time.Hour))
		if n, err := e.PruneDeliveries(h.ctx); err != nil || n != 1 {
			t.Fatalf("pruned %d, %v; want the one past the retention", n, err)
		}
		if !deliver("recent", h.clock.Now()) {
			t.Error("a delivery within the retention was forgotten: its redelivery would apply twice")
		}
		h.clock.Advance(2 * time.Hour)
		if n, _ := e.PruneDeliveries(h.ctx); n != 1 || deliver("recent", h.clock.Now()) {
			t.Errorf("after the clock passed its retention the delivery is still remembered (pruned %d)", n)
		}
	})
}
