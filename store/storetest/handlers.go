package storetest

import (
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// handlers checks the registry of which instances handle which types.
func handlers(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("the latest sweep of any instance handling a type is its last handled time", func(t *testing.T) {
		s := open(t)
		r, ok := s.(wq.HandlerRegistry)
		if !ok {
			t.Fatalf("%T does not record handlers", s)
		}
		if last, err := r.LastHandled(ctx, "alpha"); err != nil || !last.IsZero() {
			t.Fatalf("LastHandled before any record: %v, %v; want the zero time", last, err)
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(r.RecordHandlers(ctx, "a", []string{"alpha", "beta"}, T0))
		must(r.RecordHandlers(ctx, "b", []string{"alpha"}, T0.Add(time.Minute)))
		must(r.RecordHandlers(ctx, "a", []string{"alpha", "beta"}, T0.Add(30*time.Second))) // a again, earlier than b
		must(r.RecordHandlers(ctx, "c", nil, T0.Add(time.Hour)))                            // handles nothing
		for typ, want := range map[string]time.Time{"alpha": T0.Add(time.Minute), "beta": T0.Add(30 * time.Second), "other": {}} {
			if last, err := r.LastHandled(ctx, typ); err != nil || !last.Equal(want) {
				t.Errorf("LastHandled(%s) = %v, %v; want %v", typ, last, err, want)
			}
		}
	})
}
