// Package cpstore is the control plane's Store (controlplane.Store) on both
// drivers: its own migration chain (component "controlplane", tables
// prefixed cp_) and the methods. The methods are written once, in this
// package's shared files with ? placeholders, over the drivers' extension
// seam (store/seam.Driver): its Dialect says how the driver writes
// placeholders, a row lock and a time, its Reader and Write run the
// statements, and its Translate and Violation read the driver's errors
// (dialect in cpstore.go). The drivers never name the control plane, and
// this package names no driver: a driver that implements the seam runs
// it.
//
// Hard rule 2 (one holder per work item) is kept three times over: Assign
// and Reclaim serialise on the work item (SQLite's single writer;
// PostgreSQL's lock on the work row, which holds across serve processes),
// re-check in their transaction, and a partial unique index admits one
// active lease per work item whatever else happens. A violation of that
// index, or of the one terminal lock per work item, reads as
// controlplane.ErrWorkHeld.
//
// Times are kept to the microsecond, truncated, on both databases. Every
// comparison with now (expiry, liveness) truncates now the same way, so
// the store agrees with Lease.Live on the leases it returns: a lease whose
// stored expires_at is at or before now has expired, one a microsecond
// later has not.
package cpstore

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/store/seam"
)

//go:embed migrations
var migrations embed.FS

// Component names the control plane's migration chain; the drivers record
// its versions in workqueue_controlplane_schema_migrations.
const Component = "controlplane"

// maxList caps every list.
const maxList = 500

// New returns the control plane's store on db, an open driver, and
// registers its migrations with it: call it before db.Migrate.
func New(db wq.Store) (controlplane.Store, error) {
	d, ok := db.(seam.Driver)
	if !ok {
		return nil, fmt.Errorf("control plane store: the %T driver does not implement the store seam", db)
	}
	if err := d.AddMigrations(Component, migrations, path.Join("migrations", d.Dialect().Name)); err != nil {
		return nil, err
	}
	return &store{db: d, d: newDialect(d)}, nil
}

// store is the control plane's store on either driver.
type store struct {
	db   seam.Driver
	d    dialect
	open openWork
}

// openWork is the open work as of one version of the inventory
// (cp_work_version, which every write of cp_work bumps), sorted by key:
// Candidates re-reads it only when the version moved, here or in another
// instance. Its slices are shared by every Candidates answer made from
// it, and only read.
type openWork struct {
	mu      sync.Mutex
	version int64
	work    []controlplane.Work
}

var _ controlplane.Store = (*store)(nil)

// dialect is what differs between the drivers, as the driver's seam says
// it, with the errors of the control plane's own constraints. Its LockRow
// and ShareRow are how a write decides on a work row: SQLite's one
// writer serialises every write already (""); PostgreSQL locks the work
// row (" FOR UPDATE"), which serialises the assignments of one work item
// across every serve process on the database.
type dialect struct {
	seam.Dialect
	translate func(error) error // a driver error as the application's; nil stays nil
}

func newDialect(db seam.Driver) dialect {
	return dialect{Dialect: db.Dialect(), translate: func(err error) error { return translate(db, err) }}
}

// heldConstraints are the constraints of hard rule 2 (one active lease,
// one terminal lock per work item) as the drivers report them:
// PostgreSQL by name, SQLite by their columns.
var heldConstraints = []string{"cp_leases_one_active", "cp_terminal_locks_pkey", "cp_leases.work_id", "cp_terminal_locks.work_id"}

// translate reads a violation of the constraints of hard rule 2 as
// ErrWorkHeld and a missing parent row as ENOTFOUND; the rest as the
// driver does.
func translate(db seam.Driver, err error) error {
	if v, ok := db.Violation(err); ok {
		switch v.Kind {
		case seam.Unique:
			for _, c := range heldConstraints {
				if strings.Contains(v.Constraint, c) {
					return heldBy(err)
				}
			}
		case seam.ForeignKey:
			return errMissing
		}
	}
	return db.Translate(err)
}

type row = seam.Row

type rows = seam.Rows

// conn runs the shared statements on an executor of the driver (its
// read pool or a write transaction), returning the application's errors.
type conn struct {
	r seam.Executor
	d *dialect
}

func (s *store) reader() conn { return conn{s.db.Reader(), &s.d} }

// write runs fn in one write transaction.
func (s *store) write(ctx context.Context, fn func(c conn) error) error {
	return s.db.Write(ctx, func(tx seam.Tx) error { return fn(conn{tx, &s.d}) })
}

func (c conn) exec(ctx context.Context, q string, args ...any) (int64, error) {
	q, args = c.d.Bind(q, args)
	n, err := c.r.Exec(ctx, q, args...)
	return n, c.d.translate(err)
}

func (c conn) query(ctx context.Context, q string, args ...any) (rows, error) {
	q, args = c.d.Bind(q, args)
	rs, err := c.r.Query(ctx, q, args...)
	if err != nil {
		return nil, c.d.translate(err)
	}
	return translatedRows{rs, c.d.translate}, nil
}

func (c conn) queryRow(ctx context.Context, q string, args ...any) row {
	q, args = c.d.Bind(q, args)
	return translatedRow{c.r.QueryRow(ctx, q, args...), c.d.translate}
}

type translatedRow struct {
	row
	translate func(error) error
}

func (r translatedRow) Scan(dest ...any) error { return r.translate(r.row.Scan(dest...)) }

type translatedRows struct {
	rows
	translate func(error) error
}

func (r translatedRows) Scan(dest ...any) error { return r.translate(r.rows.Scan(dest...)) }
func (r translatedRows) Err() error             { return r.translate(r.rows.Err()) }

// qualify prefixes each column of a list with alias.
func qualify(alias, cols string) string {
	var out []string
	for _, c := range strings.Split(cols, ",") {
		out = append(out, alias+"."+strings.TrimSpace(c))
	}
	return strings.Join(out, ", ")
}

// queryAll runs q on c and scans every row with scan.
func queryAll[T any](ctx context.Context, c conn, scan func(row) (T, error), q string, args ...any) ([]T, error) {
	return queryAppend(ctx, c, nil, scan, q, args...)
}

// queryAppend is queryAll appending to out.
func queryAppend[T any](ctx context.Context, c conn, out []T, scan func(row) (T, error), q string, args ...any) ([]T, error) {
	rs, err := c.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		v, err := scan(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rs.Err()
}

// heldBy is the error of a write that broke the one active lease or the
// one terminal lock of a work item: another session holds it.
func heldBy(err error) error {
	return fmt.Errorf("%w (%v)", controlplane.ErrWorkHeld, err)
}

// errMissing is the error of a write naming a session, work item or
// assignment that does not exist (a foreign key).
var errMissing = wq.Errorf(wq.ENOTFOUND, "the session, work item or assignment it names does not exist")

// notFound gives a missing row its name.
func notFound(err error, what, id string) error {
	if wq.ErrorCode(err) == wq.ENOTFOUND {
		return wq.Errorf(wq.ENOTFOUND, "%s %s not found", what, id)
	}
	return err
}

// limit is n capped at maxList; 0 is the cap.
func limit(n int) int {
	if n <= 0 || n > maxList {
		return maxList
	}
	return n
}

// filter builds a WHERE clause of equalities; empty values do not filter.
type filter struct {
	conds []string
	args  []any
}

func (f *filter) eq(col, v string) {
	if v != "" {
		f.add(col+" = ?", v)
	}
}

func (f *filter) add(cond string, args ...any) {
	f.conds = append(f.conds, cond)
	f.args = append(f.args, args...)
}

func (f *filter) where() string {
	if len(f.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(f.conds, " AND ")
}

// timeCol scans a stored time: a time (PostgreSQL), fixed-width UTC text
// (SQLite), or NULL for the zero time.
type timeCol time.Time

func (t *timeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = timeCol{}
	case time.Time:
		*t = timeCol(v.UTC())
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	default:
		return fmt.Errorf("scan a time from %T", src)
	}
	return nil
}

func (t *timeCol) parse(s string) error {
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("parse stored time %q: %w", s, err)
	}
	*t = timeCol(v.UTC())
	return nil
}

// jsonCol scans a stored JSON document (jsonb or text); nil for NULL. It
// copies bytes into the room it has, so that one jsonCol serves a read.
type jsonCol []byte

func (j *jsonCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case string:
		*j = append((*j)[:0], v...)
	case []byte:
		*j = append((*j)[:0], v...)
	default:
		return fmt.Errorf("scan JSON from %T", src)
	}
	return nil
}

// rawJSON is a document as an argument: NULL when empty; EINVALID when
// it is not JSON (both databases then store the same thing).
func rawJSON(what string, m json.RawMessage) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if !json.Valid(m) {
		return nil, wq.Errorf(wq.EINVALID, "%s is not valid JSON", what)
	}
	return string(m), nil
}

// encodeList is a list as a JSON array argument.
func encodeList[T any](v []T) (string, error) {
	if len(v) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// decodeStrings reads a stored JSON array of strings; nil when empty.
func decodeStrings[T ~string](j jsonCol) ([]T, error) {
	var out []T
	if len(j) == 0 || string(j) == "[]" {
		return nil, nil
	}
	// The store writes plain labels and actions: read them without
	// reflection (Candidates reads one array per open work item), and
	// leave any escape to encoding/json.
	if s := string(j); strings.IndexByte(s, '\\') < 0 && flatArray(s, func(tok string) bool {
		if len(tok) < 2 || tok[0] != '"' {
			return false
		}
		out = append(out, T(tok[1:len(tok)-1]))
		return true
	}) {
		return out, nil
	}
	return decodeJSON[T](j)
}

// decodeInts reads a stored JSON array of integers; nil when empty.
func decodeInts(j jsonCol) ([]int64, error) {
	var out []int64
	if len(j) == 0 || string(j) == "[]" {
		return nil, nil
	}
	if flatArray(string(j), func(tok string) bool {
		n, err := strconv.ParseInt(tok, 10, 64)
		out = append(out, n)
		return err == nil
	}) {
		return out, nil
	}
	return decodeJSON[int64](j)
}

// flatArray calls item with each element of a JSON array of plain
// scalars (strings without escapes, with their quotes; numbers), in
// order; false when s is not such an array or item refuses an element.
func flatArray(s string, item func(tok string) bool) bool {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return false
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	if s == "" {
		return true
	}
	for {
		end := strings.IndexByte(s, ',')
		if s[0] == '"' {
			end = strings.IndexByte(s[1:], '"') + 2
			if end < 2 {
				return false
			}
		} else if end < 0 {
			end = len(s)
		}
		if !item(strings.TrimSpace(s[:end])) {
			return false
		}
		s = strings.TrimSpace(s[end:])
		switch {
		case s == "":
			return true
		case s[0] != ',':
			return false
		}
		if s = strings.TrimSpace(s[1:]); s == "" {
			return false
		}
	}
}

func decodeJSON[T any](j jsonCol) ([]T, error) {
	var v []T
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, fmt.Errorf("decode stored list %q: %w", j, err)
	}
	if len(v) == 0 {
		return nil, nil
	}
	return v, nil
}

// rawOrNil is a stored document as a json.RawMessage; nil when NULL.
func rawOrNil(j jsonCol) json.RawMessage {
	if len(j) == 0 {
		return nil
	}
	return json.RawMessage(j)
}
