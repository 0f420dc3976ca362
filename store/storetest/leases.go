package storetest

import (
	"errors"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// leases: claims, leases and the writes they fence.
func leases(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("a claim is exclusive until the lease expires", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l1 := claim(t, s, it.ID, T0)
		if l1.Until != T0.Add(time.Minute) || l1.Token == "" || l1.ItemID != it.ID {
			t.Errorf("lease = %+v", l1)
		}
		_, err := s.ClaimItem(ctx, it.ID, "worker-2", T0.Add(30*time.Second), time.Minute)
		if !errors.Is(err, wq.ErrNotClaimable) {
			t.Fatalf("second claim: %v, want ErrNotClaimable", err)
		}
		got := get(t, s, it.ID)
		if got.LeaseOwner != "worker-1" || !got.LeasedUntil.Equal(l1.Until) {
			t.Errorf("lease owner %q until %v", got.LeaseOwner, got.LeasedUntil)
		}
		l2, err := s.ClaimItem(ctx, it.ID, "worker-2", T0.Add(61*time.Second), time.Minute)
		if err != nil {
			t.Fatalf("claim after expiry: %v", err)
		}
		if l2.Token == l1.Token {
			t.Error("a new claim reused the old token")
		}
		if err := s.ExtendLease(ctx, &l1, T0.Add(62*time.Second), time.Minute); !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("extend a lost lease: %v, want ErrLeaseLost", err)
		}
	})

	t.Run("a terminal item cannot be claimed", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l := claim(t, s, it.ID, T0)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCancelled}, T0); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseLease(ctx, l); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimItem(ctx, it.ID, "w", T0, time.Minute); !errors.Is(err, wq.ErrNotClaimable) {
			t.Errorf("claim cancelled item: %v, want ErrNotClaimable", err)
		}
	})

	t.Run("extend moves the lease and release clears it", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l := claim(t, s, it.ID, T0)
		if err := s.ExtendLease(ctx, &l, T0.Add(20*time.Second), time.Minute); err != nil {
			t.Fatal(err)
		}
		if want := T0.Add(80 * time.Second); !l.Until.Equal(want) || !get(t, s, it.ID).LeasedUntil.Equal(want) {
			t.Errorf("lease until %v, want %v", l.Until, want)
		}
		if err := s.ReleaseLease(ctx, l); err != nil {
			t.Fatal(err)
		}
		if got := get(t, s, it.ID); !got.LeasedUntil.IsZero() || got.LeaseOwner != "" {
			t.Errorf("after release: leased until %v by %q", got.LeasedUntil, got.LeaseOwner)
		}
		if err := s.ReleaseLease(ctx, l); err != nil {
			t.Errorf("releasing a lease twice: %v", err)
		}
		_ = claim(t, s, it.ID, T0) // claimable again at once
	})

	t.Run("every write under a lost lease is refused and changes nothing", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		stale := claim(t, s, it.ID, T0)
		fresh, err := s.ClaimItem(ctx, it.ID, "worker-2", T0.Add(2*time.Minute), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		dims := []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x"}, Status: wq.StatusFalse}}
		_, err = s.ApplyChange(ctx, stale, wq.Change{Phase: wq.PhaseCompleted, Dimensions: dims}, T0)
		if !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("ApplyChange: %v", err)
		}
		if err := s.RecordSuccess(ctx, stale, T0); !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("RecordSuccess: %v", err)
		}
		if _, err := s.RecordFailure(ctx, stale, wq.Failure{Error: "x", Fail: true}, T0); !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("RecordFailure: %v", err)
		}
		if _, err := s.FinishProcessing(ctx, stale, 1, T0); !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("FinishProcessing: %v", err)
		}
		if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "s", EventType: "e", DeliveryID: "d", Body: []byte(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		ev, _ := s.NextEvent(ctx, it.ID)
		if _, err := s.ApplyEvent(ctx, stale, ev, wq.EventResult{Phase: wq.PhaseCompleted}, T0); !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("ApplyEvent: %v", err)
		}
		if err := s.ReleaseLease(ctx, stale); err != nil {
			t.Errorf("ReleaseLease of a lost lease: %v", err)
		}
		got := get(t, s, it.ID)
		if got.Phase != wq.PhaseActive || got.Attempts != 0 || len(got.Dimensions) != 0 || got.LeaseOwner != "worker-2" {
			t.Errorf("item changed under a lost lease: %+v", got)
		}
		if next, _ := s.NextEvent(ctx, it.ID); next == nil {
			t.Error("the event was deleted under a lost lease")
		}
		if _, err := s.ApplyChange(ctx, fresh, wq.Change{Dimensions: dims}, T0); err != nil {
			t.Errorf("write under the fresh lease: %v", err)
		}
	})

	t.Run("a terminal change finishes the item and clears deferred dimensions", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_reconcile"},
			Status: wq.StatusTrue, PendingUntil: T0.Add(time.Hour)}}})
		l := claim(t, s, it.ID, T0)
		old, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted, Reason: "empty_diff",
			Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_mr"}, Status: wq.StatusFalse}}}, T0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if old != wq.PhaseActive {
			t.Errorf("old phase %q", old)
		}
		got := get(t, s, it.ID)
		if got.Phase != wq.PhaseCompleted || got.Reason != "empty_diff" || !got.FinishedAt.Equal(T0.Add(time.Second)) || !got.UpdatedAt.Equal(T0.Add(time.Second)) {
			t.Errorf("item = %+v", got)
		}
		if got.Actionable {
			t.Error("a terminal item is still actionable: a worker dying before its exit decision would leave it so forever")
		}
		if d := got.Dimensions[wq.DimensionKey{Dimension: "needs_reconcile"}]; !d.PendingUntil.IsZero() {
			t.Errorf("needs_reconcile pending until %v, want cleared", d.PendingUntil)
		}
		if d := got.Dimensions[wq.DimensionKey{Dimension: "needs_mr"}]; d.Status != wq.StatusFalse {
			t.Errorf("needs_mr = %+v", d)
		}
	})

	t.Run("failures count up with backoff, fail on request, and success resets them", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l := claim(t, s, it.ID, T0)
		n, err := s.RecordFailure(ctx, l, wq.Failure{Error: "boom 1", RetryAfter: T0.Add(time.Second)}, T0)
		if err != nil || n != 1 {
			t.Fatalf("first failure: attempts %d, err %v", n, err)
		}
		n, _ = s.RecordFailure(ctx, l, wq.Failure{Error: "boom 2", RetryAfter: T0.Add(2 * time.Second)}, T0)
		got := get(t, s, it.ID)
		if n != 2 || got.Attempts != 2 || got.Error != "boom 2" || !got.RetryAfter.Equal(T0.Add(2*time.Second)) || got.Phase != wq.PhaseActive {
			t.Errorf("after two failures: n=%d item=%+v", n, got)
		}
		if err := s.RecordSuccess(ctx, l, T0); err != nil {
			t.Fatal(err)
		}
		got = get(t, s, it.ID)
		if got.Attempts != 0 || got.Error != "" || !got.RetryAfter.IsZero() {
			t.Errorf("after success: %+v", got)
		}
		n, _ = s.RecordFailure(ctx, l, wq.Failure{Error: "fatal", Fail: true}, T0)
		got = get(t, s, it.ID)
		if n != 1 || got.Phase != wq.PhaseFailed || got.Error != "fatal" || got.FinishedAt.IsZero() {
			t.Errorf("after a failing failure: n=%d item=%+v", n, got)
		}
	})

	t.Run("an executor's change applies only if no work was enqueued since it loaded the item", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l, err := s.ClaimItem(ctx, it.ID, "w", T0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		seen := get(t, s, it.ID).Revision
		if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "forge", EventType: "x", DeliveryID: "d1", Body: []byte(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		_, err = s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted, Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_a"}, Status: wq.StatusFalse}}, SeenRevision: seen}, T0)
		if !errors.Is(err, wq.ErrSuperseded) {
			t.Fatalf("change after newer work = %v, want ErrSuperseded", err)
		}
		if got := get(t, s, it.ID); got.Phase != wq.PhaseActive || len(got.Dimensions) != 0 {
			t.Errorf("a superseded change was written: phase %s dims %v", got.Phase, got.Dimensions)
		}
		now := get(t, s, it.ID).Revision
		if _, err := s.ApplyChange(ctx, l, wq.Change{Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_a"}, Status: wq.StatusFalse}}, SeenRevision: now}, T0); err != nil {
			t.Fatalf("change at the current revision: %v", err)
		}
		if got := get(t, s, it.ID); len(got.Dimensions) != 1 {
			t.Errorf("dims %v after the change at the current revision", got.Dimensions)
		}
	})

	t.Run("a transient failure is not counted but starts the failing run; success ends it", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l, _ := s.ClaimItem(ctx, it.ID, "w", T0, time.Minute)
		if n, err := s.RecordFailure(ctx, l, wq.Failure{Error: "forge down", RetryAfter: T0.Add(time.Minute), Transient: true}, T0); err != nil || n != 0 {
			t.Fatalf("transient failure: attempts %d, %v; want 0", n, err)
		}
		if n, err := s.RecordFailure(ctx, l, wq.Failure{Error: "boom", RetryAfter: T0.Add(time.Hour)}, T0.Add(time.Minute)); err != nil || n != 1 {
			t.Fatalf("counted failure: attempts %d, %v; want 1", n, err)
		}
		got := get(t, s, it.ID)
		if !got.FailingSince.Equal(T0) || got.Attempts != 1 || got.Error != "boom" {
			t.Errorf("failing since %v attempts %d error %q; want since %v, 1, boom", got.FailingSince, got.Attempts, got.Error, T0)
		}
		if err := s.RecordSuccess(ctx, l, T0.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got := get(t, s, it.ID); !got.FailingSince.IsZero() || got.Attempts != 0 {
			t.Errorf("after a success: failing since %v attempts %d", got.FailingSince, got.Attempts)
		}
	})

	t.Run("a held item waits until its retry time without starting or counting a failing run", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l, _ := s.ClaimItem(ctx, it.ID, "w", T0, time.Minute)
		if n, err := s.RecordFailure(ctx, l, wq.Failure{Error: "held: frozen", RetryAfter: T0.Add(time.Minute), Held: true}, T0); err != nil || n != 0 {
			t.Fatalf("hold: attempts %d, %v; want 0", n, err)
		}
		got := get(t, s, it.ID)
		if !got.FailingSince.IsZero() || got.Attempts != 0 || got.Error != "held: frozen" || !got.RetryAfter.Equal(T0.Add(time.Minute)) || got.Phase != wq.PhaseActive {
			t.Errorf("held: failing since %v attempts %d error %q retry %v phase %s; want no failing run, 0, the reason, T0+1m, active",
				got.FailingSince, got.Attempts, got.Error, got.RetryAfter, got.Phase)
		}
		if _, err := s.RecordFailure(ctx, l, wq.Failure{Error: "forge down", RetryAfter: T0.Add(2 * time.Minute), Transient: true}, T0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordFailure(ctx, l, wq.Failure{Error: "held: frozen", RetryAfter: T0.Add(time.Hour), Held: true}, T0.Add(30*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got := get(t, s, it.ID); !got.FailingSince.Equal(T0.Add(time.Minute)) {
			t.Errorf("a hold moved the failing run to %v, want it kept at %v", got.FailingSince, T0.Add(time.Minute))
		}
	})

	t.Run("the exit decision refuses while events are pending or work was enqueued since the load", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l := claim(t, s, it.ID, T0)
		if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "s", EventType: "e", DeliveryID: "d", Body: []byte(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		loaded := get(t, s, it.ID)
		if exited, err := s.FinishProcessing(ctx, l, loaded.Revision, T0); err != nil || exited {
			t.Fatalf("with an event pending: exited %v err %v", exited, err)
		}
		ev, _ := s.NextEvent(ctx, it.ID)
		if _, err := s.ApplyEvent(ctx, l, ev, wq.EventResult{}, T0); err != nil {
			t.Fatal(err)
		}
		if exited, err := s.FinishProcessing(ctx, l, it.Revision, T0); err != nil || exited {
			t.Fatalf("with a stale revision: exited %v err %v", exited, err)
		}
		if !get(t, s, it.ID).Actionable {
			t.Fatal("a refused exit cleared actionable")
		}
		if exited, err := s.FinishProcessing(ctx, l, loaded.Revision, T0); err != nil || !exited {
			t.Fatalf("clean exit: exited %v err %v", exited, err)
		}
		got := get(t, s, it.ID)
		if got.Actionable || !got.LeasedUntil.IsZero() {
			t.Errorf("after exit: actionable %v leased until %v", got.Actionable, got.LeasedUntil)
		}
	})
}
