package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	wq "github.com/workqueue-dev/workqueue"
)

// ListItems returns items newest first.
func (s *Store) ListItems(ctx context.Context, f wq.ItemFilter) ([]*wq.Item, error) {
	var where []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.ItemType != "" {
		add("w.item_type = $%d", f.ItemType)
	}
	if f.Phase != "" {
		add("w.phase = $%d", string(f.Phase))
	}
	if f.Forge != "" {
		add("w.forge = $%d", f.Forge)
	}
	if f.Project != "" {
		add("w.project = $%d", f.Project)
	}
	if f.Before != uuid.Nil {
		add("w.id < $%d", f.Before)
	}
	q := `SELECT ` + qualified("w", itemColumns) + ` FROM work_items w`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 || limit > wq.MaxListLimit {
		limit = wq.MaxListLimit
	}
	args = append(args, limit)
	q += fmt.Sprintf(" ORDER BY w.id DESC LIMIT $%d", len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list items: %w", translate(err))
	}
	defer rows.Close()
	var items []*wq.Item
	var sc itemScanner
	for rows.Next() {
		it, err := sc.scan(rows)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, translate(rows.Err())
}

// qualified prefixes each column of a comma-separated list with alias.
func qualified(alias, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// RetryItem makes a failed or cancelled item active again.
func (s *Store) RetryItem(ctx context.Context, id wq.ItemID, dims []wq.DimensionUpdate, now time.Time) (*wq.Item, error) {
	return s.reactivate(ctx, id, dims, now, "retry", "failed or cancelled", []string{"failed", "cancelled"})
}

// RequestCancel hands an active or failed item's cancel to its type.
func (s *Store) RequestCancel(ctx context.Context, id wq.ItemID, dims []wq.DimensionUpdate, now time.Time) (*wq.Item, error) {
	return s.reactivate(ctx, id, dims, now, "cancel", "active or failed", []string{"active", "failed"})
}

// reactivate makes an item in one of phases active and actionable with a
// clean slate, upserts dims and bumps the revision, so that a worker
// holding it (its lease is kept) decides again.
func (s *Store) reactivate(ctx context.Context, id wq.ItemID, dims []wq.DimensionUpdate, now time.Time, op, want string, phases []string) (*wq.Item, error) {
	var itemType string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE work_items SET phase = 'active', reason = '', error = '', attempts = 0, failing_since = NULL,
			retry_after = NULL, finished_at = NULL, actionable = true, revision = revision + 1, updated_at = $2
			WHERE id = $1 AND phase = ANY($3) RETURNING item_type`, id, now.UTC(), phases).Scan(&itemType)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoMatch
		}
		if err != nil {
			return translate(err)
		}
		return upsertDimensions(ctx, tx, id, dims, now)
	})
	if errors.Is(err, errNoMatch) {
		return nil, s.phaseConflict(ctx, id, op, want)
	}
	if err != nil {
		return nil, fmt.Errorf("%s item %s: %w", op, id, translate(err))
	}
	s.wakes.wake(wakeupPayload(itemType, id))
	return s.GetItem(ctx, id)
}

// CancelItem cancels an active or failed item.
func (s *Store) CancelItem(ctx context.Context, id wq.ItemID, reason string, now time.Time) (*wq.Item, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE work_items SET phase = 'cancelled', reason = $2, finished_at = $3, updated_at = $3, actionable = false,
			leased_until = NULL, lease_token = NULL, lease_owner = NULL WHERE id = $1 AND phase IN ('active', 'failed')`, id, reason, now.UTC())
		if err != nil {
			return translate(err)
		}
		if tag.RowsAffected() != 1 {
			return errNoMatch
		}
		_, err = tx.Exec(ctx, `UPDATE work_item_statuses SET pending_until = NULL WHERE work_item_id = $1 AND pending_until IS NOT NULL`, id)
		return translate(err)
	})
	if errors.Is(err, errNoMatch) {
		return nil, s.phaseConflict(ctx, id, "cancel", "active or failed")
	}
	if err != nil {
		return nil, fmt.Errorf("cancel item %s: %w", id, translate(err))
	}
	return s.GetItem(ctx, id)
}

var errNoMatch = errors.New("no row matched")

// phaseConflict explains why a phase-conditional update matched nothing.
func (s *Store) phaseConflict(ctx context.Context, id wq.ItemID, op, want string) error {
	it, err := s.GetItem(ctx, id)
	if err != nil {
		return fmt.Errorf("%s item %s: %w", op, id, err)
	}
	done := op + "d"
	if op == "cancel" {
		done = "cancelled"
	}
	return fmt.Errorf("%s item %s: %w", op, id, wq.Errorf(wq.ECONFLICT, "item is %s; only %s items can be %s", it.Phase, want, done))
}
