package controlplane_test

import (
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// A freeze ends every lease of the frozen identity's sessions, released
// with its reason, and no other identity's; only an admin may end them.
func TestEndingAFrozenIdentitysLeasesLeavesOthersAlone(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1), openIssue(2), openIssue(3))
		alice, a1 := w.session("alice", cp.RoleAuthor)
		_, a2 := w.session("alice", cp.RoleAuthor)
		bob, bs := w.session("bob", cp.RoleAuthor)
		l1, l2 := w.assign(alice, a1).Lease.ID, w.assign(alice, a2).Lease.ID
		lb := w.assign(bob, bs).Lease.ID

		if _, err := w.svc.EndLeasesOf(w.ctx, bob, "alice"); wq.ErrorCode(err) != wq.EFORBIDDEN {
			t.Errorf("bob ended alice's leases: %v, want forbidden", err)
		}
		ended, err := w.svc.EndLeasesOf(w.ctx, cp.Caller{Identity: "ops", Admin: true}, "alice")
		if err != nil || len(ended) != 2 {
			t.Fatalf("ended %d leases (%v), want alice's 2", len(ended), err)
		}
		for id, want := range map[string]cp.LeaseState{l1: cp.LeaseReleased, l2: cp.LeaseReleased, lb: cp.LeaseActive} {
			l, err := w.svc.Store.GetLease(w.ctx, id)
			if err != nil || l.State != want {
				t.Errorf("lease %s: %+v %v, want %s", id, l, err, want)
			}
		}
		events, err := w.svc.Store.ListEvents(w.ctx, cp.EventFilter{LeaseID: l1, Limit: 1})
		if err != nil || len(events) != 1 || events[0].Reason != cp.ReasonIdentityFrozen || events[0].Actor != "ops" {
			t.Errorf("lease %s's last event: %+v %v, want released by ops for %s", l1, events, err, cp.ReasonIdentityFrozen)
		}
	})
}
