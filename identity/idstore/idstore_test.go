package idstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

type auditLog struct {
	mu      sync.Mutex
	entries []wq.AuditEntry
}

func (a *auditLog) WriteAudit(_ context.Context, e wq.AuditEntry) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = append(a.entries, e)
	return nil
}

func (a *auditLog) of(eventType string) []wq.AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []wq.AuditEntry
	for _, e := range a.entries {
		if e.EventType == eventType {
			out = append(out, e)
		}
	}
	return out
}

var t0 = time.Date(2026, 3, 1, 10, 15, 0, 0, time.UTC)

// TestBudgetHoldsAcrossInstancesAndTurnsWithTheHour spends one identity's
// budget from two guards on one database, as two serve processes do.
func TestBudgetHoldsAcrossInstancesAndTurnsWithTheHour(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		url := testdb.URL(t, kind)
		clock := clockwork.NewFakeClockAt(t0)
		var log auditLog
		limits := identity.Limits{SubmissionsPerHour: 3, ActionsPerHour: 1}
		a := &identity.Guard{Store: testdb.IdentitiesURL(t, url), Limits: limits, Clock: clock, Audit: &log}
		b := &identity.Guard{Store: testdb.IdentitiesURL(t, url), Limits: limits, Clock: clock, Audit: &log}

		for i, g := range []*identity.Guard{a, b, a} {
			if err := g.Spend(ctx, "agent-1", identity.Submissions, nil); err != nil {
				t.Fatalf("submission %d: %v", i+1, err)
			}
		}
		err := b.Spend(ctx, "agent-1", identity.Submissions, map[string]any{"source": "api"})
		var refused *identity.BudgetError
		if !errors.As(err, &refused) {
			t.Fatalf("fourth submission on the other instance: got %v, want a BudgetError", err)
		}
		if got, want := refused.RetryAfterSeconds(), 45*60; got != want {
			t.Errorf("retry after = %ds, want %ds (the rest of the hour)", got, want)
		}
		if got, want := wq.ErrorReason(err), identity.ReasonSubmissionsBudget; got != want {
			t.Errorf("reason = %q, want %q", got, want)
		}
		entries := log.of(identity.AuditBudgetExceeded)
		if len(entries) != 1 || entries[0].Actor != "agent-1" || entries[0].Metadata["budget"] != "submissions" {
			t.Errorf("audit of the refusal = %+v, want one budget_exceeded entry of agent-1 for submissions", entries)
		}

		if err := a.Spend(ctx, "agent-2", identity.Submissions, nil); err != nil {
			t.Errorf("another identity's submission: %v", err)
		}
		if err := a.Spend(ctx, "agent-1", identity.Actions, nil); err != nil {
			t.Errorf("first action: %v", err)
		}
		if err := b.Spend(ctx, "agent-1", identity.Actions, nil); wq.ErrorReason(err) != identity.ReasonActionsBudget {
			t.Errorf("second action: got %v, want %s", err, identity.ReasonActionsBudget)
		}

		clock.Advance(45 * time.Minute)
		if err := b.Spend(ctx, "agent-1", identity.Submissions, nil); err != nil {
			t.Errorf("a submission in the next hour: %v", err)
		}
	})
}

func TestBudgetIsNeverOverspentByConcurrentInstances(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		url := testdb.URL(t, kind)
		clock := clockwork.NewFakeClockAt(t0)
		limits := identity.Limits{SubmissionsPerHour: 10}
		guards := []*identity.Guard{{Store: testdb.IdentitiesURL(t, url), Limits: limits, Clock: clock},
			{Store: testdb.IdentitiesURL(t, url), Limits: limits, Clock: clock}}
		var mu sync.Mutex
		spent := 0
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := guards[i%2].Spend(ctx, "agent-1", identity.Submissions, nil)
				var refused *identity.BudgetError
				switch {
				case err == nil:
					mu.Lock()
					spent++
					mu.Unlock()
				case !errors.As(err, &refused):
					t.Errorf("spend: %v", err)
				}
			}()
		}
		wg.Wait()
		if spent != 10 {
			t.Errorf("%d of 30 concurrent submissions passed, want exactly the budget of 10", spent)
		}
	})
}

func TestFreezeIsSharedAuditedAndLifted(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		url := testdb.URL(t, kind)
		clock := clockwork.NewFakeClockAt(t0)
		var log auditLog
		var hooked []string
		a := &identity.Guard{Store: testdb.IdentitiesURL(t, url), Clock: clock, Audit: &log,
			OnFreeze: func(_ context.Context, id, by string) (int, error) {
				hooked = append(hooked, id+" by "+by)
				return 2, nil
			}}
		b := &identity.Guard{Store: testdb.IdentitiesURL(t, url), Clock: clock}

		if err := b.Check(ctx, "agent-1"); err != nil {
			t.Fatalf("check before the freeze: %v", err)
		}
		st, err := a.Freeze(ctx, "admin", "agent-1", "loops on comments")
		if err != nil {
			t.Fatalf("freeze: %v", err)
		}
		if !st.Frozen || st.LeasesEnded != 2 {
			t.Errorf("freeze answered %+v, want frozen with the 2 leases OnFreeze ended", st)
		}
		err = b.Check(ctx, "agent-1")
		if wq.ErrorCode(err) != wq.EFORBIDDEN || wq.ErrorReason(err) != identity.ReasonFrozen {
			t.Errorf("check on the other instance = %v, want EFORBIDDEN identity_frozen", err)
		}
		if err := b.Check(ctx, "agent-2"); err != nil {
			t.Errorf("another identity is refused: %v", err)
		}
		held, err := b.Hold(ctx, &wq.Item{CallerIdentity: "agent-1"})
		if err != nil || held == "" {
			t.Errorf("hold of a frozen identity's item = %q, %v; want a reason", held, err)
		}
		if diff := cmp.Diff([]string{"agent-1 by admin"}, hooked); diff != "" {
			t.Errorf("OnFreeze calls (-want +got):\n%s", diff)
		}
		list, err := b.Frozen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []identity.Freeze{{Identity: "agent-1", By: "admin", Reason: "loops on comments", At: t0}}
		if diff := cmp.Diff(want, list); diff != "" {
			t.Errorf("frozen identities (-want +got):\n%s", diff)
		}

		if _, err := b.Unfreeze(ctx, "admin-2", "agent-1"); err != nil {
			t.Fatalf("unfreeze: %v", err)
		}
		if err := a.Check(ctx, "agent-1"); err != nil {
			t.Errorf("check after the unfreeze: %v", err)
		}
		if held, err := a.Hold(ctx, &wq.Item{CallerIdentity: "agent-1"}); err != nil || held != "" {
			t.Errorf("hold after the unfreeze = %q, %v; want none", held, err)
		}
		frozen := log.of(identity.AuditFrozen)
		if len(frozen) != 1 || frozen[0].OldState["frozen"] != false || frozen[0].NewState["frozen"] != true || frozen[0].Actor != "admin" {
			t.Errorf("freeze audit = %+v, want one entry by admin from unfrozen to frozen", frozen)
		}
	})
}
