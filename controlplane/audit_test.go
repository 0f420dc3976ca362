package controlplane_test

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// A lease the sweep expires, and one its session's end releases, are
// audited as changes, the lease before beside the lease after; a new
// assignment as a creation (DDR-28).
func TestLeasesEndedByTheSweepOrTheirSessionAreAuditedWithTheirStateBefore(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := t.Context()
		clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
		trail := testkit.CheckedAudit(t)
		cps := &controlplane.Service{Store: testdb.ControlPlane(t, kind), Clock: clock, LeaseTTL: 10 * time.Minute,
			SessionTTL: time.Hour, Audit: trail}
		for _, n := range []int64{1, 2} {
			if err := cps.Store.UpsertWork(ctx, []controlplane.Work{{ID: "issue-" + string(rune('0'+n)), WorkKey: controlplane.WorkKey{Forge: "gitea",
				Repo: "team/app", Kind: controlplane.KindIssue, Number: n}, State: controlplane.StateOpen, Title: "Work", UpdatedAt: clock.Now()}}, clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		agent := controlplane.Caller{Identity: "agent"}
		sess, err := cps.RegisterSession(ctx, agent, controlplane.RoleAuthor, "author", nil)
		if err != nil {
			t.Fatal(err)
		}
		first, err := cps.Allocate(ctx, agent, sess.ID, "", true)
		if err != nil || first.Outcome != controlplane.OutcomeAssigned {
			t.Fatalf("allocate: %+v, %v", first, err)
		}
		clock.Advance(11 * time.Minute)
		if _, err := cps.ExpireLeases(ctx, controlplane.Caller{Identity: "sweep", Admin: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := cps.HeartbeatSession(ctx, agent, sess.ID); err != nil {
			t.Fatal(err)
		}
		second, err := cps.Allocate(ctx, agent, sess.ID, "", true)
		if err != nil || second.Outcome != controlplane.OutcomeAssigned {
			t.Fatalf("allocate again: %+v, %v", second, err)
		}
		if _, err := cps.EndSession(ctx, agent, sess.ID); err != nil {
			t.Fatal(err)
		}
		ended := trail.Entries(wq.AuditLeaseEnded)
		if len(ended) != 2 || len(trail.Entries(wq.AuditLeaseAssigned)) != 2 {
			t.Fatalf("ended %+v, assigned %d", ended, len(trail.Entries(wq.AuditLeaseAssigned)))
		}
		for i, want := range []struct {
			lease, state, reason string
		}{{first.Lease.ID, string(controlplane.LeaseExpired), "expired"}, {second.Lease.ID, string(controlplane.LeaseReleased), "its session ended"}} {
			e := ended[i]
			if e.OldState["lease"] != want.lease || e.OldState["state"] != controlplane.LeaseActive ||
				string(e.NewState["state"].(controlplane.LeaseState)) != want.state || e.Trigger["reason"] != want.reason {
				t.Errorf("ended lease %d: %v → %v (%v), want %s active → %s (%s)", i, e.OldState, e.NewState, e.Trigger, want.lease, want.state, want.reason)
			}
		}
	})
}
