package cpstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workqueue-dev/workqueue/store/postgres"
)

// postgresDialect runs the store on the PostgreSQL driver: reads on its
// pool, writes in READ COMMITTED transactions that lock the work row they
// decide on (SELECT … FOR UPDATE), which serialises the assignments of one
// work item across every serve process on the database.
func postgresDialect(db *postgres.Store) dialect {
	return dialect{
		read: pgConn{db.Pool()},
		write: func(ctx context.Context, fn func(raw) error) error {
			return db.Write(ctx, func(tx pgx.Tx) error { return fn(pgConn{tx}) })
		},
		numbered: true,
		lockRow:  " FOR UPDATE",
		shareRow: " FOR SHARE",
		arg: func(v any) any {
			if t, ok := v.(time.Time); ok {
				if t.IsZero() {
					return nil
				}
				return t.UTC()
			}
			return v
		},
		translate: translatePostgres,
	}
}

// pgConn is the pool or a transaction.
type pgConn struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (c pgConn) exec(ctx context.Context, q string, args []any) (int64, error) {
	tag, err := c.q.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (c pgConn) query(ctx context.Context, q string, args []any) (rows, error) {
	return c.q.Query(ctx, q, args...)
}

func (c pgConn) queryRow(ctx context.Context, q string, args []any) row {
	return c.q.QueryRow(ctx, q, args...)
}

// translatePostgres reads the constraints of hard rule 2 as ErrWorkHeld
// and a missing parent row as ENOTFOUND; the rest as the driver does.
func translatePostgres(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505" && (pe.ConstraintName == "cp_leases_one_active" || pe.ConstraintName == "cp_terminal_locks_pkey"):
			return heldBy(err)
		case pe.Code == "23503":
			return errMissing
		}
	}
	return postgres.Translate(err)
}
