package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	wq "github.com/workqueue-dev/workqueue"
)

// CountItems counts items by type and phase (over work_items_type_phase)
// and the actionable backlog by type (over work_item_ready, the sweep's set).
func (s *Store) CountItems(ctx context.Context, now time.Time) (wq.ItemCounts, error) {
	var out wq.ItemCounts
	rows, err := s.pool.Query(ctx, `SELECT item_type, phase, count(*) FROM work_items
		GROUP BY item_type, phase ORDER BY item_type, phase`)
	if err != nil {
		return out, fmt.Errorf("count items: %w", translate(err))
	}
	out.Phases, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (wq.PhaseCount, error) {
		var c wq.PhaseCount
		var phase string
		err := r.Scan(&c.ItemType, &phase, &c.Count)
		c.Phase = wq.Phase(phase)
		return c, err
	})
	if err != nil {
		return out, fmt.Errorf("count items: %w", translate(err))
	}
	rows, err = s.pool.Query(ctx, `SELECT r.item_type, count(*), min(w.updated_at) FROM work_item_ready r JOIN work_items w ON w.id = r.id
		WHERE r.retry_after IS NULL OR r.retry_after <= $1
		GROUP BY r.item_type ORDER BY r.item_type`, now.UTC())
	if err != nil {
		return out, fmt.Errorf("count actionable items: %w", translate(err))
	}
	out.Actionable, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (wq.ActionableCount, error) {
		var c wq.ActionableCount
		err := r.Scan(&c.ItemType, &c.Count, &c.Oldest)
		return c, err
	})
	if err != nil {
		return out, fmt.Errorf("count actionable items: %w", translate(err))
	}
	return out, nil
}
