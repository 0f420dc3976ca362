package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/secrets"
)

// faultHooks let tests stop a worker at a chosen point as if the process
// died there: the loop returns at once, without releasing its lease.
type faultHooks struct {
	afterEventApplied func(id wq.ItemID) bool // true: die here
	heartbeatPaused   atomic.Bool             // true: heartbeats do nothing
}

// worker is one run of the loop for one item under one lease.
type worker struct {
	e     *Engine
	name  string
	lease wq.Lease
	typ   *wq.ItemType
	lost  chan struct{} // closed when the heartbeat finds the lease lost
	// logger is made by log on first use.
	logger *slog.Logger
	// id is the item's id as audit entries give it.
	id string
	// lostCounted makes a loop count one lease loss however many of its
	// writes find it.
	lostCounted atomic.Bool
	// exited is set once an action's last write took the exit decision
	// with it (Change.Last): the lease is released, the loop is over.
	exited atomic.Bool
	// scratch is its goroutine's, reused from item to item.
	scratch *scratch
	// heartbeat is the loop's, allocated with it.
	heartbeat heartbeat
}

// scratch is what one worker goroutine reuses from one item to the next
// instead of allocating it for each: foldsExit's item and rows, which
// the decider reads and keeps nothing of.
type scratch struct {
	item wq.Item
	dims []wq.DimensionUpdate
}

// process runs the loop for one item the producer claimed: until the
// deadline, drain events, decide, execute (DESIGN section 5).
func (e *Engine) process(name string, c wq.Claim, sc *scratch) {
	ctx := e.runCtx
	id, lease, item := c.Lease.ItemID, c.Lease, c.Item
	if now := e.clock.Now(); lease.Until.Sub(now) < e.cfg.Lease-e.cfg.Heartbeat {
		// The claim waited for a worker longer than a heartbeat: extend it
		// before the work starts, as the heartbeat would have.
		if err := e.store.ExtendLease(ctx, &lease, now, e.cfg.Lease); err != nil {
			if !errors.Is(err, wq.ErrLeaseLost) && ctx.Err() == nil {
				e.log.Warn("extending a waiting claim failed", "item", id, "worker", name, "err", err)
			}
			e.release(lease)
			return
		}
	}
	typ, ok := e.types[item.ItemType]
	if !ok || !slices.Contains(e.handled, item.ItemType) {
		e.release(lease)
		return
	}
	w := &worker{e: e, name: name, lease: lease, id: id.String(), typ: typ, lost: make(chan struct{}), scratch: sc}
	itemCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.startHeartbeat(itemCtx, cancel)
	end := w.loop(itemCtx, item, c.NoEvents)
	cancel()
	w.heartbeat.stop()
	switch end {
	case loopExited: // FinishProcessing released the lease with the exit
	case loopCrashed: // a simulated death keeps its lease until it expires
	default:
		e.release(w.lease)
	}
}

// log is the engine's logger with the item and the worker named, made on
// first use: most loops log nothing, and a burn-down of small items spent
// a tenth of its allocations making it for every one.
func (w *worker) log() *slog.Logger {
	if w.logger == nil {
		w.logger = w.e.log.With("item", w.lease.ItemID, "worker", w.name)
	}
	return w.logger
}

// itemID is the item's id as a string, made once with the worker: the
// loop's every audit entry names it, and each made it again.
func (w *worker) itemID() string { return w.id }

// release gives up a lease even while shutting down.
func (e *Engine) release(l wq.Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.runCtx), 5*time.Second)
	defer cancel()
	if err := e.store.ReleaseLease(ctx, l); err != nil {
		e.log.Warn("release lease failed; it will expire", "item", l.ItemID, "err", err)
	}
}

// heartbeat extends a loop's lease every Heartbeat, from a timer rather
// than a goroutine of its own: most items finish long before their first
// beat, and a goroutine and a ticker per item were a tenth of the
// engine's CPU in a burn-down. If the lease was lost it cancels the
// item's context so that the loop stops writing.
type heartbeat struct {
	w      *worker
	ctx    context.Context
	cancel context.CancelFunc
	lease  wq.Lease // its own copy: fencing needs only the token, which never changes

	// mu is held for a whole beat, so that stop returns only once no beat
	// runs and none will.
	mu      sync.Mutex
	stopped bool
	timer   clockwork.Timer
}

// startHeartbeat starts beating; heartbeat.stop stops it, after the
// loop's context is cancelled (which ends a beat's write at once).
func (w *worker) startHeartbeat(ctx context.Context, cancel context.CancelFunc) {
	h := &w.heartbeat
	h.w, h.ctx, h.cancel, h.lease = w, ctx, cancel, w.lease
	h.mu.Lock()
	h.timer = w.e.clock.AfterFunc(w.e.cfg.Heartbeat, h.beat)
	h.mu.Unlock()
}

func (h *heartbeat) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.ctx.Err() != nil || h.w.exited.Load() {
		return
	}
	e := h.w.e
	// The next beat is due a heartbeat after this one began, however
	// long this one's write takes, as a ticker's would be.
	h.timer = e.clock.AfterFunc(e.cfg.Heartbeat, h.beat)
	if e.faults.heartbeatPaused.Load() {
		return
	}
	err := e.store.ExtendLease(h.ctx, &h.lease, e.clock.Now(), e.cfg.Lease)
	if errors.Is(err, wq.ErrLeaseLost) {
		h.w.countLeaseLost()
		close(h.w.lost)
		h.cancel()
		h.stopped = true
		h.timer.Stop()
		return
	}
	if err != nil && h.ctx.Err() == nil {
		e.log.Warn("heartbeat failed", "item", h.lease.ItemID, "err", err)
	}
}

func (h *heartbeat) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.timer.Stop()
}

// loopEnd says how a loop ended.
type loopEnd int

const (
	loopStopped loopEnd = iota // lease lost, error, backoff, deadline or shutdown: release the lease
	loopExited                 // clean exit: the item is idle or terminal and the lease is released
	loopCrashed                // a fault hook simulated a crash: keep the lease
)

// loop runs drain, decide, execute until the item is idle or something
// stops it. item is the item as loaded right after the claim; noEvents
// says the claim found no pending event for it.
func (w *worker) loop(ctx context.Context, item *wq.Item, noEvents bool) loopEnd {
	e := w.e
	deadline := e.clock.Now().Add(e.cfg.ItemDeadline)
	// Every event insert bumps the item's revision, so events need draining
	// only when the revision moved since the last drain. Revisions start at
	// 1: the first pass always drains.
	var drainedAt int64
	if noEvents && item != nil {
		drainedAt = item.Revision // nothing to drain at this revision
	}
	for {
		// Stopping, the loop takes no new step: the action in flight
		// finishes within the grace, and the item, still actionable, is
		// released for the next instance (an item of many steps held
		// every shutdown for the whole grace).
		if ctx.Err() != nil || e.stopping.Load() {
			return loopStopped
		}
		if e.clock.Now().After(deadline) {
			e.deadlineYields.Add(1)
			e.queue.Add(w.lease.ItemID) // DDR-44: yield the worker; go to the back of the queue
			return loopStopped
		}
		var err error
		if item == nil {
			if item, err = e.store.GetItem(ctx, w.lease.ItemID); err != nil {
				w.writeFailed(ctx, "load item", err)
				return loopStopped
			}
		}
		if item.Phase.Terminal() {
			// The terminal write cleared the lease and actionable: nothing is
			// left to do or to release, and events still pending are dropped.
			w.dropEvents(ctx, item)
			e.itemsExited.Add(1)
			return loopExited
		}
		// 1. Drain pending events, oldest first.
		if item.Revision != drainedAt {
			applied, crashed, err := w.drainEvents(ctx)
			if crashed {
				return loopCrashed
			}
			if err != nil {
				w.writeFailed(ctx, "drain events", err)
				return loopStopped
			}
			drainedAt = item.Revision
			if applied > 0 {
				item = nil
				continue // load the state the events left
			}
		}
		// 2. Decide.
		now := e.clock.Now()
		action := ""
		if item.Phase == wq.PhaseActive {
			action = w.typ.Decide(item, now)
		}
		if action == "" {
			exited, err := e.store.FinishProcessing(ctx, w.lease, item.Revision, now)
			if err != nil {
				w.writeFailed(ctx, "finish processing", err)
				return loopStopped
			}
			if exited {
				e.itemsExited.Add(1)
				return loopExited
			}
			item = nil
			continue // an event arrived or work was enqueued meanwhile
		}
		if !item.RetryAfter.IsZero() && item.RetryAfter.After(now) {
			return loopStopped // backing off: events were applied, the action waits for the sweep
		}
		// 3. Execute, unless the item is held: then it waits, actionable,
		// and the sweep brings it back to ask again.
		if w.held(ctx, item, action, now) {
			return loopStopped
		}
		next, ok := w.execute(ctx, item, action, now)
		if w.exited.Load() {
			e.itemsExited.Add(1)
			return loopExited // the action's last write took the exit decision
		}
		if !ok {
			return loopStopped
		}
		item = next // nil: load the state the action left
	}
}

// drainEvents applies every pending event, oldest first, and returns how
// many it applied.
func (w *worker) drainEvents(ctx context.Context) (applied int, crashed bool, err error) {
	e := w.e
	for {
		ev, err := e.store.NextEvent(ctx, w.lease.ItemID)
		if err != nil || ev == nil {
			return applied, false, err
		}
		item, err := e.store.GetItem(ctx, w.lease.ItemID)
		if err != nil {
			return applied, false, err
		}
		var result wq.EventResult
		handler, known := w.typ.EventHandlers[ev.EventType]
		if known && item.Phase == wq.PhaseActive {
			result, err = safeHandle(ctx, handler, item, ev)
			if err != nil {
				// A handler that cannot read its event will not read it next
				// time either: drop it, loudly.
				e.log.Error("event handler failed; event dropped", "item", item.ID, "event_type", ev.EventType, "err", err)
				known = false
				result = wq.EventResult{}
			}
		}
		now := e.clock.Now()
		outcome, err := e.store.ApplyEvent(ctx, w.lease, ev, result, now)
		if err != nil {
			return applied, false, err
		}
		applied++
		if !ev.ReceivedAt.IsZero() {
			e.metrics.EventApplied(item.ItemType, now.Sub(ev.ReceivedAt))
		}
		w.auditEvent(ctx, item, ev, result, outcome, known, now)
		if hook := e.faults.afterEventApplied; hook != nil && hook(w.lease.ItemID) {
			return applied, true, nil
		}
		if outcome.NewPhase.Terminal() {
			return applied, false, nil // the terminal write let go of the lease; the loop drops the rest
		}
	}
}

// dropEvents deletes the events still pending for a terminal item and
// audits each as ignored (DDR-37).
func (w *worker) dropEvents(ctx context.Context, item *wq.Item) {
	e := w.e
	dropped, err := e.store.DropEvents(ctx, item.ID)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("drop events of a terminal item failed; they stay until it is retried", "item", item.ID, "err", err)
		}
		return
	}
	now := e.clock.Now()
	for _, ev := range dropped {
		e.audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: wq.AuditEventIgnored, ItemID: w.itemID(),
			ItemType: item.ItemType, Actor: w.name, Trigger: map[string]any{"source": "event", "reason": ignoredReason(true, item.Phase)},
			Metadata: map[string]any{"event_id": ev.ID, "event_type": ev.EventType, "source": ev.Source, "delivery_id": ev.DeliveryID}})
	}
}

func safeHandle(ctx context.Context, h wq.EventHandler, item *wq.Item, ev *wq.Event) (r wq.EventResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return h(ctx, item, ev)
}

// execute runs one action; it returns whether the loop goes on and, when
// it knows it without a load, the item's state after the action (nil:
// load it).
func (w *worker) execute(ctx context.Context, item *wq.Item, action string, now time.Time) (*wq.Item, bool) {
	e := w.e
	exec, ok := w.typ.Executors[action]
	if !ok {
		// An unknown action is a bug in the type: fail the item, record why.
		err := fmt.Errorf("unknown action %q for item type %s", action, item.ItemType)
		return nil, w.recordFailure(ctx, item, action, err, true) && ctx.Err() == nil
	}
	// One trigger for every entry of this action, and of every other run
	// of it: entries' maps are read-only once written (wq.AuditSink).
	trigger := e.triggerOf(action)
	writer := &leaseWriter{w: w, item: item, action: action, trigger: trigger}
	start := time.Now() // wall time: how long the action really ran
	err := safeExecute(ctx, exec, &wq.Execution{Item: item, Action: action, Now: now, Writer: writer, Lease: w.lease})
	e.actionsExecuted.Add(1)
	if w.exited.Load() {
		// The last write held and released the lease with the exit: the
		// action is done, whatever the executor returned after it.
		e.metrics.Executed(item.ItemType, action, executionOutcome(nil, false), time.Since(start))
		if err != nil {
			w.log().Warn("executor failed after its last write; the write stands", "action", action, "err", err)
		}
		e.audit.WriteAudit(ctx, wq.AuditEntry{Time: e.clock.Now(), EventType: wq.AuditAction, ItemID: w.itemID(),
			ItemType: item.ItemType, Actor: w.name, Trigger: trigger})
		return nil, true
	}
	e.metrics.Executed(item.ItemType, action, executionOutcome(err, isLost(w.lost)), time.Since(start))
	if errors.Is(err, wq.ErrSuperseded) && !isLost(w.lost) {
		// Newer work arrived during the action; its write was dropped.
		// Decide again on the new state (the dirty re-run).
		return nil, ctx.Err() == nil
	}
	if errors.Is(err, wq.ErrLeaseLost) || isLost(w.lost) {
		if errors.Is(err, wq.ErrLeaseLost) && !writer.refusedAudited {
			w.refused("executor " + action) // a type-specific fenced write was refused
		}
		return nil, false // another worker owns the item now
	}
	if err != nil {
		e.actionsFailed.Add(1)
		// A failed item goes on to the exit decision, which clears
		// actionable (DDR-49); an item backing off stops here and stays
		// actionable for the sweep.
		return nil, w.recordFailure(ctx, item, action, err, errors.Is(err, wq.ErrPermanent)) && ctx.Err() == nil
	}
	e.audit.WriteAudit(ctx, wq.AuditEntry{Time: e.clock.Now(), EventType: wq.AuditAction, ItemID: w.itemID(),
		ItemType: item.ItemType, Actor: w.name, Trigger: trigger})
	// After a terminal write the lease is gone: Apply cleared the failures
	// before it (or the item failed, and keeps them).
	if failing(item) && !writer.terminal {
		if err := e.store.RecordSuccess(ctx, w.lease, e.clock.Now()); err != nil {
			w.writeFailed(ctx, "record success", err)
			return nil, false
		}
		return nil, true
	}
	return writer.after(), true
}

// held asks the engine's hold about item before its action. A held
// item is parked: its hold's reason becomes its error and it waits
// HoldRecheck, neither counting an attempt nor starting a failing run
// (wq.Failure.Held); the first hold of a reason is audited. It reports
// whether the item is held.
func (w *worker) held(ctx context.Context, item *wq.Item, action string, now time.Time) bool {
	e := w.e
	if e.hold == nil {
		return false
	}
	reason, err := e.hold(ctx, item)
	if err != nil {
		w.log().Warn("could not ask whether the item is held; it waits", "action", action, "err", err)
		reason = "the hold could not be read: " + err.Error()
	}
	if reason == "" {
		return false
	}
	reason = "held: " + reason
	f := wq.Failure{Error: reason, RetryAfter: now.Add(HoldRecheck), Held: true}
	if _, err := e.store.RecordFailure(ctx, w.lease, f, now); err != nil {
		w.writeFailed(ctx, "hold", err)
		return true
	}
	if item.Error != reason {
		e.audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: wq.AuditItemHeld, ItemID: w.itemID(), ItemType: item.ItemType,
			Actor: w.name, OldState: map[string]any{"error": item.Error}, NewState: map[string]any{"error": reason, "retry_after": f.RetryAfter},
			Trigger: map[string]any{"source": "worker", "action": action}})
	}
	return true
}

// failing reports whether item carries a run of failures that a success
// must clear.
func failing(item *wq.Item) bool {
	return item.Attempts > 0 || item.Error != "" || !item.FailingSince.IsZero()
}

// executionOutcome names how an action ended, for metrics; it mirrors
// the decisions execute and recordFailure make.
func executionOutcome(err error, lost bool) string {
	switch {
	case errors.Is(err, wq.ErrSuperseded) && !lost:
		return "superseded"
	case errors.Is(err, wq.ErrLeaseLost) || lost:
		return "lease_lost"
	case err == nil:
		return "succeeded"
	case !errors.Is(err, wq.ErrPermanent) && wq.IsTransient(err):
		return "transient"
	default:
		return "failed"
	}
}

func isLost(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func safeExecute(ctx context.Context, exec wq.Executor, x *wq.Execution) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("executor panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return exec(ctx, x)
}

// recordFailure counts a failed action with capped exponential backoff and
// jitter; at MaxAttempts, or when fail is set, the item fails (DDR-14). A
// transient failure (wq.IsTransient) is not counted: it backs off, at
// least as long as the forge asked (Retry-After), and fails the item only
// once the item has been failing for GiveUpAfter without a success. It
// returns whether the item failed.
func (w *worker) recordFailure(ctx context.Context, item *wq.Item, action string, cause error, fail bool) bool {
	e := w.e
	now := e.clock.Now()
	transient := !fail && wq.IsTransient(cause)
	attempts := item.Attempts
	var delay time.Duration
	if transient {
		since := item.FailingSince
		if since.IsZero() {
			since = now
		}
		fail = now.Sub(since) >= e.cfg.GiveUpAfter
		delay = max(e.transientBackoff(now.Sub(since)), wq.RetryAfterOf(cause))
	} else {
		attempts++
		fail = fail || attempts >= e.cfg.MaxAttempts
		delay = e.backoff(attempts)
	}
	// A forge's error can carry what it was sent (a URL with its
	// credentials): the item and the audit keep it redacted.
	f := wq.Failure{Error: secrets.Text(fmt.Sprintf("%s: %v", action, cause)), Fail: fail, Transient: transient}
	if !fail {
		f.RetryAfter = now.Add(delay)
	}
	if _, err := e.store.RecordFailure(ctx, w.lease, f, now); err != nil {
		w.writeFailed(ctx, "record failure", err)
		return false
	}
	newState := map[string]any{"attempts": attempts, "transient": transient}
	if fail {
		newState["phase"] = wq.PhaseFailed
	} else {
		newState["retry_after"] = f.RetryAfter
	}
	e.audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: wq.AuditActionFailed, ItemID: w.itemID(), ItemType: item.ItemType,
		Actor: w.name, OldState: map[string]any{"phase": item.Phase, "attempts": item.Attempts}, NewState: newState,
		Trigger: map[string]any{"source": "worker", "action": action, "error": f.Error}})
	if fail {
		e.log.Warn("item failed", "item", item.ID, "action", action, "attempts", attempts, "err", cause)
	}
	return fail
}

// backoff is BackoffBase·2^(attempts-1), capped at BackoffMax, with equal
// jitter: between half and all of it, so that items failing together do
// not retry together.
func (e *Engine) backoff(attempts int) time.Duration {
	d := e.cfg.BackoffBase
	for i := 1; i < attempts && d < e.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, e.cfg.BackoffMax)
	return d/2 + rand.N(d/2+1)
}

// transientBackoff is the wait after a transient failure, when the item
// has been failing for failing: about as long again (so waits double
// without a counter), at least BackoffBase and at most BackoffMax, with
// equal jitter.
func (e *Engine) transientBackoff(failing time.Duration) time.Duration {
	d := min(max(failing, e.cfg.BackoffBase), e.cfg.BackoffMax)
	return d/2 + rand.N(d/2+1)
}

// writeFailed handles an error from a write of the loop itself: a lost
// lease is audited as a refused write; anything else is logged.
func (w *worker) writeFailed(ctx context.Context, op string, err error) {
	if errors.Is(err, wq.ErrLeaseLost) {
		w.refused(op)
		return
	}
	if ctx.Err() == nil {
		w.log().Error(op+" failed", "err", err)
	}
}

// countLeaseLost counts this loop's lease loss once.
func (w *worker) countLeaseLost() {
	if w.lostCounted.CompareAndSwap(false, true) {
		w.e.metrics.LeaseLost(w.typ.Name)
	}
}

func (w *worker) refused(op string) {
	e := w.e
	e.writesRefused.Add(1)
	w.countLeaseLost()
	e.audit.WriteAudit(context.WithoutCancel(e.runCtx), wq.AuditEntry{Time: e.clock.Now(), EventType: wq.AuditWriteRefused,
		ItemID: w.itemID(), Actor: w.name,
		Trigger: map[string]any{"source": "worker", "reason": "lease_lost", "operation": op}})
	e.log.Warn("write refused: lease lost", "item", w.lease.ItemID, "worker", w.name, "operation", op)
}

func (w *worker) auditEvent(ctx context.Context, item *wq.Item, ev *wq.Event, r wq.EventResult, a wq.AppliedEvent, known bool, now time.Time) {
	e := w.e
	base := wq.AuditEntry{Time: now, ItemID: w.itemID(), ItemType: item.ItemType, Actor: w.name,
		Metadata: map[string]any{"event_id": ev.ID, "event_type": ev.EventType, "source": ev.Source, "delivery_id": ev.DeliveryID}}
	trigger := map[string]any{"source": "event", "event_type": ev.EventType}
	for k, v := range r.Trigger {
		trigger[k] = v
	}
	if !known || item.Phase != wq.PhaseActive {
		entry := base
		entry.EventType = wq.AuditEventIgnored
		entry.Trigger = map[string]any{"source": "event", "reason": ignoredReason(known, item.Phase)}
		e.audit.WriteAudit(ctx, entry)
		return
	}
	if a.PhaseApplied {
		entry := base
		entry.EventType = wq.AuditPhaseChange
		entry.OldState = map[string]any{"phase": a.OldPhase}
		entry.NewState = map[string]any{"phase": a.NewPhase, "reason": r.Reason}
		entry.Trigger = trigger
		e.audit.WriteAudit(ctx, entry)
	} else if r.Phase != "" && a.Stale {
		trigger["reason"] = "stale_event"
	}
	w.auditDimensions(ctx, item, r.Dimensions, trigger, now)
}

func ignoredReason(known bool, phase wq.Phase) string {
	if !known {
		return "no_handler"
	}
	return "item_" + string(phase)
}

func (w *worker) auditDimensions(ctx context.Context, item *wq.Item, dims []wq.DimensionUpdate, trigger map[string]any, now time.Time) {
	for _, d := range dims {
		old, had := item.Dimensions[d.DimensionKey]
		if d.Status == wq.StatusFalse {
			// True since the row's last write as true; a missing row is
			// true (DDR-48) since the item was made.
			switch {
			case had && old.Status == wq.StatusTrue:
				w.e.metrics.DimensionCleared(item.ItemType, d.Dimension, now.Sub(old.UpdatedAt))
			case !had:
				w.e.metrics.DimensionCleared(item.ItemType, d.Dimension, now.Sub(item.CreatedAt))
			}
		}
		entry := wq.AuditEntry{Time: now, EventType: wq.AuditDimensionChange, ItemID: w.itemID(), ItemType: item.ItemType,
			Actor: w.name, Trigger: trigger}
		if d.PendingUntil.IsZero() {
			entry.NewState = w.e.dimensionStates.of(d.DimensionKey, d.Status)
		} else {
			entry.NewState = map[string]any{"dimension": d.Dimension, "variant": d.Variant, "status": d.Status, "pending_until": d.PendingUntil}
		}
		if old.Status != "" {
			entry.OldState = w.e.dimensionStates.of(d.DimensionKey, old.Status)
		} else {
			// The row's first write: a creation, with no old state (DDR-28).
			entry.Metadata = map[string]any{"first_write": true}
		}
		w.e.audit.WriteAudit(ctx, entry)
	}
}

// leaseWriter is the executor's fenced ItemWriter.
type leaseWriter struct {
	w              *worker
	item           *wq.Item
	action         string
	trigger        map[string]any // the action's audit trigger, shared by its entries
	refusedAudited bool
	terminal       bool // a write moved the item to a terminal phase
	// written are the dimension rows the action wrote, when every write
	// of it wrote rows only (no phase, no error); other writes set
	// reload.
	written []wq.DimensionUpdate
	at      time.Time // when the rows were written
	reload  bool
	last    bool // a Last write was made: no other may follow
}

// storedTime is t as both stores read it back.
func storedTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// after is the item's state once the action's writes are in, when the
// writer knows it without a load: every write set dimension rows only,
// each under the lease and the revision the action saw (else it was
// refused or superseded), so the stored item is the one the action read
// with those rows written. Anything else since has bumped the revision,
// which the next write or the exit decision checks. Nil when it does not
// know (no write, or another kind of write): the loop loads the item.
func (lw *leaseWriter) after() *wq.Item {
	if lw.reload || len(lw.written) == 0 {
		return nil
	}
	return lw.with(lw.written, lw.at)
}

// with is the action's item with the rows written written at at.
func (lw *leaseWriter) with(written []wq.DimensionUpdate, at time.Time) *wq.Item {
	next := new(wq.Item)
	lw.into(next, written, at)
	return next
}

// into makes next the action's item with the rows written written at at,
// reusing next's map of dimensions.
func (lw *leaseWriter) into(next *wq.Item, written []wq.DimensionUpdate, at time.Time) {
	dims := next.Dimensions
	*next = *lw.item
	if dims == nil {
		dims = make(wq.Dimensions, len(lw.item.Dimensions)+len(written))
	}
	clear(dims)
	for k, d := range lw.item.Dimensions {
		dims[k] = d
	}
	for _, u := range written {
		// Times as the stores keep them: UTC, to the microsecond.
		dims[u.DimensionKey] = wq.Dimension{Status: u.Status, Detail: u.Detail,
			PendingUntil: storedTime(u.PendingUntil), UpdatedAt: storedTime(at)}
	}
	next.Dimensions = dims
}

// foldsExit reports whether c, written now, can carry the exit decision:
// it is the action's last write of dimensions alone, every write before
// it was too (so the state it leaves is known without a load), the item
// has no failures for a success to clear, and on that state the decider
// asks for nothing more.
func (lw *leaseWriter) foldsExit(c wq.Change, now time.Time) bool {
	if !c.FoldsExit() || lw.reload || failing(lw.item) || lw.item.Phase != wq.PhaseActive {
		return false
	}
	// The decider is pure and keeps nothing of its input, so the item it
	// decides on is the worker goroutine's scratch copy, rebuilt here from
	// this item alone: no allocation a write.
	sc := lw.w.scratch
	sc.dims = append(append(sc.dims[:0], lw.written...), c.Dimensions...)
	lw.into(&sc.item, sc.dims, now)
	return lw.w.typ.Decide(&sc.item, now) == ""
}

// Apply writes c under the lease, and only if no work was enqueued since
// the executor's item was loaded: an executor never overwrites what it did
// not see. A dropped write returns ErrSuperseded, which the executor
// returns and the loop answers by deciding again.
func (lw *leaseWriter) Apply(ctx context.Context, c wq.Change) error {
	w := lw.w
	if lw.last {
		return fmt.Errorf("engine: action %s wrote after its last write", lw.action)
	}
	lw.last = c.Last
	now := w.e.clock.Now()
	c.SeenRevision = lw.item.Revision
	if lw.foldsExit(c, now) {
		exited, err := w.e.store.ApplyAndFinish(ctx, w.lease, c, now)
		if err != nil {
			return lw.refusedWrite(ctx, err, now)
		}
		lw.written, lw.at = append(lw.written, c.Dimensions...), now
		if exited {
			w.exited.Store(true)
		}
		w.auditDimensions(ctx, lw.item, c.Dimensions, lw.trigger, now)
		return nil
	}
	if c.Phase.Terminal() && c.Phase != wq.PhaseFailed && failing(lw.item) {
		// The action succeeded, and the terminal write clears the lease:
		// the loop's RecordSuccess would come too late (refused as a lost
		// lease) and a completed item would keep the error and retry_after
		// of the failures before. Clear them first. (RecordSuccess leaves
		// the revision alone, so it cannot supersede this write.)
		if err := w.e.store.RecordSuccess(ctx, w.lease, now); err != nil {
			if errors.Is(err, wq.ErrLeaseLost) {
				w.refused("record success (" + lw.action + ")")
				lw.refusedAudited = true
			}
			return err
		}
	}
	old, err := w.e.store.ApplyChange(ctx, w.lease, c, now)
	if err != nil {
		return lw.refusedWrite(ctx, err, now)
	}
	lw.terminal = lw.terminal || c.Phase.Terminal()
	if c.Phase != "" || c.Error != "" {
		lw.reload = true
	} else {
		lw.written, lw.at = append(lw.written, c.Dimensions...), now
	}
	trigger := lw.trigger
	if c.Phase != "" && c.Phase != old {
		w.e.audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: wq.AuditPhaseChange, ItemID: lw.w.itemID(),
			ItemType: lw.item.ItemType, Actor: w.name, OldState: map[string]any{"phase": old},
			NewState: map[string]any{"phase": c.Phase, "reason": c.Reason}, Trigger: trigger})
	}
	w.auditDimensions(ctx, lw.item, c.Dimensions, trigger, now)
	return nil
}

// refusedWrite audits a write the store refused (superseded by newer
// work, or under a lost lease) and returns err for the executor.
func (lw *leaseWriter) refusedWrite(ctx context.Context, err error, now time.Time) error {
	w := lw.w
	switch {
	case errors.Is(err, wq.ErrSuperseded):
		w.e.writesSuperseded.Add(1)
		w.e.audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: wq.AuditWriteSuperseded, ItemID: lw.w.itemID(),
			ItemType: lw.item.ItemType, Actor: w.name, Trigger: map[string]any{"source": "worker", "action": lw.action,
				"reason": "newer_work", "seen_revision": lw.item.Revision}})
	case errors.Is(err, wq.ErrLeaseLost):
		w.refused("apply change (" + lw.action + ")")
		lw.refusedAudited = true
	}
	return err
}

// dimensionStates keeps the audit states of dimension rows ({dimension,
// variant, status}), which a burn-down made twice per item: one map per
// row and status, shared by every entry that names it (an entry's maps
// are read-only, wq.AuditSink). Variants come from the forge (job names)
// without a bound, so it keeps at most maxDimensionStates of them.
type dimensionStates struct {
	m sync.Map // dimensionState → map[string]any
	n atomic.Int64
}

type dimensionState struct {
	key    wq.DimensionKey
	status string
}

const maxDimensionStates = 4096

func (s *dimensionStates) of(k wq.DimensionKey, status string) map[string]any {
	key := dimensionState{k, status}
	if v, ok := s.m.Load(key); ok {
		return v.(map[string]any)
	}
	m := map[string]any{"dimension": k.Dimension, "variant": k.Variant, "status": status}
	if s.n.Load() < maxDimensionStates {
		if v, loaded := s.m.LoadOrStore(key, m); loaded {
			return v.(map[string]any)
		}
		s.n.Add(1)
	}
	return m
}
