package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/postgres"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// TestNoPlanWalksATableWhateverTheStatistics pins the cost of the hot
// statements to the rows they touch, on the store's own connections. A
// prepared statement's generic plan is made from the statistics of the
// moment and then kept: analysed while empty, the tables made every item
// load a sequential scan that stayed cached as they grew (1.2 ms instead
// of 0.01 ms at 20,000 items). So the test analyses empty tables, forces
// the generic plan, and requires every access to go through an index.
// The sweep's plan must not walk all items either (the PostgreSQL side of
// the sweep scale check; sqlite/plan_test.go is the SQLite side).
func TestNoPlanWalksATableWhateverTheStatistics(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store) // migrated, closed at the end
	conn, err := postgres.Pool(pg).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "RESET plan_cache_mode")
	analyze := func() {
		for _, table := range []string{"work_items", "work_item_statuses", "pending_events", "work_item_ready"} {
			if _, err := conn.Exec(ctx, "ANALYZE "+table); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Empty tables first, then tables full of ready items: a join the
	// planner prefers on one set of statistics it may not on the other.
	analyze()
	t.Run("empty", func(t *testing.T) { checkPlans(t, conn) })
	if err := pg.Write(ctx, func(tx seam.Tx) error {
		for range 5000 {
			if err := tx.InsertItem(ctx, &wq.NewItem{ItemType: "mr"}, time.Now()); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	analyze()
	t.Run("full", func(t *testing.T) { checkPlans(t, conn) })
}

// TestNoPlanWalksATableBeforeItsFirstAnalysis: a database filled before
// autovacuum analysed it (a burn-down's first seconds) has row counts and
// no statistics of its columns, the state in which the claim's generic
// plan compared every locked row with every element of an array.
func TestNoPlanWalksATableBeforeItsFirstAnalysis(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store) // migrated, closed at the end
	if err := pg.Write(ctx, func(tx seam.Tx) error {
		for range 20000 { // at 5,000 the planner still chose well
			if err := tx.InsertItem(ctx, &wq.NewItem{ItemType: "mr"}, time.Now()); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	conn, err := postgres.Pool(pg).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// The row counts a vacuum records, without analysing.
	for _, table := range []string{"work_items", "work_item_statuses", "pending_events", "work_item_ready"} {
		if _, err := conn.Exec(ctx, "VACUUM "+table); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "RESET plan_cache_mode")
	checkPlans(t, conn)
}

func checkPlans(t *testing.T, conn *pgxpool.Conn) {
	ctx := context.Background()
	const id = "'01a232e2-6d1a-71fa-912f-642f8aa99470'"
	for name, tc := range map[string]struct{ types, query, args string }{
		"item load":       {"uuid", `SELECT * FROM work_items WHERE id = $1`, id},
		"dimensions load": {"uuid", `SELECT dimension, variant, status FROM work_item_statuses WHERE work_item_id = $1`, id},
		"fenced write":    {"uuid, text", `SELECT phase FROM work_items WHERE id = $1 AND lease_token = $2 FOR UPDATE`, id + ", 't'"},
		"next event":      {"uuid", `SELECT id FROM pending_events WHERE work_item_id = $1 ORDER BY id LIMIT 1`, id},
		"exit decision": {"uuid, text, bigint", `UPDATE work_items SET actionable = false, leased_until = NULL, lease_token = NULL, lease_owner = NULL
			WHERE id = $1 AND lease_token = $2 AND revision = $3
			AND NOT EXISTS (SELECT 1 FROM pending_events WHERE work_item_id = $1)`, id + ", 't', 1"},
		"sweep": {"text[], timestamptz, int, uuid, uuid, uuid, bool", postgres.DueItemsSQL, "'{mr}', now(), 1000, " + id + ", " + id + ", NULL, false"},
		"claim": {"uuid[], text[], timestamptz, timestamptz, text", postgres.ClaimSQL,
			"ARRAY[" + id + "]::uuid[], '{mr}', now(), now(), 'o'"},
		"claim due": {"text[], timestamptz, timestamptz, text, int, uuid, uuid, uuid", postgres.ClaimDueSQL,
			"'{mr}', now(), now(), 'o', 250, " + id + ", '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff'"},
	} {
		t.Run(name, func(t *testing.T) {
			stmt := "plan_" + strings.ReplaceAll(name, " ", "_")
			if _, err := conn.Exec(ctx, "PREPARE "+stmt+" ("+tc.types+") AS "+tc.query); err != nil {
				t.Fatal(err)
			}
			defer conn.Exec(ctx, "DEALLOCATE "+stmt)
			rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+stmt+" ("+tc.args+")")
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, line)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			for _, table := range []string{"work_items", "work_item_statuses", "work_item_ready"} {
				if strings.Contains(text, "Seq Scan on "+table) {
					t.Errorf("the generic plan walks %s:\n%s", table, text)
				}
			}
			// A join whose condition is a filter compares every row of one
			// side with every row of the other: the generic plan takes an
			// array parameter (and a set made of one) for 10 rows, and the
			// claim joined its ids to their tokens so, 10,000 comparisons
			// for a claim of 100.
			if strings.Contains(text, "Join Filter") && (strings.Contains(text, "Function Scan") || strings.Contains(text, "CTE Scan")) {
				t.Errorf("the generic plan compares every row with every row:\n%s", text)
			}
			if strings.Contains(text, "Seq Scan on pending_events") && name != "sweep" {
				t.Errorf("the generic plan walks pending_events:\n%s", text)
			}
			// The sweep's path of actionable items stops at the limit on
			// its own: the UNION reads all its inputs before the outer one.
			if name == "sweep" && strings.Count(text, "Limit") < 2 {
				t.Errorf("the sweep's path of actionable items is not limited:\n%s", text)
			}
			// It looks up the lease of each ready item it reads: a merge or
			// hash join with work_items, chosen on statistics of a full
			// ready set, walked every item's key at every sweep.
			if name == "sweep" && !strings.Contains(text, "Scan using work_item_ready") {
				t.Errorf("the sweep's path of actionable items does not read work_item_ready's index:\n%s", text)
			}
			if name == "sweep" && (strings.Contains(text, "Merge") || strings.Contains(text, "Hash Join")) {
				t.Errorf("the sweep joins the ready items to all items:\n%s", text)
			}
			// The claim of due items reads the ready set as the sweep does,
			// each range of an index with a limit of its own, and looks
			// each ready item up. Its due retries come from their own
			// index: with the share's range beside retry_after, the generic
			// plan read the whole ready set by its key to find none.
			if name == "claim due" {
				if strings.Count(text, "Limit") < 3 {
					t.Errorf("the claim's reads of the ready set are not limited:\n%s", text)
				}
				if !strings.Contains(text, "work_item_ready_retry") {
					t.Errorf("the claim does not read the due retries from their index:\n%s", text)
				}
				if strings.Contains(text, "Merge") || strings.Contains(text, "Hash Join") {
					t.Errorf("the claim joins the ready items to all items:\n%s", text)
				}
			}
			// The claim finds its rows by id alone: an index on type and
			// phase, chosen on a guess that few items are active, walked
			// them all.
			if name == "claim" && strings.Contains(text, "work_items_type_phase") {
				t.Errorf("the claim's plan walks the items of its types:\n%s", text)
			}
		})
	}
}

// TestAClaimFindsItsItemsByIDWithoutStatistics: on a new database that
// filled up before autovacuum analysed it, the planner guesses that few
// items are active and, given the claim's conditions on type and phase,
// walked every active item to claim a handful. The claim's plan must
// find its rows by id alone.
func TestAClaimFindsItsItemsByIDWithoutStatistics(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store) // migrated, closed at the end
	var ids []wq.ItemID                                              // a claim's batch
	if err := pg.Write(ctx, func(tx seam.Tx) error {
		for i := range 3000 {
			n := wq.NewItem{ItemType: "mr"}
			if err := tx.InsertItem(ctx, &n, time.Now()); err != nil {
				return err
			}
			if i < 32 {
				ids = append(ids, n.ID)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rows, err := postgres.Pool(pg).Query(ctx, "EXPLAIN "+postgres.ClaimSQL,
		ids, []string{"mr"}, time.Now(), time.Now(), "o")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(plan, "\n"); strings.Contains(text, "work_items_type_phase") {
		t.Errorf("the claim's plan walks the items of its types:\n%s", text)
	}
}

// A sweep reads about as much of the ready set as it returns, however
// large the backlog: an index range from its starting id that stops at
// the limit, and the lease of about as many items; of the items waiting
// for a retry it reads only the due ones. The condition on retry_after (none, or passed) once made
// the planner OR two ranges of the type's index into a bitmap, which
// holds every ready item before the limit applies: each sweep of a
// backlog read all of it, so a burn-down cost the square of its size.
// Both plans are checked, each executed: the one the planner makes for
// the sweep's own arguments and the generic one a prepared statement
// keeps.
func TestASweepReadsNoMoreOfTheReadySetThanItReturns(t *testing.T) {
	const backlog, limit, due, deferred = 20000, 1000, 3000, 500
	for _, stats := range []string{"analysed while empty", "never analysed", "analysed"} {
		t.Run(stats, func(t *testing.T) {
			ctx := context.Background()
			pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store) // migrated, closed at the end
			conn, err := postgres.Pool(pg).Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			tables := func(cmd string) {
				t.Helper()
				for _, table := range []string{"work_items", "work_item_statuses", "pending_events", "work_item_ready"} {
					if _, err := conn.Exec(ctx, cmd+" "+table); err != nil {
						t.Fatal(err)
					}
				}
			}
			if stats == "analysed while empty" {
				tables("ANALYZE")
			}
			now := time.Now()
			var middle wq.ItemID
			if err := pg.Write(ctx, func(tx seam.Tx) error {
				for i := range backlog + due + deferred {
					n := wq.NewItem{ItemType: "mr"}
					if err := tx.InsertItem(ctx, &n, now); err != nil {
						return err
					}
					if i == backlog/2 {
						middle = n.ID
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			// Some items wait for a retry that is due, some for one that
			// is not.
			if _, err := conn.Exec(ctx, `UPDATE work_items SET retry_after = $1
				WHERE id IN (SELECT id FROM work_items ORDER BY id DESC LIMIT $2)`, now.Add(-time.Minute), due+deferred); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, `UPDATE work_items SET retry_after = $1
				WHERE id IN (SELECT id FROM work_items ORDER BY id DESC LIMIT $2)`, now.Add(time.Hour), deferred); err != nil {
				t.Fatal(err)
			}
			switch stats {
			case "never analysed":
				tables("VACUUM") // row counts, no statistics of the columns
			case "analysed":
				tables("ANALYZE")
			}
			if _, err := conn.Exec(ctx, "PREPARE sweep_rows (text[], timestamptz, int, uuid, uuid, uuid, bool) AS "+postgres.DueItemsSQL); err != nil {
				t.Fatal(err)
			}
			defer conn.Exec(ctx, "DEALLOCATE sweep_rows")
			for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
				if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
					t.Fatal(err)
				}
				rows, err := conn.Query(ctx, fmt.Sprintf("EXPLAIN (ANALYZE, TIMING OFF) EXECUTE sweep_rows ('{mr}', '%s', %d, '%s', NULL, NULL, false)",
					now.UTC().Format(time.RFC3339Nano), limit, middle))
				if err != nil {
					t.Fatal(err)
				}
				plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				text := strings.Join(plan, "\n")
				for _, line := range plan {
					if strings.Contains(line, "(never executed)") {
						continue
					}
					// The rows each read of the ready set may take: a lease
					// lookup or a range of ready items about the limit (the
					// lookups stop there), and the index of retries no more
					// than the due ones (and the entries the second update
					// left dead, not yet vacuumed).
					bound := 0
					switch {
					case strings.Contains(line, "Bitmap Index Scan on work_item_ready_retry"):
						bound = due + deferred
					case strings.Contains(line, "on work_item_ready"), strings.Contains(line, "using work_items_pkey"):
						bound = 2 * limit
					default:
						continue
					}
					var read, loops int
					if i := strings.Index(line, "(actual rows="); i < 0 {
						t.Fatalf("no actual rows in %q", line)
					} else if _, err := fmt.Sscanf(line[i:], "(actual rows=%d loops=%d)", &read, &loops); err != nil {
						t.Fatalf("%q: %v", line, err)
					}
					if read*loops > bound {
						t.Errorf("%s: a sweep for %d of %d ready items read %d rows in one step (at most %d):\n%s", mode, limit, backlog+due, read*loops, bound, text)
					}
				}
				if !strings.Contains(text, "on work_item_ready") {
					t.Errorf("%s: the sweep reads no index of work_item_ready:\n%s", mode, text)
				}
			}
			conn.Exec(ctx, "RESET plan_cache_mode")
		})
	}
}

// Every submission reads its new item back: those statements must settle
// on the generic plan, as a prepared statement does after five calls
// whose custom plans cost no less. Their ids went as an array of one
// ("= ANY($1)"), whose generic plan is costed for ten, so the server
// planned both again at every submission, six times their execution.
func TestTheReadBackOfANewItemIsNotPlannedAtEveryCall(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store) // migrated, closed at the end
	it, err := pg.CreateItem(ctx, wq.NewItem{ItemType: "test"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := postgres.Pool(pg).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	const calls = 10
	for i, sql := range postgres.ReadBackSQL {
		name := fmt.Sprintf("read_back_%d", i)
		if _, err := conn.Exec(ctx, "PREPARE "+name+" (uuid) AS "+sql); err != nil {
			t.Fatal(err)
		}
		for range calls {
			if _, err := conn.Exec(ctx, fmt.Sprintf("EXECUTE %s ('%s')", name, it.ID)); err != nil {
				t.Fatal(err)
			}
		}
		var generic, custom int64
		if err := conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1`,
			name).Scan(&generic, &custom); err != nil {
			t.Fatal(err)
		}
		if custom >= calls {
			t.Errorf("%s: %d custom plans and %d generic in %d calls, want the generic plan kept:\n%s", name, custom, generic, calls, sql)
		}
		conn.Exec(ctx, "DEALLOCATE "+name)
	}
}
