package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// The driver as the extension seam (seam.Driver): what the stores of
// item types and of the control plane build on. They keep their tables
// beside the queue's (DDR-7) and write them in the same transactions as
// the item, under the same per-item lock and lease fence, so that the
// driver never names them.

var (
	_ seam.Driver          = (*Store)(nil)
	_ seam.Analyzer        = (*Store)(nil)
	_ seam.ReadySetChecker = (*Store)(nil)
)

// dialect is PostgreSQL's: $n placeholders, row locks in READ COMMITTED
// transactions (which serialise the writers of one row across every
// instance on the database), times as timestamptz.
var dialect = seam.Dialect{
	Name:         "postgres",
	Placeholders: seam.DollarNumbers,
	LockRow:      " FOR UPDATE",
	ShareRow:     " FOR SHARE",
	TableExists:  `SELECT CASE WHEN to_regclass($1) IS NULL THEN 0 ELSE 1 END`,
	Time: func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.UTC()
	},
	ScanTime: func(t *time.Time) any { return (*timeDest)(t) },
}

// Dialect returns PostgreSQL's dialect.
func (s *Store) Dialect() seam.Dialect { return dialect }

// Reader is the connection pool, its single-row reads coalesced
// (reads.go).
func (s *Store) Reader() seam.Executor { return poolReader{executor{s.pool}, s} }

// write runs fn in one transaction and commits it if fn returns nil.
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return translate(pgx.BeginFunc(ctx, s.pool, fn))
}

// Write is write for a store built on the driver; the wake-ups of what
// it inserted or resubmitted are sent once it committed (waker).
func (s *Store) Write(ctx context.Context, fn func(tx seam.Tx) error) error {
	return s.waking(func(wakes *[]string) error {
		return s.write(ctx, func(tx pgx.Tx) error { return fn(writeTx{executor{tx}, tx, wakes}) })
	})
}

// Fenced runs fn in a transaction that holds the item's row under lease l;
// ErrLeaseLost if the lease no longer holds. op names the write in errors.
func (s *Store) Fenced(ctx context.Context, l wq.Lease, op string, fn func(tx seam.Tx) error) error {
	return s.waking(func(wakes *[]string) error {
		return s.fenced(ctx, l, op, func(tx pgx.Tx, _ wq.Phase) error { return fn(writeTx{executor{tx}, tx, wakes}) })
	})
}

// AddMigrations registers an item type's own migration chain (the
// PostgreSQL files in dir of fsys), applied by Migrate after the queue's
// and counted by SchemaVersion. Call it before Migrate.
func (s *Store) AddMigrations(component string, fsys fs.FS, dir string) error {
	return s.chains.Add(component, fsys, dir)
}

// Translate maps a driver error to the application's codes (ENOTFOUND,
// ECONFLICT, EUNAVAILABLE); other errors pass unchanged.
func (s *Store) Translate(err error) error { return translate(err) }

// Violation reads a constraint violation: Constraint is the name of the
// constraint or index.
func (s *Store) Violation(err error) (seam.Violation, bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return seam.Violation{}, false
	}
	switch pe.Code {
	case "23505":
		return seam.Violation{Kind: seam.Unique, Constraint: pe.ConstraintName}, true
	case "23503":
		return seam.Violation{Kind: seam.ForeignKey, Constraint: pe.ConstraintName}, true
	}
	return seam.Violation{}, false
}

// Analyze updates the planner's statistics of the queue's tables.
func (s *Store) Analyze(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `ANALYZE work_items, work_item_statuses, pending_events`)
	return translate(err)
}

// Warm opens all the pool's connections at once and has each plan a read
// of the queue's tables: a new backend loads the tables' and indexes'
// descriptions at its first statement on them.
func (s *Store) Warm(ctx context.Context) error {
	conns := make([]*pgxpool.Conn, 0, s.pool.Config().MaxConns)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range cap(conns) {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return translate(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		if _, err := c.Exec(ctx, `SELECT FROM work_items w, work_item_statuses s, work_item_ready r, pending_events p
			WHERE w.id = s.work_item_id AND w.id = r.id AND w.id = p.work_item_id AND false`); err != nil {
			return translate(err)
		}
	}
	return nil
}

// ReadySetDrift returns the items on which work_item_ready (the sweep's
// set, kept by triggers) and work_items disagree: an item that is
// actionable and active and not in the set, or the other way round, or
// in it with another type or retry time than its item.
func (s *Store) ReadySetDrift(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT coalesce(w.id, r.id)::text FROM work_items w
		FULL JOIN work_item_ready r ON r.id = w.id
		WHERE (w.id IS NOT NULL AND w.actionable AND w.phase = 'active') IS DISTINCT FROM (r.id IS NOT NULL)
		OR (r.id IS NOT NULL AND (r.item_type IS DISTINCT FROM w.item_type OR r.retry_after IS DISTINCT FROM w.retry_after))`)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, translate(err)
}

// insertItem inserts n, active and actionable, with its dimensions, in
// tx; it fills in n's ID and generation when they are zero. ECONFLICT if
// its idempotency key is held. The caller wakes the instances handling
// its type once tx committed.
func insertItem(ctx context.Context, tx pgx.Tx, n *wq.NewItem, now time.Time) error {
	for _, st := range insertStmts(n, now) {
		if _, err := tx.Exec(ctx, st.SQL, st.Args...); err != nil {
			return fmt.Errorf("insert %s item %s: %w", n.ItemType, n.ID, translate(err))
		}
	}
	return nil
}

// insertStmts are the statements that insert n, active and actionable,
// and its dimensions, after filling in its ID and generation when they
// are zero.
func insertStmts(n *wq.NewItem, now time.Time) []seam.Stmt {
	fillNew(n)
	stmts := make([]seam.Stmt, 0, 1+len(n.Dimensions))
	// The item enters the ready set in the same statement (migration 13:
	// no trigger does it).
	stmts = append(stmts, seam.Stmt{SQL: `WITH item AS (INSERT INTO work_items (id, item_type, idempotency_key, generation,
		caller_identity, content_hash, forge, project, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
		RETURNING id, item_type, retry_after, actionable, phase)
		INSERT INTO work_item_ready (id, item_type, retry_after)
		SELECT id, item_type, retry_after FROM item WHERE actionable AND phase = 'active'`,
		Args: []any{n.ID, n.ItemType, nullString(n.IdempotencyKey), n.Generation, n.CallerIdentity, n.ContentHash, n.Forge, n.Project, now.UTC()}})
	for _, d := range n.Dimensions {
		stmts = append(stmts, dimensionStmt(n.ID, d, now))
	}
	return stmts
}

// fillNew fills in n's ID and generation when they are zero.
func fillNew(n *wq.NewItem) {
	if n.ID == uuid.Nil {
		n.ID = wq.NewItemID()
	}
	if n.Generation == 0 {
		n.Generation = 1
	}
}

// Insert inserts n with its dimensions, runs rows, and reads the item
// back, all in one batch: one round trip, which PostgreSQL runs as one
// implicit transaction (the extended protocol's one Sync at the batch's
// end), so that a failing statement leaves nothing of the others, and
// the reads at its end see what the statements before them wrote.
// Inserts made at the same moment share that batch and its commit
// (insertItems); one that fails makes them run one by one, so that its
// error is only its own. The wake-up is sent in the same transaction, so
// listeners hear of it at the commit.
func (s *Store) Insert(ctx context.Context, n *wq.NewItem, now time.Time, rows ...seam.Stmt) (*wq.Item, error) {
	return s.insert(ctx, insertReq{n: n, now: now, rows: rows})
}

// InsertUnless is Insert unless the query unless finds a row: the batch
// runs the query first, as a statement that fails when it does
// (guardSQL), which aborts the batch's implicit transaction before
// anything is written. Such a guard fails the others' inserts of its
// batch too; they run again as a batch without it. The server logs each
// such failure as an ERROR; its text says it is expected.
func (s *Store) InsertUnless(ctx context.Context, unless seam.Stmt, n *wq.NewItem, now time.Time, rows ...seam.Stmt) (*wq.Item, error) {
	return s.insert(ctx, insertReq{n: n, now: now, rows: rows, unless: &unless})
}

func (s *Store) insert(ctx context.Context, r insertReq) (*wq.Item, error) {
	fillNew(r.n)
	res, err := s.co.insert.do(ctx, r)
	if err == nil {
		err = res.err
	}
	if err != nil {
		return nil, err
	}
	return res.it, nil
}

// insertReq is one Insert.
type insertReq struct {
	n      *wq.NewItem
	now    time.Time
	rows   []seam.Stmt
	unless *seam.Stmt // InsertUnless's query
}

// inserted is one Insert's result: the item read back, or
// seam.ErrGuarded.
type inserted struct {
	it  *wq.Item
	err error
}

// sqlstateInvalidText is guardSQL's failure (invalid_text_representation).
const sqlstateInvalidText = "22P02"

// sqlstateProgramLimit is, at an insert batch's commit, a full notify
// queue (program_limit_exceeded).
const sqlstateProgramLimit = "54000"

// guardSQL makes a query a statement that fails when it returns a row: a
// cast to integer of a text that names what happened, so that the line
// the server logs for it explains itself to whoever reads a shared
// database's log. The cast is of a CASE on the query, a value the planner
// cannot fold (a constant cast would fail at planning, row or not).
func guardSQL(q string) string {
	return `SELECT (CASE WHEN EXISTS (` + q + `) THEN 'workqueue: an insert''s guard found a row; nothing was inserted (expected)' ELSE '1' END)::int`
}

// insertItems runs the Inserts queued at one moment in one batch: each
// one's guard, statements, then its read-back. One round trip and one
// commit for all of them: a submission's commit (its WAL flush) and its
// round trip were most of what PostgreSQL spent on it beyond the rows.
// A guard that finds a row aborts the batch; its insert is answered
// seam.ErrGuarded, and the others run again, as a batch.
func (s *Store) insertItems(ctx context.Context, reqs []insertReq) ([]inserted, error) {
	out := make([]inserted, len(reqs))
	pending := make([]int, len(reqs)) // the indexes in reqs of the inserts still to run
	for i := range pending {
		pending[i] = i
	}
	notify := true
	for len(pending) > 0 {
		batch := make([]insertReq, len(pending))
		for j, i := range pending {
			batch[j] = reqs[i]
		}
		its, guarded, err := s.insertBatch(ctx, batch, notify)
		if guarded >= 0 {
			out[pending[guarded]].err = seam.ErrGuarded
			pending = slices.Delete(pending, guarded, guarded+1)
			continue
		}
		if errors.Is(err, errWakeups) && notify {
			// A wake-up is a hint, and its failure (a full notify queue
			// behind a listener that stopped reading) must not fail the
			// inserts: they run again without it, and the waker tries
			// after the commit, as for any other write.
			notify = false
			continue
		}
		if err != nil {
			return nil, err
		}
		for j, i := range pending {
			out[i].it = its[j]
		}
		if !notify {
			for _, r := range batch {
				s.wakes.wake(wakeupPayload(r.n.ItemType, r.n.ID))
			}
		}
		break
	}
	return out, nil
}

// errWakeups is an insert batch's failure to queue its wake-ups.
var errWakeups = errors.New("postgres: the insert batch's wake-ups failed")

// insertBatch runs one batch of inserts, and with notify their wake-ups.
// A guard that finds a row fails the batch: guarded is then that insert's
// index in reqs, else -1. A failure of the wake-ups fails it too, with
// errWakeups.
func (s *Store) insertBatch(ctx context.Context, reqs []insertReq, notify bool) (its []*wq.Item, guarded int, err error) {
	b := &pgx.Batch{}
	writes := make([]int, len(reqs))
	// The read-back of a lone insert takes its id as a value, not as an
	// array of one: the generic plan of "= ANY($1)" is costed for an
	// array of ten, dearer than any custom plan for one, so the server
	// planned both statements again at every submission (67 µs of
	// planning for 11 of execution, pg_stat_statements with
	// track_planning). Several inserts are read back together at the
	// batch's end, two statements where they were two each (the batch
	// is one transaction: the reads see every write before them).
	lone := len(reqs) == 1
	ids := make([]wq.ItemID, len(reqs))
	for i, r := range reqs {
		if r.unless != nil {
			b.Queue(guardSQL(r.unless.SQL), r.unless.Args...)
		}
		stmts := append(insertStmts(r.n, r.now), r.rows...)
		writes[i] = len(stmts)
		for _, st := range stmts {
			b.Queue(st.SQL, st.Args...)
		}
		ids[i] = r.n.ID
		if lone {
			b.Queue(readBackItemSQL, r.n.ID)
			b.Queue(readBackDimensionsSQL, r.n.ID)
		}
	}
	if !lone {
		arr := uuidArray(ids)
		b.Queue(loadItemsSQL, arr)
		b.Queue(loadDimensionsSQL, arr)
	}
	// The wake-ups go in the batch's own transaction, which PostgreSQL
	// delivers at its commit and drops with a rollback. Sent by the waker
	// after the commit instead, they were a transaction and a WAL flush
	// of their own for nearly every batch: a third of a submission
	// run's commits (bench submit, pg_stat_statements). The notify
	// queue's lock, which a notifying commit holds to its end, costs
	// the inserts nothing: one insert batch runs at a time.
	if notify {
		wakes := make([]string, len(reqs))
		for i, r := range reqs {
			wakes[i] = wakeupPayload(r.n.ItemType, r.n.ID)
		}
		b.Queue(s.batchWakeSQL, wakes)
	}
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	out := make([]*wq.Item, len(reqs))
	var sc itemScanner
	for i, r := range reqs {
		if r.unless != nil {
			if _, err := br.Exec(); err != nil {
				var pgErr *pgconn.PgError
				if errors.As(err, &pgErr) && pgErr.Code == sqlstateInvalidText {
					return nil, i, nil
				}
				return nil, -1, fmt.Errorf("insert %s item %s: its guard: %w", r.n.ItemType, r.n.ID, translate(err))
			}
		}
		for range writes[i] {
			if _, err := br.Exec(); err != nil {
				return nil, -1, fmt.Errorf("insert %s item %s: %w", r.n.ItemType, r.n.ID, translate(err))
			}
		}
		if !lone {
			continue
		}
		it, err := sc.scan(br.QueryRow())
		if err != nil {
			return nil, -1, fmt.Errorf("read back inserted item %s: %w", r.n.ID, err)
		}
		it.Dimensions = wq.Dimensions{}
		if err := scanDimensionsInto(br, map[wq.ItemID]*wq.Item{it.ID: it}); err != nil {
			return nil, -1, fmt.Errorf("read back inserted item %s: %w", r.n.ID, err)
		}
		out[i] = it
	}
	if !lone {
		if err := readBack(br, &sc, ids, out); err != nil {
			return nil, -1, err
		}
	}
	if notify {
		if _, err := br.Exec(); err != nil {
			return nil, -1, fmt.Errorf("%w: %w", errWakeups, translate(err))
		}
	}
	if err := br.Close(); err != nil {
		// The commit queues the wake-ups, and fails when the notify
		// queue is full (program_limit_exceeded).
		var pgErr *pgconn.PgError
		if notify && errors.As(err, &pgErr) && pgErr.Code == sqlstateProgramLimit {
			return nil, -1, fmt.Errorf("%w: %w", errWakeups, translate(err))
		}
		r := reqs[0]
		return nil, -1, fmt.Errorf("insert %s item %s: %w", r.n.ItemType, r.n.ID, translate(err))
	}
	return out, -1, nil
}

// readBack scans the read-back of several inserts (loadItemsSQL and
// loadDimensionsSQL over ids) into out, in the order of ids.
func readBack(br pgx.BatchResults, sc *itemScanner, ids []wq.ItemID, out []*wq.Item) error {
	found, err := scanLoaded(br, sc, len(ids))
	if err != nil {
		return fmt.Errorf("read back %d inserted items: %w", len(ids), err)
	}
	for i, id := range ids {
		if out[i] = found[id]; out[i] == nil {
			return fmt.Errorf("read back inserted item %s: not found in its own insert's batch", id)
		}
	}
	return nil
}

// readBackItemSQL and readBackDimensionsSQL read a lone new item back
// ($1 its id) in its insert's batch.
const (
	readBackItemSQL       = `SELECT ` + itemColumns + ` FROM work_items WHERE id = $1`
	readBackDimensionsSQL = `SELECT work_item_id, dimension, variant, status, detail::text, pending_until, updated_at
		FROM work_item_statuses WHERE work_item_id = $1`
)

// executor runs statements on the pool or in a transaction.
type executor struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (e executor) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := e.q.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (e executor) Query(ctx context.Context, q string, args ...any) (seam.Rows, error) {
	return e.q.Query(ctx, q, args...)
}

func (e executor) QueryRow(ctx context.Context, q string, args ...any) seam.Row {
	return e.q.QueryRow(ctx, q, args...)
}

// writeTx is a transaction as the seam's Tx.
type writeTx struct {
	executor
	tx pgx.Tx
	// wakes are the wake-ups its writes owe, sent once it committed.
	wakes *[]string
}

// InsertItem inserts n with its dimensions in the transaction.
func (t writeTx) InsertItem(ctx context.Context, n *wq.NewItem, now time.Time) error {
	if err := insertItem(ctx, t.tx, n, now); err != nil {
		return err
	}
	*t.wakes = append(*t.wakes, wakeupPayload(n.ItemType, n.ID))
	return nil
}

// ReplaceDesired makes an active or failed item active and actionable with
// a new desired state (content hash) and a clean slate, in the
// transaction, upserts dims and wakes the instances handling its type
// once the transaction committed: a resubmission (DDR-40). ECONFLICT if
// the item's revision is no longer seen or it is completed or cancelled.
func (t writeTx) ReplaceDesired(ctx context.Context, id wq.ItemID, seen int64, hash string, dims []wq.DimensionUpdate, now time.Time) error {
	var itemType string
	err := t.tx.QueryRow(ctx, `UPDATE work_items SET phase = 'active', reason = '', actionable = true, revision = revision + 1,
		attempts = 0, failing_since = NULL, retry_after = NULL, error = '', finished_at = NULL, content_hash = $3, updated_at = $4
		WHERE id = $1 AND revision = $2 AND phase IN ('active', 'failed') RETURNING item_type`, id, seen, hash, now.UTC()).Scan(&itemType)
	if errors.Is(err, pgx.ErrNoRows) {
		return wq.Errorf(wq.ECONFLICT, "item %s changed since it was read", id)
	}
	if err != nil {
		return translate(err)
	}
	if err := upsertDimensions(ctx, t.tx, id, dims, now); err != nil {
		return err
	}
	*t.wakes = append(*t.wakes, wakeupPayload(itemType, id))
	return nil
}

// timeDest scans a stored time in UTC; NULL is the zero time.
type timeDest time.Time

func (d *timeDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d = timeDest{}
	case time.Time:
		*d = timeDest(v.UTC())
	default:
		return fmt.Errorf("scan a time from %T", src)
	}
	return nil
}
