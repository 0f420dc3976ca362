package audit

import (
	"context"
	"slices"
	"sync"

	wq "github.com/workqueue-dev/workqueue"
)

// Recent keeps, in memory, the latest audit entries of the items this
// process audited, so that the dashboard can show an item's trail
// without a database table of audit entries (DDR-17 keeps the trail out
// of the operational database). It is bounded both ways: at most
// perItem entries of an item (the oldest dropped first) and at most
// maxItems items (the item heard of least recently dropped first).
// What it holds is what this instance saw since it started; the archive
// is the record.
type Recent struct {
	mu       sync.Mutex
	maxItems int
	perItem  int
	byItem   map[string][]wq.AuditEntry
	// order lists item ids, the item heard of least recently first.
	order []string
}

// NewRecent returns a Recent holding up to perItem entries of each of up
// to maxItems items.
func NewRecent(maxItems, perItem int) *Recent {
	return &Recent{maxItems: max(maxItems, 1), perItem: max(perItem, 1), byItem: map[string][]wq.AuditEntry{}}
}

// WriteAudit keeps e if it concerns an item; it never fails.
func (r *Recent) WriteAudit(_ context.Context, e wq.AuditEntry) error {
	if e.ItemID == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	entries, known := r.byItem[e.ItemID]
	if known {
		r.order = slices.DeleteFunc(r.order, func(id string) bool { return id == e.ItemID })
	} else if len(r.byItem) >= r.maxItems {
		delete(r.byItem, r.order[0])
		r.order = r.order[1:]
	}
	r.order = append(r.order, e.ItemID)
	entries = append(entries, e)
	if len(entries) > r.perItem {
		entries = slices.Clone(entries[len(entries)-r.perItem:])
	}
	r.byItem[e.ItemID] = entries
	return nil
}

// ItemAudit returns the entries kept for item id, oldest first.
func (r *Recent) ItemAudit(_ context.Context, id string) []wq.AuditEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byItem[id])
}
