package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
)

// counts: the sizes metrics report (wq.ItemCounter).
func counts(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("items are counted by type and phase, and the backlog is the actionable items not backing off", func(t *testing.T) {
		s := open(t)
		counter, ok := s.(wq.ItemCounter)
		if !ok {
			t.Fatalf("%T does not count items (wq.ItemCounter)", s)
		}
		now := T0.Add(10 * time.Minute)
		_ = create(t, s, wq.NewItem{})                                                                  // actionable since T0
		if _, err := s.CreateItem(ctx, wq.NewItem{ItemType: "test"}, T0.Add(time.Minute)); err != nil { // actionable since T0+1m
			t.Fatal(err)
		}
		_ = create(t, s, wq.NewItem{ItemType: "other"})
		backoff := create(t, s, wq.NewItem{})
		bl := claim(t, s, backoff.ID, T0)
		if _, err := s.RecordFailure(ctx, bl, wq.Failure{Error: "x", RetryAfter: now.Add(time.Minute)}, T0); err != nil {
			t.Fatal(err)
		}
		failed := create(t, s, wq.NewItem{})
		fl := claim(t, s, failed.ID, T0)
		if _, err := s.RecordFailure(ctx, fl, wq.Failure{Error: "x", Fail: true}, T0); err != nil {
			t.Fatal(err)
		}
		got, err := counter.CountItems(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		want := wq.ItemCounts{
			Phases: []wq.PhaseCount{{ItemType: "other", Phase: wq.PhaseActive, Count: 1},
				{ItemType: "test", Phase: wq.PhaseActive, Count: 3}, {ItemType: "test", Phase: wq.PhaseFailed, Count: 1}},
			Actionable: []wq.ActionableCount{{ItemType: "other", Count: 1, Oldest: T0}, {ItemType: "test", Count: 2, Oldest: T0}},
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Errorf("CountItems (-want +got):\n%s", diff)
		}
	})
}
