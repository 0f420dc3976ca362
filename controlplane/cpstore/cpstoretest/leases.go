package cpstoretest

import (
	"fmt"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
)

func updateLease(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	f.Sessions(controlplane.RoleAuthor, "a", "b")
	until := T0.Add(10 * time.Minute)
	t.Run("a heartbeat extends the lease and is logged", func(t *testing.T) {
		g := f.MustAssign("a", f.Work(1), false, T0, until)
		hb := g.L
		hb.HeartbeatAt, hb.ExpiresAt, hb.HeadSHA = T0.Add(time.Minute), T0.Add(11*time.Minute), "def"
		ev := controlplane.Event{Time: hb.HeartbeatAt, Type: controlplane.EventHeartbeat, Actor: "agent-a"}
		if err := f.S.UpdateLease(f.Ctx, g.L, hb, ev); err != nil {
			t.Fatal(err)
		}
		wantDiff(t, "lease", hb, f.Lease(g.L.ID))
		evs := f.Events(controlplane.EventFilter{LeaseID: g.L.ID})
		if evs[0].Type != controlplane.EventHeartbeat || evs[0].SessionID != "a" || evs[0].WorkID != g.L.WorkID || !evs[0].Time.Equal(hb.HeartbeatAt) {
			t.Errorf("heartbeat event: %+v", evs[0])
		}
	})
	t.Run("a decision on a lease that changed meanwhile is refused", func(t *testing.T) {
		g := f.MustAssign("a", f.Work(2), false, T0, until)
		rel := g.L
		rel.State, rel.EndedAt = controlplane.LeaseReleased, T0.Add(time.Minute)
		if err := f.S.UpdateLease(f.Ctx, g.L, rel, controlplane.Event{Type: controlplane.EventReleased}); err != nil {
			t.Fatal(err)
		}
		abandon := g.L
		abandon.State, abandon.EndedAt = controlplane.LeaseAbandoned, T0.Add(2*time.Minute)
		WantCode(t, f.S.UpdateLease(f.Ctx, g.L, abandon, controlplane.Event{Type: controlplane.EventAbandoned}), wq.ECONFLICT)
		wantDiff(t, "lease", rel, f.Lease(g.L.ID))
		if types := f.EventTypes(controlplane.EventFilter{LeaseID: g.L.ID}); len(types) != 2 {
			t.Errorf("events after a refused update: %v", types)
		}
	})
	t.Run("a decision made as another session is refused", func(t *testing.T) {
		g := f.MustAssign("a", f.Work(3), false, T0, until)
		from, rel := g.L, g.L
		from.SessionID = "b"
		rel.State = controlplane.LeaseReleased
		WantCode(t, f.S.UpdateLease(f.Ctx, from, rel, controlplane.Event{}), wq.ECONFLICT)
		if l := f.Lease(g.L.ID); l.State != controlplane.LeaseActive {
			t.Errorf("lease: %+v", l)
		}
	})
	t.Run("a missing lease is not found", func(t *testing.T) {
		l := controlplane.Lease{ID: "nope", State: controlplane.LeaseActive, SessionID: "a"}
		WantCode(t, f.S.UpdateLease(f.Ctx, l, l, controlplane.Event{}), wq.ENOTFOUND)
	})
	t.Run("a second active lease on one work item is refused as held", func(t *testing.T) {
		w := f.Work(4)
		first := f.MustAssign("a", w, false, T0, until)
		f.MustAssign("b", w, false, until, T0.Add(time.Hour))
		expired := f.Lease(first.L.ID)
		revived := expired
		revived.State, revived.EndedAt, revived.ExpiresAt = controlplane.LeaseActive, time.Time{}, T0.Add(2*time.Hour)
		err := f.S.UpdateLease(f.Ctx, expired, revived, controlplane.Event{Type: controlplane.EventAdopted})
		WantIs(t, err, controlplane.ErrWorkHeld)
		wantDiff(t, "the expired lease", expired, f.Lease(first.L.ID))
	})
}

func reclaim(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	f.Sessions(controlplane.RoleMerger, "a", "b")
	until, later := T0.Add(10*time.Minute), T0.Add(20*time.Minute)
	reclaimEvent := controlplane.Event{Actor: "agent-b", Reason: "expired"}
	take := func(old controlplane.Lease, w *controlplane.Work, terminal bool) (Grant, error) {
		g := f.grant("b", w, terminal, later, later.Add(time.Hour))
		g.L.AdoptedFromSessionID = old.SessionID
		return g, f.S.Reclaim(f.Ctx, old, g.A, g.L, reclaimEvent, later)
	}
	t.Run("a lease past its expiry is ended as reclaimed and replaced", func(t *testing.T) {
		w := f.Work(1, func(w *controlplane.Work) { w.Kind = controlplane.KindPR })
		old := f.MustAssign("a", w, true, T0, until)
		g, err := take(old.L, w, true)
		if err != nil {
			t.Fatal(err)
		}
		if l := f.Lease(old.L.ID); l.State != controlplane.LeaseReclaimed || !l.EndedAt.Equal(later) {
			t.Errorf("the old lease: %+v", l)
		}
		wantDiff(t, "the new lease", g.L, f.Lease(g.L.ID))
		if _, err := f.S.GetAssignment(f.Ctx, g.A.ID); err != nil {
			t.Error(err)
		}
		if l, ls, k := f.Holders(w.ID, later); l != g.L.ID || ls != "b" || k != "b" {
			t.Errorf("after reclaim: lease %q of %q, lock of %q", l, ls, k)
		}
		evs := f.Events(controlplane.EventFilter{LeaseID: g.L.ID})
		if len(evs) != 1 || evs[0].Type != controlplane.EventReclaimed || evs[0].SessionID != "b" || evs[0].Actor != "agent-b" {
			t.Errorf("reclaim events: %+v", evs)
		}
		t.Run("and not twice", func(t *testing.T) {
			_, err := take(old.L, w, true)
			WantCode(t, err, wq.ECONFLICT)
		})
	})
	t.Run("a lease already marked expired is reclaimed and keeps its end", func(t *testing.T) {
		w := f.Work(2)
		old := f.MustAssign("a", w, false, T0, until)
		if _, err := f.S.ExpireLeases(f.Ctx, until); err != nil {
			t.Fatal(err)
		}
		if _, err := take(f.Lease(old.L.ID), w, false); err != nil {
			t.Fatal(err)
		}
		if l := f.Lease(old.L.ID); l.State != controlplane.LeaseReclaimed || !l.EndedAt.Equal(until) {
			t.Errorf("the old lease: %+v", l)
		}
	})
	t.Run("a live lease is not reclaimed", func(t *testing.T) {
		w := f.Work(3)
		old := f.MustAssign("a", w, false, T0, T0.Add(time.Hour))
		_, err := take(old.L, w, false)
		WantIs(t, err, controlplane.ErrWorkHeld)
		wantDiff(t, "the live lease", old.L, f.Lease(old.L.ID))
	})
	t.Run("merged work is not reclaimed, and the old lease stays as it was", func(t *testing.T) {
		w := f.Work(4)
		old := f.MustAssign("a", w, false, T0, until)
		merged := *w
		merged.State, merged.UpdatedAt = controlplane.StateMerged, T0.Add(time.Minute)
		if err := f.S.UpsertWork(f.Ctx, []controlplane.Work{merged}, T0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		_, err := take(old.L, w, false)
		WantIs(t, err, controlplane.ErrWorkTerminal)
		wantDiff(t, "the old lease", old.L, f.Lease(old.L.ID))
	})
	t.Run("a missing lease is not found", func(t *testing.T) {
		_, err := take(controlplane.Lease{ID: "nope", State: controlplane.LeaseActive, SessionID: "a"}, f.Work(5), false)
		WantCode(t, err, wq.ENOTFOUND)
	})
}

func expireLeases(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	f.Session("a", controlplane.RoleMerger)
	at := T0.Add(10 * time.Minute)
	before := f.MustAssign("a", f.Work(1), false, T0, at.Add(-time.Microsecond))
	exact := f.MustAssign("a", f.Work(2), false, T0, at)
	exactLocked := f.MustAssign("a", f.Work(3, func(w *controlplane.Work) { w.Kind = controlplane.KindPR }), true, T0, at)
	after := f.MustAssign("a", f.Work(4), false, T0, at.Add(time.Microsecond))
	expire := func(t *testing.T, now time.Time, want ...Grant) {
		t.Helper()
		got, err := f.S.ExpireLeases(f.Ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		var wantLeases []controlplane.Lease
		for _, g := range want {
			l := g.L
			// Stored times are kept to the microsecond.
			l.State, l.EndedAt = controlplane.LeaseExpired, now.Truncate(time.Microsecond)
			wantLeases = append(wantLeases, l)
		}
		wantDiff(t, fmt.Sprintf("leases expired at %s", now.Format(time.RFC3339Nano)), wantLeases, got)
	}
	t.Run("exactly the leases at or before now expire", func(t *testing.T) {
		expire(t, at.Add(-time.Nanosecond), before)
		expire(t, at, exact, exactLocked)
		expire(t, at)
		if l := f.Lease(after.L.ID); l.State != controlplane.LeaseActive {
			t.Errorf("a lease a microsecond from its expiry: %+v", l)
		}
		expire(t, at.Add(time.Microsecond), after)
	})
	t.Run("their terminal locks go with them", func(t *testing.T) {
		if l, _, k := f.Holders(exactLocked.A.WorkID, at); l != "" || k != "" {
			t.Errorf("after expiry: lease %q, lock %q", l, k)
		}
	})
	t.Run("each expiry is logged once", func(t *testing.T) {
		for _, g := range []Grant{before, exact, exactLocked, after} {
			wantDiff(t, "events of lease "+g.L.ID, []string{controlplane.EventAssigned, controlplane.EventExpired},
				f.EventTypes(controlplane.EventFilter{LeaseID: g.L.ID}))
		}
	})
}

func listLeases(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	f.Sessions(controlplane.RoleAuthor, "a", "b")
	w1, w2 := f.Work(1), f.Work(2)
	w3 := f.Work(3, func(w *controlplane.Work) { w.Repo = "o/other" })
	until := T0.Add(10 * time.Minute)
	g1 := f.MustAssign("a", w1, false, T0, until)
	g2 := f.MustAssign("b", w1, false, until, T0.Add(time.Hour)) // g1 expires
	g3 := f.MustAssign("a", w2, false, T0.Add(time.Second), T0.Add(time.Hour))
	g4 := f.MustAssign("b", w3, false, T0.Add(2*time.Second), T0.Add(time.Hour))
	for _, tc := range []struct {
		name string
		f    controlplane.LeaseFilter
		want []Grant
	}{
		{"active, newest first", controlplane.LeaseFilter{}, []Grant{g2, g4, g3}},
		{"all", controlplane.LeaseFilter{All: true}, []Grant{g2, g4, g3, g1}},
		{"of a session", controlplane.LeaseFilter{SessionID: "a", All: true}, []Grant{g3, g1}},
		{"of a work item", controlplane.LeaseFilter{WorkID: w1.ID, All: true}, []Grant{g2, g1}},
		{"of a repo", controlplane.LeaseFilter{Repo: "o/other"}, []Grant{g4}},
		{"up to a limit", controlplane.LeaseFilter{All: true, Limit: 2}, []Grant{g2, g4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls, err := f.S.ListLeases(f.Ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, l := range ls {
				got = append(got, l.ID)
			}
			for _, g := range tc.want {
				want = append(want, g.L.ID)
			}
			wantDiff(t, "leases", want, got)
		})
	}
}
