package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// exitCounter counts the loop's two ways of taking the exit decision.
type exitCounter struct {
	wq.Store
	finishes, folded atomic.Int32
}

func (s *exitCounter) FinishProcessing(ctx context.Context, l wq.Lease, seen int64, now time.Time) (bool, error) {
	s.finishes.Add(1)
	return s.Store.FinishProcessing(ctx, l, seen, now)
}

func (s *exitCounter) ApplyAndFinish(ctx context.Context, l wq.Lease, c wq.Change, now time.Time) (bool, error) {
	s.folded.Add(1)
	return s.Store.ApplyAndFinish(ctx, l, c, now)
}

func counted(h *harness) *exitCounter {
	c := &exitCounter{Store: h.store}
	h.store = c
	return c
}

func lastWrite(d, status string) wq.Change {
	return wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{dim(d, "", status)}}
}

// An action whose last write leaves the item nothing to do exits with
// that write: one transaction, no exit call of its own, the lease
// released and the item asleep.
func TestALastWriteThatLeavesNothingToDoIsTheExit(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		c := counted(h)
		e := h.engine(testConfig("w"), oneAction(func(ctx context.Context, x *wq.Execution) error {
			return x.Writer.Apply(ctx, lastWrite("needs_act", wq.StatusFalse))
		}))
		it := h.run(e, wq.NewItem{})
		got := h.get(it.ID)
		if got.Dimensions[wq.DimensionKey{Dimension: "needs_act"}].Status != wq.StatusFalse || got.Actionable || got.LeaseOwner != "" {
			t.Errorf("after the action: %+v; want needs_act false, asleep, unleased", got)
		}
		if c.folded.Load() != 1 || c.finishes.Load() != 0 {
			t.Errorf("%d folded exits and %d exit calls; want the write to be the exit", c.folded.Load(), c.finishes.Load())
		}
	})
}

// A last write that leaves work to do is written as any other; the loop
// goes on to the next action, whose own last write is the exit.
func TestALastWriteThatLeavesWorkGoesOnToTheNextAction(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		c := counted(h)
		var ran []string
		typ := wq.ItemType{Name: "test",
			Decide: func(it *wq.Item, now time.Time) string {
				for _, step := range []string{"a", "b"} {
					if it.Dimensions.Needs("needs_"+step, "", now) {
						return step
					}
				}
				return ""
			},
			Executors: map[string]wq.Executor{
				"a": func(ctx context.Context, x *wq.Execution) error {
					ran = append(ran, "a")
					return x.Writer.Apply(ctx, lastWrite("needs_a", wq.StatusFalse))
				},
				"b": func(ctx context.Context, x *wq.Execution) error {
					ran = append(ran, "b")
					return x.Writer.Apply(ctx, lastWrite("needs_b", wq.StatusFalse))
				},
			},
		}
		e := h.engine(testConfig("w"), typ)
		it := h.run(e, wq.NewItem{})
		if got := h.get(it.ID); len(ran) != 2 || got.Actionable || got.LeaseOwner != "" {
			t.Errorf("ran %v, item %+v; want a then b, and the item asleep", ran, got)
		}
		if c.folded.Load() != 1 || c.finishes.Load() != 0 {
			t.Errorf("%d folded exits and %d exit calls; want b's write alone to be the exit", c.folded.Load(), c.finishes.Load())
		}
	})
}

// A write after the action's last is an error and writes nothing, even
// when the last one released the lease.
func TestAWriteAfterTheLastIsRefused(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		var second error
		e := h.engine(testConfig("w"), oneAction(func(ctx context.Context, x *wq.Execution) error {
			if err := x.Writer.Apply(ctx, lastWrite("needs_act", wq.StatusFalse)); err != nil {
				return err
			}
			second = x.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{dim("needs_more", "", wq.StatusFalse)}})
			return nil
		}))
		it := h.run(e, wq.NewItem{})
		got := h.get(it.ID)
		if second == nil {
			t.Error("a write after the last one was taken")
		}
		if _, wrote := got.Dimensions[wq.DimensionKey{Dimension: "needs_more"}]; wrote || got.Actionable {
			t.Errorf("after the action: %+v; want only the last write, and the item asleep", got)
		}
	})
}

// Work that arrives during the action (a webhook during the forge call)
// supersedes the folded write and its exit: the loop applies the event
// and acts again on what it says (the dirty re-run).
func TestAnEventDuringTheActionSupersedesItsFoldedExit(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		c := counted(h)
		var runs atomic.Int32
		typ := oneAction(func(ctx context.Context, x *wq.Execution) error {
			if runs.Add(1) == 1 {
				h.insertEvent(x.Item.ID, "d-during", "again", h.clock.Now())
			}
			return x.Writer.Apply(ctx, lastWrite("needs_act", wq.StatusFalse))
		})
		typ.EventHandlers = map[string]wq.EventHandler{
			"again": func(context.Context, *wq.Item, *wq.Event) (wq.EventResult, error) {
				return wq.EventResult{Dimensions: []wq.DimensionUpdate{dim("needs_act", "", wq.StatusTrue)}}, nil
			},
		}
		e := h.engine(testConfig("w"), typ)
		it := h.run(e, wq.NewItem{})
		got := h.get(it.ID)
		if runs.Load() != 2 || got.Dimensions[wq.DimensionKey{Dimension: "needs_act"}].Status != wq.StatusFalse || got.Actionable {
			t.Errorf("%d runs, item %+v; want the action again after the event, then asleep", runs.Load(), got)
		}
		if ev, err := h.store.NextEvent(h.ctx, it.ID); err != nil || ev != nil {
			t.Errorf("an event is still pending: %+v, %v", ev, err)
		}
		if c.folded.Load() != 2 {
			t.Errorf("%d folded writes; want the superseded one and the exit", c.folded.Load())
		}
	})
}

// A worker reuses one scratch item for its folded-exit decisions, from
// item to item: the decision for an item sees that item's dimensions
// only, never a row of the item the worker had before. Here the first
// item has a tag; the second has none and must be tagged by its own
// action, which a decision that still saw the first item's tag would
// skip by exiting at once.
func TestAFoldedExitDecidesOnItsOwnItemNotTheWorkersLast(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		tag := wq.DimensionKey{Dimension: "tag"}
		typ := wq.ItemType{Name: "test",
			Decide: func(it *wq.Item, now time.Time) string {
				switch d, tagged := it.Dimensions[tag]; {
				case it.Dimensions.Needs("needs_act", "", now):
					return "act"
				case !tagged || d.Status != wq.StatusTrue:
					return "tag"
				}
				return ""
			},
			Executors: map[string]wq.Executor{
				"act": func(ctx context.Context, x *wq.Execution) error {
					return x.Writer.Apply(ctx, lastWrite("needs_act", wq.StatusFalse))
				},
				"tag": func(ctx context.Context, x *wq.Execution) error {
					return x.Writer.Apply(ctx, lastWrite("tag", wq.StatusTrue))
				},
			},
		}
		cfg := testConfig("w")
		cfg.Workers = 1 // both items through the one worker, and its one scratch item
		e := h.engine(cfg, typ)
		first := h.run(e, wq.NewItem{Dimensions: []wq.DimensionUpdate{dim("tag", "", wq.StatusTrue)}})
		second := h.create(wq.NewItem{})
		h.settle(e)
		for _, id := range []wq.ItemID{first.ID, second.ID} {
			got := h.get(id)
			if got.Dimensions[tag].Status != wq.StatusTrue || got.Actionable {
				t.Errorf("item %s: %+v; want it tagged and asleep", id, got.Dimensions)
			}
		}
	})
}
