package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
)

// history: items' audit entries, kept for every instance to read.
func history(t *testing.T, open func(t *testing.T) wq.Store) {
	historyStore := func(t *testing.T) wq.HistoryStore {
		t.Helper()
		s := open(t)
		hs, ok := s.(wq.HistoryStore)
		if !ok {
			t.Fatalf("%T keeps no history", s)
		}
		return hs
	}
	entry := func(item, event string, at time.Time) wq.AuditEntry {
		return wq.AuditEntry{Time: at, EventType: event, ItemID: item, ItemType: "a-type", Actor: "token:ops",
			NewState: map[string]any{"phase": "active"}, Metadata: map[string]any{"note": "a\x01 ünïcode"}}
	}
	t.Run("an item's entries come back whole, oldest first, and only its own", func(t *testing.T) {
		s := historyStore(t)
		want := []wq.AuditEntry{entry("a", "item_created", T0), entry("a", "phase_change", T0), entry("a", "item_retried", T0.Add(time.Second))}
		if err := s.AppendHistory(ctx, []wq.AuditEntry{want[2], entry("b", "item_created", T0)}); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendHistory(ctx, want[:2]); err != nil {
			t.Fatal(err)
		}
		got, err := s.ItemHistory(ctx, "a", 100)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("item a's history (-want +got):\n%s", diff)
		}
		if got, err := s.ItemHistory(ctx, "none", 100); err != nil || len(got) != 0 {
			t.Errorf("an item without entries: %v, %v", got, err)
		}
	})
	t.Run("a limit keeps the newest entries", func(t *testing.T) {
		s := historyStore(t)
		var all []wq.AuditEntry
		for i := range 5 {
			all = append(all, entry("a", "action", T0.Add(time.Duration(i)*time.Minute)))
		}
		if err := s.AppendHistory(ctx, all); err != nil {
			t.Fatal(err)
		}
		got, err := s.ItemHistory(ctx, "a", 2)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(all[3:], got); diff != "" {
			t.Errorf("the newest two (-want +got):\n%s", diff)
		}
	})
	t.Run("pruning removes what is older than the bound and keeps the rest", func(t *testing.T) {
		s := historyStore(t)
		old, recent := entry("a", "item_created", T0), entry("a", "phase_change", T0.Add(48*time.Hour))
		if err := s.AppendHistory(ctx, []wq.AuditEntry{old, recent}); err != nil {
			t.Fatal(err)
		}
		n, err := s.PruneHistory(ctx, T0.Add(24*time.Hour))
		if err != nil || n != 1 {
			t.Errorf("pruned %d, %v; want 1", n, err)
		}
		got, _ := s.ItemHistory(ctx, "a", 100)
		if diff := cmp.Diff([]wq.AuditEntry{recent}, got); diff != "" {
			t.Errorf("after pruning (-want +got):\n%s", diff)
		}
	})
	t.Run("an entry needs its item and its time, and a refused batch stores nothing", func(t *testing.T) {
		s := historyStore(t)
		wantCode(t, s.AppendHistory(ctx, []wq.AuditEntry{entry("a", "x", T0), entry("", "x", T0)}), wq.EINVALID)
		wantCode(t, s.AppendHistory(ctx, []wq.AuditEntry{entry("a", "x", time.Time{})}), wq.EINVALID)
		if got, _ := s.ItemHistory(ctx, "a", 100); len(got) != 0 {
			t.Errorf("a refused batch stored %v", got)
		}
	})
}
