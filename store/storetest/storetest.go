// Package storetest is the conformance suite every store driver passes
// (the pattern of River's riverdrivertest), by area: items, leases,
// events, admin, sweep, secrets, each a function of its own below. Add a store
// method, add its test to its area in the same change.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
)

// T0 is the suite's fixed "now"; tests move time from it explicitly.
var T0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// Run runs the suite. open returns a new, migrated, empty store.
func Run(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("items", func(t *testing.T) { items(t, open) })
	t.Run("leases", func(t *testing.T) { leases(t, open) })
	t.Run("batch claims", func(t *testing.T) { batchClaims(t, open) })
	t.Run("events", func(t *testing.T) { events(t, open) })
	t.Run("admin", func(t *testing.T) { admin(t, open) })
	t.Run("sweep", func(t *testing.T) { sweep(t, open) })
	t.Run("counts", func(t *testing.T) { counts(t, open) })
	t.Run("writes together", func(t *testing.T) { together(t, open) })
	t.Run("handlers", func(t *testing.T) { handlers(t, open) })
	t.Run("secrets", func(t *testing.T) { secrets(t, open) })
	t.Run("history", func(t *testing.T) { history(t, open) })
}

// ctx is the suite's context.
var ctx = context.Background()

func create(t *testing.T, s wq.Store, n wq.NewItem) *wq.Item {
	t.Helper()
	if n.ItemType == "" {
		n.ItemType = "test"
	}
	it, err := s.CreateItem(ctx, n, T0)
	if err != nil {
		t.Fatalf("CreateItem: %v", err)
	}
	return it
}

// deliver stores ev as a delivery of its own: inserted is false when
// its delivery was stored before.
func deliver(t *testing.T, s wq.Store, ev wq.Event) (inserted bool, err error) {
	t.Helper()
	d, err := s.InsertDelivery(ctx, ev.Source, ev.DeliveryID, []wq.Event{ev}, ev.ReceivedAt)
	return err == nil && !d.Duplicate, err
}

func claim(t *testing.T, s wq.Store, id wq.ItemID, now time.Time) wq.Lease {
	t.Helper()
	l, err := s.ClaimItem(ctx, id, "worker-1", now, time.Minute)
	if err != nil {
		t.Fatalf("ClaimItem: %v", err)
	}
	return l
}

func get(t *testing.T, s wq.Store, id wq.ItemID) *wq.Item {
	t.Helper()
	it, err := s.GetItem(ctx, id)
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	return it
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := wq.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
}

// items: creating, finding and migrating.
func items(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("migrate applied twice changes nothing the second time", func(t *testing.T) {
		s := open(t)
		applied, err := s.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 0 {
			t.Errorf("second Migrate applied %v, want nothing", applied)
		}
		got, latest, err := s.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != latest || got < 1 {
			t.Errorf("SchemaVersion = %d, latest %d; want equal and >= 1", got, latest)
		}
		if err := s.Ping(ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})

	t.Run("a created item is active, actionable and has its dimensions", func(t *testing.T) {
		s := open(t)
		detail := json.RawMessage(`{"k":"v"}`)
		it := create(t, s, wq.NewItem{ItemType: "test", IdempotencyKey: "k1", CallerIdentity: "alice", ContentHash: "h",
			Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x", Variant: "a"}, Status: wq.StatusTrue,
				PendingUntil: T0.Add(time.Hour), Detail: detail}}})
		want := &wq.Item{ID: it.ID, ItemType: "test", Phase: wq.PhaseActive, Actionable: true, Revision: 1, IdempotencyKey: "k1",
			Generation: 1, CallerIdentity: "alice", ContentHash: "h", CreatedAt: T0, UpdatedAt: T0,
			Dimensions: wq.Dimensions{{Dimension: "needs_x", Variant: "a"}: {Status: wq.StatusTrue, PendingUntil: T0.Add(time.Hour), Detail: detail, UpdatedAt: T0}}}
		if diff := cmp.Diff(want, get(t, s, it.ID), cmp.Comparer(jsonEqual)); diff != "" {
			t.Errorf("GetItem (-want +got):\n%s", diff)
		}
	})

	t.Run("a missing item is not found", func(t *testing.T) {
		s := open(t)
		_, err := s.GetItem(ctx, wq.NewItemID())
		wantCode(t, err, wq.ENOTFOUND)
		_, err = s.ClaimItem(ctx, wq.NewItemID(), "w", T0, time.Minute)
		wantCode(t, err, wq.ENOTFOUND)
		_, err = deliver(t, s, wq.Event{ItemID: wq.NewItemID(), Source: "s", EventType: "e", DeliveryID: "d", Body: []byte(`{}`), ReceivedAt: T0})
		wantCode(t, err, wq.ENOTFOUND)
	})

	t.Run("an idempotency key is unique among items not completed or cancelled", func(t *testing.T) {
		s := open(t)
		first := create(t, s, wq.NewItem{IdempotencyKey: "key:p:b"})
		_, err := s.CreateItem(ctx, wq.NewItem{ItemType: "test", IdempotencyKey: "key:p:b"}, T0)
		wantCode(t, err, wq.ECONFLICT)
		l := claim(t, s, first.ID, T0)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted}, T0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateItem(ctx, wq.NewItem{ItemType: "test", IdempotencyKey: "key:p:b", Generation: 2}, T0); err != nil {
			t.Errorf("create after completion: %v", err)
		}
	})
}

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

// events: events and webhook deliveries.
// batchClaims tests ClaimItems, the claim the engine's producer makes for
// many queued items at once.
func batchClaims(t *testing.T, open func(t *testing.T) wq.Store) {
	claimIDs := func(cs []wq.Claim) []wq.ItemID {
		ids := []wq.ItemID{}
		for _, c := range cs {
			ids = append(ids, c.Lease.ItemID)
		}
		return ids
	}

	t.Run("a batch leases each claimable item under its own token, with its dimensions", func(t *testing.T) {
		s := open(t)
		needs := wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: "needs_x", Variant: "v"}, Status: wq.StatusTrue,
			Detail: json.RawMessage(`{"a":1}`), PendingUntil: T0.Add(time.Hour)}
		a := create(t, s, wq.NewItem{Dimensions: []wq.DimensionUpdate{needs}})
		b := create(t, s, wq.NewItem{})
		got, err := s.ClaimItems(ctx, []wq.ItemID{b.ID, a.ID, b.ID}, []string{"test"}, "worker-1", T0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]wq.ItemID{b.ID, a.ID}, claimIDs(got)); diff != "" {
			t.Fatalf("claimed (-want +got):\n%s", diff)
		}
		if got[0].Lease.Token == "" || got[0].Lease.Token == got[1].Lease.Token {
			t.Errorf("tokens %q and %q: want two distinct ones", got[0].Lease.Token, got[1].Lease.Token)
		}
		for _, c := range got {
			if c.Lease.Owner != "worker-1" || !c.Lease.Until.Equal(T0.Add(time.Minute)) {
				t.Errorf("lease %+v, want worker-1 until %v", c.Lease, T0.Add(time.Minute))
			}
			stored := get(t, s, c.Lease.ItemID)
			if diff := cmp.Diff(stored, c.Item); diff != "" {
				t.Errorf("claimed item differs from the stored one (-stored +claimed):\n%s", diff)
			}
			if stored.LeaseOwner != "worker-1" || !stored.LeasedUntil.Equal(c.Lease.Until) {
				t.Errorf("stored lease: owner %q until %v", stored.LeaseOwner, stored.LeasedUntil)
			}
			// Each lease fences its own item: a write under it succeeds.
			if err := s.RecordSuccess(ctx, c.Lease, T0); err != nil {
				t.Errorf("write under the batch's lease on %s: %v", c.Lease.ItemID, err)
			}
		}
		if d := got[1].Item.Dimensions[needs.DimensionKey]; d.Status != wq.StatusTrue || !d.PendingUntil.Equal(needs.PendingUntil) || !jsonEqual(d.Detail, needs.Detail) {
			t.Errorf("claimed dimensions %+v, want %+v", got[1].Item.Dimensions, needs)
		}
	})

	t.Run("a batch says which items had no pending event when claimed", func(t *testing.T) {
		s := open(t)
		quiet := create(t, s, wq.NewItem{})
		told := create(t, s, wq.NewItem{})
		if _, err := deliver(t, s, wq.Event{ItemID: told.ID, Source: "gitea", EventType: "push", DeliveryID: "d-told",
			Body: json.RawMessage(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		got, err := s.ClaimItems(ctx, []wq.ItemID{quiet.ID, told.ID}, []string{"test"}, "worker-1", T0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("claimed %d items, want 2", len(got))
		}
		// NoEvents may only be true when nothing is pending: a false
		// positive would skip an event until the next revision.
		if got[1].NoEvents {
			t.Error("an item with a pending event was claimed as having none")
		}
		if !got[0].NoEvents {
			t.Error("an item with no pending event was claimed as maybe having some")
		}
	})

	t.Run("a batch leaves out missing, terminal, leased and other types' items, and takes expired leases", func(t *testing.T) {
		s := open(t)
		due := create(t, s, wq.NewItem{})
		other := create(t, s, wq.NewItem{ItemType: "other"})
		done := create(t, s, wq.NewItem{})
		if _, err := s.CancelItem(ctx, done.ID, "test", T0); err != nil {
			t.Fatal(err)
		}
		held := create(t, s, wq.NewItem{})
		old := claim(t, s, held.ID, T0) // until T0+1m
		missing := wq.NewItemID()
		ids := []wq.ItemID{missing, done.ID, held.ID, other.ID, due.ID}

		got, err := s.ClaimItems(ctx, ids, []string{"test"}, "worker-2", T0.Add(30*time.Second), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]wq.ItemID{due.ID}, claimIDs(got)); diff != "" {
			t.Fatalf("claimed while the lease holds (-want +got):\n%s", diff)
		}
		if it := get(t, s, other.ID); it.LeaseOwner != "" {
			t.Errorf("an item of a type not asked for was leased by %q", it.LeaseOwner)
		}
		// Once its lease has expired, the held item is claimable, and the
		// old holder is fenced out.
		got, err = s.ClaimItems(ctx, ids, []string{"test", "other"}, "worker-3", T0.Add(61*time.Second), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]wq.ItemID{held.ID, other.ID}, claimIDs(got)); diff != "" {
			t.Fatalf("claimed after the lease expired (-want +got):\n%s", diff)
		}
		if err := s.RecordSuccess(ctx, old, T0); !errors.Is(err, wq.ErrLeaseLost) {
			t.Errorf("write under the expired, reclaimed lease: %v, want ErrLeaseLost", err)
		}
		if got, err := s.ClaimItems(ctx, nil, []string{"test"}, "w", T0, time.Minute); err != nil || len(got) != 0 {
			t.Errorf("claim of no ids: %v, %v", got, err)
		}
	})

	t.Run("racing claimers never get the same item, and between them get them all", func(t *testing.T) {
		s := open(t)
		const items, claimers = 40, 4
		var ids []wq.ItemID
		for range items {
			ids = append(ids, create(t, s, wq.NewItem{}).ID)
		}
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			holder = map[wq.ItemID][]string{}
			start  = make(chan struct{})
		)
		for i := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("claimer-%d", i)
				<-start
				// Every claimer asks for every item, in batches of 8.
				for lo := 0; lo < items; lo += 8 {
					got, err := s.ClaimItems(ctx, ids[lo:lo+8], []string{"test"}, owner, T0, time.Minute)
					if err != nil {
						t.Errorf("%s: %v", owner, err)
						return
					}
					mu.Lock()
					for _, c := range got {
						holder[c.Lease.ItemID] = append(holder[c.Lease.ItemID], owner)
					}
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		for _, id := range ids {
			if len(holder[id]) != 1 {
				t.Errorf("item %s claimed by %v, want exactly one claimer", id, holder[id])
				continue
			}
			if got := get(t, s, id); got.LeaseOwner != holder[id][0] {
				t.Errorf("item %s leased by %q, but %q got the claim", id, got.LeaseOwner, holder[id][0])
			}
		}
	})

	t.Run("a lost lease in a batch fails only its own item's writes", func(t *testing.T) {
		s := open(t)
		var ids []wq.ItemID
		for range 3 {
			ids = append(ids, create(t, s, wq.NewItem{}).ID)
		}
		batch, err := s.ClaimItems(ctx, ids, []string{"test"}, "worker-1", T0, time.Minute)
		if err != nil || len(batch) != 3 {
			t.Fatalf("claim: %d claims, %v", len(batch), err)
		}
		// The middle item's lease expires and another worker takes it.
		if _, err := s.ClaimItem(ctx, ids[1], "worker-2", T0.Add(2*time.Minute), time.Minute); err != nil {
			t.Fatal(err)
		}
		dims := []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: "needs_x"}, Status: wq.StatusFalse}}
		for i, c := range batch {
			_, err := s.ApplyChange(ctx, c.Lease, wq.Change{Dimensions: dims, SeenRevision: c.Item.Revision}, T0)
			if i == 1 {
				if !errors.Is(err, wq.ErrLeaseLost) {
					t.Errorf("write under the lost lease: %v, want ErrLeaseLost", err)
				}
				continue
			}
			if err != nil {
				t.Errorf("write under item %d's lease: %v", i, err)
			}
			if exited, err := s.FinishProcessing(ctx, c.Lease, c.Item.Revision, T0); err != nil || !exited {
				t.Errorf("exit of item %d: exited %v, %v", i, exited, err)
			}
		}
		if got := get(t, s, ids[1]); len(got.Dimensions) != 0 || got.LeaseOwner != "worker-2" {
			t.Errorf("the reclaimed item changed under the lost lease: %+v", got)
		}
	})
}

func events(t *testing.T, open func(t *testing.T) wq.Store) {
	// DDR-34: a delivery's insert and the loop's exit decision take the
	// item's lock, in one order for all items. Without it a delivery for
	// several items and a batch of exits lock the items' rows in other
	// orders and deadlock (PostgreSQL aborts one of them: a webhook
	// answered 500, an exit retried), and an exit can slip between an
	// event's insert and its wake-up.
	t.Run("a delivery for an item that ended stores no event and leaves the item ended and asleep", func(t *testing.T) {
		s := open(t)
		ended, active := create(t, s, wq.NewItem{}), create(t, s, wq.NewItem{})
		l := claim(t, s, ended.ID, T0)
		if _, err := s.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted, Reason: "merged"}, T0); err != nil {
			t.Fatal(err)
		}
		before := get(t, s, ended.ID)
		// The webhook resolved the item while it was active; the terminal
		// write committed before the insert.
		d, err := s.InsertDelivery(ctx, "gitea", "late", []wq.Event{
			{ItemID: ended.ID, EventType: "e", Body: json.RawMessage(`{}`)}, {ItemID: active.ID, EventType: "e", Body: json.RawMessage(`{}`)}}, T0)
		if err != nil || d.Duplicate || d.Stored != 1 || d.Ended != 1 {
			t.Fatalf("InsertDelivery = %+v, %v; want one stored and one for an ended item", d, err)
		}
		got := get(t, s, ended.ID)
		if got.Actionable || got.Revision != before.Revision || got.Phase != wq.PhaseCompleted {
			t.Errorf("the ended item after a late delivery: actionable %v revision %d→%d phase %s", got.Actionable, before.Revision, got.Revision, got.Phase)
		}
		if ev, err := s.NextEvent(ctx, ended.ID); err != nil || ev != nil {
			t.Errorf("an orphan event is pending for the ended item: %+v, %v", ev, err)
		}
		if ev, err := s.NextEvent(ctx, active.ID); err != nil || ev == nil || !get(t, s, active.ID).Actionable {
			t.Errorf("the active item's event: %+v, %v", ev, err)
		}
	})

	t.Run("deliveries for many items racing a batch of exits deadlock nothing and lose no event", func(t *testing.T) {
		s := open(t)
		const items, rounds = 8, 60
		var ids []wq.ItemID
		for range items {
			ids = append(ids, create(t, s, wq.NewItem{}).ID)
		}
		now := T0
		for round := range rounds {
			now = now.Add(2 * time.Minute) // every lease of the round before has expired
			leases := make([]wq.Lease, items)
			seen := make([]int64, items)
			for i, id := range ids {
				leases[i] = claim(t, s, id, now)
				seen[i] = get(t, s, id).Revision
			}
			// The delivery names the items in one order, the exits come in
			// the other.
			evs := make([]wq.Event, items)
			for i := range ids {
				evs[i] = wq.Event{ItemID: ids[(i+round)%items], Source: "race", EventType: "e", DeliveryID: fmt.Sprintf("d%d", round),
					Body: json.RawMessage(`{}`), ReceivedAt: now}
			}
			var wg sync.WaitGroup
			errs := make(chan error, items+1)
			start := make(chan struct{})
			wg.Go(func() {
				<-start
				if _, err := s.InsertDelivery(ctx, "race", fmt.Sprintf("d%d", round), evs, now); err != nil {
					errs <- fmt.Errorf("InsertDelivery: %w", err)
				}
			})
			for i := range ids {
				j := items - 1 - i
				wg.Go(func() {
					<-start
					if _, err := s.FinishProcessing(ctx, leases[j], seen[j], now); err != nil {
						errs <- fmt.Errorf("FinishProcessing %d: %w", j, err)
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("round %d: %v", round, err)
			}
			// Every item has its event, and an item with an event pending is
			// actionable: none was left asleep with work to do.
			for i, id := range ids {
				it := get(t, s, id)
				ev, err := s.NextEvent(ctx, id)
				if err != nil || ev == nil {
					t.Fatalf("round %d item %d: no pending event (%v)", round, i, err)
				}
				if !it.Actionable {
					t.Fatalf("round %d item %d: an event is pending and the item is not actionable", round, i)
				}
			}
			// Drain the events, so that the next round's exits can succeed.
			now = now.Add(2 * time.Minute)
			for _, id := range ids {
				l := claim(t, s, id, now)
				for {
					ev, err := s.NextEvent(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if ev == nil {
						break
					}
					if _, err := s.ApplyEvent(ctx, l, ev, wq.EventResult{}, now); err != nil {
						t.Fatal(err)
					}
				}
				if exited, err := s.FinishProcessing(ctx, l, get(t, s, id).Revision, now); err != nil || !exited {
					t.Fatalf("drain: exited %v, %v", exited, err)
				}
			}
		}
	})

	t.Run("an event is stored once per delivery, marks the item actionable and drains oldest first", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		l := claim(t, s, it.ID, T0)
		if exited, err := s.FinishProcessing(ctx, l, it.Revision, T0); err != nil || !exited {
			t.Fatalf("FinishProcessing: %v %v", exited, err)
		}
		if get(t, s, it.ID).Actionable {
			t.Fatal("still actionable after a clean exit")
		}
		for i, d := range []string{"d1", "d2", "d1"} {
			ins, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "gitea", EventType: "merged", DeliveryID: d,
				Body: json.RawMessage(`{"n":1}`), EventTS: T0.Add(time.Duration(i) * time.Second), ReceivedAt: T0})
			if err != nil {
				t.Fatal(err)
			}
			if want := i < 2; ins != want {
				t.Errorf("event %d (%s): inserted %v, want %v", i, d, ins, want)
			}
		}
		got := get(t, s, it.ID)
		if !got.Actionable || got.Revision != 3 {
			t.Errorf("after two events: actionable %v revision %d", got.Actionable, got.Revision)
		}
		ev, err := s.NextEvent(ctx, it.ID)
		if err != nil || ev == nil {
			t.Fatalf("NextEvent: %v %v", ev, err)
		}
		want := &wq.Event{ID: ev.ID, ItemID: it.ID, Source: "gitea", EventType: "merged", DeliveryID: "d1",
			Body: json.RawMessage(`{"n": 1}`), EventTS: T0, ReceivedAt: T0}
		if diff := cmp.Diff(want, ev, cmp.Comparer(jsonEqual)); diff != "" {
			t.Errorf("NextEvent (-want +got):\n%s", diff)
		}
	})

	t.Run("a webhook delivery is stored once, for every item it concerns, even after it was applied", func(t *testing.T) {
		s := open(t)
		a, b := create(t, s, wq.NewItem{}), create(t, s, wq.NewItem{})
		for _, it := range []*wq.Item{a, b} {
			l := claim(t, s, it.ID, T0)
			if exited, err := s.FinishProcessing(ctx, l, it.Revision, T0); err != nil || !exited {
				t.Fatal(exited, err)
			}
		}
		events := []wq.Event{{ItemID: a.ID, EventType: "pull_request", Body: []byte(`{"n":1}`), EventTS: T0},
			{ItemID: b.ID, EventType: "pull_request", Body: []byte(`{"n":1}`), EventTS: T0}}
		d, err := s.InsertDelivery(ctx, "gitea", "d-1", events, T0)
		dup := d.Duplicate
		if err != nil || dup || d.Stored != len(events) {
			t.Fatalf("first delivery: duplicate %v, %v", dup, err)
		}
		for _, it := range []*wq.Item{a, b} {
			got := get(t, s, it.ID)
			ev, _ := s.NextEvent(ctx, it.ID)
			if !got.Actionable || got.Revision != it.Revision+1 || ev == nil || ev.Source != "gitea" || ev.DeliveryID != "d-1" || ev.EventType != "pull_request" {
				t.Errorf("item %s after the delivery: %+v, event %+v", it.ID, got, ev)
			}
			l := claim(t, s, it.ID, T0)
			if _, err := s.ApplyEvent(ctx, l, ev, wq.EventResult{}, T0); err != nil {
				t.Fatal(err)
			}
		}
		d, err = s.InsertDelivery(ctx, "gitea", "d-1", events, T0.Add(time.Minute))
		dup = d.Duplicate
		if err != nil || !dup || d.Stored != 0 {
			t.Fatalf("redelivery: duplicate %v, %v", dup, err)
		}
		if ev, _ := s.NextEvent(ctx, a.ID); ev != nil {
			t.Errorf("a redelivery stored an event again: %+v", ev)
		}
		if d, err := s.InsertDelivery(ctx, "gitlab", "d-1", events[:1], T0); err != nil || d.Duplicate {
			dup := d.Duplicate
			t.Errorf("the same id from another source: duplicate %v, %v", dup, err)
		}
	})

	t.Run("pruned deliveries are forgotten, newer ones are not", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		ev := []wq.Event{{ItemID: it.ID, EventType: "e", Body: []byte(`{}`)}}
		for i, at := range []time.Time{T0, T0.Add(time.Hour), T0.Add(2 * time.Hour)} {
			if _, err := s.InsertDelivery(ctx, "gitea", fmt.Sprintf("d-%d", i), ev, at); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := s.PruneDeliveries(ctx, T0.Add(time.Hour)); err != nil || n != 1 {
			t.Fatalf("pruned %d, %v; want 1", n, err)
		}
		if d, _ := s.InsertDelivery(ctx, "gitea", "d-0", ev, T0.Add(3*time.Hour)); d.Duplicate {
			t.Error("a pruned delivery is still remembered")
		}
		if d, _ := s.InsertDelivery(ctx, "gitea", "d-1", ev, T0.Add(3*time.Hour)); !d.Duplicate {
			t.Error("a delivery received at the cut was forgotten")
		}
	})

	t.Run("applying an event changes phase unless stale, always upserts dimensions, and deletes it", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		insert := func(delivery string, at time.Time) *wq.Event {
			t.Helper()
			if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "s", EventType: "e", DeliveryID: delivery, Body: []byte(`{}`), EventTS: at, ReceivedAt: T0}); err != nil {
				t.Fatal(err)
			}
			ev, _ := s.NextEvent(ctx, it.ID)
			return ev
		}
		l := claim(t, s, it.ID, T0)
		dim := func(name string) []wq.DimensionUpdate {
			return []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: name}, Status: wq.StatusTrue}}
		}
		// A newer event sets last_event_at without a phase change.
		if _, err := s.ApplyEvent(ctx, l, insert("new", T0.Add(time.Hour)), wq.EventResult{Dimensions: dim("needs_a")}, T0); err != nil {
			t.Fatal(err)
		}
		// An older one may not change the phase but its dimensions apply (DDR-38).
		out, err := s.ApplyEvent(ctx, l, insert("old", T0), wq.EventResult{Phase: wq.PhaseCancelled, Dimensions: dim("needs_b")}, T0)
		if err != nil {
			t.Fatal(err)
		}
		if !out.Stale || out.PhaseApplied || out.NewPhase != wq.PhaseActive {
			t.Errorf("stale event: %+v", out)
		}
		got := get(t, s, it.ID)
		if got.Phase != wq.PhaseActive || !got.LastEventAt.Equal(T0.Add(time.Hour)) || len(got.Dimensions) != 2 {
			t.Errorf("after stale event: phase %s last %v dims %v", got.Phase, got.LastEventAt, got.Dimensions)
		}
		newest := insert("newest", T0.Add(2*time.Hour))
		// An event that arrived before the terminal write, still pending.
		if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "s", EventType: "late", DeliveryID: "late", Body: []byte(`{}`), EventTS: T0.Add(3 * time.Hour), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		out, err = s.ApplyEvent(ctx, l, newest, wq.EventResult{Phase: wq.PhaseCompleted, Reason: "merged"}, T0)
		if err != nil || !out.PhaseApplied || out.OldPhase != wq.PhaseActive || out.NewPhase != wq.PhaseCompleted {
			t.Fatalf("newest event: %+v %v", out, err)
		}
		// The terminal write let go of the lease: nothing more is written
		// under it, and a terminal item accepts nothing more (DDR-37); the
		// events still pending are dropped and returned for the audit.
		if got := get(t, s, it.ID); got.LeaseOwner != "" || !got.LeasedUntil.IsZero() {
			t.Errorf("a completed item still shows a lease: owner %q until %v", got.LeaseOwner, got.LeasedUntil)
		}
		late, _ := s.NextEvent(ctx, it.ID)
		if late == nil || late.EventType != "late" {
			t.Fatalf("the pending event after the terminal write: %+v", late)
		}
		out, err = s.ApplyEvent(ctx, l, late, wq.EventResult{Phase: wq.PhaseCancelled, Dimensions: dim("needs_c")}, T0)
		if !errors.Is(err, wq.ErrLeaseLost) || out.PhaseApplied {
			t.Fatalf("event under the completed item's old lease: %+v %v, want ErrLeaseLost", out, err)
		}
		dropped, err := s.DropEvents(ctx, it.ID)
		if err != nil || len(dropped) != 1 || dropped[0].ID != late.ID || dropped[0].EventType != late.EventType {
			t.Fatalf("DropEvents = %+v, %v; want the late event", dropped, err)
		}
		got = get(t, s, it.ID)
		if got.Phase != wq.PhaseCompleted || got.Reason != "merged" || len(got.Dimensions) != 2 {
			t.Errorf("terminal item changed: %+v", got)
		}
		if ev, _ := s.NextEvent(ctx, it.ID); ev != nil {
			t.Errorf("events left: %+v", ev)
		}
	})

	t.Run("events of an active item are never dropped", func(t *testing.T) {
		s := open(t)
		it := create(t, s, wq.NewItem{})
		if _, err := deliver(t, s, wq.Event{ItemID: it.ID, Source: "forge", EventType: "x", DeliveryID: "d1", Body: []byte(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		if dropped, err := s.DropEvents(ctx, it.ID); err != nil || len(dropped) != 0 {
			t.Errorf("DropEvents of an active item = %v, %v; want nothing", dropped, err)
		}
		if ev, _ := s.NextEvent(ctx, it.ID); ev == nil {
			t.Error("the active item's event is gone")
		}
	})
}

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

// sweep: what the sweep finds.
func sweep(t *testing.T, open func(t *testing.T) wq.Store) {
	t.Run("the sweep finds exactly the due items", func(t *testing.T) {
		s := open(t)
		idle := func(typ string, dims ...wq.DimensionUpdate) *wq.Item {
			t.Helper()
			it := create(t, s, wq.NewItem{ItemType: typ, Dimensions: dims})
			l := claim(t, s, it.ID, T0)
			if exited, err := s.FinishProcessing(ctx, l, it.Revision, T0); err != nil || !exited {
				t.Fatalf("idle: %v %v", exited, err)
			}
			return it
		}
		deferred := func(at time.Time) wq.DimensionUpdate {
			return wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: "needs_reconcile"}, Status: wq.StatusTrue, PendingUntil: at}
		}
		now := T0.Add(10 * time.Minute)
		actionable := create(t, s, wq.NewItem{})
		_ = idle("test")
		withEvent := idle("test")
		if _, err := deliver(t, s, wq.Event{ItemID: withEvent.ID, Source: "s", EventType: "e", DeliveryID: "d", Body: []byte(`{}`), ReceivedAt: T0}); err != nil {
			t.Fatal(err)
		}
		// An event marks the item actionable too; make it idle again to see the event path alone.
		dueDim := idle("test", deferred(now.Add(-time.Second)))
		_ = idle("test", deferred(now.Add(time.Second)))
		_ = create(t, s, wq.NewItem{ItemType: "other"})
		leased := create(t, s, wq.NewItem{})
		_, _ = s.ClaimItem(ctx, leased.ID, "w", now, time.Minute)
		expired := create(t, s, wq.NewItem{})
		_, _ = s.ClaimItem(ctx, expired.ID, "w", T0, time.Minute)
		backoff := create(t, s, wq.NewItem{})
		bl := claim(t, s, backoff.ID, T0)
		if _, err := s.RecordFailure(ctx, bl, wq.Failure{Error: "x", RetryAfter: now.Add(time.Minute)}, T0); err != nil {
			t.Fatal(err)
		}
		_ = s.ReleaseLease(ctx, bl)
		failed := create(t, s, wq.NewItem{})
		fl := claim(t, s, failed.ID, T0)
		if _, err := s.RecordFailure(ctx, fl, wq.Failure{Error: "x", Fail: true}, T0); err != nil {
			t.Fatal(err)
		}
		_ = s.ReleaseLease(ctx, fl)

		ids, err := s.DueItems(ctx, []string{"test"}, now, 100)
		if err != nil {
			t.Fatal(err)
		}
		got := map[wq.ItemID]bool{}
		for _, id := range ids {
			got[id] = true
		}
		want := map[wq.ItemID]bool{actionable.ID: true, withEvent.ID: true, dueDim.ID: true, expired.ID: true}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("DueItems (-want +got):\n%s", diff)
		}
		if ids, _ := s.DueItems(ctx, []string{"test"}, now, 2); len(ids) != 2 {
			t.Errorf("limit 2 returned %d", len(ids))
		}
		if ids, _ := s.DueItems(ctx, nil, now, 100); len(ids) != 0 {
			t.Errorf("no handled types returned %d items (DDR-25)", len(ids))
		}
	})
}

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
