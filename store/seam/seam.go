// Package seam is the extension seam of the store drivers: the interface
// (Driver) that every driver (store/sqlite, store/postgres) implements and
// that the stores of item types and of the control plane
// (controlplane/cpstore) build on, so that they write their SQL once and
// never name a driver (River's riverdriver.Driver). A third driver is one
// package that implements Driver and passes store/storetest; no store
// built on the seam changes.
//
// A store beside the queue's keeps its own tables and writes them in the
// same transactions as the queue's, under the same per-item lock and
// lease fence (DDR-7, DDR-34): Driver gives it reads, write transactions,
// fenced writes, the insert and the resubmission of an item, error
// translation, migrations, and the facts of the driver's SQL dialect.
// It gets a Driver from the wq.Store it is given with one type assertion.
//
// The package is a leaf under store/: it imports only the root package,
// so that both drivers and every store built on them import it without
// cycles. Drivers do not import each other, and the stores above import
// no driver.
package seam

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Driver is a store driver as the stores built on it see it. Both drivers
// implement it, and the conformance suite store/storetest checks it on
// both, together with the registries every driver keeps (handlers,
// history, secrets, session revocations, counts). WakeupListener stays optional: only a
// database that several instances share sends wake-ups.
type Driver interface {
	wq.Store
	wq.HandlerRegistry
	wq.HistoryStore
	wq.SecretStore
	wq.SessionRevocations
	wq.ItemCounter

	// Dialect returns the facts of the driver's SQL.
	Dialect() Dialect

	// Reader runs reads outside any write transaction (SQLite's read
	// pool, PostgreSQL's pool). Its errors are the driver's own: pass
	// them through Translate.
	Reader() Executor

	// Write runs fn in one write transaction and commits it if fn returns
	// nil; if fn returns an error nothing it wrote stays, and Write
	// returns that error, translated (so a store that reads its own
	// constraints' violations does so inside fn). On SQLite the
	// transaction is BEGIN IMMEDIATE on the one writer, which serialises
	// every write (the per-item lock of DDR-34 for free); on PostgreSQL it
	// is READ COMMITTED and holds the rows its statements lock (an UPDATE,
	// a SELECT … Dialect.LockRow) until commit. fn must not call Write
	// itself; on SQLite its statements run to their end even if ctx is
	// cancelled meanwhile (group commit). Write returns once the commit
	// is durable. EUNAVAILABLE.
	Write(ctx context.Context, fn func(tx Tx) error) error

	// Insert inserts n as Tx.InsertItem does, then runs rows, a store's
	// own rows for the item, in the same transaction, and returns the
	// item as GetItem reads it. Rows name the item by n.ID, so set it
	// beforehand (wq.NewItemID) when they do; Insert fills in n's ID and
	// generation when they are zero. Where the driver can, all of it
	// travels in one round trip (PostgreSQL: one pipelined batch, one
	// implicit transaction), so rows report only an error, never a count.
	// ECONFLICT if n's idempotency key is held; nothing stays on any
	// error. On PostgreSQL it wakes the instances handling the type on
	// commit.
	Insert(ctx context.Context, n *wq.NewItem, now time.Time, rows ...Stmt) (*wq.Item, error)

	// Fenced is Write under lease l: it runs fn only if l's token still
	// holds the item, with the item's row held until commit, and returns
	// wq.ErrLeaseLost otherwise. op names the write in errors
	// ("record forge state of"). ErrLeaseLost, EUNAVAILABLE.
	Fenced(ctx context.Context, l wq.Lease, op string, fn func(tx Tx) error) error

	// Translate maps one of the driver's errors to the codes of error.go:
	// no rows → ENOTFOUND, a unique violation → ECONFLICT, a busy or
	// unreachable database → EUNAVAILABLE; other errors, and nil, pass
	// unchanged.
	Translate(err error) error

	// Violation reads a constraint violation out of one of the driver's
	// errors, for a store that gives its own constraints their own
	// meaning; false if err is not one.
	Violation(err error) (Violation, bool)

	// AddMigrations registers a store's own migration chain, named
	// component: the files of dir in fsys, written for this dialect (by
	// convention dir ends in Dialect().Name). Migrate applies it after the
	// queue's and SchemaVersion counts it. Call it before Migrate.
	// An error for a chain it cannot read or a component registered twice.
	AddMigrations(component string, fsys fs.FS, dir string) error
}

// GuardedInserter is a Driver that can make an insert conditional on
// what the database holds, in the insert's own round trip and
// transaction: a store decides "create, since nothing is there" without
// reading first (an item type's first item for a natural key that never
// had one). Both drivers implement it; a store falls back to reading
// first on a driver that does not.
type GuardedInserter interface {
	// InsertUnless is Driver.Insert, unless the query unless (in the
	// driver's placeholder style) returns a row when the insert runs:
	// then nothing of n or rows is written and it returns ErrGuarded.
	// The query runs in the insert's transaction, before its
	// statements, under the same snapshot rules as they do (READ
	// COMMITTED on PostgreSQL, the one writer on SQLite): it is a fast
	// path's test, not a lock; a store still relies on its constraints
	// (n's idempotency key: ECONFLICT) for two inserts racing.
	InsertUnless(ctx context.Context, unless Stmt, n *wq.NewItem, now time.Time, rows ...Stmt) (*wq.Item, error)
}

// ErrGuarded is InsertUnless's answer when its query found a row.
var ErrGuarded = errors.New("seam: the insert's guard found a row; nothing was written")

// Executor runs statements, on the read pool (Driver.Reader) or in a
// write transaction (Tx). A statement is written in the driver's
// placeholder style, its arguments as the driver binds them (see
// Dialect.Bind, which turns a statement written once with ? into
// either). Errors are the driver's own: pass them through
// Driver.Translate.
type Executor interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a query; the caller closes its rows.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow runs a query for one row; its Scan returns the driver's
	// no-rows error when there is none.
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Stmt is one statement and its arguments, in the driver's placeholder
// style (Dialect.Bind writes one).
type Stmt struct {
	SQL  string
	Args []any
}

// Tx is one write transaction of Driver.Write or Driver.Fenced.
type Tx interface {
	Executor

	// InsertItem inserts n, active and actionable, with its dimensions,
	// so that a store inserts its own row for the item in the same
	// transaction; it fills in n's ID and generation when they are zero.
	// On PostgreSQL it wakes the instances handling the type on commit.
	// ECONFLICT if n's idempotency key is held.
	InsertItem(ctx context.Context, n *wq.NewItem, now time.Time) error

	// ReplaceDesired makes an active or failed item active and
	// actionable with a new desired state (content hash) and a clean
	// slate (attempts, error, backoff, finished_at), moves its revision
	// and upserts dims: a resubmission (DDR-40). It is the revision
	// fence: ECONFLICT if the item's revision is no longer seen, or it is
	// completed or cancelled. On PostgreSQL it wakes the instances
	// handling the type on commit.
	ReplaceDesired(ctx context.Context, id wq.ItemID, seen int64, hash string, dims []wq.DimensionUpdate, now time.Time) error
}

// Row is one row of a query.
type Row interface {
	Scan(dest ...any) error
}

// Rows are the rows of a query, read with Next and Scan, then closed.
type Rows interface {
	Row
	Next() bool
	Err() error
	Close()
}

// Placeholders is how a dialect writes a statement's arguments.
type Placeholders int

const (
	// QuestionMarks writes each argument as ? (SQLite).
	QuestionMarks Placeholders = iota
	// DollarNumbers writes them as $1, $2… (PostgreSQL).
	DollarNumbers
)

// ViolationKind is the kind of a constraint violation.
type ViolationKind int

const (
	// Unique is a unique or primary key violation.
	Unique ViolationKind = iota + 1
	// ForeignKey is a foreign key violation: a missing parent row.
	ForeignKey
)

// Violation is a constraint violation read out of a driver's error.
type Violation struct {
	Kind ViolationKind
	// Constraint names what was violated as the database reports it:
	// PostgreSQL names the constraint or index (cp_leases_one_active);
	// SQLite, which names none, lists the columns (cp_leases.work_id, or
	// t.a, t.b for several). Empty when the database says nothing.
	Constraint string
}

// Dialect is what a store needs to know of a driver's SQL to write its
// statements once for every driver.
type Dialect struct {
	// Name names the dialect ("sqlite", "postgres"); a store keeps its
	// migrations for it in a folder of that name.
	Name string

	// Placeholders is how the driver's statements write arguments.
	Placeholders Placeholders

	// LockRow ends a SELECT of a row in a write transaction so that the
	// row stays locked until commit (" FOR UPDATE"); ShareRow so that it
	// cannot change until then (" FOR SHARE"). Both are "" where write
	// transactions are serialised already (SQLite's one writer).
	LockRow, ShareRow string

	// SerialWrites says that write transactions run one at a time
	// (SQLite): several writers at once gain nothing.
	SerialWrites bool

	// TableExists is a query, in the driver's placeholder style, of one
	// argument, a table name, that returns 1 if the table exists (on
	// PostgreSQL, on the connection's search path) and 0 if not.
	TableExists string

	// Time is how the driver binds a time: a time in UTC (PostgreSQL) or
	// fixed-width UTC text that compares as a string (SQLite); nil, NULL,
	// for the zero time.
	Time func(t time.Time) any

	// ScanTime returns a Scan destination that reads a time the driver
	// stored (with Time) into *t, in UTC; NULL reads as the zero time.
	ScanTime func(t *time.Time) any
}

// Bind returns q, written with ? placeholders, in the dialect's style,
// and args with every time.Time bound as the dialect binds times. No
// statement given to Bind may hold a ? in a literal.
func (d Dialect) Bind(q string, args []any) (string, []any) {
	if d.Placeholders == DollarNumbers {
		q = numberPlaceholders(q)
	}
	out := make([]any, len(args))
	for i, a := range args {
		if t, ok := a.(time.Time); ok {
			out[i] = d.Time(t)
			continue
		}
		out[i] = a
	}
	return q, out
}

// numberPlaceholders turns ? into $1, $2…. A driver's statements are
// few and fixed, and each was rewritten at every call (2% of the submit
// handler's CPU): the rewrites are kept, up to maxNumbered of them, so
// that statements built at run time cannot grow the cache without end.
func numberPlaceholders(q string) string {
	if v, ok := numbered.Load(q); ok {
		return v.(string)
	}
	out := numberPlaceholdersOf(q)
	if numberedCount.Load() < maxNumbered {
		if _, loaded := numbered.LoadOrStore(q, out); !loaded {
			numberedCount.Add(1)
		}
	}
	return out
}

var (
	numbered      sync.Map // statement → its rewrite
	numberedCount atomic.Int64
)

// maxNumbered bounds the rewrites kept.
const maxNumbered = 4096

func numberPlaceholdersOf(q string) string {
	if strings.IndexByte(q, '?') < 0 {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ { // '?' is one byte, never inside a longer UTF-8 sequence
		if c := q[i]; c == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ReadySetChecker is implemented by a driver that keeps the sweep's set
// of ready items apart from work_items (PostgreSQL's work_item_ready, kept
// by triggers): ReadySetDrift returns the ids of the items on which the
// two disagree, none when the triggers did their work. Test helpers check
// it after every test.
type ReadySetChecker interface {
	ReadySetDrift(ctx context.Context) ([]string, error)
}

// Analyzer is implemented by a driver whose planner keeps statistics:
// Analyze updates those of the queue's tables, as autovacuum or a
// periodic ANALYZE would (bench seeds many items and then analyses).
type Analyzer interface {
	Analyze(ctx context.Context) error
}

// Warmer is implemented by a driver that connects to a server: Warm opens
// every connection its pool may hold and has each read the queue's
// tables once, so that what follows runs on connections as warm as a
// long-running instance's (bench measures from there).
type Warmer interface {
	Warm(ctx context.Context) error
}

// SortClaims puts a driver's claims in the order of the ids it was asked
// to claim (a repeated id at its first place), as wq.Store.ClaimItems
// answers them: a driver's claim returns its rows in its own order.
func SortClaims(claims []wq.Claim, ids []wq.ItemID) {
	at := make(map[wq.ItemID]int, len(ids))
	for i, id := range ids {
		if _, ok := at[id]; !ok {
			at[id] = i
		}
	}
	slices.SortFunc(claims, func(a, b wq.Claim) int { return cmp.Compare(at[a.Item.ID], at[b.Item.ID]) })
}
