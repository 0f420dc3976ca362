package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// together checks the fences of writes made at the same moment by many
// workers, which a store may group into one transaction or statement
// (group commit, coalescing): each write keeps its own lease and revision
// checks and its own result, whatever it was grouped with.
func together(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("executor writes and exits made at once each keep their own fence", func(t *testing.T) {
		s := open(t)
		const n = 24
		type worker struct {
			lease wq.Lease
			item  *wq.Item
		}
		ws := make([]worker, n)
		for i := range ws {
			it := create(t, s, wq.NewItem{})
			ws[i] = worker{lease: claim(t, s, it.ID, T0), item: get(t, s, it.ID)}
		}
		// Worker 0 lost its lease to a new holder, who writes at the same
		// time as it; worker 1's item got an event (newer work) since it
		// loaded it.
		stale := ws[0].lease
		holder, err := s.ClaimItem(ctx, stale.ItemID, "worker-2", T0.Add(2*time.Minute), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := deliver(t, s, wq.Event{ItemID: ws[1].item.ID, Source: "gitea", EventType: "push", DeliveryID: "d-1",
			Body: json.RawMessage(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		dim := func(who string) []wq.DimensionUpdate {
			return []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x"}, Status: wq.StatusFalse,
				Detail: json.RawMessage(fmt.Sprintf(`{"by":%q}`, who))}}
		}
		type write struct {
			lease wq.Lease
			seen  int64
			who   string
		}
		writes := []write{{holder, ws[0].item.Revision, "holder"}}
		for i, w := range ws {
			writes = append(writes, write{w.lease, w.item.Revision, fmt.Sprint(i)})
		}
		errs := make([]error, len(writes))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, w := range writes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = s.ApplyChange(ctx, w.lease, wq.Change{Dimensions: dim(w.who), SeenRevision: w.seen}, T0)
			}()
		}
		close(start)
		wg.Wait()
		for i, w := range writes {
			var want error
			switch w.who {
			case "0":
				want = wq.ErrLeaseLost
			case "1":
				want = wq.ErrSuperseded
			}
			if (want == nil && errs[i] != nil) || (want != nil && !errors.Is(errs[i], want)) {
				t.Errorf("write by %s: %v, want %v", w.who, errs[i], want)
			}
		}
		for i, w := range ws {
			d, ok := get(t, s, w.item.ID).Dimensions[wq.DimensionKey{Dimension: "needs_x"}]
			want := fmt.Sprintf(`{"by":%q}`, fmt.Sprint(i))
			switch i {
			case 0:
				want = `{"by":"holder"}`
			case 1:
				if ok {
					t.Errorf("a superseded write stayed: %s", d.Detail)
				}
				continue
			}
			if !ok || !jsonEqual(d.Detail, json.RawMessage(want)) {
				t.Errorf("item %d: dimension %+v, want written by %s", i, d, want)
			}
		}

		// The exits, at once: the stale worker is refused, the item with
		// a pending event stays, the others exit.
		type exit struct {
			exited bool
			err    error
		}
		leases := append([]wq.Lease{holder}, func() (ls []wq.Lease) {
			for _, w := range ws {
				ls = append(ls, w.lease)
			}
			return ls
		}()...)
		exits := make([]exit, len(leases))
		start = make(chan struct{})
		for i, l := range leases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				seen := get(t, s, l.ItemID).Revision
				exits[i].exited, exits[i].err = s.FinishProcessing(ctx, l, seen, T0)
			}()
		}
		close(start)
		wg.Wait()
		for i, l := range leases {
			e := exits[i]
			switch {
			case l == stale:
				if !errors.Is(e.err, wq.ErrLeaseLost) {
					t.Errorf("stale worker's exit: %v, %v; want ErrLeaseLost", e.exited, e.err)
				}
			case l.ItemID == ws[1].item.ID:
				if e.exited || e.err != nil {
					t.Errorf("exit with an event pending: %v, %v; want it to stay", e.exited, e.err)
				}
			default:
				if !e.exited || e.err != nil {
					t.Errorf("exit of %s: %v, %v; want exited", l.ItemID, e.exited, e.err)
				}
			}
		}
	})
}
