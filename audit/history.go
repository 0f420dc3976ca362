package audit

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
)

// History keeps the audit entries of items in the database
// (wq.HistoryStore), so that an item's page shows its whole history
// after a restart and on every instance (issue 29), where Recent showed
// what one process heard since it started. It is a copy for pages,
// bounded by age: the archive stays the record (DDR-17, docs/DESIGN.md).
//
// WriteAudit never waits for the database: entries are queued and
// written in batches by Run, so that an audit made inside a store
// transaction cannot wait on SQLite's one writer. ItemAudit adds the
// entries still queued, so a page shows what this instance just did.
type History struct {
	Store wq.HistoryStore
	// Retention is how long entries are kept; Run prunes older ones.
	Retention time.Duration
	// PerItem bounds what ItemAudit returns of an item (the newest).
	PerItem int
	// Linger is how long Run lets entries gather after the first one
	// queued before it writes them (DefaultHistoryLinger; negative: not
	// at all), so that a busy instance writes one batch, one commit, per
	// window instead of one per request or two. It is wall time: a
	// batching window, not a deadline a test steps through. A full batch
	// and a shutdown end it early.
	Linger time.Duration
	Clock  clockwork.Clock
	Log    *slog.Logger

	mu      sync.Mutex // guards the fields below
	queued  []wq.AuditEntry
	wake    chan struct{}
	dropped int
	// writing is held to write a batch and take it off the queue, and
	// shared to read an item's history.
	writing sync.RWMutex
}

// MaxQueuedHistory bounds the entries queued while the database is slow
// or unreachable; past it, entries are dropped from the history (they
// are still in the log and the archive) and counted in the log.
const MaxQueuedHistory = 100_000

// FinalFlushTimeout bounds Run's last write at shutdown: a database that
// does not answer cannot hold the process's exit; what is left unwritten
// is logged as a failed write.
const FinalFlushTimeout = 10 * time.Second

// historyBatch bounds one write.
const historyBatch = 500

// DefaultHistoryLinger is History.Linger's default: well under what a
// person notices on a page of another instance, and long enough that a
// submission's entry rides with those of the others made meanwhile.
const DefaultHistoryLinger = 10 * time.Millisecond

// DefaultHistoryPerItem is how many entries of an item a page shows.
const DefaultHistoryPerItem = 500

// WriteAudit queues e if it concerns an item; it never fails.
func (h *History) WriteAudit(_ context.Context, e wq.AuditEntry) error {
	if e.ItemID == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	if len(h.queued) >= MaxQueuedHistory {
		h.dropped++
		return nil
	}
	h.queued = append(h.queued, e)
	select {
	case h.wake <- struct{}{}:
	default:
	}
	return nil
}

func (h *History) init() {
	if h.wake == nil {
		h.wake = make(chan struct{}, 1)
	}
}

// ItemAudit returns the item's entries, oldest first: those stored, and
// those still queued here.
func (h *History) ItemAudit(ctx context.Context, itemID string) []wq.AuditEntry {
	limit := cmpOr(h.PerItem, DefaultHistoryPerItem)
	// Not while a batch is being written: it is then in both places or
	// in neither.
	h.writing.RLock()
	defer h.writing.RUnlock()
	stored, err := h.Store.ItemHistory(ctx, itemID, limit)
	if err != nil {
		h.logger().Warn("read an item's history", "item_id", itemID, "error", err)
	}
	h.mu.Lock()
	for _, e := range h.queued {
		if e.ItemID == itemID {
			stored = append(stored, e)
		}
	}
	h.mu.Unlock()
	if len(stored) > limit {
		stored = stored[len(stored)-limit:]
	}
	return stored
}

// Shared reports that the history is the same on every instance (the
// dashboard says so on an item's page).
func (h *History) Shared() bool { return true }

// Run writes queued entries until ctx is done, then writes what is left,
// and prunes entries older than Retention every hour.
func (h *History) Run(ctx context.Context) {
	h.mu.Lock()
	h.init()
	h.mu.Unlock()
	clock := h.clock()
	prune := clock.NewTicker(time.Hour)
	defer prune.Stop()
	h.prune(ctx)
	for {
		select {
		case <-ctx.Done():
			// The last write outlives the shutdown's cancel, for as long
			// as a database that answers needs, not for one that hangs.
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), FinalFlushTimeout)
			h.Flush(final)
			cancel()
			return
		case <-h.wake:
			h.linger(ctx)
			h.flush(ctx, false)
		case <-prune.Chan():
			h.prune(ctx)
		}
	}
}

// Flush writes every entry queued, those queued while it writes too.
// Entries a write fails on stay queued for the next one; the failure is
// logged unless ctx was cancelled (Run's shutdown writes them then).
func (h *History) Flush(ctx context.Context) { h.flush(ctx, true) }

// flush writes the entries queued when it began and, with all, those that
// arrive while it writes (Flush). Without all, those wait for Run's next
// linger, so that under a steady stream of entries the writes stay one
// per linger rather than one after another as fast as the database
// commits them: a third of bench submit's commits were history writes
// of a dozen entries each.
func (h *History) flush(ctx context.Context, all bool) {
	h.mu.Lock()
	h.init()
	left := len(h.queued)
	h.mu.Unlock()
	for {
		h.mu.Lock()
		if all {
			left = len(h.queued)
		}
		batch := slices.Clone(h.queued[:min(len(h.queued), historyBatch, left)])
		dropped := h.dropped
		h.dropped = 0
		h.mu.Unlock()
		if dropped > 0 {
			h.logger().Warn("item history: entries dropped while the database was behind", "dropped", dropped)
		}
		if len(batch) == 0 {
			return
		}
		h.writing.Lock()
		err := h.Store.AppendHistory(ctx, batch)
		if err == nil {
			h.mu.Lock()
			h.queued = slices.Delete(h.queued, 0, len(batch))
			h.mu.Unlock()
			left -= len(batch)
		}
		h.writing.Unlock()
		if err != nil {
			if !errors.Is(ctx.Err(), context.Canceled) {
				// A write cut short by the caller's cancel is not a
				// failure: Run's shutdown writes the batch again.
				h.logger().Warn("item history: write failed; kept for the next write", "entries", len(batch), "error", err)
			}
			return
		}
	}
}

// linger waits for Linger, or until a full batch is queued or ctx ends.
func (h *History) linger(ctx context.Context) {
	d := h.Linger
	if d == 0 {
		d = DefaultHistoryLinger
	}
	if d < 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		h.mu.Lock()
		full := len(h.queued) >= historyBatch
		h.mu.Unlock()
		if full {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case <-h.wake:
		}
	}
}

func (h *History) prune(ctx context.Context) {
	if h.Retention <= 0 {
		return
	}
	n, err := h.Store.PruneHistory(ctx, h.clock().Now().Add(-h.Retention))
	if err != nil {
		h.logger().Warn("item history: prune failed", "error", err)
	} else if n > 0 {
		h.logger().Info("item history: pruned", "entries", n, "retention", h.Retention)
	}
}

func (h *History) clock() clockwork.Clock {
	if h.Clock == nil {
		return clockwork.NewRealClock()
	}
	return h.Clock
}

func (h *History) logger() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}

func cmpOr(v, fallback int) int {
	if v > 0 {
		return v
	}
	return fallback
}
