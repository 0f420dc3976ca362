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
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// eventLog is a type with no actions whose "note" events are recorded in
// the order the handler sees them, and whose "close" events cancel it.
type eventLog struct {
	seen testkit.Record
}

func (l *eventLog) itemType(exec wq.Executor) wq.ItemType {
	typ := oneAction(exec)
	typ.EventHandlers = map[string]wq.EventHandler{
		"note": func(_ context.Context, it *wq.Item, ev *wq.Event) (wq.EventResult, error) {
			l.seen.Add(ev.DeliveryID)
			return wq.EventResult{Dimensions: []wq.DimensionUpdate{dim("needs_seen", ev.DeliveryID, wq.StatusFalse)}}, nil
		},
		"close": func(context.Context, *wq.Item, *wq.Event) (wq.EventResult, error) {
			return wq.EventResult{Phase: wq.PhaseCancelled, Reason: "closed"}, nil
		},
	}
	return typ
}

func (l *eventLog) got() []string { return l.seen.Lines() }

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

func TestALongActionKeepsItsLeaseByHeartbeats(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		started, release := make(chan struct{}), make(chan struct{})
		var releaseOnce sync.Once
		a := h.engine(testConfig("a"), oneAction(func(ctx context.Context, x *wq.Execution) error {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			return markActed(ctx, x)
		}))
		b := h.engine(testConfig("b"), oneAction(func(ctx context.Context, x *wq.Execution) error {
			t.Error("engine b ran an item whose lease engine a kept")
			return nil
		}))
		// Cleanups run last first: this one before the engines stop.
		t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
		it := h.create(wq.NewItem{})
		h.start(a)
		<-started
		h.start(b)
		cfg := testConfig("a")
		// Three leases' worth of time, a heartbeat at a time: each beat
		// must extend the lease before the next.
		for step := range 3 * int(cfg.Lease/cfg.Heartbeat) {
			h.clock.Advance(cfg.Heartbeat)
			want := h.clock.Now().Add(cfg.Lease - cfg.Heartbeat)
			eventually.True(t, 10*time.Second, fmt.Sprintf("step %d: lease extended past %v", step, want), func() (bool, any) {
				until := h.get(it.ID).LeasedUntil
				return !until.Before(want), "lease until " + until.String()
			})
			if _, err := b.Sweep(h.ctx); err != nil {
				t.Fatal(err)
			}
		}
		releaseOnce.Do(func() { close(release) })
		h.settle(a)
		h.settle(b)
		got := h.get(it.ID)
		if got.Actionable || got.LeaseOwner != "" || got.Dimensions[wq.DimensionKey{Dimension: "needs_act"}].Status != wq.StatusFalse {
			t.Errorf("item not finished by engine a with its lease released: %+v", got)
		}
		if b.Stats().ActionsExecuted != 0 {
			t.Errorf("engine b executed %d actions", b.Stats().ActionsExecuted)
		}
	})
}

func TestFailingAuditSinkNeverBreaksProcessing(t *testing.T) {
	h := newHarness(t, "sqlite")
	e, err := engine.New(testConfig("a"), h.store, h.clock, panickySink{}, testkit.Quiet())
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

func TestStopEndsALoopOfManyStepsAfterTheActionInFlight(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		var runs atomic.Int32
		started, release := make(chan struct{}), make(chan struct{})
		typ := oneAction(nil)
		typ.Decide = func(it *wq.Item, now time.Time) string {
			if len(it.Dimensions) < 5 {
				return "act"
			}
			return ""
		}
		typ.Executors["act"] = func(ctx context.Context, x *wq.Execution) error {
			if runs.Add(1) == 1 {
				close(started)
				<-release // the action in flight when Stop comes
			}
			return x.Writer.Apply(context.WithoutCancel(ctx), wq.Change{Dimensions: []wq.DimensionUpdate{
				dim("needs_act", fmt.Sprint(len(x.Item.Dimensions)), wq.StatusFalse)}})
		}
		e := h.engine(testConfig("a"), typ)
		it := h.create(wq.NewItem{})
		h.start(e)
		<-started
		stopped := make(chan struct{})
		go func() { e.Stop(context.Background()); close(stopped) }() // the grace is on the fake clock: it never ends
		// The action is released once Stop has begun: released before,
		// it finished before the stop and the loop rightly took its next
		// step (a race in this test, seen on a slow machine).
		eventually.True(t, 10*time.Second, "Stop begins", func() (bool, any) { return e.Stopping(), nil })
		close(release)
		select {
		case <-stopped:
		case <-time.After(20 * time.Second):
			t.Fatal("Stop waited for the item's remaining steps")
		}
		got := h.get(it.ID)
		if n := runs.Load(); n != 1 || len(got.Dimensions) != 1 {
			t.Errorf("%d actions ran, %d steps written; want the one in flight only", n, len(got.Dimensions))
		}
		if !got.LeasedUntil.IsZero() || got.LeaseOwner != "" || !got.Actionable || got.Phase != wq.PhaseActive {
			t.Errorf("the item was not released for the next instance: %+v", got)
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
	e, err := engine.New(testConfig("a"), nil, nil, &audit.Memory{}, testkit.Quiet())
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
	e, err := engine.New(cfg, nil, nil, &audit.Memory{}, testkit.Quiet())
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
			d, err := h.store.InsertDelivery(h.ctx, "gitea", id, ev, at)
			dup = d.Duplicate
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

// forgeDown is what an adapter returns while the forge refuses connections.
func forgeDown(n int32) error {
	return &wq.ForgeError{Kind: wq.ForgeTransient, Op: "gitea: branch head o/r@workqueue/x",
		Err: fmt.Errorf("dial tcp 127.0.0.1:3000: connect: connection refused (%d)", n)}
}

// closeTo reports whether a time read back from a store is t: stores keep
// microseconds.
func closeTo(got, want time.Time) bool {
	d := got.Sub(want)
	return !got.IsZero() && d > -time.Millisecond && d < time.Millisecond
}

// untilRetry moves the clock to the item's retry_after, if it is in the
// future, and lets the engine sweep and settle. It returns the item after.
func (h *harness) untilRetry(e *engine.Engine, id wq.ItemID) *wq.Item {
	h.t.Helper()
	if it := h.get(id); it.RetryAfter.After(h.clock.Now()) {
		h.clock.Advance(it.RetryAfter.Sub(h.clock.Now()))
	}
	h.settle(e)
	return h.get(id)
}

func TestTransientFailuresKeepTheItemActiveUntilTheForgeReturns(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		cfg.MaxAttempts = 5
		start := h.clock.Now()
		back := start.Add(10 * time.Minute)
		var calls atomic.Int32
		e := h.engine(cfg, oneAction(func(ctx context.Context, x *wq.Execution) error {
			n := calls.Add(1)
			if x.Now.Before(back) {
				return fmt.Errorf("read the branch: %w", forgeDown(n))
			}
			return x.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: "merged"})
		}))
		it := h.run(e, wq.NewItem{})

		got := h.get(it.ID)
		for rounds := 0; got.Phase == wq.PhaseActive; rounds++ {
			if rounds > 100 {
				t.Fatalf("still active after %d rounds at %v: %+v", rounds, h.clock.Now().Sub(start), got)
			}
			if got.Attempts != 0 || !closeTo(got.FailingSince, start) || !strings.Contains(got.Error, "transient") ||
				!got.RetryAfter.After(h.clock.Now()) {
				t.Fatalf("%v into the outage: attempts %d (want 0), failing since %v (want %v), error %q, retry_after %v (want after %v)",
					h.clock.Now().Sub(start), got.Attempts, got.FailingSince, start, got.Error, got.RetryAfter, h.clock.Now())
			}
			got = h.untilRetry(e, it.ID)
		}

		failures := int(calls.Load()) - 1
		if got.Phase != wq.PhaseCompleted || got.Reason != "merged" {
			t.Fatalf("after the outage: phase %s reason %q error %q, want completed/merged", got.Phase, got.Reason, got.Error)
		}
		if failures < cfg.MaxAttempts {
			t.Fatalf("the outage caused %d failures, fewer than max attempts %d: the test proves nothing", failures, cfg.MaxAttempts)
		}
		if got.Attempts != 0 || got.Error != "" || !got.FailingSince.IsZero() || !got.RetryAfter.IsZero() {
			t.Errorf("after success: attempts %d error %q failing since %v retry_after %v; want all cleared",
				got.Attempts, got.Error, got.FailingSince, got.RetryAfter)
		}
		if refused := h.audit.Entries(wq.AuditWriteRefused); len(refused) != 0 || e.Stats().WritesRefused != 0 {
			t.Errorf("the completing write was followed by a refused write: %v", refused)
		}
		if late := h.clock.Now().Sub(back); late > cfg.BackoffMax {
			t.Errorf("completed %v after the forge came back, want within the backoff cap %v", late, cfg.BackoffMax)
		}
		audited := h.audit.Entries(wq.AuditActionFailed)
		if len(audited) != failures {
			t.Errorf("audited %d failures, want %d", len(audited), failures)
		}
		for _, a := range audited {
			if a.NewState["transient"] != true || a.NewState["phase"] != nil {
				t.Errorf("failure audited as %v, want transient and no phase change", a.NewState)
			}
		}
	})
}

func TestTransientFailuresFailTheItemAfterGiveUpAfter(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		cfg.GiveUpAfter = time.Hour
		start := h.clock.Now()
		var mu sync.Mutex
		var last error
		var calls atomic.Int32
		e := h.engine(cfg, oneAction(func(context.Context, *wq.Execution) error {
			mu.Lock()
			defer mu.Unlock()
			last = forgeDown(calls.Add(1))
			return last
		}))
		it := h.run(e, wq.NewItem{})

		got := h.get(it.ID)
		for rounds := 0; got.Phase == wq.PhaseActive; rounds++ {
			if rounds > 100 {
				t.Fatalf("still active %v after the first failure: %+v", h.clock.Now().Sub(start), got)
			}
			got = h.untilRetry(e, it.ID)
		}

		failedAfter := h.clock.Now().Sub(start)
		if got.Phase != wq.PhaseFailed {
			t.Fatalf("phase %s, want failed", got.Phase)
		}
		if failedAfter < cfg.GiveUpAfter || failedAfter > cfg.GiveUpAfter+cfg.BackoffMax {
			t.Errorf("failed %v after the first failure, want between %v and %v", failedAfter, cfg.GiveUpAfter, cfg.GiveUpAfter+cfg.BackoffMax)
		}
		mu.Lock()
		want := "act: " + last.Error()
		mu.Unlock()
		if got.Error != want {
			t.Errorf("error %q, want the last one %q", got.Error, want)
		}
		if got.Actionable || got.FinishedAt.IsZero() || got.Attempts != 0 {
			t.Errorf("failed item: actionable %v finished at %v attempts %d", got.Actionable, got.FinishedAt, got.Attempts)
		}
		n := calls.Load()
		h.clock.Advance(2 * cfg.GiveUpAfter)
		if h.settle(e); calls.Load() != n {
			t.Errorf("a failed item was tried again: %d calls, want %d", calls.Load(), n)
		}
		audited := h.audit.Entries(wq.AuditActionFailed)
		if len(audited) == 0 || audited[len(audited)-1].NewState["phase"] != wq.PhaseFailed {
			t.Errorf("the give-up was not audited as a failure: %v", audited)
		}
	})
}

func TestRateLimitedItemIsNotTriedBeforeRetryAfter(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		var calls atomic.Int32
		e := h.engine(cfg, oneAction(func(ctx context.Context, x *wq.Execution) error {
			if calls.Add(1) == 1 {
				return fmt.Errorf("commit: %w", &wq.ForgeError{Kind: wq.ForgeRateLimited, Op: "gitea: commit o/r@workqueue/x",
					Status: 429, Message: "slow down", RetryAfter: 30 * time.Second})
			}
			return markActed(ctx, x)
		}))
		it := h.run(e, wq.NewItem{})

		limitedAt := h.clock.Now()
		got := h.get(it.ID)
		if got.RetryAfter.Before(limitedAt.Add(30*time.Second)) || got.Attempts != 0 || got.Phase != wq.PhaseActive ||
			!strings.Contains(got.Error, "rate_limited") {
			t.Fatalf("after a 429 asking for 30s: retry_after %v (want at least %v) attempts %d phase %s error %q",
				got.RetryAfter, limitedAt.Add(30*time.Second), got.Attempts, got.Phase, got.Error)
		}
		// The engine's own backoff after a first failure is at most
		// BackoffBase (10s): only Retry-After keeps the item waiting past it.
		h.clock.Advance(29 * time.Second)
		if n := h.settle(e); n != 0 || calls.Load() != 1 {
			t.Fatalf("29s after the 429: sweep found %d, calls %d; want 0 and 1", n, calls.Load())
		}
		h.clock.Advance(2 * time.Second)
		h.settle(e)
		if calls.Load() != 2 {
			t.Fatalf("31s after the 429: calls %d, want 2", calls.Load())
		}
		if got := h.get(it.ID); got.Actionable || got.Error != "" {
			t.Errorf("after the retry: actionable %v error %q", got.Actionable, got.Error)
		}
	})
}

func TestOnlyTransientFailuresEscapeMaxAttempts(t *testing.T) {
	const rounds = 7
	down := &wq.ForgeError{Kind: wq.ForgeTransient, Op: "gitea: commit o/r@workqueue/x", Message: "connection refused"}
	cases := []struct {
		name      string
		err       error
		wantCalls int32
		wantPhase wq.Phase
		wantTries int // attempts
	}{
		{"an unclassified error fails the item at max attempts", errors.New("disk full"), 5, wq.PhaseFailed, 5},
		{"a forge conflict fails the item at max attempts",
			fmt.Errorf("commit: %w", &wq.ForgeError{Kind: wq.ForgeConflict, Op: "gitea: commit", Status: 409}), 5, wq.PhaseFailed, 5},
		{"ErrPermanent fails the item at once", fmt.Errorf("%w: project gone", wq.ErrPermanent), 1, wq.PhaseFailed, 1},
		{"a permanent forge error as mr wraps it fails the item at once",
			fmt.Errorf("%w: %s: %v", wq.ErrPermanent, "commit", &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: commit", Status: 403}),
			1, wq.PhaseFailed, 1},
		{"a permanent mark wins over a transient forge error", fmt.Errorf("%w: commit: %w", wq.ErrPermanent, down), 1, wq.PhaseFailed, 1},
		{"a transient forge error is not counted", fmt.Errorf("commit: %w", down), rounds, wq.PhaseActive, 0},
		{"a rate limit is not counted",
			&wq.ForgeError{Kind: wq.ForgeRateLimited, Op: "gitea: commit", Status: 429}, rounds, wq.PhaseActive, 0},
		{"an unavailable store is not counted", wq.Errorf(wq.EUNAVAILABLE, "database unreachable"), rounds, wq.PhaseActive, 0},
		{"an error marked ErrTransient is not counted", fmt.Errorf("%w: lock timeout", wq.ErrTransient), rounds, wq.PhaseActive, 0},
	}
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		cfg.MaxAttempts = 5
		// One item per case, on one engine: the executor answers by item.
		errs := map[wq.ItemID]error{}
		calls := map[wq.ItemID]*atomic.Int32{}
		ids := make([]wq.ItemID, len(cases))
		for i, tc := range cases {
			it := h.create(wq.NewItem{})
			ids[i], errs[it.ID], calls[it.ID] = it.ID, tc.err, new(atomic.Int32)
		}
		e := h.engine(cfg, oneAction(func(_ context.Context, x *wq.Execution) error {
			calls[x.Item.ID].Add(1)
			return errs[x.Item.ID]
		}))
		h.start(e)
		h.settle(e)
		for range rounds - 1 {
			// Past the longest backoff: every item still active is due.
			h.clock.Advance(cfg.BackoffMax + time.Minute)
			h.settle(e)
		}
		for i, tc := range cases {
			got := h.get(ids[i])
			if n := calls[ids[i]].Load(); n != tc.wantCalls || got.Phase != tc.wantPhase || got.Attempts != tc.wantTries {
				t.Errorf("%s: calls %d phase %s attempts %d; want %d, %s, %d",
					tc.name, n, got.Phase, got.Attempts, tc.wantCalls, tc.wantPhase, tc.wantTries)
			}
			if want := "act: " + tc.err.Error(); got.Error != want {
				t.Errorf("%s: error %q, want %q", tc.name, got.Error, want)
			}
		}
	})
}

func TestSuccessAfterTransientFailuresStartsAFreshGiveUpClock(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		cfg.GiveUpAfter = time.Hour
		var down atomic.Bool
		var calls atomic.Int32
		// The first failure is not transient, so that attempts is not 0
		// when the outage ends. A success asks to act again a minute later.
		e := h.engine(cfg, oneAction(func(ctx context.Context, x *wq.Execution) error {
			n := calls.Add(1)
			switch {
			case n == 1:
				return errors.New("flaky")
			case down.Load():
				return forgeDown(n)
			}
			again := dim("needs_act", "", wq.StatusTrue)
			again.PendingUntil = x.Now.Add(time.Minute)
			return x.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{again}})
		}))
		it := h.create(wq.NewItem{})
		down.Store(true)
		firstStart := h.clock.Now()
		h.start(e)
		h.settle(e)

		// A first outage of 50 minutes.
		got := h.get(it.ID)
		for h.clock.Now().Sub(firstStart) < 50*time.Minute {
			got = h.untilRetry(e, it.ID)
			if got.Phase != wq.PhaseActive || got.Attempts != 1 || !closeTo(got.FailingSince, firstStart) {
				t.Fatalf("%v into the first outage: phase %s attempts %d failing since %v; want active, 1, %v",
					h.clock.Now().Sub(firstStart), got.Phase, got.Attempts, got.FailingSince, firstStart)
			}
		}
		down.Store(false)
		got = h.untilRetry(e, it.ID)
		if got.Phase != wq.PhaseActive || got.Attempts != 0 || !got.FailingSince.IsZero() || got.Error != "" || !got.RetryAfter.IsZero() {
			t.Fatalf("after a success: phase %s attempts %d failing since %v error %q retry_after %v; want active and all cleared",
				got.Phase, got.Attempts, got.FailingSince, got.Error, got.RetryAfter)
		}

		// A second outage starts with the next action, a minute later.
		down.Store(true)
		h.clock.Advance(time.Minute)
		secondStart := h.clock.Now()
		h.settle(e)
		for h.clock.Now().Sub(secondStart) < 30*time.Minute {
			got = h.get(it.ID)
			// The item has been failing for more than an hour in all, but
			// only for minutes since the success.
			if got.Phase != wq.PhaseActive || got.Attempts != 0 || !closeTo(got.FailingSince, secondStart) {
				t.Fatalf("%v into the second outage (%v after the first began): phase %s attempts %d failing since %v; want active, 0, %v",
					h.clock.Now().Sub(secondStart), h.clock.Now().Sub(firstStart), got.Phase, got.Attempts, got.FailingSince, secondStart)
			}
			got = h.untilRetry(e, it.ID)
		}
		for rounds := 0; got.Phase == wq.PhaseActive; rounds++ {
			if rounds > 100 {
				t.Fatalf("still active %v into the second outage", h.clock.Now().Sub(secondStart))
			}
			got = h.untilRetry(e, it.ID)
		}
		if failedAfter := h.clock.Now().Sub(secondStart); got.Phase != wq.PhaseFailed || failedAfter < cfg.GiveUpAfter {
			t.Errorf("phase %s %v into the second outage, want failed no sooner than %v", got.Phase, failedAfter, cfg.GiveUpAfter)
		}
	})
}

// An engine tells the store's registry which types its instance handles:
// the API flags submissions of a type nobody handles. It records them at
// its first sweep, then at most every half sweep interval: an idle
// engine's sweeps (one per interval) all record, a burn-down's
// back-to-back sweeps do not each wait for an upsert and its commit.
func TestAnEngineRecordsTheTypesItHandlesOncePerHalfSweepInterval(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		h := newHarness(t, kind)
		reg := &countingRegistry{Store: h.store}
		cfg := testConfig("instance-a")
		cfg.SweepInterval = time.Minute
		cfg.SweepBatch = 2 // ten due items: five full sweeps back to back, and one more
		var ids []wq.ItemID
		for range 10 {
			ids = append(ids, h.create(wq.NewItem{}).ID)
		}
		e, err := engine.New(cfg, reg, h.clock, h.audit, testkit.Quiet())
		if err != nil {
			t.Fatal(err)
		}
		e.Register(wq.ItemType{Name: "test", Decide: func(*wq.Item, time.Time) string { return "" }})
		t.Cleanup(func() { e.Stop(context.Background()) })
		h.start(e)
		eventually.True(t, 10*time.Second, "every item exited", func() (bool, any) {
			left := 0
			for _, id := range ids {
				if h.get(id).Actionable {
					left++
				}
			}
			return left == 0, left
		})
		if err := e.WaitIdle(h.ctx); err != nil {
			t.Fatal(err)
		}
		if n := reg.records.Load(); n != 1 {
			t.Errorf("the sweeps of one burn-down recorded the handled types %d times; want once", n)
		}
		if last, err := reg.LastHandled(h.ctx, "test"); err != nil || !last.Equal(t0) {
			t.Fatalf("after the first sweep: last handled %v, %v; want %v", last, err, t0)
		}
		if last, _ := reg.LastHandled(h.ctx, "other"); !last.IsZero() {
			t.Errorf("a type the engine does not handle was recorded at %v", last)
		}

		// The interval's sweep records again.
		h.clock.Advance(cfg.SweepInterval)
		eventually.True(t, 10*time.Second, "the next interval's sweep records", func() (bool, any) {
			last, err := reg.LastHandled(h.ctx, "test")
			return err == nil && last.Equal(t0.Add(cfg.SweepInterval)), last
		})
	})
}

// countingRegistry is a store that counts the engine's records of its
// handled types.
type countingRegistry struct {
	wq.Store
	records atomic.Int64
}

func (c *countingRegistry) RecordHandlers(ctx context.Context, instance string, types []string, now time.Time) error {
	c.records.Add(1)
	return c.Store.(wq.HandlerRegistry).RecordHandlers(ctx, instance, types, now)
}

func (c *countingRegistry) LastHandled(ctx context.Context, itemType string) (time.Time, error) {
	return c.Store.(wq.HandlerRegistry).LastHandled(ctx, itemType)
}

// After an action that wrote dimension rows only, the loop decides on the
// state it knows without loading the item again; an event that arrived
// right after the write (between it and the exit) must still be applied
// and acted on at once, not left for the sweep: the exit decision's
// revision check sends the loop back to load and drain.
func TestAnEventRightAfterAnActionsWriteIsActedOnAtOnce(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		h := newHarness(t, kind)
		key := func(d string) wq.DimensionKey { return wq.DimensionKey{Dimension: d} }
		set := func(d, s string) wq.DimensionUpdate { return wq.DimensionUpdate{DimensionKey: key(d), Status: s} }
		var acted atomic.Int32
		typ := wq.ItemType{Name: "test",
			Decide: func(it *wq.Item, now time.Time) string {
				switch {
				case it.Dimensions.Needs("needs_a", "", now):
					return "a"
				case it.Dimensions[key("needs_b")].Status == wq.StatusTrue:
					return "b"
				}
				return ""
			},
			Executors: map[string]wq.Executor{
				"a": func(ctx context.Context, x *wq.Execution) error {
					if err := x.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{set("needs_a", wq.StatusFalse)}}); err != nil {
						return err
					}
					h.insertEvent(x.Item.ID, "d-after-write", "ask_b", h.clock.Now()) // a webhook, just after the write
					acted.Add(1)
					return nil
				},
				"b": func(ctx context.Context, x *wq.Execution) error {
					acted.Add(1)
					return x.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{set("needs_b", wq.StatusFalse)}})
				},
			},
			EventHandlers: map[string]wq.EventHandler{
				"ask_b": func(context.Context, *wq.Item, *wq.Event) (wq.EventResult, error) {
					return wq.EventResult{Dimensions: []wq.DimensionUpdate{set("needs_b", wq.StatusTrue)}}, nil
				},
			},
		}
		e := h.engine(testConfig("w"), typ)
		it := h.create(wq.NewItem{})
		h.start(e)
		ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
		defer cancel()
		if err := e.WaitSwept(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitIdle(ctx); err != nil { // no sweep after this: the loop alone
			t.Fatal(err)
		}
		got := h.get(it.ID)
		if acted.Load() != 2 || got.Dimensions[key("needs_b")].Status != wq.StatusFalse || got.Actionable {
			t.Errorf("actions run %d, needs_b %q, actionable %v; want a then b at once, and the item idle",
				acted.Load(), got.Dimensions[key("needs_b")].Status, got.Actionable)
		}
	})
}
