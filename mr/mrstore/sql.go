package mrstore

import (
	"context"

	"github.com/workqueue-dev/workqueue/store/seam"
)

// conn runs the package's statements, written once with ? placeholders,
// on an executor of the driver (its read pool or a write transaction),
// and returns the application's errors.
type conn struct {
	ex seam.Executor
	s  store
}

func (c conn) exec(ctx context.Context, q string, args ...any) (int64, error) {
	q, args = c.s.dialect.Bind(q, args)
	n, err := c.ex.Exec(ctx, q, args...)
	return n, c.s.db.Translate(err)
}

func (c conn) query(ctx context.Context, q string, args ...any) (seam.Rows, error) {
	q, args = c.s.dialect.Bind(q, args)
	rs, err := c.ex.Query(ctx, q, args...)
	if err != nil {
		return nil, c.s.db.Translate(err)
	}
	return translatedRows{rs, c.s.db.Translate}, nil
}

func (c conn) queryRow(ctx context.Context, q string, args ...any) seam.Row {
	q, args = c.s.dialect.Bind(q, args)
	return translatedRow{c.ex.QueryRow(ctx, q, args...), c.s.db.Translate}
}

type translatedRow struct {
	seam.Row
	translate func(error) error
}

func (r translatedRow) Scan(dest ...any) error { return r.translate(r.Row.Scan(dest...)) }

type translatedRows struct {
	seam.Rows
	translate func(error) error
}

func (r translatedRows) Scan(dest ...any) error { return r.translate(r.Rows.Scan(dest...)) }
func (r translatedRows) Err() error             { return r.translate(r.Rows.Err()) }
