package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	wq "github.com/workqueue-dev/workqueue"
)

// What an item type's own store builds on. A type keeps its detail table
// beside the queue's (DDR-7) and writes it in the same transactions as the
// item, under the same per-item lock and lease fence; these are the
// pieces it uses, so that the driver never names a type.

// Pool is the connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Write runs fn in one transaction and commits it if fn returns nil.
func (s *Store) Write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return translate(pgx.BeginFunc(ctx, s.pool, fn))
}

// Fenced runs fn in a transaction that holds the item's row under lease l;
// ErrLeaseLost if the lease no longer holds. op names the write in errors.
func (s *Store) Fenced(ctx context.Context, l wq.Lease, op string, fn func(tx pgx.Tx) error) error {
	return s.fenced(ctx, l, op, func(tx pgx.Tx, _ wq.Phase) error { return fn(tx) })
}

// InsertItem inserts n, active and actionable, with its dimensions, in tx,
// and wakes the instances handling its type on commit; it fills in n's ID
// and generation when they are zero. ECONFLICT if its idempotency key is
// held.
func InsertItem(ctx context.Context, tx pgx.Tx, n *wq.NewItem, now time.Time) error {
	if n.ID == uuid.Nil {
		n.ID = wq.NewItemID()
	}
	if n.Generation == 0 {
		n.Generation = 1
	}
	if _, err := tx.Exec(ctx, `INSERT INTO work_items (id, item_type, idempotency_key, generation,
		caller_identity, content_hash, forge, project, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
		n.ID, n.ItemType, nullString(n.IdempotencyKey), n.Generation, n.CallerIdentity, n.ContentHash, n.Forge, n.Project,
		now.UTC()); err != nil {
		return translate(err)
	}
	if err := upsertDimensions(ctx, tx, n.ID, n.Dimensions, now); err != nil {
		return err
	}
	return notifyItem(ctx, tx, n.ID)
}

// ReplaceDesired makes an active or failed item active and actionable with
// a new desired state (content hash) and a clean slate, in tx, upserts
// dims and wakes the instances handling its type on commit: a
// resubmission (DDR-40). ECONFLICT if the item's revision is no longer
// seen or it is completed or cancelled.
func ReplaceDesired(ctx context.Context, tx pgx.Tx, id wq.ItemID, seen int64, hash string, dims []wq.DimensionUpdate, now time.Time) error {
	tag, err := tx.Exec(ctx, `UPDATE work_items SET phase = 'active', reason = '', actionable = true, revision = revision + 1,
		attempts = 0, failing_since = NULL, retry_after = NULL, error = '', finished_at = NULL, content_hash = $3, updated_at = $4
		WHERE id = $1 AND revision = $2 AND phase IN ('active', 'failed')`, id, seen, hash, now.UTC())
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() != 1 {
		return wq.Errorf(wq.ECONFLICT, "item %s changed since it was read", id)
	}
	if err := upsertDimensions(ctx, tx, id, dims, now); err != nil {
		return err
	}
	return notifyItem(ctx, tx, id)
}

// Translate maps a driver error to the application's codes (ENOTFOUND,
// ECONFLICT, EUNAVAILABLE); other errors pass unchanged.
func Translate(err error) error { return translate(err) }
