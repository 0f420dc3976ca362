package controlplane_test

import (
	"slices"
	"testing"
	"time"

	cp "github.com/workqueue-dev/workqueue/controlplane"
)

func TestMissingNamesEveryFieldADrainNeeds(t *testing.T) {
	c := &cp.Checkpoint{SessionID: "s", Role: cp.RoleAuthor, WorkflowStage: "review", NextValidAction: "push", RecoveryInstructions: "rebase"}
	if m := c.Missing(); len(m) != 0 {
		t.Fatalf("a complete checkpoint misses %v", m)
	}
	blank := &cp.Checkpoint{SessionID: " ", Role: cp.RoleAuthor}
	want := []string{"session_id", "workflow_stage", "next_valid_action", "recovery_instructions"}
	if m := blank.Missing(); !slices.Equal(m, want) {
		t.Errorf("missing %v, want %v", m, want)
	}
}

func TestReconcileDiagnosesAndNeverGuessesWhatWasNotChecked(t *testing.T) {
	str := func(s string) *string { return &s }
	stored := func() *cp.Checkpoint { return &cp.Checkpoint{SessionID: "s", HeadSHA: "h1", LeaseID: "l"} }
	lease := func(edit func(*cp.Lease)) *cp.Lease {
		l := &cp.Lease{ID: "l", SessionID: "s", State: cp.LeaseActive, ExpiresAt: now.Add(time.Hour)}
		if edit != nil {
			edit(l)
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		c      *cp.Checkpoint
		live   cp.LiveState
		stale  bool
		action string
	}{
		{"nothing checked is not stale", stored(), cp.LiveState{Now: now}, false, cp.ReconcileResume},
		{"the same head and a live lease resume", stored(), cp.LiveState{HeadSHA: str("h1"), Lease: lease(nil), Now: now}, false, cp.ReconcileResume},
		{"a moved head", stored(), cp.LiveState{HeadSHA: str("h2"), Now: now}, true, cp.ReconcileReadHead},
		{"a lease gone", stored(), cp.LiveState{LeaseGone: true, Now: now}, true, cp.ReconcileReclaim},
		{"a lease reassigned", stored(), cp.LiveState{Lease: lease(func(l *cp.Lease) { l.SessionID = "t" }), Now: now}, true, cp.ReconcileReclaim},
		{"a lease expired", stored(), cp.LiveState{Lease: lease(func(l *cp.Lease) { l.ExpiresAt = now }), Now: now}, true, cp.ReconcileReclaim},
		{"a lease released", stored(), cp.LiveState{Lease: lease(func(l *cp.Lease) { l.State = cp.LeaseReleased }), Now: now}, true, cp.ReconcileReclaim},
		{"a session-level checkpoint holds nothing", &cp.Checkpoint{SessionID: "s"}, cp.LiveState{HeadSHA: str("h9"), Now: now}, false, cp.ReconcileNothing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := cp.Reconcile(tc.c, tc.live)
			if d.Stale != tc.stale || d.ReconcileAction != tc.action {
				t.Errorf("diagnosis %+v, want stale %v, action %s", d, tc.stale, tc.action)
			}
			if tc.live.HeadSHA == nil && (d.HeadChecked || d.HeadMismatch) {
				t.Errorf("a head not given was checked: %+v", d)
			}
			if tc.live.Lease == nil && !tc.live.LeaseGone && (d.LeaseChecked || d.LeaseMismatch) {
				t.Errorf("a lease not looked up was checked: %+v", d)
			}
		})
	}
}
