package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/google/uuid"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// The driver as the extension seam (seam.Driver): what the stores of
// item types and of the control plane build on. They keep their tables
// beside the queue's (DDR-7) and write them in the same transactions as
// the item, under the same per-item lock and lease fence, so that the
// driver never names them.

var (
	_ seam.Driver   = (*Store)(nil)
	_ seam.Analyzer = (*Store)(nil)
)

// dialect is SQLite's: ? placeholders, no row locks (the one writer's
// BEGIN IMMEDIATE serialises every write), times as fixed-width text.
var dialect = seam.Dialect{
	Name:         "sqlite",
	Placeholders: seam.QuestionMarks,
	SerialWrites: true,
	TableExists:  `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`,
	Time:         ts,
	ScanTime:     func(t *time.Time) any { return (*timeDest)(t) },
}

// Dialect returns SQLite's dialect.
func (s *Store) Dialect() seam.Dialect { return dialect }

// Reader is the read-only connection pool.
func (s *Store) Reader() seam.Executor { return executor{s.read} }

// write runs fn in a write transaction (BEGIN IMMEDIATE: the per-item
// lock of DDR-34) and commits it if fn returns nil; if fn returns an
// error, nothing it wrote stays. The transaction may hold other writes
// too, each in a savepoint of its own (group commit, commit.go): fn must
// not call write itself, and its statements run to their end even if ctx
// is cancelled meanwhile. write returns once the commit is durable.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.commits.write(ctx, fn)
}

// Write is write for a store built on the driver; fn's error is
// translated, as PostgreSQL's is.
func (s *Store) Write(ctx context.Context, fn func(tx seam.Tx) error) error {
	return s.write(ctx, func(tx *sql.Tx) error { return translate(fn(writeTx{executor{tx}, tx})) })
}

// Fenced runs fn in a write transaction if lease l still holds the item;
// ErrLeaseLost otherwise. op names the write in errors.
func (s *Store) Fenced(ctx context.Context, l wq.Lease, op string, fn func(tx seam.Tx) error) error {
	return s.fenced(ctx, l, op, func(tx *sql.Tx, _ wq.Phase) error { return translate(fn(writeTx{executor{tx}, tx})) })
}

// AddMigrations registers an item type's own migration chain (the SQLite
// files in dir of fsys), applied by Migrate after the queue's and counted
// by SchemaVersion. Call it before Migrate.
func (s *Store) AddMigrations(component string, fsys fs.FS, dir string) error {
	return s.chains.Add(component, fsys, dir)
}

// Translate maps a driver error to the application's codes (ENOTFOUND,
// ECONFLICT, EUNAVAILABLE); other errors pass unchanged.
func (s *Store) Translate(err error) error { return translate(err) }

// Violation reads a constraint violation: SQLite names no constraint, so
// Constraint is the columns its message lists.
func (s *Store) Violation(err error) (seam.Violation, bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return seam.Violation{}, false
	}
	var kind seam.ViolationKind
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		kind = seam.Unique
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		kind = seam.ForeignKey
	default:
		return seam.Violation{}, false
	}
	// "constraint failed: UNIQUE constraint failed: t.a, t.b (2067)"
	msg := se.Error()
	if i := strings.LastIndex(msg, "constraint failed: "); i >= 0 {
		msg = msg[i+len("constraint failed: "):]
	} else {
		msg = ""
	}
	if i := strings.LastIndex(msg, " ("); i >= 0 && strings.HasSuffix(msg, ")") {
		msg = msg[:i]
	}
	return seam.Violation{Kind: kind, Constraint: msg}, true
}

// Analyze updates the planner's statistics (ANALYZE), in a write of its
// own.
func (s *Store) Analyze(ctx context.Context) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `ANALYZE`)
		return translate(err)
	})
}

// insertItem inserts n, active and actionable, with its dimensions, in tx;
// it fills in n's ID and generation when they are zero. ECONFLICT if its
// idempotency key is held.
func insertItem(ctx context.Context, tx *sql.Tx, n *wq.NewItem, now time.Time) error {
	if n.ID == uuid.Nil {
		n.ID = wq.NewItemID()
	}
	if n.Generation == 0 {
		n.Generation = 1
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO work_items (id, item_type, idempotency_key, generation,
		caller_identity, content_hash, forge, project, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.ID.String(), n.ItemType, nullString(n.IdempotencyKey), n.Generation, n.CallerIdentity, n.ContentHash,
		n.Forge, n.Project, ts(now), ts(now)); err != nil {
		return fmt.Errorf("create %s item: %w", n.ItemType, translate(err))
	}
	return upsertDimensions(ctx, tx, n.ID, n.Dimensions, now)
}

// executor runs statements on the read pool or a write transaction.
type executor struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (e executor) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := e.q.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (e executor) Query(ctx context.Context, q string, args ...any) (seam.Rows, error) {
	rs, err := e.q.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows{rs}, nil
}

func (e executor) QueryRow(ctx context.Context, q string, args ...any) seam.Row {
	return e.q.QueryRowContext(ctx, q, args...)
}

type rows struct{ *sql.Rows }

func (r rows) Close() { r.Rows.Close() }

// Insert inserts n with its dimensions and runs rows in one write
// transaction, then reads the item back.
func (s *Store) Insert(ctx context.Context, n *wq.NewItem, now time.Time, rows ...seam.Stmt) (*wq.Item, error) {
	return s.insert(ctx, nil, n, now, rows)
}

// InsertUnless is Insert unless the query unless finds a row, read in the
// write, on the one writer: nothing can come between it and the insert.
func (s *Store) InsertUnless(ctx context.Context, unless seam.Stmt, n *wq.NewItem, now time.Time, rows ...seam.Stmt) (*wq.Item, error) {
	return s.insert(ctx, &unless, n, now, rows)
}

func (s *Store) insert(ctx context.Context, unless *seam.Stmt, n *wq.NewItem, now time.Time, rows []seam.Stmt) (*wq.Item, error) {
	var it *wq.Item
	err := s.write(ctx, func(tx *sql.Tx) error {
		if unless != nil {
			found, err := anyRow(ctx, tx, *unless)
			if err != nil {
				return fmt.Errorf("insert %s item %s: its guard: %w", n.ItemType, n.ID, translate(err))
			}
			if found {
				return seam.ErrGuarded
			}
		}
		if err := insertItem(ctx, tx, n, now); err != nil {
			return err
		}
		for _, st := range rows {
			if _, err := tx.ExecContext(ctx, st.SQL, st.Args...); err != nil {
				return fmt.Errorf("insert %s item %s: %w", n.ItemType, n.ID, translate(err))
			}
		}
		// Read back on the writer, in the write: the rows are in its
		// page cache, where a read connection's own transaction, the
		// WAL's shared-memory locks and a cold cache made the read back
		// an eighth of a submission's CPU.
		var err error
		it, err = getItem(ctx, tx, n.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return it, nil
}

// writeTx is a write transaction as the seam's Tx.
type writeTx struct {
	executor
	tx *sql.Tx
}

// InsertItem inserts n with its dimensions in the transaction.
func (t writeTx) InsertItem(ctx context.Context, n *wq.NewItem, now time.Time) error {
	return insertItem(ctx, t.tx, n, now)
}

// ReplaceDesired makes an active or failed item active and actionable with
// a new desired state (content hash) and a clean slate, in the
// transaction, and upserts dims: a resubmission (DDR-40). ECONFLICT if the
// item's revision is no longer seen or it is completed or cancelled.
func (t writeTx) ReplaceDesired(ctx context.Context, id wq.ItemID, seen int64, hash string, dims []wq.DimensionUpdate, now time.Time) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE work_items SET phase = 'active', reason = '', actionable = 1, revision = revision + 1,
		attempts = 0, failing_since = NULL, retry_after = NULL, error = '', finished_at = NULL, content_hash = ?, updated_at = ?
		WHERE id = ? AND revision = ? AND phase IN ('active', 'failed')`, hash, ts(now), id.String(), seen)
	if err != nil {
		return fmt.Errorf("resubmit item %s: %w", id, translate(err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("resubmit item %s: %w", id, wq.Errorf(wq.ECONFLICT, "item %s changed since it was read", id))
	}
	return upsertDimensions(ctx, t.tx, id, dims, now)
}

// timeDest scans a time the driver stored: fixed-width UTC text, or NULL
// for the zero time.
type timeDest time.Time

func (d *timeDest) Scan(src any) error {
	var text string
	switch v := src.(type) {
	case nil:
		*d = timeDest{}
		return nil
	case string:
		text = v
	case []byte:
		text = string(v)
	default:
		return fmt.Errorf("scan a time from %T", src)
	}
	t, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return fmt.Errorf("parse stored time %q: %w", text, err)
	}
	*d = timeDest(t.UTC())
	return nil
}

// anyRow reports whether q returns a row.
func anyRow(ctx context.Context, tx *sql.Tx, q seam.Stmt) (bool, error) {
	rows, err := tx.QueryContext(ctx, q.SQL, q.Args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	found := rows.Next()
	rows.Close()
	return found, rows.Err()
}
