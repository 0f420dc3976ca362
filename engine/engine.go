package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
)

// Config tunes the engine. DefaultConfig holds the defaults, and every
// field must be set (New refuses zero values it cannot use); the program's
// composition root fills it from the configuration's processing section.
type Config struct {
	Workers       int           // concurrent items (DDR-41)
	Lease         time.Duration // how long a claim holds without a heartbeat
	Heartbeat     time.Duration // how often a held lease is extended; Lease/3 by default
	SweepInterval time.Duration // how often the sweep looks for due items
	SweepBatch    int           // items the sweep takes per query
	// ClaimBatch is how many queued items the producer leases in one
	// claim (one statement on PostgreSQL, one transaction on SQLite), and
	// how many claimed items may wait for a worker.
	ClaimBatch   int
	ItemDeadline time.Duration // wall-clock time one item may hold a worker (DDR-44)
	MaxAttempts  int           // consecutive failures that were not transient before an item fails
	// GiveUpAfter is how long an item may fail transiently without a break
	// (the forge or database unreachable, 5xx, rate limited) before it
	// fails: transient failures back off but do not count toward
	// MaxAttempts, so an outage shorter than this fails nothing.
	GiveUpAfter   time.Duration
	BackoffBase   time.Duration // backoff after the first failure; doubles per failure
	BackoffMax    time.Duration // backoff cap
	ShutdownGrace time.Duration // how long Stop lets the actions in flight finish
	HandledTypes  []string      // item types this instance processes; none means none (DDR-25)
	// DeliveryRetention is how long a webhook delivery id is remembered,
	// so that a redelivery within it is stored once. Forges retry for
	// hours at most; the default is a week.
	DeliveryRetention time.Duration
	Owner             string // lease owner name, e.g. host:pid
}

// DefaultConfig returns the engine defaults; the configuration file's
// processing section overrides them.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		Workers:           10,
		Lease:             60 * time.Second,
		Heartbeat:         20 * time.Second,
		SweepInterval:     60 * time.Second,
		SweepBatch:        1000,
		ClaimBatch:        32,
		ItemDeadline:      60 * time.Second,
		MaxAttempts:       5,
		GiveUpAfter:       24 * time.Hour,
		BackoffBase:       10 * time.Second,
		BackoffMax:        10 * time.Minute,
		ShutdownGrace:     30 * time.Second,
		DeliveryRetention: 7 * 24 * time.Hour,
		Owner:             fmt.Sprintf("%s:%d", host, os.Getpid()),
	}
}

// validateConfig refuses a configuration the engine cannot run with.
func validateConfig(c Config) error {
	switch {
	case c.Workers < 1:
		return errors.New("workers must be at least 1")
	case c.Lease <= 0 || c.Heartbeat <= 0 || c.Heartbeat >= c.Lease:
		return errors.New("lease must be positive and heartbeat shorter than it")
	case c.SweepInterval <= 0 || c.SweepBatch < 1:
		return errors.New("sweep interval and batch must be positive")
	case c.ClaimBatch < 1:
		return errors.New("claim batch must be at least 1")
	case c.ItemDeadline <= 0 || c.MaxAttempts < 1 || c.BackoffBase <= 0 || c.BackoffMax < c.BackoffBase:
		return errors.New("item deadline, max attempts and backoff must be positive")
	case c.GiveUpAfter <= 0:
		return errors.New("give-up time must be positive")
	case c.DeliveryRetention <= 0:
		return errors.New("delivery retention must be positive")
	}
	return nil
}

// Stats are running totals since the engine started.
type Stats struct {
	ItemsExited      int64 // loops that ended with the item idle or terminal
	ActionsExecuted  int64
	ActionsFailed    int64
	WritesRefused    int64 // fenced writes refused because the lease was lost
	WritesSuperseded int64 // executor writes dropped because newer work arrived meanwhile
	DeadlineYields   int64 // loops that gave up their worker at the item deadline (DDR-44)
}

// Engine processes items of its handled types.
type Engine struct {
	cfg     Config
	store   wq.Store
	clock   clockwork.Clock
	audit   wq.AuditSink
	log     *slog.Logger
	types   map[string]*wq.ItemType
	handled []string
	// triggers are the audit triggers of the registered types' actions,
	// made once: a worker's entries share its action's (read-only, as
	// every entry's maps are once written).
	triggers map[string]map[string]any
	// dimensionStates are the audit states of dimension rows, shared.
	dimensionStates dimensionStates
	queue           *queue
	// dueClaimer is the store, when it can claim due items itself;
	// dueClaimFailed says its last claim failed since the sweep loop
	// last looked, which then claims the next backlog by id.
	dueClaimer     wq.DueClaimer
	dueClaimFailed atomic.Bool
	// claims carries the producer's leased items to the workers; its
	// capacity (ClaimBatch) bounds how many leases wait unheartbeated.
	claims chan wq.Claim

	started   atomic.Bool
	stopping  atomic.Bool // claims still waiting for a worker are released, not processed
	stopOnce  sync.Once
	runCtx    context.Context // cancelled when the grace period ends
	cancelRun context.CancelFunc
	sweepStop context.CancelFunc
	wg        sync.WaitGroup

	itemsExited, actionsExecuted, actionsFailed, writesRefused, writesSuperseded, deadlineYields atomic.Int64

	listening     chan struct{} // closed once the wake-up listener is subscribed
	swept         chan struct{} // closed once the first sweep after Start has run
	listeningOnce sync.Once

	faults  faultHooks
	metrics Metrics // noMetrics unless SetMetrics
	hold    Hold    // nil: no item is held
}

// Hold says why an item must not act now, before the engine runs its
// action: "" when it may. The composition root gives it the freezes of
// package identity, so that an item whose creator an admin froze makes
// no forge write; the engine never names identities. An error holds the
// item too (a hold that cannot be read is not a permission to write).
type Hold func(ctx context.Context, item *wq.Item) (reason string, err error)

// HoldRecheck is how long a held item waits before the engine asks the
// hold again: once the hold ends, the item goes on within it, on
// whichever instance sweeps it.
const HoldRecheck = time.Minute

// SetHold makes the engine ask h before every action. Call it before
// Start.
func (e *Engine) SetHold(h Hold) {
	if e.started.Load() {
		panic("engine: SetHold after Start")
	}
	e.hold = h
}

// New returns an engine on store, writing its audit entries to sink (the
// engine builds no sink of its own). clock may be nil (the real clock).
// Register item types before Start.
func New(cfg Config, store wq.Store, clock clockwork.Clock, sink wq.AuditSink, log *slog.Logger) (*Engine, error) {
	if err := validateConfig(cfg); err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	if log == nil {
		log = slog.Default()
	}
	if sink == nil {
		return nil, errors.New("engine: no audit sink")
	}
	return &Engine{
		cfg:       cfg,
		store:     store,
		clock:     clock,
		audit:     audit.Safe(sink, log),
		log:       log.With("component", "engine"),
		types:     map[string]*wq.ItemType{},
		triggers:  map[string]map[string]any{},
		queue:     newQueue(),
		listening: make(chan struct{}),
		swept:     make(chan struct{}),
		metrics:   noMetrics{},
	}, nil
}

// Register adds an item type. Registering a name twice, or after Start, is
// a programming error and panics.
func (e *Engine) Register(t wq.ItemType) {
	if e.started.Load() {
		panic("engine: Register after Start")
	}
	if t.Name == "" || t.Decide == nil {
		panic("engine: item type needs a name and a decider")
	}
	if _, dup := e.types[t.Name]; dup {
		panic(fmt.Sprintf("engine: item type %q registered twice", t.Name))
	}
	e.types[t.Name] = &t
	for action := range t.Executors {
		if _, ok := e.triggers[action]; !ok {
			e.triggers[action] = actionTrigger(action)
		}
	}
}

// actionTrigger is the audit trigger of a worker's action.
func actionTrigger(action string) map[string]any {
	return map[string]any{"source": "worker", "action": action}
}

// triggerOf is action's trigger: the one made at Register, or a new one
// for an executor added to its type since.
func (e *Engine) triggerOf(action string) map[string]any {
	if t, ok := e.triggers[action]; ok {
		return t
	}
	return actionTrigger(action)
}

// Types returns the names of the registered item types, sorted.
func (e *Engine) Types() []string { return slices.Sorted(maps.Keys(e.types)) }

// Start starts the workers and the sweep, which runs at once and then every
// SweepInterval. Every handled type must be registered.
func (e *Engine) Start(ctx context.Context) error {
	for _, name := range e.cfg.HandledTypes {
		if _, ok := e.types[name]; !ok {
			return fmt.Errorf("handled type %q is not a registered item type (have %v)", name, e.Types())
		}
	}
	if !e.started.CompareAndSwap(false, true) {
		return errors.New("engine: started twice")
	}
	e.handled = slices.Clone(e.cfg.HandledTypes)
	e.dueClaimer, _ = e.store.(wq.DueClaimer)
	e.runCtx, e.cancelRun = context.WithCancel(context.WithoutCancel(ctx))
	var sweepCtx context.Context
	sweepCtx, e.sweepStop = context.WithCancel(e.runCtx)
	e.claims = make(chan wq.Claim, e.cfg.ClaimBatch)
	for i := range e.cfg.Workers {
		e.wg.Add(1)
		go e.work(fmt.Sprintf("%s/w%d", e.cfg.Owner, i))
	}
	// Claimers run claims side by side, enough of them to keep every
	// worker fed: one claim of ClaimBatch items per ClaimBatch workers, at
	// most four. One alone was the bottleneck of a hundred workers.
	claimers := min(4, (e.cfg.Workers+e.cfg.ClaimBatch-1)/e.cfg.ClaimBatch)
	var producing sync.WaitGroup
	for range claimers {
		producing.Add(1)
		go e.produce(&producing)
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		producing.Wait()
		close(e.claims)
	}()
	e.wg.Add(1)
	go e.sweepLoop(sweepCtx)
	if l, ok := e.store.(wq.WakeupListener); ok && len(e.handled) > 0 {
		e.wg.Add(1)
		go e.listenLoop(sweepCtx, l)
	}
	e.log.Info("engine started", "workers", e.cfg.Workers, "handled_types", e.handled)
	return nil
}

// Notify hands an item to the worker pool if this engine handles its type.
// It never blocks.
func (e *Engine) Notify(itemType string, id wq.ItemID) {
	if slices.Contains(e.handled, itemType) {
		e.queue.Add(id)
	}
}

// WaitListening blocks until the engine hears other instances' wake-ups
// (PostgreSQL), or ctx ends. For tests: a wake-up sent before it would
// only be found by the sweep.
func (e *Engine) WaitListening(ctx context.Context) error {
	select {
	case <-e.listening:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitSwept blocks until the sweep Start begins with has run, or ctx
// ends. For tests: an item created before it may be found by that sweep
// and processed at once.
func (e *Engine) WaitSwept(ctx context.Context) error {
	select {
	case <-e.swept:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitIdle blocks until no item is queued or being processed. For tests
// and benchmarks: it waits on the queue's signal, not on time.
func (e *Engine) WaitIdle(ctx context.Context) error { return e.queue.WaitIdle(ctx) }

// Stats returns running totals.
func (e *Engine) Stats() Stats {
	return Stats{
		ItemsExited:      e.itemsExited.Load(),
		ActionsExecuted:  e.actionsExecuted.Load(),
		ActionsFailed:    e.actionsFailed.Load(),
		WritesRefused:    e.writesRefused.Load(),
		WritesSuperseded: e.writesSuperseded.Load(),
		DeadlineYields:   e.deadlineYields.Load(),
	}
}

// Stop stops the sweep and the intake, lets the actions in flight finish
// within ShutdownGrace (or until ctx ends; no loop starts another), then
// cancels them; every worker releases its lease on the way out (DDR-36).
func (e *Engine) Stop(ctx context.Context) {
	if !e.started.Load() {
		return
	}
	e.stopOnce.Do(func() {
		e.stopping.Store(true)
		e.sweepStop()
		e.queue.Close()
		done := make(chan struct{})
		go func() { e.wg.Wait(); close(done) }()
		grace := e.clock.NewTimer(e.cfg.ShutdownGrace)
		defer grace.Stop()
		select {
		case <-done:
		case <-grace.Chan():
			e.log.Warn("shutdown grace period over: abandoning in-flight items")
		case <-ctx.Done():
		}
		e.cancelRun()
		<-done
		e.log.Info("engine stopped")
	})
}

// produce is the producer: it takes up to ClaimBatch queued ids at once
// (they count as being processed from then on, so the queue's rules hold:
// one worker per id, a notify meanwhile re-runs it after), leases them in
// one claim and hands the leased ones to the workers. Ids it could not
// lease are done at once, as a failed single claim was. With nothing
// queued while the store holds a backlog (a full sweep) and can claim due
// items itself (wq.DueClaimer), it claims up to ClaimBatch of those
// instead. Several run side by side (Start); each returns when the queue
// closes, and the last one out closes the workers' channel.
func (e *Engine) produce(wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		ids, claimDue, ok := e.queue.Next(e.cfg.ClaimBatch)
		if !ok {
			return
		}
		var claims []wq.Claim
		if claimDue {
			claims = e.claimDue()
		} else {
			claims = e.claimQueued(ids)
		}
		for _, c := range claims {
			e.claims <- c
		}
	}
}

// claimQueued leases the queued ids it was given; the others are done.
func (e *Engine) claimQueued(ids []wq.ItemID) []wq.Claim {
	claims, err := e.store.ClaimItems(e.runCtx, ids, e.handled, e.cfg.Owner, e.clock.Now(), e.cfg.Lease)
	if err != nil && e.runCtx.Err() == nil {
		e.log.Error("claim failed", "items", len(ids), "err", err)
	}
	claimed := make(map[wq.ItemID]bool, len(claims))
	for _, c := range claims {
		claimed[c.Lease.ItemID] = true
	}
	for _, id := range ids {
		if !claimed[id] {
			e.queue.Done(id) // not claimable: leased elsewhere, finished, gone
		}
	}
	return claims
}

// claimDue claims up to ClaimBatch due items from the store (queue.Next
// said so) and returns those no worker of this engine holds already.
func (e *Engine) claimDue() []wq.Claim {
	claims, err := e.dueClaimer.ClaimDueItems(e.runCtx, e.cfg.Owner, e.handled, e.cfg.Owner, e.clock.Now(), e.cfg.Lease, e.cfg.ClaimBatch)
	if err != nil && e.runCtx.Err() == nil {
		e.log.Error("claim of due items failed", "err", err)
		e.dueClaimFailed.Store(true)
	}
	ids := make([]wq.ItemID, len(claims))
	for i, c := range claims {
		ids[i] = c.Lease.ItemID
	}
	// A failed claim ends the backlog too: the next sweep finds it again.
	taken := e.queue.ClaimedDue(ids, err == nil && len(claims) >= e.cfg.ClaimBatch)
	kept := claims[:0]
	for i, c := range claims {
		if taken[i] {
			kept = append(kept, c)
		} else {
			e.release(c.Lease) // its worker here outlived its lease: it runs once more after
		}
	}
	return kept
}

func (e *Engine) work(name string) {
	defer e.wg.Done()
	var sc scratch
	for c := range e.claims {
		if e.stopping.Load() {
			e.release(c.Lease) // shutting down: let another instance have it now
		} else {
			e.process(name, c, &sc)
		}
		e.queue.Done(c.Lease.ItemID)
	}
}

// pruneInterval is how often the sweep loop forgets old deliveries.
const pruneInterval = time.Hour

// PruneDeliveries forgets the webhook deliveries older than the retention;
// the sweep loop calls it at start and hourly.
func (e *Engine) PruneDeliveries(ctx context.Context) (int64, error) {
	n, err := e.store.PruneDeliveries(ctx, e.clock.Now().Add(-e.cfg.DeliveryRetention))
	if n > 0 {
		e.log.Info("forgot old webhook deliveries", "count", n, "retention", e.cfg.DeliveryRetention)
	}
	return n, err
}

// Sweep finds due items and notifies them (DESIGN section 5, DDR-35). It
// returns how many it found. The sweep loop calls it; tests may too.
func (e *Engine) Sweep(ctx context.Context) (int, error) {
	start := time.Now() // wall time, not the injected clock: this measures the database
	mark := e.queue.BeginSweep()
	var ids []wq.ItemID
	var err error
	if ss, ok := e.store.(wq.SharedSweeper); ok {
		ids, err = ss.DueItemsOf(ctx, e.cfg.Owner, e.handled, e.clock.Now(), e.cfg.SweepBatch)
	} else {
		ids, err = e.store.DueItems(ctx, e.handled, e.clock.Now(), e.cfg.SweepBatch)
	}
	e.queue.AddSwept(ids, mark)
	e.metrics.Swept(time.Since(start), len(ids), err)
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	return len(ids), nil
}

func (e *Engine) sweepLoop(ctx context.Context) {
	defer e.wg.Done()
	var sweptOnce sync.Once
	defer sweptOnce.Do(func() { close(e.swept) })
	if len(e.handled) == 0 {
		return // DDR-25: no handled types, nothing to sweep
	}
	ticker := e.clock.NewTicker(e.cfg.SweepInterval)
	defer ticker.Stop()
	var pruned, recorded time.Time
	for {
		if now := e.clock.Now(); now.Sub(pruned) >= pruneInterval {
			pruned = now
			if _, err := e.PruneDeliveries(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("pruning webhook deliveries failed", "err", err)
			}
		}
		// Recorded before the sweep, so that a store that splits the
		// ready set among the instances (wq.SharedSweeper) counts this
		// one from its first sweep; then at most every half interval,
		// which an idle engine's sweeps (one per interval) all are, and
		// a burn-down's back-to-back sweeps are not: its upsert and
		// commit stood before each of those sweeps, 8-22 ms of a sweep
		// cycle of 30-60 in which the workers ran the queue dry. Readers
		// allow several intervals (HandlerRegistry).
		if now := e.clock.Now(); recorded.IsZero() || now.Sub(recorded) >= e.cfg.SweepInterval/2 || now.Before(recorded) {
			recorded = now
			e.recordHandlers(ctx)
		}
		n, err := e.Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Error("sweep failed", "err", err)
		}
		sweptOnce.Do(func() { close(e.swept) })
		if n == e.cfg.SweepBatch && e.dueClaimer != nil && !e.dueClaimFailed.Swap(false) {
			// More may be due: the claimers claim it from the store once
			// they have taken this batch, until a claim comes back short,
			// and then the sweep looks again (for more pending events or
			// deferred rows than one sweep holds); until then sweeping
			// would only find what they claim, but for the interval's
			// sweep, which deferred rows due meanwhile wait for. After a
			// failed claim, whose end of the backlog would send the loop
			// round at once, one round claims by id (below).
			select {
			case <-ctx.Done():
				return
			case <-e.queue.SetBacklog():
				continue
			case <-ticker.Chan():
				continue
			}
		}
		if n == e.cfg.SweepBatch {
			// More may be due: sweep again once the workers have taken most
			// of this batch (queued ids would only be found again): fewer
			// than a round of workers, or half a batch, wait.
			if e.queue.WaitBelow(ctx, max(1, min(e.cfg.Workers, e.cfg.SweepBatch/2))) == nil {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.Chan():
		}
	}
}

// recordHandlers tells the store, when it keeps a registry, that this
// instance handles its types: the API flags submissions of a type no
// instance has handled lately.
func (e *Engine) recordHandlers(ctx context.Context) {
	r, ok := e.store.(wq.HandlerRegistry)
	if !ok {
		return
	}
	if err := r.RecordHandlers(ctx, e.cfg.Owner, e.handled, e.clock.Now()); err != nil && ctx.Err() == nil {
		e.log.Warn("recording the handled types failed", "err", err)
	}
}

// listenLoop hears other instances' wake-ups (PostgreSQL NOTIFY) and hands
// the items to the pool; after a failure it listens again a second later
// (the sweep covers anything missed meanwhile).
func (e *Engine) listenLoop(ctx context.Context, l wq.WakeupListener) {
	defer e.wg.Done()
	for ctx.Err() == nil {
		err := l.ListenWakeups(ctx, func() { e.listeningOnce.Do(func() { close(e.listening) }) }, e.Notify)
		if ctx.Err() != nil {
			return
		}
		e.log.Warn("listening for wake-ups failed; retrying", "err", err)
		retry := e.clock.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			retry.Stop()
			return
		case <-retry.Chan():
		}
	}
}
