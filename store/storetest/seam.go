package storetest

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// seamArea checks the extension seam that the stores of item types and of
// the control plane build on (store/seam): that every driver implements it
// with every registry, and that its reads, writes, fences, translation,
// migrations and dialect behave alike on every driver.
func seamArea(t *testing.T, open func(t *testing.T) wq.Store) {
	driver := func(t *testing.T) seam.Driver {
		t.Helper()
		s := open(t)
		d, ok := s.(seam.Driver)
		if !ok {
			t.Fatalf("%T does not implement the store seam (seam.Driver) with every registry", s)
		}
		return d
	}
	// exec runs a statement written with ? on ex, bound for d's dialect.
	exec := func(t *testing.T, d seam.Driver, ex seam.Executor, q string, args ...any) (int64, error) {
		t.Helper()
		q, args = d.Dialect().Bind(q, args)
		n, err := ex.Exec(ctx, q, args...)
		return n, d.Translate(err)
	}
	queryRow := func(d seam.Driver, ex seam.Executor, q string, args ...any) seam.Row {
		q, args = d.Dialect().Bind(q, args)
		return ex.QueryRow(ctx, q, args...)
	}

	t.Run("an item inserted in a write commits with the write's other rows", func(t *testing.T) {
		d := driver(t)
		n := wq.NewItem{ItemType: "test", Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x"}, Status: wq.StatusTrue}}}
		err := d.Write(ctx, func(tx seam.Tx) error {
			if err := tx.InsertItem(ctx, &n, T0); err != nil {
				return err
			}
			_, err := exec(t, d, tx, `UPDATE work_items SET content_hash = ? WHERE id = ?`, "in-the-same-write", n.ID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n.ID == (wq.ItemID{}) || n.Generation != 1 {
			t.Errorf("InsertItem left id %v, generation %d; want an id and generation 1", n.ID, n.Generation)
		}
		it := get(t, d, n.ID)
		if it.Phase != wq.PhaseActive || !it.Actionable || it.ContentHash != "in-the-same-write" {
			t.Errorf("inserted item: phase %s, actionable %v, content hash %q; want active, actionable, the write's hash", it.Phase, it.Actionable, it.ContentHash)
		}
		if dim, ok := it.Dimensions[wq.DimensionKey{Dimension: "needs_x"}]; !ok || dim.Status != wq.StatusTrue {
			t.Errorf("inserted item's dimensions = %v; want needs_x true", it.Dimensions)
		}
	})

	t.Run("an item inserted with its store's rows comes back as a read gives it", func(t *testing.T) {
		d := driver(t)
		n := wq.NewItem{ID: wq.NewItemID(), ItemType: "test", IdempotencyKey: "k", CallerIdentity: "alice", ContentHash: "h",
			Scope: wq.Scope{Forge: "f", Project: "o/r"},
			Dimensions: []wq.DimensionUpdate{
				{DimensionKey: wq.DimensionKey{Dimension: "needs_x"}, Status: wq.StatusTrue, Detail: []byte(`{"b": 1, "a": [true]}`)},
				{DimensionKey: wq.DimensionKey{Dimension: "needs_y", Variant: "v"}, Status: wq.StatusFalse, PendingUntil: T0.Add(time.Hour)},
			}}
		now := T0.Add(123456789 * time.Nanosecond) // finer than either database keeps
		q, args := d.Dialect().Bind(`UPDATE work_items SET reason = ? WHERE id = ?`, []any{"the-store's-row", n.ID})
		it, err := d.Insert(ctx, &n, now, seam.Stmt{SQL: q, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(get(t, d, n.ID), it); diff != "" {
			t.Errorf("Insert returned an item other than GetItem reads (-read +returned):\n%s", diff)
		}
		if it.Reason != "the-store's-row" || it.Generation != 1 || it.Phase != wq.PhaseActive || !it.Actionable {
			t.Errorf("inserted item: reason %q, generation %d, phase %s, actionable %v; want the row's reason, 1, active, actionable",
				it.Reason, it.Generation, it.Phase, it.Actionable)
		}
	})

	t.Run("an insert whose store row fails leaves no item, and a held key is a conflict", func(t *testing.T) {
		d := driver(t)
		n := wq.NewItem{ID: wq.NewItemID(), ItemType: "test"}
		q, args := d.Dialect().Bind(`INSERT INTO no_such_table (id) VALUES (?)`, []any{n.ID})
		if _, err := d.Insert(ctx, &n, T0, seam.Stmt{SQL: q, Args: args}); err == nil {
			t.Fatal("Insert with a failing row succeeded")
		}
		_, err := d.GetItem(ctx, n.ID)
		wantCode(t, err, wq.ENOTFOUND)

		create(t, d, wq.NewItem{IdempotencyKey: "held"})
		m := wq.NewItem{ItemType: "test", IdempotencyKey: "held"}
		_, err = d.Insert(ctx, &m, T0)
		wantCode(t, err, wq.ECONFLICT)
		_, err = d.GetItem(ctx, m.ID)
		wantCode(t, err, wq.ENOTFOUND)
	})

	t.Run("a write whose function fails leaves nothing and returns its error", func(t *testing.T) {
		d := driver(t)
		boom := errors.New("boom")
		var n wq.NewItem
		n.ItemType = "test"
		err := d.Write(ctx, func(tx seam.Tx) error {
			if err := tx.InsertItem(ctx, &n, T0); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Write = %v; want the function's error", err)
		}
		_, err = d.GetItem(ctx, n.ID)
		wantCode(t, err, wq.ENOTFOUND)
	})

	t.Run("an item inserted with a held idempotency key is a conflict", func(t *testing.T) {
		d := driver(t)
		create(t, d, wq.NewItem{IdempotencyKey: "k"})
		err := d.Write(ctx, func(tx seam.Tx) error {
			return tx.InsertItem(ctx, &wq.NewItem{ItemType: "test", IdempotencyKey: "k"}, T0)
		})
		wantCode(t, err, wq.ECONFLICT)
	})

	guarded := func(t *testing.T, d seam.Driver) seam.GuardedInserter {
		t.Helper()
		g, ok := d.(seam.GuardedInserter)
		if !ok {
			t.Fatalf("%T does not implement seam.GuardedInserter", d)
		}
		return g
	}
	// unlessCaller is a guard that finds the items of a caller.
	unlessCaller := func(d seam.Driver, caller string) seam.Stmt {
		q, args := d.Dialect().Bind(`SELECT id FROM work_items WHERE caller_identity = ?`, []any{caller})
		return seam.Stmt{SQL: q, Args: args}
	}

	t.Run("an insert whose guard finds a row writes nothing of it or its rows", func(t *testing.T) {
		d := driver(t)
		there := create(t, d, wq.NewItem{CallerIdentity: "alice", IdempotencyKey: "first"})
		n := wq.NewItem{ID: wq.NewItemID(), ItemType: "test", IdempotencyKey: "second", CallerIdentity: "alice",
			Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x"}, Status: wq.StatusTrue}}}
		q, args := d.Dialect().Bind(`UPDATE work_items SET reason = ? WHERE id = ?`, []any{"written-by-the-guarded-insert", there.ID})
		it, err := guarded(t, d).InsertUnless(ctx, unlessCaller(d, "alice"), &n, T0, seam.Stmt{SQL: q, Args: args})
		if !errors.Is(err, seam.ErrGuarded) || it != nil {
			t.Fatalf("InsertUnless with a guard that finds a row = %v, %v; want nil, ErrGuarded", it, err)
		}
		_, err = d.GetItem(ctx, n.ID)
		wantCode(t, err, wq.ENOTFOUND)
		if got := get(t, d, there.ID); got.Reason != "" {
			t.Errorf("the guarded insert's row ran: the other item's reason is %q", got.Reason)
		}
		// Its idempotency key was never held.
		create(t, d, wq.NewItem{IdempotencyKey: "second"})
	})

	t.Run("an insert whose guard finds nothing inserts as Insert does", func(t *testing.T) {
		d := driver(t)
		create(t, d, wq.NewItem{CallerIdentity: "alice"})
		n := wq.NewItem{ID: wq.NewItemID(), ItemType: "test", IdempotencyKey: "k", CallerIdentity: "bob"}
		q, args := d.Dialect().Bind(`UPDATE work_items SET reason = ? WHERE id = ?`, []any{"the-store's-row", n.ID})
		it, err := guarded(t, d).InsertUnless(ctx, unlessCaller(d, "bob"), &n, T0, seam.Stmt{SQL: q, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(get(t, d, n.ID), it); diff != "" {
			t.Errorf("InsertUnless returned an item other than GetItem reads (-read +returned):\n%s", diff)
		}
		if it.Reason != "the-store's-row" || it.Generation != 1 {
			t.Errorf("inserted item: reason %q, generation %d; want the row's reason, 1", it.Reason, it.Generation)
		}
		// A held key is still a conflict, guard or not.
		m := wq.NewItem{ItemType: "test", IdempotencyKey: "k", CallerIdentity: "carol"}
		_, err = guarded(t, d).InsertUnless(ctx, unlessCaller(d, "carol"), &m, T0)
		wantCode(t, err, wq.ECONFLICT)
	})

	t.Run("guarded inserts made at once are each decided on their own guard", func(t *testing.T) {
		d := driver(t)
		create(t, d, wq.NewItem{CallerIdentity: "taken"})
		const n = 24
		type result struct {
			id  wq.ItemID
			err error
		}
		results := make([]result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				caller := fmt.Sprint("caller-", i)
				if i%6 == 0 {
					caller = "taken" // its guard finds the item above
				}
				it := wq.NewItem{ID: wq.NewItemID(), ItemType: "test", IdempotencyKey: fmt.Sprint("key-", i), CallerIdentity: caller}
				_, err := guarded(t, d).InsertUnless(ctx, unlessCaller(d, caller), &it, T0)
				results[i] = result{it.ID, err}
			})
		}
		wg.Wait()
		for i, r := range results {
			_, getErr := d.GetItem(ctx, r.id)
			if i%6 == 0 {
				if !errors.Is(r.err, seam.ErrGuarded) || wq.ErrorCode(getErr) != wq.ENOTFOUND {
					t.Errorf("insert %d, guarded: %v, and its item reads %v; want ErrGuarded and not found", i, r.err, getErr)
				}
				continue
			}
			if r.err != nil || getErr != nil {
				t.Errorf("insert %d, unguarded: %v, and its item reads %v; want it inserted", i, r.err, getErr)
			}
		}
	})

	t.Run("a fenced write runs under a live lease and is ErrLeaseLost once the lease moved", func(t *testing.T) {
		d := driver(t)
		it := create(t, d, wq.NewItem{})
		l := claim(t, d, it.ID, T0)
		if err := d.Fenced(ctx, l, "test write of", func(tx seam.Tx) error {
			_, err := exec(t, d, tx, `UPDATE work_items SET content_hash = ? WHERE id = ?`, "fenced", it.ID)
			return err
		}); err != nil {
			t.Fatalf("Fenced under a live lease: %v", err)
		}
		if got := get(t, d, it.ID).ContentHash; got != "fenced" {
			t.Errorf("content hash after the fenced write = %q; want fenced", got)
		}
		// The lease expires and another worker claims the item.
		if _, err := d.ClaimItem(ctx, it.ID, "worker-2", T0.Add(2*time.Minute), time.Minute); err != nil {
			t.Fatal(err)
		}
		ran := false
		err := d.Fenced(ctx, l, "test write of", func(tx seam.Tx) error {
			ran = true
			return nil
		})
		if !errors.Is(err, wq.ErrLeaseLost) || ran {
			t.Errorf("Fenced under a lost lease = %v, ran %v; want ErrLeaseLost without running", err, ran)
		}
	})

	t.Run("replacing the desired state is fenced by the revision and refuses a cancelled item", func(t *testing.T) {
		d := driver(t)
		it := create(t, d, wq.NewItem{})
		l := claim(t, d, it.ID, T0)
		if _, err := d.RecordFailure(ctx, l, wq.Failure{Error: "e", RetryAfter: T0.Add(time.Hour)}, T0); err != nil {
			t.Fatal(err)
		}
		seen := get(t, d, it.ID).Revision
		dims := []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_push"}, Status: wq.StatusTrue}}
		replace := func(seen int64) error {
			return d.Write(ctx, func(tx seam.Tx) error { return tx.ReplaceDesired(ctx, it.ID, seen, "h2", dims, T0.Add(time.Minute)) })
		}
		if err := replace(seen); err != nil {
			t.Fatalf("ReplaceDesired at the seen revision: %v", err)
		}
		got := get(t, d, it.ID)
		if got.ContentHash != "h2" || got.Revision <= seen || !got.Actionable || got.Attempts != 0 || got.Error != "" || !got.RetryAfter.IsZero() {
			t.Errorf("after ReplaceDesired: hash %q, revision %d (seen %d), actionable %v, attempts %d, error %q, retry after %v; want h2, a newer revision, actionable and a clean slate",
				got.ContentHash, got.Revision, seen, got.Actionable, got.Attempts, got.Error, got.RetryAfter)
		}
		if dim := got.Dimensions[wq.DimensionKey{Dimension: "needs_push"}]; dim.Status != wq.StatusTrue {
			t.Errorf("after ReplaceDesired needs_push = %v; want true", dim)
		}
		wantCode(t, replace(seen), wq.ECONFLICT) // the revision moved
		if _, err := d.CancelItem(ctx, it.ID, "test", T0.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		wantCode(t, replace(get(t, d, it.ID).Revision), wq.ECONFLICT)
	})

	t.Run("driver errors translate: no row is not found, a duplicate key a unique violation and a conflict", func(t *testing.T) {
		d := driver(t)
		if d.Translate(nil) != nil {
			t.Error("Translate(nil) is not nil")
		}
		var id string
		err := queryRow(d, d.Reader(), `SELECT item_type FROM work_items WHERE id = ?`, wq.NewItemID()).Scan(&id)
		wantCode(t, d.Translate(err), wq.ENOTFOUND)

		// insert returns the driver's own error of the statement, and
		// Write's, which is translated.
		insert := func() (raw, err error) {
			err = d.Write(ctx, func(tx seam.Tx) error {
				q, args := d.Dialect().Bind(`INSERT INTO service_secrets (name, value, created_at) VALUES (?, ?, ?)`, []any{"dup", []byte("v"), T0})
				_, raw = tx.Exec(ctx, q, args...)
				return raw
			})
			return raw, err
		}
		if _, err := insert(); err != nil {
			t.Fatal(err)
		}
		raw, err := insert()
		v, ok := d.Violation(raw)
		if !ok || v.Kind != seam.Unique || !strings.Contains(v.Constraint, "service_secrets") {
			t.Errorf("Violation of a duplicate key = %+v, %v; want a unique violation naming service_secrets", v, ok)
		}
		wantCode(t, d.Translate(raw), wq.ECONFLICT)
		wantCode(t, err, wq.ECONFLICT)
	})

	t.Run("an item deleted by hand takes its dimension rows with it", func(t *testing.T) {
		d := driver(t)
		it := create(t, d, wq.NewItem{Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x"}, Status: wq.StatusTrue}}})
		other := create(t, d, wq.NewItem{Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x"}, Status: wq.StatusTrue}}})
		if err := d.Write(ctx, func(tx seam.Tx) error {
			_, err := exec(t, d, tx, `DELETE FROM work_items WHERE id = ?`, it.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var left, others int
		if err := queryRow(d, d.Reader(), `SELECT count(*) FROM work_item_statuses WHERE work_item_id = ?`, it.ID).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if err := queryRow(d, d.Reader(), `SELECT count(*) FROM work_item_statuses WHERE work_item_id = ?`, other.ID).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if left != 0 || others != 1 {
			t.Errorf("after deleting an item: %d of its dimension rows left, %d of another item's; want 0 and 1", left, others)
		}
	})

	t.Run("a row naming a missing parent is a foreign key violation", func(t *testing.T) {
		d := driver(t)
		var err error
		_ = d.Write(ctx, func(tx seam.Tx) error {
			// pending_events keeps its key to work_items on every driver
			// (work_item_statuses lost it on PostgreSQL: migration 11).
			q, args := d.Dialect().Bind(`INSERT INTO pending_events (work_item_id, source, event_type, delivery_id, body, received_at)
				VALUES (?, 'test', 'push', 'd1', '{}', ?)`, []any{wq.NewItemID(), T0})
			_, err = tx.Exec(ctx, q, args...)
			return err
		})
		if v, ok := d.Violation(err); !ok || v.Kind != seam.ForeignKey {
			t.Errorf("Violation of a missing parent (%v) = %+v, %v; want a foreign key violation", err, v, ok)
		}
		if _, ok := d.Violation(errors.New("not the database's")); ok {
			t.Error("Violation reads a violation out of an error that is none")
		}
	})

	t.Run("a time bound with the dialect reads back the same, and the zero time as NULL", func(t *testing.T) {
		d := driver(t)
		it := create(t, d, wq.NewItem{})
		at := T0.Add(1234567 * time.Microsecond)
		if err := d.Write(ctx, func(tx seam.Tx) error {
			_, err := exec(t, d, tx, `UPDATE work_items SET updated_at = ?, finished_at = ? WHERE id = ?`, at, time.Time{}, it.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var updated, finished time.Time
		finished = T0 // must be overwritten with the zero time
		dl := d.Dialect()
		if err := queryRow(d, d.Reader(), `SELECT updated_at, finished_at FROM work_items WHERE id = ?`, it.ID).Scan(dl.ScanTime(&updated), dl.ScanTime(&finished)); err != nil {
			t.Fatal(err)
		}
		if !updated.Equal(at) || updated.Location() != time.UTC || !finished.IsZero() {
			t.Errorf("read back updated_at %v, finished_at %v; want %v in UTC and the zero time", updated, finished, at)
		}
		if got := get(t, d, it.ID).UpdatedAt; !got.Equal(at) {
			t.Errorf("the store reads the bound time as %v; want %v", got, at)
		}
	})

	t.Run("the dialect's row locks and table query run in a write", func(t *testing.T) {
		d := driver(t)
		it := create(t, d, wq.NewItem{})
		dl := d.Dialect()
		var phase string
		var have, missing int
		if err := d.Write(ctx, func(tx seam.Tx) error {
			if err := queryRow(d, tx, `SELECT phase FROM work_items WHERE id = ?`+dl.LockRow, it.ID).Scan(&phase); err != nil {
				return err
			}
			if err := queryRow(d, tx, `SELECT phase FROM work_items WHERE id = ?`+dl.ShareRow, it.ID).Scan(&phase); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, dl.TableExists, "work_items").Scan(&have); err != nil {
				return err
			}
			return tx.QueryRow(ctx, dl.TableExists, "no_such_table").Scan(&missing)
		}); err != nil {
			t.Fatal(err)
		}
		if phase != string(wq.PhaseActive) || have != 1 || missing != 0 {
			t.Errorf("phase %q, TableExists(work_items) %d, TableExists(no_such_table) %d; want active, 1, 0", phase, have, missing)
		}
	})

	t.Run("a registered migration chain is applied by the next Migrate and counted", func(t *testing.T) {
		d := driver(t)
		name := d.Dialect().Name
		if name == "" {
			t.Fatal("the dialect has no name to keep migrations under")
		}
		fsys := fstest.MapFS{path.Join("migrations", name, "0001_probe.sql"): {Data: []byte(`CREATE TABLE storetest_probe (k TEXT PRIMARY KEY)`)}}
		if err := d.AddMigrations("storetest", fsys, path.Join("migrations", name)); err != nil {
			t.Fatal(err)
		}
		if err := d.AddMigrations("storetest", fsys, path.Join("migrations", name)); err == nil {
			t.Error("a chain registered twice is accepted")
		}
		applied, err := d.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 1 || applied[0] != 1 {
			t.Errorf("Migrate applied %v; want the probe chain's 1", applied)
		}
		if got, latest, err := d.SchemaVersion(ctx); err != nil || got != latest {
			t.Errorf("SchemaVersion = %d, %d, %v; want equal", got, latest, err)
		}
		if _, err := exec(t, d, d.Reader(), `SELECT count(*) FROM storetest_probe`); err != nil {
			t.Errorf("the chain's table is not there: %v", err)
		}
	})

	t.Run("a driver that analyses updates its statistics without error", func(t *testing.T) {
		d := driver(t)
		create(t, d, wq.NewItem{})
		a, ok := d.(seam.Analyzer)
		if !ok {
			t.Skipf("%T keeps no planner statistics", d)
		}
		if err := a.Analyze(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a driver that keeps a ready set keeps it with the items", func(t *testing.T) {
		d := driver(t)
		c, ok := d.(seam.ReadySetChecker)
		if !ok {
			t.Skipf("%T keeps no ready set apart from its items", d)
		}
		it := create(t, d, wq.NewItem{})
		l := claim(t, d, it.ID, T0)
		if _, err := d.FinishProcessing(ctx, l, get(t, d, it.ID).Revision, T0); err != nil {
			t.Fatal(err)
		}
		ready := create(t, d, wq.NewItem{})
		drift, err := c.ReadySetDrift(ctx)
		if err != nil || len(drift) != 0 {
			t.Fatalf("ReadySetDrift = %v, %v; want none", drift, err)
		}
		// Drop the ready item from the set behind the triggers' back: the
		// check must see it. Then put it back, as the triggers had it.
		if _, err := exec(t, d, d.Reader(), `DELETE FROM work_item_ready WHERE id = ?`, ready.ID); err != nil {
			t.Fatal(err)
		}
		if drift, err := c.ReadySetDrift(ctx); err != nil || len(drift) != 1 || drift[0] != ready.ID.String() {
			t.Errorf("ReadySetDrift after dropping %s from the set = %v, %v; want that item", ready.ID, drift, err)
		}
		if _, err := exec(t, d, d.Reader(), `INSERT INTO work_item_ready (id, item_type, retry_after)
			SELECT id, item_type, retry_after FROM work_items WHERE id = ?`, ready.ID); err != nil {
			t.Fatal(err)
		}
	})
}
