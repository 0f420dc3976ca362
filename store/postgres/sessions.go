package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	wq "github.com/workqueue-dev/workqueue"
)

var _ wq.SessionRevocations = (*Store)(nil)

// RevokeSession records the revocation and deletes the expired ones, in
// one transaction.
func (s *Store) RevokeSession(ctx context.Context, id string, expires, now time.Time) error {
	if id == "" {
		return wq.Errorf(wq.EINVALID, "a revoked session needs an id")
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM session_revocations WHERE expires_at < $1`, now.UTC()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO session_revocations (login_id, expires_at, revoked_at) VALUES ($1, $2, $3)
			ON CONFLICT (login_id) DO NOTHING`, id, expires.UTC(), now.UTC())
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke session: %w", translate(err))
	}
	return nil
}

// SessionRevoked reads the revocation by its key.
func (s *Store) SessionRevoked(ctx context.Context, id string) (bool, error) {
	var one int
	err := s.pool.QueryRow(ctx, `SELECT 1 FROM session_revocations WHERE login_id = $1`, id).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("session revoked: %w", translate(err))
	}
	return true, nil
}
