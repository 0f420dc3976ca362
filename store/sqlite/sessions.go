package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

var _ wq.SessionRevocations = (*Store)(nil)

// RevokeSession records the revocation and deletes the expired ones in
// one write transaction.
func (s *Store) RevokeSession(ctx context.Context, id string, expires, now time.Time) error {
	if id == "" {
		return wq.Errorf(wq.EINVALID, "a revoked session needs an id")
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM session_revocations WHERE expires_at < ?`, ts(now)); err != nil {
			return translate(err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO session_revocations (login_id, expires_at, revoked_at) VALUES (?, ?, ?)
			ON CONFLICT (login_id) DO NOTHING`, id, ts(expires), ts(now))
		return translate(err)
	})
	if err != nil {
		return fmt.Errorf("revoke session: %w", err)
	}
	return nil
}

// SessionRevoked reads the revocation by its key.
func (s *Store) SessionRevoked(ctx context.Context, id string) (bool, error) {
	var one int
	err := s.read.QueryRowContext(ctx, `SELECT 1 FROM session_revocations WHERE login_id = ?`, id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("session revoked: %w", translate(err))
	}
	return true, nil
}
