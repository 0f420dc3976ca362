package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// TestEventsRacingTheExitAreNeverOrphaned inserts events from several
// goroutines while the engine's loops are deciding to exit. The per-item
// lock and the revision check (DDR-34, DDR-49) must leave no event behind
// an item that is no longer actionable: such an event would wait for
// nobody.
func TestEventsRacingTheExitAreNeverOrphaned(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		s := testdb.Open(t, kind)
		var log eventLog
		cfg := testConfig("a")
		cfg.Workers = 8
		e, err := engine.New(cfg, s.Queue, clockwork.NewRealClock(), &audit.Memory{}, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		e.Register(log.itemType(markActed))
		t.Cleanup(func() { e.Stop(ctx) })
		ids := make([]wq.ItemID, 20)
		for i := range ids {
			it, err := s.CreateItem(ctx, wq.NewItem{ItemType: "test"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = it.ID
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		const perWriter = 40
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range perWriter {
					id := ids[rand.IntN(len(ids))]
					if _, err := s.InsertDelivery(ctx, "test", fmt.Sprintf("%d-%d", w, n), []wq.Event{{ItemID: id, EventType: "note",
						Body: []byte(`{}`), EventTS: time.Now()}}, time.Now()); err != nil {
						t.Error(err)
						return
					}
					e.Notify("test", id) // what the webhook handler does after the commit
				}
			}()
		}
		wg.Wait()
		if err := e.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			it, err := s.GetItem(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := s.NextEvent(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if ev != nil && !it.Actionable {
				t.Errorf("item %s: event %s orphaned behind a non-actionable item", id, ev.DeliveryID)
			}
			if ev != nil {
				t.Errorf("item %s: event %s left unprocessed after the engine went idle", id, ev.DeliveryID)
			}
		}
		if got := len(log.got()); got != 4*perWriter {
			t.Errorf("handled %d events, want %d", got, 4*perWriter)
		}
	})
}
