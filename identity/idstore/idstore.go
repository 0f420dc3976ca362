// Package idstore is package identity's Store on both drivers: its own
// migration chain (component "identities", tables prefixed id_) and its
// statements, written once with ? placeholders over the drivers' seam
// (store/seam.Driver), as controlplane/cpstore is. It names no driver.
package idstore

import (
	"context"
	"embed"
	"fmt"
	"path"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/store/seam"
)

//go:embed migrations
var migrations embed.FS

// Component names the chain; the drivers record its versions in
// workqueue_identities_schema_migrations.
const Component = "identities"

// New returns the identities' store on db, an open driver, and registers
// its migrations with it: call it before db.Migrate.
func New(db wq.Store) (identity.Store, error) {
	d, ok := db.(seam.Driver)
	if !ok {
		return nil, fmt.Errorf("identity store: the %T driver does not implement the store seam", db)
	}
	if err := d.AddMigrations(Component, migrations, path.Join("migrations", d.Dialect().Name)); err != nil {
		return nil, err
	}
	return &store{db: d, d: d.Dialect()}, nil
}

type store struct {
	db seam.Driver
	d  seam.Dialect
}

func (s *store) exec(ctx context.Context, x seam.Executor, q string, args ...any) (int64, error) {
	q, args = s.d.Bind(q, args)
	n, err := x.Exec(ctx, q, args...)
	return n, s.db.Translate(err)
}

// Spend counts one write in the window's row, unless the row holds limit
// already: the upsert's condition decides in the database, so that two
// instances never both take the last unit (SQLite's one writer;
// PostgreSQL's row lock of ON CONFLICT DO UPDATE).
func (s *store) Spend(ctx context.Context, id string, budget identity.Budget, limit int, window time.Time) (bool, error) {
	var spent bool
	err := s.db.Write(ctx, func(tx seam.Tx) error {
		spent = false
		q, args := s.d.Bind(`INSERT INTO id_budget_spend (identity, budget, window_start, spent) VALUES (?, ?, ?, 1)
			ON CONFLICT (identity, budget, window_start) DO UPDATE SET spent = id_budget_spend.spent + 1
			WHERE id_budget_spend.spent < ? RETURNING spent`, []any{id, string(budget), window.Unix(), limit})
		var n int64
		switch err := s.db.Translate(tx.QueryRow(ctx, q, args...).Scan(&n)); {
		case wq.ErrorCode(err) == wq.ENOTFOUND:
			return nil // the window's row holds limit already: nothing counted
		case err != nil:
			return err
		}
		spent = true
		if n > 1 {
			return nil
		}
		// The first of a window: the earlier windows are done with.
		_, err := s.exec(ctx, tx, `DELETE FROM id_budget_spend WHERE identity = ? AND budget = ? AND window_start < ?`,
			id, string(budget), window.Unix())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("spend %s of %s: %w", budget, id, err)
	}
	return spent, nil
}

const freezeColumns = `identity, frozen_by, reason, frozen_at`

func (s *store) scanFreeze(r seam.Row) (*identity.Freeze, error) {
	var f identity.Freeze
	if err := r.Scan(&f.Identity, &f.By, &f.Reason, s.d.ScanTime(&f.At)); err != nil {
		return nil, s.db.Translate(err)
	}
	return &f, nil
}

// getFreeze reads the identity's freeze on x; nil when there is none.
func (s *store) getFreeze(ctx context.Context, x seam.Executor, id string) (*identity.Freeze, error) {
	q, args := s.d.Bind(`SELECT `+freezeColumns+` FROM id_freezes WHERE identity = ?`+s.d.LockRow, []any{id})
	f, err := s.scanFreeze(x.QueryRow(ctx, q, args...))
	if wq.ErrorCode(err) == wq.ENOTFOUND {
		return nil, nil
	}
	return f, err
}

func (s *store) SetFreeze(ctx context.Context, f identity.Freeze) (*identity.Freeze, error) {
	var old *identity.Freeze
	err := s.db.Write(ctx, func(tx seam.Tx) error {
		var err error
		if old, err = s.getFreeze(ctx, tx, f.Identity); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, `INSERT INTO id_freezes (`+freezeColumns+`) VALUES (?, ?, ?, ?)
			ON CONFLICT (identity) DO UPDATE SET frozen_by = excluded.frozen_by, reason = excluded.reason, frozen_at = excluded.frozen_at`,
			f.Identity, f.By, f.Reason, f.At)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("freeze %s: %w", f.Identity, err)
	}
	return old, nil
}

func (s *store) ClearFreeze(ctx context.Context, id string) (*identity.Freeze, error) {
	var old *identity.Freeze
	err := s.db.Write(ctx, func(tx seam.Tx) error {
		var err error
		if old, err = s.getFreeze(ctx, tx, id); err != nil || old == nil {
			return err
		}
		_, err = s.exec(ctx, tx, `DELETE FROM id_freezes WHERE identity = ?`, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("unfreeze %s: %w", id, err)
	}
	return old, nil
}

func (s *store) GetFreeze(ctx context.Context, id string) (*identity.Freeze, error) {
	q, args := s.d.Bind(`SELECT `+freezeColumns+` FROM id_freezes WHERE identity = ?`, []any{id})
	f, err := s.scanFreeze(s.db.Reader().QueryRow(ctx, q, args...))
	if wq.ErrorCode(err) == wq.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the freeze of %s: %w", id, err)
	}
	return f, nil
}

func (s *store) ListFreezes(ctx context.Context) ([]identity.Freeze, error) {
	rs, err := s.db.Reader().Query(ctx, `SELECT `+freezeColumns+` FROM id_freezes ORDER BY identity`)
	if err != nil {
		return nil, fmt.Errorf("list freezes: %w", s.db.Translate(err))
	}
	defer rs.Close()
	out := []identity.Freeze{}
	for rs.Next() {
		f, err := s.scanFreeze(rs)
		if err != nil {
			return nil, fmt.Errorf("list freezes: %w", err)
		}
		out = append(out, *f)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("list freezes: %w", s.db.Translate(err))
	}
	return out, nil
}
