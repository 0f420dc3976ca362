// Package sqlite is the embedded store driver: SQLite through the pure-Go
// modernc.org/sqlite driver, so builds need no cgo.
//
// One writer connection serialises every write; each write transaction
// begins IMMEDIATE, which takes the write lock up front and so gives the
// per-item lock of DDR-34 for free. Writes are group-committed: many in
// one transaction, each in a savepoint of its own (commit.go). Readers use
// a separate pool. The
// database runs in WAL mode with synchronous=FULL: a commit survives power
// loss, not only a process crash.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/dburl"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/migration"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// tsLayout is fixed-width so that timestamps compare as strings.
const tsLayout = "2006-01-02T15:04:05.000000Z"

// Store is a workqueue.Store on one SQLite database file.
type Store struct {
	writer  *sql.DB // exactly one connection, used only by commits
	commits *committer
	read    *sql.DB
	chains  migration.Registry // item types' migrations (AddMigrations)
}

var _ wq.Store = (*Store)(nil)

// Driver is this driver, for a program's store.Registry.
var Driver = store.Driver{Kind: dburl.KindSQLite, Open: func(ctx context.Context, url, path string) (wq.Store, error) {
	st, err := Open(ctx, path)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return st, nil
}}

// Open opens (creating if needed) the database file at path. It does not
// migrate; call Migrate.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, wq.Errorf(wq.EINVALID, "sqlite: empty database path")
	}
	pragmas := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(FULL)", "foreign_keys(1)"} {
		pragmas.Add("_pragma", p)
	}
	// The writer keeps the journals of savepoints in memory (temp_store).
	// Every write of a group commit runs in a savepoint (commit.go), and
	// a savepoint's journal spilled to a temporary file cost a write(2)
	// per page it saved: in memory, a submission took 12% less of the
	// machine's CPU (issue 31). A batch's journal is bounded by maxBatch
	// small writes. Readers keep the default: a large sort may spill.
	writeDSN := "file:" + path + "?" + pragmas.Encode() + "&_pragma=temp_store(MEMORY)&_txlock=immediate"
	readDSN := "file:" + path + "?" + pragmas.Encode() + "&_pragma=query_only(1)"

	write := sql.OpenDB(connector{dsn: writeDSN, d: &sqlite.Driver{}, shield: true})
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, translate(err))
	}
	read := sql.OpenDB(connector{dsn: readDSN, d: &sqlite.Driver{}})
	n := max(4, runtime.NumCPU())
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	return &Store{writer: write, commits: newCommitter(write), read: read}, nil
}

// Close waits for the writes already queued, then closes both pools.
func (s *Store) Close() error {
	s.commits.close()
	return errors.Join(s.read.Close(), s.writer.Close())
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.read.PingContext(ctx); err != nil {
		return wq.Errorf(wq.EUNAVAILABLE, "sqlite: %v", err)
	}
	return nil
}

// Migrate applies pending migrations of every chain, each in its own
// transaction. It returns the versions applied (of any chain).
func (s *Store) Migrate(ctx context.Context) ([]int, error) {
	chains, err := s.chains.All(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	return migration.Run(ctx, migrator{s}, chains)
}

// SchemaVersion counts the applied and the embedded migrations of every
// chain; they are equal when the schema is current.
func (s *Store) SchemaVersion(ctx context.Context) (int, int, error) {
	chains, err := s.chains.All(migrationFiles, "migrations")
	if err != nil {
		return 0, 0, err
	}
	return migration.Status(ctx, migrator{s}, chains)
}

// migrator is the store as a migration.Target.
type migrator struct{ s *Store }

func (m migrator) CreateTable(ctx context.Context, table string) error {
	return m.s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`)
		return translate(err)
	})
}

func (m migrator) Apply(ctx context.Context, table string, mg migration.Migration) (ran bool, err error) {
	err = m.s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE version = ?`, mg.Version).Scan(&n); err != nil || n > 0 {
			return translate(err)
		}
		if _, err := tx.ExecContext(ctx, mg.SQL); err != nil {
			return translate(err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (version, name, applied_at) VALUES (?, ?, ?)`, mg.Version, mg.Name, ts(time.Now()))
		ran = err == nil
		return translate(err)
	})
	return ran, err
}

func (m migrator) Count(ctx context.Context, table string) (int, error) {
	var exists, n int
	if err := m.s.read.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, table).Scan(&exists); err != nil || exists == 0 {
		return 0, translate(err)
	}
	err := m.s.read.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n)
	return n, translate(err)
}

// translate maps driver errors to application errors at the boundary.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return wq.Errorf(wq.ENOTFOUND, "not found")
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return &wq.Error{Code: wq.ECONFLICT, Message: "already exists"}
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return wq.Errorf(wq.EUNAVAILABLE, "sqlite busy: %v", se)
		}
	}
	return err
}

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(tsLayout)
}

func parseTS(s sql.NullString) (time.Time, error) {
	if !s.Valid || s.String == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(tsLayout, s.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse timestamp %q: %w", s.String, err)
	}
	return t, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
