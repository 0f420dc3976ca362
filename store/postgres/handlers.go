package postgres

import (
	"context"
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
	_, err := s.pool.Exec(ctx, `INSERT INTO item_type_handlers (item_type, instance, seen_at)
		SELECT t, $2, $3 FROM unnest($1::text[]) AS t
		ON CONFLICT (item_type, instance) DO UPDATE SET seen_at = excluded.seen_at`, types, instance, now.UTC())
	if err != nil {
		return fmt.Errorf("record handled types of %s: %w", instance, translate(err))
	}
	return nil
}

// LastHandled returns when any instance last recorded itemType.
func (s *Store) LastHandled(ctx context.Context, itemType string) (time.Time, error) {
	var last *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT max(seen_at) FROM item_type_handlers WHERE item_type = $1`, itemType).Scan(&last); err != nil {
		return time.Time{}, fmt.Errorf("last handler of %s: %w", itemType, translate(err))
	}
	return tsVal(last), nil
}
