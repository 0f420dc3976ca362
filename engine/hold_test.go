package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/engine"
)

// An item whose hold says no (its creator is frozen) makes no forge
// write: it waits, actionable, without failing however long the hold
// lasts, and goes on where it was once the hold ends, on whichever
// instance sweeps it then.
func TestAHeldItemWaitsWithoutFailingAndGoesOnWhenReleased(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		var frozen atomic.Bool
		frozen.Store(true)
		hold := func(_ context.Context, it *wq.Item) (string, error) {
			if it.CallerIdentity == "bot" && frozen.Load() {
				return "identity_frozen: bot was frozen", nil
			}
			return "", nil
		}
		var acted atomic.Int64
		typ := oneAction(func(ctx context.Context, x *wq.Execution) error {
			acted.Add(1)
			return markActed(ctx, x)
		})
		first := h.engine(testConfig("first"), typ)
		first.SetHold(hold)
		held := h.run(first, wq.NewItem{CallerIdentity: "bot"})
		other := h.create(wq.NewItem{CallerIdentity: "peer"})
		h.settle(first)

		if got := h.get(other.ID); got.Dimensions.Needs("needs_act", "", h.clock.Now()) {
			t.Errorf("another identity's item did not act")
		}
		if acted.Load() != 1 {
			t.Fatalf("%d actions ran, want only the other identity's", acted.Load())
		}
		got := h.get(held.ID)
		if !strings.HasPrefix(got.Error, "held: identity_frozen") || got.Attempts != 0 || !got.FailingSince.IsZero() ||
			!got.RetryAfter.Equal(h.clock.Now().Add(engine.HoldRecheck)) || got.Phase != wq.PhaseActive {
			t.Fatalf("held item: error %q attempts %d failing since %v retry %v phase %s; want it parked for %v without a failure",
				got.Error, got.Attempts, got.FailingSince, got.RetryAfter, got.Phase, engine.HoldRecheck)
		}

		// Frozen for longer than the engine ever retries a failing item.
		for range 3 {
			h.clock.Advance(engine.DefaultConfig().GiveUpAfter)
			h.settle(first)
		}
		if got := h.get(held.ID); got.Phase != wq.PhaseActive || acted.Load() != 1 {
			t.Fatalf("after a long hold: phase %s, %d actions; want active and still not acted", got.Phase, acted.Load())
		}
		if n := len(h.audit.Entries(wq.AuditItemHeld)); n != 1 {
			t.Errorf("%d item_held entries, want one for the hold's reason", n)
		}
		first.Stop(h.ctx)

		// Unfrozen: another instance takes it up at its next look.
		frozen.Store(false)
		second := h.engine(testConfig("second"), typ)
		second.SetHold(hold)
		h.start(second)
		h.clock.Advance(engine.HoldRecheck)
		h.settle(second)
		got = h.get(held.ID)
		if acted.Load() != 2 || got.Dimensions.Needs("needs_act", "", h.clock.Now()) || got.Error != "" || !got.RetryAfter.IsZero() {
			t.Errorf("after the hold ended: %d actions, error %q, retry %v; want it acted with its hold cleared", acted.Load(), got.Error, got.RetryAfter)
		}
	})
}
