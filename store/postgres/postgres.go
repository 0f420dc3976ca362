// Package postgres is the distributed store driver: PostgreSQL through pgx
// v5. Several instances may share one database; they coordinate through
// fenced leases and a per-item advisory lock (DDR-34).
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/store/migration"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Advisory lock namespaces (the first int of the two-int form).
const (
	lockItem      int32 = 0x57514954 // "WQIT": per-item lock, DDR-34
	lockMigration int32 = 0x57514d47 // "WQMG": one migrator at a time
)

// Store is a workqueue.Store on a PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool
}

var _ wq.Store = (*Store)(nil)

// Open connects to the database at url (postgres://…). It does not
// migrate; call Migrate.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, wq.Errorf(wq.EINVALID, "postgres: invalid database URL: %v", redactErr(err))
	}
	if cfg.MaxConns < 20 {
		cfg.MaxConns = 20 // a worker pool of 10 plus the sweep, heartbeats and the API
	}
	// Plan every execution with the current statistics. pgx prepares each
	// statement once per connection, and PostgreSQL then settles on a
	// generic plan made from the statistics of that moment: on a new
	// database that filled up quickly, that was a sequential scan of
	// work_item_statuses for every item load (1.2 ms instead of 0.01 ms at
	// 20,000 items, a third of all server time). Our statements are small,
	// so planning each time costs little. A plan_cache_mode in the URL wins.
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", translate(err))
	}
	return &Store{pool: pool}, nil
}

// redactErr keeps a connection-string parse error from echoing a password.
func redactErr(err error) string {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return "cannot parse connection string"
	}
	return err.Error()
}

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return wq.Errorf(wq.EUNAVAILABLE, "postgres: %v", err)
	}
	return nil
}

// Migrate applies pending migrations, each in its own transaction, holding
// a session advisory lock so that concurrent migrators take turns.
func (s *Store) Migrate(ctx context.Context) ([]int, error) {
	ms, err := migration.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", translate(err))
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, 0)`, lockMigration); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", translate(err))
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, 0)`, lockMigration)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migration.VersionTable+` (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("create version table: %w", translate(err))
	}
	var applied []int
	for _, m := range ms {
		done, err := applyMigration(ctx, conn.Conn(), m)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, m.Version)
		}
	}
	return applied, nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m migration.Migration) (bool, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, translate(err)
	}
	defer tx.Rollback(ctx)
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+migration.VersionTable+` WHERE version = $1`, m.Version).Scan(&n); err != nil {
		return false, translate(err)
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, translate(err))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+migration.VersionTable+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return false, translate(err)
	}
	return true, translate(tx.Commit(ctx))
}

// SchemaVersion returns the applied and the embedded migration versions.
func (s *Store) SchemaVersion(ctx context.Context) (int, int, error) {
	ms, err := migration.Load(migrationFiles, "migrations")
	if err != nil {
		return 0, 0, err
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, migration.VersionTable).Scan(&exists); err != nil {
		return 0, 0, translate(err)
	}
	if !exists {
		return 0, len(ms), nil
	}
	var applied *int
	if err := s.pool.QueryRow(ctx, `SELECT max(version) FROM `+migration.VersionTable).Scan(&applied); err != nil {
		return 0, 0, translate(err)
	}
	if applied == nil {
		return 0, len(ms), nil
	}
	return *applied, len(ms), nil
}

// translate maps driver errors to application errors at the boundary.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return wq.Errorf(wq.ENOTFOUND, "not found")
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505":
			return &wq.Error{Code: wq.ECONFLICT, Message: "already exists"}
		case "40001", "40P01", "57P01", "57P03", "53300":
			return wq.Errorf(wq.EUNAVAILABLE, "postgres: %s", pe.Message)
		}
		return err
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	if errors.As(err, &ne) || errors.As(err, &ce) {
		return wq.Errorf(wq.EUNAVAILABLE, "postgres unreachable: %v", err)
	}
	return err
}

// itemLockKey maps an item id onto the second int of the advisory lock.
// Collisions only make two items wait for each other briefly.
func itemLockKey(id wq.ItemID) int32 {
	h := fnv.New32a()
	h.Write(id[:])
	return int32(h.Sum32())
}

func lockItemTx(ctx context.Context, tx pgx.Tx, id wq.ItemID) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, lockItem, itemLockKey(id))
	return translate(err)
}

func tsArg(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func tsVal(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
