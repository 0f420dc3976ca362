package testdb

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the driver the sqlite store uses

	"github.com/workqueue-dev/workqueue/store"
)

// Seed describes items to insert in bulk, for benchmarks that need far
// more items than the store API inserts quickly (it commits each one).
type Seed struct {
	ItemType     string
	Count        int
	Actionable   bool      // false: idle items, as after a clean exit
	PendingUntil time.Time // non-zero: each item gets a needs_reconcile row deferred until then
	Now          time.Time
}

// SeedItems inserts s.Count items with one set-based statement per table.
func SeedItems(tb testing.TB, url string, s Seed) {
	tb.Helper()
	kind, path, err := store.ParseURL(url)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if kind == store.KindPostgres {
		seedPostgres(ctx, tb, url, s)
		return
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	const layout = "2006-01-02T15:04:05.000000Z"
	now := s.Now.UTC().Format(layout)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE seed_ids AS
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		SELECT lower(printf('%s-%s-7%s-8%s-%s', hex(randomblob(4)), hex(randomblob(2)), substr(hex(randomblob(2)), 2),
			substr(hex(randomblob(2)), 2), hex(randomblob(6)))) AS id FROM n`, s.Count); err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO work_items (id, item_type, actionable, created_at, updated_at)
		SELECT id, ?, ?, ?, ? FROM seed_ids`, s.ItemType, s.Actionable, now, now); err != nil {
		tb.Fatal(err)
	}
	if !s.PendingUntil.IsZero() {
		if _, err := tx.ExecContext(ctx, `INSERT INTO work_item_statuses (work_item_id, dimension, variant, status, pending_until, updated_at)
			SELECT id, 'needs_reconcile', '', 'true', ?, ? FROM seed_ids`, s.PendingUntil.UTC().Format(layout), now); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE seed_ids`); err != nil {
		tb.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `ANALYZE`); err != nil {
		tb.Fatal(err)
	}
}

func seedPostgres(ctx context.Context, tb testing.TB, url string, s Seed) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	var pending *time.Time
	if !s.PendingUntil.IsZero() {
		pending = &s.PendingUntil
	}
	if _, err := conn.Exec(ctx, `WITH ids AS (
			INSERT INTO work_items (id, item_type, actionable, created_at, updated_at)
			SELECT gen_random_uuid(), $1, $2, $3, $3 FROM generate_series(1, $4)
			RETURNING id, item_type, retry_after, actionable),
		ready AS (INSERT INTO work_item_ready (id, item_type, retry_after)
			SELECT id, item_type, retry_after FROM ids WHERE actionable) -- no trigger does it (migration 13)
		INSERT INTO work_item_statuses (work_item_id, dimension, variant, status, pending_until, updated_at)
		SELECT id, 'needs_reconcile', '', 'true', $5, $3 FROM ids WHERE $5::timestamptz IS NOT NULL`,
		s.ItemType, s.Actionable, s.Now.UTC(), s.Count, pending); err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE work_items; ANALYZE work_item_statuses; ANALYZE pending_events`); err != nil {
		tb.Fatal(err)
	}
}
