package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/postgres"
)

// Single-row reads made at the same moment share pipelined batches: each
// still gets its own row, its own "no rows" and its own server error, and
// one read the server refuses fails no other.
func TestReadsMadeAtOnceEachGetTheirOwnRow(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	before := postgres.CoalescedReads(pg)
	const n = 300
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			errs <- oneRead(ctx, pg, i)
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// Without coalescing the test says nothing: some reads must have
	// shared a batch.
	if got := postgres.CoalescedReads(pg) - before; got == 0 {
		t.Errorf("no read of %d made at once shared a batch", n)
	}
}

// oneRead makes read i, one of three kinds, and checks what it got.
func oneRead(ctx context.Context, pg *postgres.Store, i int) error {
	r := pg.Reader()
	switch i % 3 {
	case 0: // a row of its own, a NULL in it
		id := wq.NewItemID()
		var (
			n    int
			text string
			got  wq.ItemID
			null *string
		)
		err := r.QueryRow(ctx, `SELECT $1::int, $2::text, $3::uuid, NULL::text`, i, fmt.Sprint("read ", i), id).
			Scan(&n, &text, &got, &null)
		if err != nil || n != i || text != fmt.Sprint("read ", i) || got != id || null != nil {
			return fmt.Errorf("read %d: got %d %q %v %v, err %v; want its own values and a NULL", i, n, text, got, null, err)
		}
	case 1: // no row
		var n int
		if err := r.QueryRow(ctx, `SELECT $1::int WHERE false`, i).Scan(&n); !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read %d: err %v, want no rows", i, err)
		}
	case 2: // refused by the server
		var n int
		err := r.QueryRow(ctx, `SELECT $1::int / 0`, i).Scan(&n)
		if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "22012" {
			return fmt.Errorf("read %d: err %v, want division by zero", i, err)
		}
	}
	return nil
}

// A read is scanned by its caller: a destination of the wrong type is
// that read's error, and the reads around it are not disturbed.
func TestACoalescedReadScansIntoWhatItsCallerGave(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	var n int
	if err := pg.Reader().QueryRow(ctx, `SELECT 'not a number'::text`).Scan(&n); err == nil {
		t.Error("a text scanned into an int without an error")
	}
	var s string
	if err := pg.Reader().QueryRow(ctx, `SELECT 'fine'::text`).Scan(&s); err != nil || s != "fine" {
		t.Errorf("got %q, %v; want fine", s, err)
	}
}

// A read that runs alone runs under its caller's context, as an
// uncoalesced one would: the caller's giving up cancels its statement,
// instead of leaving it to hold one of the batcher's runners.
func TestALoneReadWhoseCallerGivesUpIsCancelled(t *testing.T) {
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var slept string
	err := pg.Reader().QueryRow(ctx, `SELECT pg_sleep(30)::text || 'workqueue-lone-read'`).Scan(&slept)
	if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
		t.Fatalf("err %v, want the caller's deadline", err)
	}
	// The server stops the statement: nothing runs it a moment later.
	eventually.True(t, 10*time.Second, "the read's statement ends once its caller gave up", func() (bool, any) {
		var running int
		err := postgres.Pool(pg).QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE query LIKE '%workqueue-lone-read%' AND query NOT LIKE '%pg_stat_activity%' AND state = 'active'`).Scan(&running)
		return err == nil && running == 0, fmt.Sprintf("%d running, err %v", running, err)
	})
}
