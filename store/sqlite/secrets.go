package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

var _ wq.SecretStore = (*Store)(nil)

// GetOrCreateSecret inserts value under name unless a value is there, and
// returns what is there, in one write transaction: SQLite's one writer
// (across processes too) orders racing callers.
func (s *Store) GetOrCreateSecret(ctx context.Context, name string, value []byte, now time.Time) ([]byte, error) {
	if name == "" || len(value) == 0 {
		return nil, wq.Errorf(wq.EINVALID, "a secret needs a name and a value")
	}
	var stored []byte
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO service_secrets (name, value, created_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO NOTHING`, name, value, ts(now)); err != nil {
			return translate(err)
		}
		return translate(tx.QueryRowContext(ctx, `SELECT value FROM service_secrets WHERE name = ?`, name).Scan(&stored))
	})
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return stored, nil
}
