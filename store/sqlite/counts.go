package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// CountItems counts items by type and phase (over work_items_type_phase)
// and the actionable backlog by type (over the sweep's partial index).
func (s *Store) CountItems(ctx context.Context, now time.Time) (wq.ItemCounts, error) {
	var out wq.ItemCounts
	rows, err := s.read.QueryContext(ctx, `SELECT item_type, phase, count(*) FROM work_items INDEXED BY work_items_type_phase
		GROUP BY item_type, phase ORDER BY item_type, phase`)
	if err != nil {
		return out, fmt.Errorf("count items: %w", translate(err))
	}
	defer rows.Close()
	for rows.Next() {
		var c wq.PhaseCount
		if err := rows.Scan(&c.ItemType, &c.Phase, &c.Count); err != nil {
			return out, fmt.Errorf("count items: %w", translate(err))
		}
		out.Phases = append(out.Phases, c)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("count items: %w", translate(err))
	}
	rows.Close()
	rows, err = s.read.QueryContext(ctx, `SELECT item_type, count(*), min(updated_at) FROM work_items INDEXED BY work_items_sweep_actionable
		WHERE actionable = 1 AND phase = 'active' AND (retry_after IS NULL OR retry_after <= ?)
		GROUP BY item_type ORDER BY item_type`, ts(now))
	if err != nil {
		return out, fmt.Errorf("count actionable items: %w", translate(err))
	}
	defer rows.Close()
	for rows.Next() {
		var c wq.ActionableCount
		var oldest sql.NullString
		if err := rows.Scan(&c.ItemType, &c.Count, &oldest); err != nil {
			return out, fmt.Errorf("count actionable items: %w", translate(err))
		}
		if c.Oldest, err = parseTS(oldest); err != nil {
			return out, fmt.Errorf("count actionable items: %w", err)
		}
		out.Actionable = append(out.Actionable, c)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("count actionable items: %w", translate(err))
	}
	return out, nil
}
