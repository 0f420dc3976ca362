package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// heard collects the wake-ups a listener hears.
type heard struct {
	mu  sync.Mutex
	ids map[wq.ItemID]string // id → item type
}

func (h *heard) of(id wq.ItemID) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	typ, ok := h.ids[id]
	return typ, ok
}

// listen starts a listener on db and returns what it hears, once it
// listens.
func listen(t *testing.T, db wq.Store) *heard {
	t.Helper()
	l, ok := db.(wq.WakeupListener)
	if !ok {
		t.Fatalf("%T sends no wake-ups", db)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &heard{ids: map[wq.ItemID]string{}}
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.ListenWakeups(ctx, func() { close(ready) }, func(typ string, id wq.ItemID) {
			h.mu.Lock()
			h.ids[id] = typ
			h.mu.Unlock()
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not start")
	}
	return h
}

// Every write that enqueues work wakes the instances listening, with the
// item's type, once it committed; a write rolled back wakes nobody. The
// wake-ups are delivered at the commit or after it, so a listener never
// hears of an item it cannot read yet.
func TestEveryWriteThatEnqueuesWorkWakesTheListenersOnceCommitted(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t, store.KindPostgres).Queue
	d := db.(seam.Driver)
	h := listen(t, db)
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

	wakes := func(what string, id wq.ItemID, typ string) {
		t.Helper()
		eventually.True(t, 10*time.Second, what+" wakes the listeners", func() (bool, any) {
			got, ok := h.of(id)
			return ok && got == typ, got
		})
		if _, err := db.GetItem(ctx, id); err != nil {
			t.Errorf("%s: the item woken for cannot be read: %v", what, err)
		}
	}

	n := wq.NewItem{ItemType: "inserted"}
	if _, err := d.Insert(ctx, &n, t0); err != nil {
		t.Fatal(err)
	}
	wakes("an insert", n.ID, "inserted")

	created, err := db.CreateItem(ctx, wq.NewItem{ItemType: "created"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	wakes("CreateItem", created.ID, "created")

	w := wq.NewItem{ItemType: "written"}
	if err := d.Write(ctx, func(tx seam.Tx) error { return tx.InsertItem(ctx, &w, t0) }); err != nil {
		t.Fatal(err)
	}
	wakes("an item inserted in a write", w.ID, "written")

	// The item finishes; a resubmission makes it active again.
	l, err := db.ClaimItem(ctx, w.ID, "w", t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordFailure(ctx, l, wq.Failure{Error: "e", RetryAfter: t0.Add(time.Hour)}, t0); err != nil {
		t.Fatal(err)
	}
	h.forget(w.ID)
	seen, _ := db.GetItem(ctx, w.ID)
	if err := d.Write(ctx, func(tx seam.Tx) error { return tx.ReplaceDesired(ctx, w.ID, seen.Revision, "h2", nil, t0) }); err != nil {
		t.Fatal(err)
	}
	wakes("a resubmission", w.ID, "written")

	h.forget(created.ID)
	if _, err := db.InsertDelivery(ctx, "test", "d1", []wq.Event{{ItemID: created.ID, EventType: "push", Body: []byte(`{}`)}}, t0); err != nil {
		t.Fatal(err)
	}
	wakes("a delivery's event", created.ID, "created")

	l, err = db.ClaimItem(ctx, n.ID, "w", t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseFailed, Error: "e"}, t0); err != nil {
		t.Fatal(err)
	}
	h.forget(n.ID)
	if _, err := db.RetryItem(ctx, n.ID, nil, t0); err != nil {
		t.Fatal(err)
	}
	wakes("a retry", n.ID, "inserted")

	// Rolled back: nobody hears of it, while a later write is heard.
	boom := errors.New("boom")
	var r wq.NewItem
	r.ItemType = "rolled-back"
	if err := d.Write(ctx, func(tx seam.Tx) error {
		if err := tx.InsertItem(ctx, &r, t0); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Write = %v; want the function's error", err)
	}
	after := wq.NewItem{ItemType: "after"}
	if _, err := d.Insert(ctx, &after, t0); err != nil {
		t.Fatal(err)
	}
	wakes("the insert after a rolled-back one", after.ID, "after")
	if typ, ok := h.of(r.ID); ok {
		t.Errorf("a rolled-back insert woke the listeners (type %q)", typ)
	}

	// An insert whose guard finds a row: its batch is rolled back, its
	// wake-up with it.
	g := wq.NewItem{ID: wq.NewItemID(), ItemType: "guarded"}
	q, args := d.Dialect().Bind(`SELECT id FROM work_items WHERE id = ?`, []any{after.ID})
	if _, err := d.(seam.GuardedInserter).InsertUnless(ctx, seam.Stmt{SQL: q, Args: args}, &g, t0); !errors.Is(err, seam.ErrGuarded) {
		t.Fatalf("InsertUnless with a guard that finds a row = %v; want ErrGuarded", err)
	}
	last := wq.NewItem{ItemType: "last"}
	if _, err := d.Insert(ctx, &last, t0); err != nil {
		t.Fatal(err)
	}
	wakes("the insert after a guarded one", last.ID, "last")
	if typ, ok := h.of(g.ID); ok {
		t.Errorf("a guarded insert woke the listeners (type %q)", typ)
	}
}

func (h *heard) forget(id wq.ItemID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.ids, id)
}
