package storetest

import (
	"errors"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// admin: listing, retry and cancel.
func admin(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("items are listed newest first, filtered, a page at a time", func(t *testing.T) {
		s := open(t)
		var ids []wq.ItemID
		for i := range 5 {
			typ := "test"
			if i%2 == 1 {
				typ = "other"
			}
			ids = append(ids, create(t, s, wq.NewItem{ItemType: typ}).ID)
		}
		all, err := s.ListItems(ctx, wq.ItemFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 5 || all[0].ID != ids[4] || all[4].ID != ids[0] {
			t.Fatalf("ListItems order: got %d items, first %v", len(all), all[0].ID)
		}
		page, _ := s.ListItems(ctx, wq.ItemFilter{Limit: 2})
		next, _ := s.ListItems(ctx, wq.ItemFilter{Limit: 2, Before: page[1].ID})
		if len(page) != 2 || len(next) != 2 || next[0].ID != ids[2] || next[1].ID != ids[1] {
			t.Errorf("pages: %v then %v", page, next)
		}
		tests, _ := s.ListItems(ctx, wq.ItemFilter{ItemType: "test"})
		if len(tests) != 3 {
			t.Errorf("type filter gave %d items, want 3", len(tests))
		}
		l := claim(t, s, ids[0], T0)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted}, T0); err != nil {
			t.Fatal(err)
		}
		if done, _ := s.ListItems(ctx, wq.ItemFilter{Phase: wq.PhaseCompleted}); len(done) != 1 || done[0].ID != ids[0] {
			t.Errorf("phase filter: %v", done)
		}
	})

	t.Run("an item's scope is stored and filters the list", func(t *testing.T) {
		s := open(t)
		a := create(t, s, wq.NewItem{Scope: wq.Scope{Forge: "gitea", Project: "o/a"}})
		create(t, s, wq.NewItem{Scope: wq.Scope{Forge: "gitea", Project: "o/b"}})
		c := create(t, s, wq.NewItem{Scope: wq.Scope{Forge: "lab", Project: "o/a"}})
		create(t, s, wq.NewItem{}) // acts nowhere
		if got, err := s.GetItem(ctx, a.ID); err != nil || got.Forge != "gitea" || got.Project != "o/a" {
			t.Fatalf("GetItem: %+v, %v", got, err)
		}
		byProject, _ := s.ListItems(ctx, wq.ItemFilter{Project: "o/a"})
		if len(byProject) != 2 || byProject[0].ID != c.ID || byProject[1].ID != a.ID {
			t.Errorf("project filter: %v", byProject)
		}
		both, _ := s.ListItems(ctx, wq.ItemFilter{Forge: "gitea", Project: "o/a"})
		if len(both) != 1 || both[0].ID != a.ID || both[0].Project != "o/a" {
			t.Errorf("forge and project filter: %v", both)
		}
	})

	t.Run("a cancel request hands an active or failed item to its type and keeps a worker's lease", func(t *testing.T) {
		s := open(t)
		cancel := []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_close"}, Status: wq.StatusTrue, Detail: []byte(`{"reason":"r"}`)}}
		active := create(t, s, wq.NewItem{})
		l := claim(t, s, active.ID, T0)
		got, err := s.RequestCancel(ctx, active.ID, cancel, T0)
		if err != nil {
			t.Fatal(err)
		}
		if got.Phase != wq.PhaseActive || !got.Actionable || got.Revision != active.Revision+1 || got.LeaseOwner == "" ||
			got.Dimensions[wq.DimensionKey{Dimension: "needs_close"}].Status != wq.StatusTrue {
			t.Errorf("after the request: %+v", got)
		}
		if exited, err := s.FinishProcessing(ctx, l, active.Revision, T0); err != nil || exited {
			t.Errorf("the worker's loop could exit past the request: %v, %v", exited, err)
		}
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCancelled, Reason: "r"}, T0); err != nil {
			t.Errorf("the worker lost its lease: %v", err)
		}
		if _, err := s.RequestCancel(ctx, active.ID, cancel, T0); wq.ErrorCode(err) != wq.ECONFLICT {
			t.Errorf("request on a cancelled item: %v, want conflict", err)
		}
		failed := create(t, s, wq.NewItem{})
		l = claim(t, s, failed.ID, T0)
		if _, err := s.RecordFailure(ctx, l, wq.Failure{Error: "boom", Fail: true}, T0); err != nil {
			t.Fatal(err)
		}
		if got, err := s.RequestCancel(ctx, failed.ID, cancel, T0); err != nil || got.Phase != wq.PhaseActive || got.Attempts != 0 || got.Error != "" {
			t.Errorf("request on a failed item: %+v, %v", got, err)
		}
	})

	t.Run("retry revives failed and cancelled items only", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		if _, err := s.RetryItem(ctx, it.ID, nil, T0); wq.ErrorCode(err) != wq.ECONFLICT {
			t.Errorf("retry of an active item: %v, want conflict", err)
		}
		l := claim(t, s, it.ID, T0)
		if _, err := s.RecordFailure(ctx, l, wq.Failure{Error: "boom", Fail: true}, T0); err != nil {
			t.Fatal(err)
		}
		got, err := s.RetryItem(ctx, it.ID, []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x"}, Status: wq.StatusTrue}}, T0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got.Phase != wq.PhaseActive || got.Attempts != 0 || got.Error != "" || !got.FinishedAt.IsZero() || !got.Actionable ||
			got.LeaseOwner != "" || got.Revision != it.Revision+1 || got.Dimensions[wq.DimensionKey{Dimension: "needs_x"}].Status != wq.StatusTrue {
			t.Errorf("after retry: %+v", got)
		}
		if _, err := s.RetryItem(ctx, wq.NewItemID(), nil, T0); wq.ErrorCode(err) != wq.ENOTFOUND {
			t.Errorf("retry of a missing item: %v", err)
		}
	})

	t.Run("cancel ends an active item and fences out its worker", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_r"}, Status: wq.StatusTrue, PendingUntil: T0.Add(time.Hour)}}})
		l := claim(t, s, it.ID, T0)
		got, err := s.CancelItem(ctx, it.ID, "cancelled by alice", T0)
		if err != nil {
			t.Fatal(err)
		}
		if got.Phase != wq.PhaseCancelled || got.Reason != "cancelled by alice" || got.FinishedAt.IsZero() || got.LeaseOwner != "" || got.Actionable ||
			!got.Dimensions[wq.DimensionKey{Dimension: "needs_r"}].PendingUntil.IsZero() {
			t.Errorf("after cancel: %+v", got)
		}
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted}, T0); !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("the worker could still write: %v", err)
		}
		if _, err := s.CancelItem(ctx, it.ID, "again", T0); wq.ErrorCode(err) != wq.ECONFLICT {
			t.Errorf("cancel twice: %v, want conflict", err)
		}
		if back, err := s.RetryItem(ctx, it.ID, nil, T0); err != nil || back.Phase != wq.PhaseActive {
			t.Errorf("retry after cancel: %+v, %v", back, err)
		}
	})
}
