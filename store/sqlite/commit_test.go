package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// openScratch opens a store with one table t(k) and no migrations.
func openScratch(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "commit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE t (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func rowsOf(t *testing.T, s *Store) map[string]bool {
	t.Helper()
	rows, err := s.read.Query(`SELECT k FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		out[k] = true
	}
	return out
}

func insert(ctx context.Context, k string) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO t (k) VALUES (?)`, k)
		return err
	}
}

// holdCommitter makes the committer run a write that waits until release
// is closed, so that the writes queued meanwhile form one batch.
func holdCommitter(t *testing.T, s *Store) (release func(), done <-chan error) {
	t.Helper()
	started, hold, errc := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		errc <- s.write(context.Background(), func(tx *sql.Tx) error {
			close(started)
			<-hold
			return nil
		})
	}()
	<-started
	return func() { close(hold) }, errc
}

// queued waits until n writes wait in the committer's queue.
func queued(s *Store, n int) {
	for len(s.commits.queue) < n {
		runtime.Gosched()
	}
}

// TestAFailedWriteInABatchUndoesOnlyItself: writes queued together commit
// together, except the one whose function failed (a lost lease, a
// conflict), whose statements are rolled back to its savepoint, and the
// one that panicked, whose caller gets the panic.
func TestAFailedWriteInABatchUndoesOnlyItself(t *testing.T) {
	s := openScratch(t)
	ctx := context.Background()
	release, held := holdCommitter(t, s)

	errLost := errors.New("lease lost")
	type result struct {
		name  string
		err   error
		panic any
	}
	results := make(chan result, 5)
	write := func(name string, fn func(tx *sql.Tx) error) {
		go func() {
			defer func() {
				if p := recover(); p != nil {
					results <- result{name: name, panic: p}
				}
			}()
			results <- result{name: name, err: s.write(ctx, fn)}
		}()
	}
	write("a", insert(ctx, "a"))
	queued(s, 1)
	write("lost", func(tx *sql.Tx) error {
		if err := insert(ctx, "lost")(tx); err != nil {
			return err
		}
		return errLost // after writing: the row must not stay
	})
	queued(s, 2)
	write("dup", insert(ctx, "a")) // conflicts with a, queued before it in the same transaction
	queued(s, 3)
	write("panics", func(tx *sql.Tx) error {
		if err := insert(ctx, "panics")(tx); err != nil {
			return err
		}
		panic("boom")
	})
	queued(s, 4)
	write("b", insert(ctx, "b"))
	queued(s, 5)
	release()
	if err := <-held; err != nil {
		t.Fatal(err)
	}

	got := map[string]result{}
	for range 5 {
		r := <-results
		got[r.name] = r
	}
	if got["a"].err != nil || got["b"].err != nil {
		t.Errorf("a: %v, b: %v; want both committed", got["a"].err, got["b"].err)
	}
	if !errors.Is(got["lost"].err, errLost) {
		t.Errorf("lost: %v, want its own error", got["lost"].err)
	}
	if got["dup"].err == nil {
		t.Error("dup: committed a second row with key a")
	}
	if got["panics"].panic != "boom" {
		t.Errorf("panics: panic %v, err %v; want its caller to panic with boom", got["panics"].panic, got["panics"].err)
	}
	if rows := rowsOf(t, s); len(rows) != 2 || !rows["a"] || !rows["b"] {
		t.Errorf("rows %v, want exactly a and b", rows)
	}
}

// TestWritesQueuedWhileABatchRunsCommitWithIt: a write queued while the
// statements of a batch run joins that batch's transaction, where it
// waited for that commit and then made its own: under load the writers
// answered by one commit queue their next writes during the next batch.
func TestWritesQueuedWhileABatchRunsCommitWithIt(t *testing.T) {
	s := openScratch(t)
	ctx := context.Background()
	before := s.commits.transactions.Load()
	release, held := holdCommitter(t, s)
	errs := make(chan error, 2)
	for _, k := range []string{"a", "b"} {
		go func() { errs <- s.write(ctx, insert(ctx, k)) }()
	}
	queued(s, 2)
	release()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := s.commits.transactions.Load() - before; n != 1 {
		t.Errorf("a write and the two queued while it ran took %d transactions; want one", n)
	}
	if rows := rowsOf(t, s); !rows["a"] || !rows["b"] {
		t.Errorf("rows %v, want a and b", rows)
	}
}

// TestAWriteCancelledWhileQueuedNeverRuns: a caller that gives up before
// its write started gets its context's error, and the write never runs,
// so an error always means nothing was written.
func TestAWriteCancelledWhileQueuedNeverRuns(t *testing.T) {
	s := openScratch(t)
	release, held := holdCommitter(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	ran := false
	go func() {
		errc <- s.write(ctx, func(tx *sql.Tx) error { ran = true; return insert(ctx, "x")(tx) })
	}()
	queued(s, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Write: %v, want context.Canceled", err)
	}
	release()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	// A write after it: the committer has passed the abandoned one.
	if err := s.write(context.Background(), insert(context.Background(), "y")); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Error("the abandoned write ran")
	}
	if rows := rowsOf(t, s); len(rows) != 1 || !rows["y"] {
		t.Errorf("rows %v, want only y", rows)
	}
}

// TestACancelledStatementDoesNotAbortTheBatch: SQLite answers a statement
// interrupted by its context with a rollback of the whole transaction,
// which would undo the other writes of the batch. The writer connection
// runs statements without their context's cancellation.
func TestACancelledStatementDoesNotAbortTheBatch(t *testing.T) {
	s := openScratch(t)
	ctx := context.Background()
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = conn.Raw(func(dc any) error {
		_, err := dc.(driver.ExecerContext).ExecContext(cancelled, `INSERT INTO t (k) VALUES ('shielded')`, nil)
		return err
	})
	if err != nil {
		t.Fatalf("a statement with a cancelled context on the writer connection: %v, want it run", err)
	}
	conn.Close()
	if rows := rowsOf(t, s); !rows["shielded"] {
		t.Errorf("rows %v, want shielded", rows)
	}
}

// TestConcurrentWritesAllCommitOnce: many writers racing; every write
// commits exactly once whatever batches they fell into.
func TestConcurrentWritesAllCommitOnce(t *testing.T) {
	s := openScratch(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				errs <- s.write(ctx, insert(ctx, fmt.Sprintf("%d-%d", w, i)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(rowsOf(t, s)); n != 400 {
		t.Errorf("%d rows, want 400", n)
	}
}

// TestCloseRunsTheWritesAlreadyQueued: closing the store does not drop a
// write it accepted; writes after close fail.
func TestCloseRunsTheWritesAlreadyQueued(t *testing.T) {
	s := openScratch(t)
	ctx := context.Background()
	release, held := holdCommitter(t, s)
	errc := make(chan error, 1)
	go func() { errc <- s.write(ctx, insert(ctx, "late")) }()
	queued(s, 1)
	closed := make(chan struct{})
	go func() { s.commits.close(); close(closed) }()
	release()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("queued write: %v", err)
	}
	<-closed
	if err := s.write(ctx, insert(ctx, "after")); !errors.Is(err, errClosed) {
		t.Errorf("write after close: %v, want errClosed", err)
	}
	if rows := rowsOf(t, s); !rows["late"] || rows["after"] {
		t.Errorf("rows %v, want late and not after", rows)
	}
}

// The reader's statement cache: a statement whose rows are still open is
// not reused under them (a second run of the same query gets a statement
// of its own), results stay right when the cache is full and evicts, and
// the cache stays bounded.
func TestCachedStatementsAreNotSharedWhileTheirRowsAreOpen(t *testing.T) {
	s := openScratch(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		if err := s.write(ctx, insert(ctx, k)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.read.Conn(ctx) // one connection: every query below shares its cache
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const q = `SELECT k FROM t ORDER BY k`
	outer, err := c.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for outer.Next() {
		var k string
		if err := outer.Scan(&k); err != nil {
			t.Fatal(err)
		}
		// The same query while the outer rows are open.
		var n int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM (`+q+`)`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("inner count: %d, %v", n, err)
		}
		inner, err := c.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for inner.Next() {
			var k2 string
			inner.Scan(&k2)
			all = append(all, k2)
		}
		inner.Close()
		if len(all) != 3 {
			t.Fatalf("the same query under open rows read %v", all)
		}
		got = append(got, k)
	}
	outer.Close()
	if strings.Join(got, "") != "abc" {
		t.Errorf("outer rows %v, want a b c: the inner runs disturbed them", got)
	}
	// Many distinct statements: the cache evicts and every answer is right.
	for i := range maxCachedStmts * 2 {
		var v int
		if err := c.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d + count(*) - count(*) FROM t`, i)).Scan(&v); err != nil || v != i {
			t.Fatalf("statement %d: %d, %v", i, v, err)
		}
	}
	if err := c.Raw(func(dc any) error {
		if n := len(dc.(*conn).stmts); n > maxCachedStmts {
			t.Errorf("%d cached statements, want at most %d", n, maxCachedStmts)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Savepoints' journals stay in memory on the writer: on a temporary file
// each cost a write(2) per page, for every write of a group commit.
func TestTheWriterKeepsSavepointJournalsInMemory(t *testing.T) {
	s := openScratch(t)
	var mode int
	if err := s.write(context.Background(), func(tx *sql.Tx) error {
		return tx.QueryRow(`PRAGMA temp_store`).Scan(&mode)
	}); err != nil {
		t.Fatal(err)
	}
	if mode != 2 { // MEMORY
		t.Fatalf("the writer's temp_store is %d, want 2 (MEMORY)", mode)
	}
}
