package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

var _ wq.HandlerRegistry = (*Store)(nil)

// RecordHandlers upserts instance's row for each of types.
func (s *Store) RecordHandlers(ctx context.Context, instance string, types []string, now time.Time) error {
	if len(types) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, t := range types {
			if _, err := tx.ExecContext(ctx, `INSERT INTO item_type_handlers (item_type, instance, seen_at) VALUES (?, ?, ?)
				ON CONFLICT (item_type, instance) DO UPDATE SET seen_at = excluded.seen_at`, t, instance, ts(now)); err != nil {
				return translate(err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record handled types of %s: %w", instance, err)
	}
	return nil
}

// LastHandled returns when any instance last recorded itemType.
func (s *Store) LastHandled(ctx context.Context, itemType string) (time.Time, error) {
	var last sql.NullString
	if err := s.read.QueryRowContext(ctx, `SELECT max(seen_at) FROM item_type_handlers WHERE item_type = ?`, itemType).Scan(&last); err != nil {
		return time.Time{}, fmt.Errorf("last handler of %s: %w", itemType, translate(err))
	}
	return parseTS(last)
}
