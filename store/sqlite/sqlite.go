// Package sqlite is the embedded store driver: SQLite through the pure-Go
// modernc.org/sqlite driver, so builds need no cgo.
//
// One writer connection serialises every write; each write transaction
// begins IMMEDIATE, which takes the write lock up front and so gives the
// per-item lock of DDR-34 for free. Readers use a separate pool. The
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
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/store/migration"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// tsLayout is fixed-width so that timestamps compare as strings.
const tsLayout = "2006-01-02T15:04:05.000000Z"

// Store is a workqueue.Store on one SQLite database file.
type Store struct {
	write *sql.DB // exactly one connection
	read  *sql.DB
}

var _ wq.Store = (*Store)(nil)

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
	writeDSN := "file:" + path + "?" + pragmas.Encode() + "&_txlock=immediate"
	readDSN := "file:" + path + "?" + pragmas.Encode() + "&_pragma=query_only(1)"

	write, err := sql.Open("sqlite", writeDSN)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, translate(err))
	}
	read, err := sql.Open("sqlite", readDSN)
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	n := max(4, runtime.NumCPU())
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	return &Store{write: write, read: read}, nil
}

// Close closes both pools.
func (s *Store) Close() error {
	return errors.Join(s.read.Close(), s.write.Close())
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.read.PingContext(ctx); err != nil {
		return wq.Errorf(wq.EUNAVAILABLE, "sqlite: %v", err)
	}
	return nil
}

// Migrate applies pending migrations, each in its own transaction.
func (s *Store) Migrate(ctx context.Context) ([]int, error) {
	ms, err := migration.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migration.VersionTable+` (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`); err != nil {
		return nil, fmt.Errorf("create version table: %w", translate(err))
	}
	var applied []int
	for _, m := range ms {
		done, err := s.applyMigration(ctx, m)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, m.Version)
		}
	}
	return applied, nil
}

func (s *Store) applyMigration(ctx context.Context, m migration.Migration) (bool, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return false, translate(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+migration.VersionTable+` WHERE version = ?`, m.Version).Scan(&n); err != nil {
		return false, translate(err)
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, translate(err))
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+migration.VersionTable+` (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, ts(time.Now())); err != nil {
		return false, translate(err)
	}
	return true, translate(tx.Commit())
}

// SchemaVersion returns the applied and the embedded migration versions.
func (s *Store) SchemaVersion(ctx context.Context) (int, int, error) {
	ms, err := migration.Load(migrationFiles, "migrations")
	if err != nil {
		return 0, 0, err
	}
	var applied sql.NullInt64
	err = s.read.QueryRowContext(ctx, `SELECT max(version) FROM `+migration.VersionTable).Scan(&applied)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return 0, len(ms), nil
	}
	if err != nil {
		return 0, 0, translate(err)
	}
	return int(applied.Int64), len(ms), nil
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
