package postgres

import (
	"context"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

var _ wq.SecretStore = (*Store)(nil)

// GetOrCreateSecret inserts value under name unless a value is there,
// then reads what is there, in two statements: the read must not share
// the insert's snapshot. An insert that meets a concurrent one waits for
// it and does nothing once it commits; the read, a statement of its own
// under READ COMMITTED, then sees the winner's row.
func (s *Store) GetOrCreateSecret(ctx context.Context, name string, value []byte, now time.Time) ([]byte, error) {
	if name == "" || len(value) == 0 {
		return nil, wq.Errorf(wq.EINVALID, "a secret needs a name and a value")
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO service_secrets (name, value, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO NOTHING`, name, value, now.UTC()); err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, translate(err))
	}
	var stored []byte
	if err := s.pool.QueryRow(ctx, `SELECT value FROM service_secrets WHERE name = $1`, name).Scan(&stored); err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, translate(err))
	}
	return stored, nil
}
