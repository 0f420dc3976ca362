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
	"io/fs"
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
	pool   *pgxpool.Pool
	chains []migration.Chain // item types' migrations (AddMigrations)
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

// AddMigrations registers an item type's own migration chain (the
// PostgreSQL files in dir of fsys), applied by Migrate after the queue's
// and counted by SchemaVersion. Call it before Migrate.
func (s *Store) AddMigrations(component string, fsys fs.FS, dir string) error {
	c, err := migration.LoadChain(component, fsys, dir)
	if err != nil {
		return err
	}
	for _, have := range s.chains {
		if have.Component == component {
			return fmt.Errorf("migrations of %q registered twice", component)
		}
	}
	s.chains = append(s.chains, c)
	return nil
}

// allChains is the queue's chain, then the registered ones.
func (s *Store) allChains() ([]migration.Chain, error) {
	queue, err := migration.LoadChain("", migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	return append([]migration.Chain{queue}, s.chains...), nil
}

// Migrate applies pending migrations of every chain, each in its own
// transaction, holding a session advisory lock so that concurrent
// migrators take turns. It returns the versions applied (of any chain).
func (s *Store) Migrate(ctx context.Context) ([]int, error) {
	chains, err := s.allChains()
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
	var applied []int
	for _, c := range chains {
		if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+c.Table()+` (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return nil, fmt.Errorf("create version table: %w", translate(err))
		}
		for _, m := range c.Migrations {
			done, err := applyMigration(ctx, conn.Conn(), c.Table(), m)
			if err != nil {
				return applied, err
			}
			if done {
				applied = append(applied, m.Version)
			}
		}
	}
	return applied, nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, table string, m migration.Migration) (bool, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, translate(err)
	}
	defer tx.Rollback(ctx)
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE version = $1`, m.Version).Scan(&n); err != nil {
		return false, translate(err)
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("migration %s %04d_%s: %w", table, m.Version, m.Name, translate(err))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return false, translate(err)
	}
	return true, translate(tx.Commit(ctx))
}

// SchemaVersion counts the applied and the embedded migrations of every
// chain; they are equal when the schema is current.
func (s *Store) SchemaVersion(ctx context.Context) (int, int, error) {
	chains, err := s.allChains()
	if err != nil {
		return 0, 0, err
	}
	applied, latest := 0, 0
	for _, c := range chains {
		latest += len(c.Migrations)
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, c.Table()).Scan(&exists); err != nil {
			return 0, 0, translate(err)
		}
		if !exists {
			continue // nothing of this chain applied yet
		}
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+c.Table()).Scan(&n); err != nil {
			return 0, 0, translate(err)
		}
		applied += n
	}
	return applied, latest, nil
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
