package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
)

// ListItems returns items newest first.
func (s *Store) ListItems(ctx context.Context, f wq.ItemFilter) ([]*wq.Item, error) {
	var where []string
	var args []any
	add := func(cond string, arg any) { where = append(where, cond); args = append(args, arg) }
	if f.ItemType != "" {
		add("w.item_type = ?", f.ItemType)
	}
	if f.Phase != "" {
		add("w.phase = ?", string(f.Phase))
	}
	if f.Forge != "" {
		add("w.forge = ?", f.Forge)
	}
	if f.Project != "" {
		add("w.project = ?", f.Project)
	}
	if f.Before != uuid.Nil {
		add("w.id < ?", f.Before.String())
	}
	q := `SELECT ` + qualified("w", itemColumns) + ` FROM work_items w`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY w.id DESC LIMIT ?"
	args = append(args, listLimit(f.Limit))
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list items: %w", translate(err))
	}
	defer rows.Close()
	var items []*wq.Item
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, translate(rows.Err())
}

func listLimit(n int) int {
	if n <= 0 || n > wq.MaxListLimit {
		return wq.MaxListLimit
	}
	return n
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
	return s.reactivate(ctx, id, dims, now, "retry", "failed or cancelled", "'failed', 'cancelled'")
}

// RequestCancel hands an active or failed item's cancel to its type.
func (s *Store) RequestCancel(ctx context.Context, id wq.ItemID, dims []wq.DimensionUpdate, now time.Time) (*wq.Item, error) {
	return s.reactivate(ctx, id, dims, now, "cancel", "active or failed", "'active', 'failed'")
}

// reactivate makes an item in one of phases (a SQL list of constants)
// active and actionable with a clean slate, upserts dims and bumps the
// revision, so that a worker holding it (its lease is kept) decides again.
func (s *Store) reactivate(ctx context.Context, id wq.ItemID, dims []wq.DimensionUpdate, now time.Time, op, want, phases string) (*wq.Item, error) {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE work_items SET phase = 'active', reason = '', error = '', attempts = 0, failing_since = NULL,
			retry_after = NULL, finished_at = NULL, actionable = 1, revision = revision + 1, updated_at = ?
			WHERE id = ? AND phase IN (`+phases+`)`, ts(now), id.String())
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errNoMatch
		}
		return upsertDimensions(ctx, tx, id, dims, now)
	})
	if errors.Is(err, errNoMatch) {
		return nil, s.phaseConflict(ctx, id, op, want)
	}
	if err != nil {
		return nil, fmt.Errorf("%s item %s: %w", op, id, err)
	}
	return s.GetItem(ctx, id)
}

var errNoMatch = errors.New("no row matched")

// CancelItem cancels an active or failed item.
func (s *Store) CancelItem(ctx context.Context, id wq.ItemID, reason string, now time.Time) (*wq.Item, error) {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE work_items SET phase = 'cancelled', reason = ?, finished_at = ?, updated_at = ?, actionable = 0,
			leased_until = NULL, lease_token = NULL, lease_owner = NULL WHERE id = ? AND phase IN ('active', 'failed')`,
			reason, ts(now), ts(now), id.String())
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errNoMatch
		}
		_, err = tx.ExecContext(ctx, `UPDATE work_item_statuses SET pending_until = NULL WHERE work_item_id = ? AND pending_until IS NOT NULL`, id.String())
		return translate(err)
	})
	if errors.Is(err, errNoMatch) {
		return nil, s.phaseConflict(ctx, id, "cancel", "active or failed")
	}
	if err != nil {
		return nil, fmt.Errorf("cancel item %s: %w", id, err)
	}
	return s.GetItem(ctx, id)
}

// phaseConflict explains why a phase-conditional update matched nothing.
func (s *Store) phaseConflict(ctx context.Context, id wq.ItemID, op, want string) error {
	it, err := s.GetItem(ctx, id)
	if err != nil {
		return fmt.Errorf("%s item %s: %w", op, id, err)
	}
	return fmt.Errorf("%s item %s: %w", op, id, wq.Errorf(wq.ECONFLICT, "item is %s; only %s items can be %s", it.Phase, want, pastTense(op)))
}

func pastTense(op string) string {
	if op == "cancel" {
		return "cancelled"
	}
	return op + "d"
}
