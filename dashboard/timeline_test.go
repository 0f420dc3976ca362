package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
)

func TestWaitingSaysWhatAnItemWaitsForInWords(t *testing.T) {
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	later := now.Add(4 * time.Minute)
	for _, tc := range []struct {
		name string
		it   api.Item
		want string
	}{
		{"a completed item waits for nothing", api.Item{Phase: wq.PhaseCompleted, Reason: "merged"}, "Nothing: it completed (merged)."},
		{"a cancelled item waits for nothing until retried", api.Item{Phase: wq.PhaseCancelled}, "Nothing: it was cancelled. Retry it to start it again."},
		{"a failed item waits for a person", api.Item{Phase: wq.PhaseFailed}, "A person"},
		{"an active item without rows waits for its first steps", api.Item{Phase: wq.PhaseActive}, "Its first steps: none has run yet"},
		{"a scheduled step says when it is next looked at, and its blocker", api.Item{Phase: wq.PhaseActive, Dimensions: []api.Dimension{
			{Dimension: "needs_mr", Status: wq.StatusFalse},
			{Dimension: "needs_reconcile", Status: wq.StatusTrue, PendingUntil: &later, Detail: json.RawMessage(`{"blocker":"need_rebase"}`)},
		}}, "The step reconcile, next looked at in\u00a04\u00a0min: blocked by need rebase."},
		{"a backing-off item says when it is tried again", api.Item{Phase: wq.PhaseActive, Attempts: 2, RetryAfter: &later},
			"Its next try after a failed action, in\u00a04\u00a0min (attempt 2 so far)."},
		{"no instance handling the type is said first", api.Item{Phase: wq.PhaseActive, Warnings: []string{"no instance handles mr items"}},
			"no instance handles mr items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := waiting(&tc.it, now)
			if !strings.Contains(got[0], tc.want) {
				t.Errorf("waiting = %q, want it to begin with %q", got, tc.want)
			}
		})
	}
}

func TestRelativeTimesReadAsAgesAndCountdowns(t *testing.T) {
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		-10 * time.Second: "just now",
		-4 * time.Minute:  "4\u00a0min\u00a0ago",
		3 * time.Hour:     "in\u00a03\u00a0h",
		-72 * time.Hour:   "3\u00a0days\u00a0ago",
	} {
		if got := relative(now.Add(d), now); got != want {
			t.Errorf("relative(now%+v) = %q, want %q", d, got, want)
		}
	}
}

func TestAnUnknownAuditEntryStillShowsWhatItChanged(t *testing.T) {
	m := describe(wq.AuditEntry{EventType: "label_added", Actor: "worker-1",
		OldState: map[string]any{"labels": []any{"a"}}, NewState: map[string]any{"labels": []any{"a", "b"}}})
	if m.What != "label added" || len(m.Changes) != 1 || m.Changes[0].From != `["a"]` || m.Changes[0].To != `["a","b"]` {
		t.Errorf("describe = %+v", m)
	}
}

func TestAStepWrittenAgainWithItsStatusShowsNoChange(t *testing.T) {
	dim := func(status string) map[string]any {
		return map[string]any{"dimension": "needs_reconcile", "status": status}
	}
	again := describe(wq.AuditEntry{EventType: wq.AuditDimensionChange, OldState: dim(wq.StatusTrue), NewState: dim(wq.StatusTrue)})
	if again.What != "reconcile: to do" || len(again.Changes) != 0 {
		t.Errorf("a step written again as to do: %+v, want no change", again)
	}
	done := describe(wq.AuditEntry{EventType: wq.AuditDimensionChange, OldState: dim(wq.StatusTrue), NewState: dim(wq.StatusFalse)})
	if len(done.Changes) != 1 || done.Changes[0].From != "to do" || done.Changes[0].To != "done" {
		t.Errorf("a step done: %+v, want to do → done", done)
	}
}
