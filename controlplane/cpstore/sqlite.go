package cpstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/workqueue-dev/workqueue/store/sqlite"
)

// sqliteDialect runs the store on the SQLite driver: reads on its read
// pool, writes in its one writer's BEGIN IMMEDIATE transactions, which
// serialise every write and so need no row lock.
func sqliteDialect(db *sqlite.Store) dialect {
	return dialect{
		read: sqliteConn{db.Reader()},
		write: func(ctx context.Context, fn func(raw) error) error {
			return db.Write(ctx, func(tx *sql.Tx) error { return fn(sqliteConn{tx}) })
		},
		arg: func(v any) any {
			if t, ok := v.(time.Time); ok {
				return sqlite.Time(t)
			}
			return v
		},
		translate: translateSQLite,
	}
}

// sqliteConn is the read pool or a write transaction.
type sqliteConn struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (c sqliteConn) exec(ctx context.Context, q string, args []any) (int64, error) {
	res, err := c.q.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c sqliteConn) query(ctx context.Context, q string, args []any) (rows, error) {
	rs, err := c.q.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqliteRows{rs}, nil
}

func (c sqliteConn) queryRow(ctx context.Context, q string, args []any) row {
	return c.q.QueryRowContext(ctx, q, args...)
}

type sqliteRows struct{ *sql.Rows }

func (r sqliteRows) Close() { r.Rows.Close() }

// translateSQLite reads the constraints of hard rule 2 as ErrWorkHeld and
// a missing parent row as ENOTFOUND; the rest as the driver does.
func translateSQLite(err error) error {
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			if msg := se.Error(); strings.Contains(msg, "cp_leases.work_id") || strings.Contains(msg, "cp_terminal_locks.work_id") {
				return heldBy(err)
			}
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return errMissing
		}
	}
	return sqlite.Translate(err)
}
