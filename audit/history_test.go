package audit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
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
