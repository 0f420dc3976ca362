package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/engine"
)

// forgeDown is what an adapter returns while the forge refuses connections.
func forgeDown(n int32) error {
	return &wq.ForgeError{Kind: wq.ForgeTransient, Op: "gitea: branch head o/r@workqueue/x",
		Err: fmt.Errorf("dial tcp 127.0.0.1:3000: connect: connection refused (%d)", n)}
}

// closeTo reports whether a time read back from a store is t: stores keep
// microseconds.
func closeTo(got, want time.Time) bool {
	d := got.Sub(want)
	return !got.IsZero() && d > -time.Millisecond && d < time.Millisecond
}

// untilRetry moves the clock to the item's retry_after, if it is in the
// future, and lets the engine sweep and settle. It returns the item after.
func (h *harness) untilRetry(e *engine.Engine, id wq.ItemID) *wq.Item {
	h.t.Helper()
	if it := h.get(id); it.RetryAfter.After(h.clock.Now()) {
		h.clock.Advance(it.RetryAfter.Sub(h.clock.Now()))
	}
	h.settle(e)
	return h.get(id)
}

func TestTransientFailuresKeepTheItemActiveUntilTheForgeReturns(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		cfg.MaxAttempts = 5
		start := h.clock.Now()
		back := start.Add(10 * time.Minute)
		var calls atomic.Int32
		e := h.engine(cfg, oneAction(func(ctx context.Context, x *wq.Execution) error {
			n := calls.Add(1)
			if x.Now.Before(back) {
				return fmt.Errorf("read the branch: %w", forgeDown(n))
			}
			return x.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: "merged"})
		}))
		it := h.run(e, wq.NewItem{})

		got := h.get(it.ID)
		for rounds := 0; got.Phase == wq.PhaseActive; rounds++ {
			if rounds > 100 {
				t.Fatalf("still active after %d rounds at %v: %+v", rounds, h.clock.Now().Sub(start), got)
			}
			if got.Attempts != 0 || !closeTo(got.FailingSince, start) || !strings.Contains(got.Error, "transient") ||
				!got.RetryAfter.After(h.clock.Now()) {
				t.Fatalf("%v into the outage: attempts %d (want 0), failing since %v (want %v), error %q, retry_after %v (want after %v)",
					h.clock.Now().Sub(start), got.Attempts, got.FailingSince, start, got.Error, got.RetryAfter, h.clock.Now())
			}
			got = h.untilRetry(e, it.ID)
		}

		failures := int(calls.Load()) - 1
		if got.Phase != wq.PhaseCompleted || got.Reason != "merged" {
			t.Fatalf("after the outage: phase %s reason %q error %q, want completed/merged", got.Phase, got.Reason, got.Error)
		}
		if failures < cfg.MaxAttempts {
			t.Fatalf("the outage caused %d failures, fewer than max attempts %d: the test proves nothing", failures, cfg.MaxAttempts)
		}
		if got.Attempts != 0 || got.Error != "" || !got.FailingSince.IsZero() || !got.RetryAfter.IsZero() {
			t.Errorf("after success: attempts %d error %q failing since %v retry_after %v; want all cleared",
				got.Attempts, got.Error, got.FailingSince, got.RetryAfter)
		}
		if refused := h.audit.Entries(wq.AuditWriteRefused); len(refused) != 0 || e.Stats().WritesRefused != 0 {
			t.Errorf("the completing write was followed by a refused write: %v", refused)
		}
		if late := h.clock.Now().Sub(back); late > cfg.BackoffMax {
			t.Errorf("completed %v after the forge came back, want within the backoff cap %v", late, cfg.BackoffMax)
		}
		audited := h.audit.Entries(wq.AuditActionFailed)
		if len(audited) != failures {
			t.Errorf("audited %d failures, want %d", len(audited), failures)
		}
		for _, a := range audited {
			if a.NewState["transient"] != true || a.NewState["phase"] != nil {
				t.Errorf("failure audited as %v, want transient and no phase change", a.NewState)
			}
		}
	})
}

func TestTransientFailuresFailTheItemAfterGiveUpAfter(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		cfg.GiveUpAfter = time.Hour
		start := h.clock.Now()
		var mu sync.Mutex
		var last error
		var calls atomic.Int32
		e := h.engine(cfg, oneAction(func(context.Context, *wq.Execution) error {
			mu.Lock()
			defer mu.Unlock()
			last = forgeDown(calls.Add(1))
			return last
		}))
		it := h.run(e, wq.NewItem{})

		got := h.get(it.ID)
		for rounds := 0; got.Phase == wq.PhaseActive; rounds++ {
			if rounds > 100 {
				t.Fatalf("still active %v after the first failure: %+v", h.clock.Now().Sub(start), got)
			}
			got = h.untilRetry(e, it.ID)
		}

		failedAfter := h.clock.Now().Sub(start)
		if got.Phase != wq.PhaseFailed {
			t.Fatalf("phase %s, want failed", got.Phase)
		}
		if failedAfter < cfg.GiveUpAfter || failedAfter > cfg.GiveUpAfter+cfg.BackoffMax {
			t.Errorf("failed %v after the first failure, want between %v and %v", failedAfter, cfg.GiveUpAfter, cfg.GiveUpAfter+cfg.BackoffMax)
		}
		mu.Lock()
		want := "act: " + last.Error()
		mu.Unlock()
		if got.Error != want {
			t.Errorf("error %q, want the last one %q", got.Error, want)
		}
		if got.Actionable || got.FinishedAt.IsZero() || got.Attempts != 0 {
			t.Errorf("failed item: actionable %v finished at %v attempts %d", got.Actionable, got.FinishedAt, got.Attempts)
		}
		n := calls.Load()
		h.clock.Advance(2 * cfg.GiveUpAfter)
		if h.settle(e); calls.Load() != n {
			t.Errorf("a failed item was tried again: %d calls, want %d", calls.Load(), n)
		}
		audited := h.audit.Entries(wq.AuditActionFailed)
		if len(audited) == 0 || audited[len(audited)-1].NewState["phase"] != wq.PhaseFailed {
			t.Errorf("the give-up was not audited as a failure: %v", audited)
		}
	})
}

func TestRateLimitedItemIsNotTriedBeforeRetryAfter(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		var calls atomic.Int32
		e := h.engine(cfg, oneAction(func(ctx context.Context, x *wq.Execution) error {
			if calls.Add(1) == 1 {
				return fmt.Errorf("commit: %w", &wq.ForgeError{Kind: wq.ForgeRateLimited, Op: "gitea: commit o/r@workqueue/x",
					Status: 429, Message: "slow down", RetryAfter: 30 * time.Second})
			}
			return markActed(ctx, x)
		}))
		it := h.run(e, wq.NewItem{})

		limitedAt := h.clock.Now()
		got := h.get(it.ID)
		if got.RetryAfter.Before(limitedAt.Add(30*time.Second)) || got.Attempts != 0 || got.Phase != wq.PhaseActive ||
			!strings.Contains(got.Error, "rate_limited") {
			t.Fatalf("after a 429 asking for 30s: retry_after %v (want at least %v) attempts %d phase %s error %q",
				got.RetryAfter, limitedAt.Add(30*time.Second), got.Attempts, got.Phase, got.Error)
		}
		// The engine's own backoff after a first failure is at most
		// BackoffBase (10s): only Retry-After keeps the item waiting past it.
		h.clock.Advance(29 * time.Second)
		if n := h.settle(e); n != 0 || calls.Load() != 1 {
			t.Fatalf("29s after the 429: sweep found %d, calls %d; want 0 and 1", n, calls.Load())
		}
		h.clock.Advance(2 * time.Second)
		h.settle(e)
		if calls.Load() != 2 {
			t.Fatalf("31s after the 429: calls %d, want 2", calls.Load())
		}
		if got := h.get(it.ID); got.Actionable || got.Error != "" {
			t.Errorf("after the retry: actionable %v error %q", got.Actionable, got.Error)
		}
	})
}

func TestOnlyTransientFailuresEscapeMaxAttempts(t *testing.T) {
	const rounds = 7
	down := &wq.ForgeError{Kind: wq.ForgeTransient, Op: "gitea: commit o/r@workqueue/x", Message: "connection refused"}
	cases := []struct {
		name      string
		err       error
		wantCalls int32
		wantPhase wq.Phase
		wantTries int // attempts
	}{
		{"an unclassified error fails the item at max attempts", errors.New("disk full"), 5, wq.PhaseFailed, 5},
		{"a forge conflict fails the item at max attempts",
			fmt.Errorf("commit: %w", &wq.ForgeError{Kind: wq.ForgeConflict, Op: "gitea: commit", Status: 409}), 5, wq.PhaseFailed, 5},
		{"ErrPermanent fails the item at once", fmt.Errorf("%w: project gone", wq.ErrPermanent), 1, wq.PhaseFailed, 1},
		{"a permanent forge error as mr wraps it fails the item at once",
			fmt.Errorf("%w: %s: %v", wq.ErrPermanent, "commit", &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: commit", Status: 403}),
			1, wq.PhaseFailed, 1},
		{"a permanent mark wins over a transient forge error", fmt.Errorf("%w: commit: %w", wq.ErrPermanent, down), 1, wq.PhaseFailed, 1},
		{"a transient forge error is not counted", fmt.Errorf("commit: %w", down), rounds, wq.PhaseActive, 0},
		{"a rate limit is not counted",
			&wq.ForgeError{Kind: wq.ForgeRateLimited, Op: "gitea: commit", Status: 429}, rounds, wq.PhaseActive, 0},
		{"an unavailable store is not counted", wq.Errorf(wq.EUNAVAILABLE, "database unreachable"), rounds, wq.PhaseActive, 0},
		{"an error marked ErrTransient is not counted", fmt.Errorf("%w: lock timeout", wq.ErrTransient), rounds, wq.PhaseActive, 0},
	}
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		cfg.MaxAttempts = 5
		// One item per case, on one engine: the executor answers by item.
		errs := map[wq.ItemID]error{}
		calls := map[wq.ItemID]*atomic.Int32{}
		ids := make([]wq.ItemID, len(cases))
		for i, tc := range cases {
			it := h.create(wq.NewItem{})
			ids[i], errs[it.ID], calls[it.ID] = it.ID, tc.err, new(atomic.Int32)
		}
		e := h.engine(cfg, oneAction(func(_ context.Context, x *wq.Execution) error {
			calls[x.Item.ID].Add(1)
			return errs[x.Item.ID]
		}))
		h.start(e)
		h.settle(e)
		for range rounds - 1 {
			// Past the longest backoff: every item still active is due.
			h.clock.Advance(cfg.BackoffMax + time.Minute)
			h.settle(e)
		}
		for i, tc := range cases {
			got := h.get(ids[i])
			if n := calls[ids[i]].Load(); n != tc.wantCalls || got.Phase != tc.wantPhase || got.Attempts != tc.wantTries {
				t.Errorf("%s: calls %d phase %s attempts %d; want %d, %s, %d",
					tc.name, n, got.Phase, got.Attempts, tc.wantCalls, tc.wantPhase, tc.wantTries)
			}
			if want := "act: " + tc.err.Error(); got.Error != want {
				t.Errorf("%s: error %q, want %q", tc.name, got.Error, want)
			}
		}
	})
}

func TestSuccessAfterTransientFailuresStartsAFreshGiveUpClock(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		cfg := testConfig("a")
		cfg.GiveUpAfter = time.Hour
		var down atomic.Bool
		var calls atomic.Int32
		// The first failure is not transient, so that attempts is not 0
		// when the outage ends. A success asks to act again a minute later.
		e := h.engine(cfg, oneAction(func(ctx context.Context, x *wq.Execution) error {
			n := calls.Add(1)
			switch {
			case n == 1:
				return errors.New("flaky")
			case down.Load():
				return forgeDown(n)
			}
			again := dim("needs_act", "", wq.StatusTrue)
			again.PendingUntil = x.Now.Add(time.Minute)
			return x.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{again}})
		}))
		it := h.create(wq.NewItem{})
		down.Store(true)
		firstStart := h.clock.Now()
		h.start(e)
		h.settle(e)

		// A first outage of 50 minutes.
		got := h.get(it.ID)
		for h.clock.Now().Sub(firstStart) < 50*time.Minute {
			got = h.untilRetry(e, it.ID)
			if got.Phase != wq.PhaseActive || got.Attempts != 1 || !closeTo(got.FailingSince, firstStart) {
				t.Fatalf("%v into the first outage: phase %s attempts %d failing since %v; want active, 1, %v",
					h.clock.Now().Sub(firstStart), got.Phase, got.Attempts, got.FailingSince, firstStart)
			}
		}
		down.Store(false)
		got = h.untilRetry(e, it.ID)
		if got.Phase != wq.PhaseActive || got.Attempts != 0 || !got.FailingSince.IsZero() || got.Error != "" || !got.RetryAfter.IsZero() {
			t.Fatalf("after a success: phase %s attempts %d failing since %v error %q retry_after %v; want active and all cleared",
				got.Phase, got.Attempts, got.FailingSince, got.Error, got.RetryAfter)
		}

		// A second outage starts with the next action, a minute later.
		down.Store(true)
		h.clock.Advance(time.Minute)
		secondStart := h.clock.Now()
		h.settle(e)
		for h.clock.Now().Sub(secondStart) < 30*time.Minute {
			got = h.get(it.ID)
			// The item has been failing for more than an hour in all, but
			// only for minutes since the success.
			if got.Phase != wq.PhaseActive || got.Attempts != 0 || !closeTo(got.FailingSince, secondStart) {
				t.Fatalf("%v into the second outage (%v after the first began): phase %s attempts %d failing since %v; want active, 0, %v",
					h.clock.Now().Sub(secondStart), h.clock.Now().Sub(firstStart), got.Phase, got.Attempts, got.FailingSince, secondStart)
			}
			got = h.untilRetry(e, it.ID)
		}
		for rounds := 0; got.Phase == wq.PhaseActive; rounds++ {
			if rounds > 100 {
				t.Fatalf("still active %v into the second outage", h.clock.Now().Sub(secondStart))
			}
			got = h.untilRetry(e, it.ID)
		}
		if failedAfter := h.clock.Now().Sub(secondStart); got.Phase != wq.PhaseFailed || failedAfter < cfg.GiveUpAfter {
			t.Errorf("phase %s %v into the second outage, want failed no sooner than %v", got.Phase, failedAfter, cfg.GiveUpAfter)
		}
	})
}
