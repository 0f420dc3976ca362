package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/postgres"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// TestInsertsMadeAtOnceEachGetTheirOwnOutcome: inserts made at the same
// moment share one batch and one commit, and each still gets what it
// would alone. Of two for one held key exactly one wins and the other is
// a conflict; one whose row fails leaves nothing of itself and fails no
// other; every item answered is the item stored; and every item created
// wakes the instances, in its batch's own transaction (no wake-up is
// sent after it), while no insert that failed wakes anybody.
func TestInsertsMadeAtOnceEachGetTheirOwnOutcome(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	h := listen(t, pg)
	const keys, perKey, failing = 40, 2, 10
	type outcome struct {
		key  string
		id   wq.ItemID
		item *wq.Item
		err  error
		bad  bool
	}
	var (
		mu  sync.Mutex
		got []outcome
		wg  sync.WaitGroup
	)
	start := make(chan struct{})
	insert := func(key string, bad bool) {
		defer wg.Done()
		<-start
		n := wq.NewItem{ID: wq.NewItemID(), ItemType: "test", IdempotencyKey: key}
		var rows []seam.Stmt
		if bad {
			// A row naming an item that does not exist: pending_events
			// keeps its foreign key.
			rows = append(rows, seam.Stmt{SQL: `INSERT INTO pending_events (work_item_id, source, event_type, delivery_id, body, received_at)
				VALUES ($1, 'test', 'push', 'd', '{}', now())`, Args: []any{wq.NewItemID()}})
		}
		it, err := pg.Insert(ctx, &n, time.Now(), rows...)
		mu.Lock()
		got = append(got, outcome{key: key, id: n.ID, item: it, err: err, bad: bad})
		mu.Unlock()
	}
	for k := range keys {
		for range perKey {
			wg.Add(1)
			go insert(fmt.Sprintf("k%d", k), false)
		}
	}
	for f := range failing {
		wg.Add(1)
		go insert(fmt.Sprintf("bad%d", f), true)
	}
	close(start)
	wg.Wait()

	won := map[string]int{}
	var created []wq.ItemID
	for _, o := range got {
		switch {
		case o.bad:
			if o.err == nil {
				t.Errorf("%s: an insert whose row fails succeeded", o.key)
			}
		case o.err == nil:
			won[o.key]++
			created = append(created, o.item.ID)
			stored, err := pg.GetItem(ctx, o.item.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(stored, o.item); diff != "" {
				t.Errorf("%s: the item answered differs from the one stored (-stored +answered):\n%s", o.key, diff)
			}
		default:
			var werr *wq.Error
			if !errors.As(o.err, &werr) || werr.Code != wq.ECONFLICT {
				t.Errorf("%s: %v, want a conflict", o.key, o.err)
			}
		}
	}
	for k := range keys {
		if key := fmt.Sprintf("k%d", k); won[key] != 1 {
			t.Errorf("key %s: %d inserts won, want exactly 1", key, won[key])
		}
	}
	items, err := pg.ListItems(ctx, wq.ItemFilter{ItemType: "test", Limit: wq.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != keys {
		t.Errorf("%d items stored, want %d (one per key, none of the failing inserts)", len(items), keys)
	}
	eventually.True(t, 10*time.Second, "every created item wakes the listeners", func() (bool, any) {
		missing := 0
		for _, id := range created {
			if typ, ok := h.of(id); !ok || typ != "test" {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d created items not heard", missing, len(created))
	})
	for _, o := range got {
		if _, heard := h.of(o.id); o.err != nil && heard {
			t.Errorf("%s: an insert that failed (%v) woke the listeners", o.key, o.err)
		}
	}
	if n := postgres.WakerSent(pg); n != 0 {
		t.Errorf("%d wake-ups were sent after their inserts' commits, each send a transaction of its own; want them in the inserts' own", n)
	}
}

// TestInsertsMadeAtOnceWithoutConflictAllLand: inserts of distinct keys
// made at the same moment all create their items, each answered with
// the item stored: its own (they are read back together at their
// batch's end), as its rows left it.
func TestInsertsMadeAtOnceWithoutConflictAllLand(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	const n = 64
	items := make([]*wq.Item, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			nw := wq.NewItem{ID: wq.NewItemID(), ItemType: "test", IdempotencyKey: fmt.Sprintf("k%d", i),
				Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x", Variant: fmt.Sprint(i)}, Status: wq.StatusTrue}}}
			// A row of the type's that changes the item itself.
			row := seam.Stmt{SQL: `UPDATE work_items SET reason = $2 WHERE id = $1`, Args: []any{nw.ID, fmt.Sprintf("row of k%d", i)}}
			items[i], errs[i] = pg.Insert(ctx, &nw, time.Now(), row)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("insert %d: %v", i, errs[i])
		}
		key := fmt.Sprintf("k%d", i)
		if it := items[i]; it.IdempotencyKey != key || it.Reason != "row of "+key || len(it.Dimensions) != 1 ||
			it.Dimensions[wq.DimensionKey{Dimension: "needs_x", Variant: fmt.Sprint(i)}].Status != wq.StatusTrue {
			t.Errorf("insert %d answered key %q, reason %q, dimensions %v: want its own item as its row left it", i, it.IdempotencyKey, it.Reason, it.Dimensions)
		}
		stored, err := pg.GetItem(ctx, items[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(stored, items[i]); diff != "" {
			t.Errorf("insert %d: the item answered differs from the one stored (-stored +answered):\n%s", i, diff)
		}
	}
}

// TestAnInsertWhoseWakeUpFailsStillLands: a wake-up is a hint. When the
// one an insert batch sends in its own transaction fails (a full notify
// queue, behind a listener that stopped reading), the inserts run again
// without it, and their wake-ups go the way of any other write's, after
// the commit.
func TestAnInsertWhoseWakeUpFailsStillLands(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	h := listen(t, pg)
	postgres.BreakBatchWakeups(pg)
	var wg sync.WaitGroup
	ids := make([]wq.ItemID, 8)
	errs := make([]error, len(ids))
	for i := range ids {
		ids[i] = wq.NewItemID()
		wg.Go(func() {
			n := wq.NewItem{ID: ids[i], ItemType: "test", IdempotencyKey: fmt.Sprint("k", i)}
			_, errs[i] = pg.Insert(ctx, &n, time.Now())
		})
	}
	wg.Wait()
	for i, id := range ids {
		if errs[i] != nil {
			t.Fatalf("insert %d: %v; want it stored though its wake-up failed", i, errs[i])
		}
		if _, err := pg.GetItem(ctx, id); err != nil {
			t.Errorf("insert %d: %v", i, err)
		}
	}
	eventually.True(t, 10*time.Second, "the waker sends the wake-ups instead", func() (bool, any) {
		missing := 0
		for _, id := range ids {
			if _, ok := h.of(id); !ok {
				missing++
			}
		}
		return missing == 0, missing
	})
}
