package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
)

// What an item type's own store builds on. A type keeps its detail table
// beside the queue's (DDR-7) and writes it in the same transactions as the
// item, under the same per-item lock and lease fence; these are the
// pieces it uses, so that the driver never names a type.

// Reader is the read-only connection pool.
func (s *Store) Reader() *sql.DB { return s.read }

// Write runs fn in a write transaction (BEGIN IMMEDIATE: the per-item
// lock of DDR-34) and commits it if fn returns nil; if fn returns an
// error, nothing it wrote stays. The transaction may hold other writes
// too, each in a savepoint of its own (group commit, commit.go): fn must
// not call Write itself, and its statements run to their end even if ctx
// is cancelled meanwhile. Write returns once the commit is durable.
func (s *Store) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.commits.write(ctx, fn)
}

// Fenced runs fn in a write transaction if lease l still holds the item;
// ErrLeaseLost otherwise. op names the write in errors.
func (s *Store) Fenced(ctx context.Context, l wq.Lease, op string, fn func(tx *sql.Tx) error) error {
	return s.fenced(ctx, l, op, func(tx *sql.Tx, _ wq.Phase) error { return fn(tx) })
}

// InsertItem inserts n, active and actionable, with its dimensions, in tx;
// it fills in n's ID and generation when they are zero. ECONFLICT if its
// idempotency key is held.
func InsertItem(ctx context.Context, tx *sql.Tx, n *wq.NewItem, now time.Time) error {
	if n.ID == uuid.Nil {
		n.ID = wq.NewItemID()
	}
	if n.Generation == 0 {
		n.Generation = 1
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO work_items (id, item_type, idempotency_key, generation,
		caller_identity, content_hash, forge, project, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.ID.String(), n.ItemType, nullString(n.IdempotencyKey), n.Generation, n.CallerIdentity, n.ContentHash,
		n.Forge, n.Project, ts(now), ts(now)); err != nil {
		return fmt.Errorf("create %s item: %w", n.ItemType, translate(err))
	}
	return upsertDimensions(ctx, tx, n.ID, n.Dimensions, now)
}

// ReplaceDesired makes an active or failed item active and actionable with
// a new desired state (content hash) and a clean slate, in tx, and upserts
// dims: a resubmission (DDR-40). ECONFLICT if the item's revision is no
// longer seen or it is completed or cancelled.
func ReplaceDesired(ctx context.Context, tx *sql.Tx, id wq.ItemID, seen int64, hash string, dims []wq.DimensionUpdate, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE work_items SET phase = 'active', reason = '', actionable = 1, revision = revision + 1,
		attempts = 0, failing_since = NULL, retry_after = NULL, error = '', finished_at = NULL, content_hash = ?, updated_at = ?
		WHERE id = ? AND revision = ? AND phase IN ('active', 'failed')`, hash, ts(now), id.String(), seen)
	if err != nil {
		return fmt.Errorf("resubmit item %s: %w", id, translate(err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("resubmit item %s: %w", id, wq.Errorf(wq.ECONFLICT, "item %s changed since it was read", id))
	}
	return upsertDimensions(ctx, tx, id, dims, now)
}

// Translate maps a driver error to the application's codes (ENOTFOUND,
// ECONFLICT, EUNAVAILABLE); other errors pass unchanged.
func Translate(err error) error { return translate(err) }

// Time is how the driver stores t: fixed-width UTC text that compares as a
// string; NULL for the zero time.
func Time(t time.Time) any { return ts(t) }
