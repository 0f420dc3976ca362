package workqueue

import (
	"context"
	"time"
)

// HistoryStore keeps items' audit entries in the database, so that an
// item's page shows its whole history after a restart and on every
// instance (issue 29), not what one process heard since it started.
// Entries are kept until PruneHistory removes them (serve does, after
// audit.history_retention); the audit archive is still the full record.
// Both drivers implement it.
type HistoryStore interface {
	// AppendHistory stores entries, each of which names its item and
	// its time, all or none. EINVALID for an entry without ItemID or
	// Time; EUNAVAILABLE.
	AppendHistory(ctx context.Context, entries []AuditEntry) error
	// ItemHistory returns the newest limit entries of the item, oldest
	// first (entries of one time in the order they were appended); none
	// for an item without any. EUNAVAILABLE.
	ItemHistory(ctx context.Context, itemID string, limit int) ([]AuditEntry, error)
	// PruneHistory deletes the entries older than before and returns how
	// many it deleted. EUNAVAILABLE.
	PruneHistory(ctx context.Context, before time.Time) (int64, error)
}
