package postgres

import (
	"context"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/workqueue-dev/workqueue/store/seam"
)

// Single-row reads of the pool, coalesced. The stores built on the seam
// read one row at a time through Reader (an item type's record of what a
// submission decides on, read before every submission): under load
// each such read was a round trip of its own, and its write to the
// socket cost the process five times what its share of a batched insert
// did. The reads queued while the last batch ran go as one pipelined
// batch (batch.go), each its own statement with its own result; a lone
// read is one query as before.
//
// A row is copied out of the connection's buffers in the batch and
// scanned by its caller, in the caller's goroutine, with a type map of
// the pool's registrations: a caller that gave up never has its
// destinations written behind its back.

// poolReader is Reader: the pool, with QueryRow coalesced.
type poolReader struct {
	executor
	s *Store
}

func (r poolReader) QueryRow(ctx context.Context, q string, args ...any) seam.Row {
	return &coalescedRow{s: r.s, ctx: ctx, req: readReq{sql: q, args: args}}
}

// coalescedRow is a read that runs when it is scanned, as pgx's rows
// report their error at Scan.
type coalescedRow struct {
	s   *Store
	ctx context.Context
	req readReq
}

func (r *coalescedRow) Scan(dest ...any) error {
	res, err := r.s.co.read.do(r.ctx, r.req)
	if err != nil {
		return err
	}
	if res.err != nil {
		return res.err
	}
	m := typeMaps.Get().(*pgtype.Map)
	defer typeMaps.Put(m)
	return pgx.ScanRow(m, res.fields, res.values, dest...)
}

// typeMaps are type maps with the registrations every connection gets
// (AfterConnect): a pgtype.Map memoizes its plans and is not for
// concurrent use.
var typeMaps = sync.Pool{New: func() any {
	m := pgtype.NewMap()
	registerUUIDCodec(m)
	return m
}}

// readReq is one single-row read.
type readReq struct {
	sql  string
	args []any
}

// readRes is its first row, copied, or pgx.ErrNoRows.
type readRes struct {
	fields []pgconn.FieldDescription
	values [][]byte
	err    error
}

// readRows runs single-row reads: one query for one, else one pipelined
// batch. A statement the server refuses fails the batch (the statements
// after it would only report the aborted transaction), which the batcher
// then runs read by read, so that the error is the read's own.
func (s *Store) readRows(ctx context.Context, reqs []readReq) ([]readRes, error) {
	if len(reqs) == 1 {
		rows, err := s.pool.Query(ctx, reqs[0].sql, reqs[0].args...)
		if err != nil {
			return nil, err
		}
		r, err := firstRow(rows)
		if err != nil {
			return nil, err
		}
		return []readRes{r}, nil
	}
	s.coalescedReads.Add(int64(len(reqs)))
	b := &pgx.Batch{}
	for _, r := range reqs {
		b.Queue(r.sql, r.args...)
	}
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	out := make([]readRes, len(reqs))
	for i := range reqs {
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		if out[i], err = firstRow(rows); err != nil {
			return nil, err
		}
	}
	return out, br.Close()
}

// firstRow copies the first row of rows and closes them; a query that
// returned none is pgx.ErrNoRows in the result, not an error of the batch.
func firstRow(rows pgx.Rows) (readRes, error) {
	defer rows.Close()
	if !rows.Next() {
		rows.Close()
		if err := rows.Err(); err != nil {
			return readRes{}, err
		}
		return readRes{err: pgx.ErrNoRows}, nil
	}
	raw := rows.RawValues()
	r := readRes{fields: slices.Clone(rows.FieldDescriptions()), values: make([][]byte, len(raw))}
	size := 0
	for _, v := range raw {
		size += len(v)
	}
	buf := make([]byte, 0, size)
	for i, v := range raw {
		if v != nil { // NULL stays nil
			buf = append(buf, v...)
			r.values[i] = buf[len(buf)-len(v) : len(buf) : len(buf)]
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return readRes{}, err
	}
	return r, nil
}
