package audit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/internal/eventually"
)

// memHistory is a HistoryStore in memory that can be made to fail.
type memHistory struct {
	mu      sync.Mutex
	entries []wq.AuditEntry
	down    bool
}

func (m *memHistory) AppendHistory(_ context.Context, entries []wq.AuditEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return wq.Errorf(wq.EUNAVAILABLE, "down")
	}
	m.entries = append(m.entries, entries...)
	return nil
}

func (m *memHistory) ItemHistory(_ context.Context, id string, limit int) ([]wq.AuditEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, errors.New("down")
	}
	var out []wq.AuditEntry
	for _, e := range m.entries {
		if e.ItemID == id {
			out = append(out, e)
		}
	}
	return out[max(0, len(out)-limit):], nil
}

func (m *memHistory) PruneHistory(context.Context, time.Time) (int64, error) { return 0, nil }

func TestHistoryShowsQueuedEntriesAndKeepsThemThroughAFailedWrite(t *testing.T) {
	ctx := context.Background()
	store := &memHistory{down: true}
	h := &audit.History{Store: store}
	at := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)
	h.WriteAudit(ctx, wq.AuditEntry{Time: at, EventType: wq.AuditItemCreated, ItemID: "a"})
	h.WriteAudit(ctx, wq.AuditEntry{Time: at, EventType: "login"}) // no item: not history
	if got := h.ItemAudit(ctx, "a"); len(got) != 1 {
		t.Errorf("before any write the item shows %v, want its queued entry", got)
	}
	h.Flush(ctx) // fails: the database is down
	store.down = false
	if got := h.ItemAudit(ctx, "a"); len(got) != 1 {
		t.Errorf("after a failed write the item shows %v, want its entry still queued", got)
	}
	h.Flush(ctx)
	if len(store.entries) != 1 || store.entries[0].ItemID != "a" {
		t.Errorf("stored %v, want the item's one entry", store.entries)
	}
	if got := h.ItemAudit(ctx, "a"); len(got) != 1 {
		t.Errorf("after the write the item shows %v, want its entry once", got)
	}
}

func TestHistoryWritesWhatGathersWhileItLingersInOneBatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &countingHistory{}
	// A linger no test waits out: only a full batch ends it.
	h := &audit.History{Store: store, Linger: time.Hour}
	at := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)
	h.WriteAudit(ctx, wq.AuditEntry{Time: at, EventType: wq.AuditItemCreated, ItemID: "first"})
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	for i := range 499 {
		h.WriteAudit(ctx, wq.AuditEntry{Time: at, EventType: wq.AuditItemCreated, ItemID: fmt.Sprint("item-", i)})
	}
	eventually.True(t, 10*time.Second, "the 500 entries written", func() (bool, any) { n := store.count(); return n == 500, n })
	if got := store.writes(); got != 1 {
		t.Errorf("500 entries queued while the history lingered took %d writes; want one batch", got)
	}
	h.WriteAudit(ctx, wq.AuditEntry{Time: at, EventType: wq.AuditItemCreated, ItemID: "last"})
	cancel() // a shutdown ends the linger and writes what is left
	<-done
	if store.count() != 501 {
		t.Errorf("after shutdown %d entries stored; want 501", store.count())
	}
}

// arrivingHistory is a countingHistory whose first write sees more
// entries arrive while it runs, as requests go on during a database write.
type arrivingHistory struct {
	countingHistory
	h    *audit.History
	once sync.Once
}

func (a *arrivingHistory) AppendHistory(ctx context.Context, entries []wq.AuditEntry) error {
	a.once.Do(func() {
		for i := range 3 {
			a.h.WriteAudit(ctx, wq.AuditEntry{Time: time.Now(), EventType: wq.AuditItemCreated, ItemID: fmt.Sprint("late-", i)})
		}
	})
	return a.countingHistory.AppendHistory(ctx, entries)
}

// Under a steady stream of entries Run's write after a linger writes what
// was queued when it began, and what arrives meanwhile waits for the next
// linger: the writes stay one per linger, where writing until nothing
// was queued made one small write after another, each a commit. Flush
// (the shutdown's) still writes everything.
func TestHistoryWriteLeavesWhatArrivesDuringItForTheNextLinger(t *testing.T) {
	ctx := context.Background()
	store := &arrivingHistory{}
	h := &audit.History{Store: store}
	store.h = h
	at := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)
	for i := range 5 {
		h.WriteAudit(ctx, wq.AuditEntry{Time: at, EventType: wq.AuditItemCreated, ItemID: fmt.Sprint("early-", i)})
	}
	audit.FlushQueued(h)
	if store.writes() != 1 || store.count() != 5 {
		t.Errorf("a flush of 5 queued entries made %d writes of %d entries; want one write of the 5", store.writes(), store.count())
	}
	if got := h.ItemAudit(ctx, "late-0"); len(got) != 1 {
		t.Errorf("an entry that arrived during the write shows %v; want it queued", got)
	}
	audit.FlushQueued(h)
	if store.writes() != 2 || store.count() != 8 {
		t.Errorf("the next write left %d writes of %d entries; want the 3 late ones in a second write", store.writes(), store.count())
	}

	// Flush, as at shutdown, writes what arrives while it writes too.
	again := &arrivingHistory{}
	h = &audit.History{Store: again}
	again.h = h
	h.WriteAudit(ctx, wq.AuditEntry{Time: at, EventType: wq.AuditItemCreated, ItemID: "early"})
	h.Flush(ctx)
	if again.count() != 4 {
		t.Errorf("Flush stored %d entries; want the 1 queued and the 3 that arrived during its write", again.count())
	}
}

// countingHistory is a HistoryStore in memory that counts its writes.
type countingHistory struct {
	memHistory
	n int
}

func (c *countingHistory) AppendHistory(ctx context.Context, entries []wq.AuditEntry) error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.memHistory.AppendHistory(ctx, entries)
}

func (c *countingHistory) writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *countingHistory) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// stallingHistory is a HistoryStore whose first write waits until its
// context ends, as a database write does when a shutdown cancels it.
type stallingHistory struct {
	memHistory
	started chan struct{}
	once    sync.Once
}

func (s *stallingHistory) AppendHistory(ctx context.Context, entries []wq.AuditEntry) error {
	stalled := false
	s.once.Do(func() { stalled = true; close(s.started) })
	if stalled {
		<-ctx.Done()
		return fmt.Errorf("append history: %w", ctx.Err())
	}
	return s.memHistory.AppendHistory(ctx, entries)
}

func TestHistoryShutdownDuringAWriteStoresTheBatchWithoutReportingAFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	store := &stallingHistory{started: make(chan struct{})}
	var logged strings.Builder
	var logMu sync.Mutex
	h := &audit.History{Store: store, Linger: -1, Log: slog.New(slog.NewTextHandler(&lockedWriter{w: &logged, mu: &logMu}, nil))}
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	at := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)
	h.WriteAudit(ctx, wq.AuditEntry{Time: at, EventType: wq.AuditItemCreated, ItemID: "a"})
	<-store.started
	cancel() // the shutdown lands while the batch is being written
	<-done
	if got := store.ItemHistoryLen("a"); got != 1 {
		t.Errorf("after a shutdown cut a write short, %d entries of the item are stored; want the one, written by the last flush", got)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logged.String(), "write failed") {
		t.Errorf("a write cut short by the shutdown was logged as a failure:\n%s", logged.String())
	}
}

func (m *memHistory) ItemHistoryLen(id string) int {
	got, _ := m.ItemHistory(context.Background(), id, 1000)
	return len(got)
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
