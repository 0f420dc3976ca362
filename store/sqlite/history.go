package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

var _ wq.HistoryStore = (*Store)(nil)

// AppendHistory stores entries in one write transaction.
func (s *Store) AppendHistory(ctx context.Context, entries []wq.AuditEntry) error {
	rows := make([][2]any, len(entries))
	for i, e := range entries {
		if e.ItemID == "" || e.Time.IsZero() {
			return wq.Errorf(wq.EINVALID, "history: an entry needs its item and its time")
		}
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		rows[i] = [2]any{ts(e.Time), string(b)}
	}
	if len(entries) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO item_history (item_id, at, entry) VALUES (?, ?, ?)`)
		if err != nil {
			return translate(err)
		}
		defer stmt.Close()
		for i, e := range entries {
			if _, err := stmt.ExecContext(ctx, e.ItemID, rows[i][0], rows[i][1]); err != nil {
				return translate(err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	return nil
}

// ItemHistory reads the item's newest limit entries, oldest first.
func (s *Store) ItemHistory(ctx context.Context, itemID string, limit int) ([]wq.AuditEntry, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT entry FROM (
			SELECT entry, at, seq FROM item_history WHERE item_id = ? ORDER BY at DESC, seq DESC LIMIT ?
		) ORDER BY at, seq`, itemID, limit)
	if err != nil {
		return nil, fmt.Errorf("item history %s: %w", itemID, translate(err))
	}
	defer rows.Close()
	var out []wq.AuditEntry
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("item history %s: %w", itemID, translate(err))
		}
		var e wq.AuditEntry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, fmt.Errorf("item history %s: %w", itemID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("item history %s: %w", itemID, translate(err))
	}
	return out, nil
}

// PruneHistory deletes the entries older than before.
func (s *Store) PruneHistory(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.exec(ctx, `DELETE FROM item_history WHERE at < ?`, ts(before))
	if err != nil {
		return 0, fmt.Errorf("prune history: %w", err)
	}
	return n, nil
}
