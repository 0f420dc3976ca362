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
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/dburl"
	"github.com/workqueue-dev/workqueue/store"
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
	pool  *pgxpool.Pool
	co    coalescers
	wakes *waker // wake-ups of committed writes
	// batchWakeSQL sends an insert batch's wake-ups in the batch
	// (notifySQL; tests break it to see the inserts land without).
	batchWakeSQL string
	chains       migration.Registry // item types' migrations (AddMigrations)
	// coalescedReads counts single-row reads that shared a batch.
	coalescedReads atomic.Int64
	// shares are the instances' shares of the ready set, as claims of
	// due items use them (ClaimDueItems).
	shares shareCache
}

var _ wq.Store = (*Store)(nil)

// Driver is this driver, for a program's store.Registry.
var Driver = store.Driver{Kind: dburl.KindPostgres, Open: func(ctx context.Context, url, path string) (wq.Store, error) {
	st, err := Open(ctx, url)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return st, nil
}}

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
	// Never plan a sequential scan where an index serves. pgx prepares
	// each statement once per connection, and after five executions
	// PostgreSQL settles on a generic plan made from the statistics of that
	// moment: on a new database, analysed while empty, that was a
	// sequential scan of work_item_statuses for every item load, which
	// stayed cached while the table grew (1.2 ms instead of 0.01 ms at
	// 20,000 items) until autovacuum analysed it again. Every statement of
	// the store is a lookup or a walk of an index, so a sequential scan is
	// never the plan we want; one without any index still runs, at a
	// penalty. Forcing custom plans instead (the earlier choice) cost a
	// planning per execution: a third of the server's CPU in the engine's
	// burn-down. An enable_seqscan in the URL wins.
	if _, set := cfg.ConnConfig.RuntimeParams["enable_seqscan"]; !set {
		cfg.ConnConfig.RuntimeParams["enable_seqscan"] = "off"
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		registerUUIDCodec(c.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", translate(err))
	}
	s := &Store{pool: pool, wakes: &waker{pool: pool}, batchWakeSQL: notifySQL}
	s.startCoalescers()
	return s, nil
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
	s.co.close()
	s.wakes.close()
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

// Migrate applies pending migrations of every chain, each in its own
// transaction, holding a session advisory lock so that concurrent
// migrators take turns. It returns the versions applied (of any chain).
func (s *Store) Migrate(ctx context.Context) ([]int, error) {
	chains, err := s.chains.All(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", translate(err))
	}
	defer conn.Release()
	if err := checkServerVersion(conn.Conn().PgConn().ParameterStatus("server_version_num"), conn.Conn().PgConn().ParameterStatus("server_version")); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, 0)`, lockMigration); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", translate(err))
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, 0)`, lockMigration)
	return migration.Run(ctx, migrator{conn.Conn()}, chains)
}

// SchemaVersion counts the applied and the embedded migrations of every
// chain; they are equal when the schema is current.
func (s *Store) SchemaVersion(ctx context.Context) (int, int, error) {
	chains, err := s.chains.All(migrationFiles, "migrations")
	if err != nil {
		return 0, 0, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, 0, translate(err)
	}
	defer conn.Release()
	return migration.Status(ctx, migrator{conn.Conn()}, chains)
}

// migrator is one connection as a migration.Target.
type migrator struct{ conn *pgx.Conn }

func (m migrator) CreateTable(ctx context.Context, table string) error {
	_, err := m.conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	return translate(err)
}

func (m migrator) Apply(ctx context.Context, table string, mg migration.Migration) (ran bool, err error) {
	err = pgx.BeginFunc(ctx, m.conn, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE version = $1`, mg.Version).Scan(&n); err != nil || n > 0 {
			return err
		}
		if _, err := tx.Exec(ctx, mg.SQL); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+table+` (version, name) VALUES ($1, $2)`, mg.Version, mg.Name)
		ran = err == nil
		return err
	})
	return ran, translate(err)
}

func (m migrator) Count(ctx context.Context, table string) (int, error) {
	var exists bool
	if err := m.conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil || !exists {
		return 0, translate(err)
	}
	var n int
	err := m.conn.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n)
	return n, translate(err)
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

// tsValue is a nullable timestamp's time in UTC, zero for NULL.
func tsValue(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MinServerVersion is the oldest PostgreSQL the store runs on, as
// server_version_num: 13, for gen_random_uuid() in the core, which the
// claim draws its lease tokens with.
const MinServerVersion = 130000

// checkServerVersion refuses a server older than MinServerVersion by
// name, before any migration runs, instead of a claim failing later on a
// missing function. A server that does not report its version number
// (a proxy) is let through.
func checkServerVersion(num, name string) error {
	n, err := strconv.Atoi(num)
	if err != nil || n >= MinServerVersion {
		return nil
	}
	return wq.Errorf(wq.EINVALID, "postgres: this server is PostgreSQL %s; workqueue needs PostgreSQL 13 or newer", name)
}
