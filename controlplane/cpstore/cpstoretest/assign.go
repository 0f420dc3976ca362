package cpstoretest

import (
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
)

func assign(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	f.Sessions(controlplane.RoleAuthor, "a", "b")
	until := T0.Add(10 * time.Minute)
	t.Run("an assignment and its lease are written with an event", func(t *testing.T) {
		w := f.Work(1, func(w *controlplane.Work) { w.HeadSHA = "abc" })
		g := f.MustAssign("a", w, false, T0, until)
		a, err := f.S.GetAssignment(f.Ctx, g.A.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantDiff(t, "assignment", &g.A, a)
		wantDiff(t, "lease", g.L, f.Lease(g.L.ID))
		_, err = f.S.GetAssignment(f.Ctx, "nope")
		WantCode(t, err, wq.ENOTFOUND)
		_, err = f.S.GetLease(f.Ctx, "nope")
		WantCode(t, err, wq.ENOTFOUND)
		evs := f.Events(controlplane.EventFilter{LeaseID: g.L.ID})
		want := []controlplane.Event{{Time: T0, Type: controlplane.EventAssigned, Actor: "agent-a", SessionID: "a", WorkID: w.ID,
			LeaseID: g.L.ID, AssignmentID: g.A.ID, Reason: "allocated"}}
		if len(evs) == 1 {
			evs[0].ID = 0
		}
		wantDiff(t, "events", want, evs)
	})
	t.Run("merged or closed work is refused, and nothing is written", func(t *testing.T) {
		for i, st := range []controlplane.State{controlplane.StateMerged, controlplane.StateClosed} {
			w := f.Work(int64(10+i), func(w *controlplane.Work) { w.State = st })
			g, err := f.Assign("a", w, false, T0, until)
			wantRefused(t, f, err, controlplane.ErrWorkTerminal, g)
			if evs := f.Events(controlplane.EventFilter{WorkID: w.ID}); len(evs) != 0 {
				t.Errorf("events of refused work: %+v", evs)
			}
		}
	})
	t.Run("work held by a live lease is refused, to every session, and nothing is written", func(t *testing.T) {
		w := f.Work(20)
		first := f.MustAssign("a", w, false, T0, until)
		for _, s := range []string{"b", "a"} {
			g, err := f.Assign(s, w, false, T0.Add(time.Minute), T0.Add(time.Hour))
			wantRefused(t, f, err, controlplane.ErrWorkHeld, g)
		}
		if types := f.EventTypes(controlplane.EventFilter{WorkID: w.ID}); len(types) != 1 {
			t.Errorf("events of held work: %v", types)
		}
		if l := f.Lease(first.L.ID); l.State != controlplane.LeaseActive {
			t.Errorf("the holder's lease: %+v", l)
		}
	})
	t.Run("a lease one nanosecond short of its expiry still holds", func(t *testing.T) {
		w := f.Work(30)
		first := f.MustAssign("a", w, false, T0, until)
		_, err := f.Assign("b", w, false, until.Add(-time.Nanosecond), T0.Add(time.Hour))
		WantIs(t, err, controlplane.ErrWorkHeld)
		if l := f.Lease(first.L.ID); l.State != controlplane.LeaseActive {
			t.Errorf("lease before its expiry: %+v", l)
		}
	})
	t.Run("work whose only lease reached its expiry is assigned, and that lease is marked expired", func(t *testing.T) {
		w := f.Work(40)
		first := f.MustAssign("a", w, false, T0, until)
		second := f.MustAssign("b", w, false, until, T0.Add(time.Hour))
		old := f.Lease(first.L.ID)
		if old.State != controlplane.LeaseExpired || !old.EndedAt.Equal(until) {
			t.Errorf("the lease that expired: %+v", old)
		}
		if _, ls, _ := f.Holders(w.ID, until); ls != "b" {
			t.Errorf("work held by %q, want b", ls)
		}
		wantDiff(t, "events", []string{controlplane.EventAssigned, controlplane.EventExpired, controlplane.EventAssigned},
			f.EventTypes(controlplane.EventFilter{WorkID: w.ID}))
		if evs := f.Events(controlplane.EventFilter{LeaseID: first.L.ID}); evs[0].Type != controlplane.EventExpired ||
			evs[0].SessionID != "a" || evs[0].Actor != "system" || !evs[0].Time.Equal(until) {
			t.Errorf("expiry event: %+v", evs[0])
		}
		_ = second
	})
	t.Run("an ended session is refused, and nothing is written", func(t *testing.T) {
		f.Session("gone", controlplane.RoleAuthor)
		if _, err := f.S.EndSession(f.Ctx, "gone", controlplane.Event{}, T0); err != nil {
			t.Fatal(err)
		}
		g, err := f.Assign("gone", f.Work(45), false, T0, until)
		wantRefused(t, f, err, nil, g)
	})
	t.Run("missing work, missing sessions and mismatched rows are refused", func(t *testing.T) {
		_, err := f.Assign("a", &controlplane.Work{ID: "nope"}, false, T0, until)
		WantCode(t, err, wq.ENOTFOUND)
		_, err = f.Assign("nobody", f.Work(50), false, T0, until)
		WantCode(t, err, wq.ENOTFOUND)
		g := f.grant("a", f.Work(51), false, T0, until)
		g.L.SessionID = "b"
		WantCode(t, f.S.Assign(f.Ctx, g.A, g.L, controlplane.Event{}, T0), wq.EINVALID)
		g = f.grant("a", f.Work(52), false, T0, T0)
		WantCode(t, f.S.Assign(f.Ctx, g.A, g.L, controlplane.Event{}, T0), wq.EINVALID)
	})
}

func terminalLock(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	f.Sessions(controlplane.RoleMerger, "m1", "m2")
	until := T0.Add(10 * time.Minute)
	pr := func(n int64) *controlplane.Work {
		return f.Work(n, func(w *controlplane.Work) { w.Kind = controlplane.KindPR })
	}
	t.Run("a terminal assignment's lock holds the work against other sessions", func(t *testing.T) {
		w := pr(1)
		f.MustAssign("m1", w, true, T0, until)
		if _, _, k := f.Holders(w.ID, T0); k != "m1" {
			t.Errorf("lock held by %q", k)
		}
		_, err := f.Assign("m2", w, true, T0.Add(time.Minute), T0.Add(time.Hour))
		WantIs(t, err, controlplane.ErrWorkHeld)
	})
	t.Run("the lock goes when its lease is released", func(t *testing.T) {
		w := pr(2)
		g := f.MustAssign("m1", w, true, T0, until)
		rel := g.L
		rel.State, rel.EndedAt = controlplane.LeaseReleased, T0.Add(time.Minute)
		if err := f.S.UpdateLease(f.Ctx, g.L, rel, controlplane.Event{Type: controlplane.EventReleased, Actor: "agent-m1", Time: rel.EndedAt}); err != nil {
			t.Fatal(err)
		}
		if l, _, k := f.Holders(w.ID, rel.EndedAt); l != "" || k != "" {
			t.Errorf("after release: lease %q, lock %q", l, k)
		}
		f.MustAssign("m2", w, true, rel.EndedAt, T0.Add(time.Hour))
	})
	t.Run("the lock goes when its lease expires", func(t *testing.T) {
		w := pr(3)
		f.MustAssign("m1", w, true, T0, until)
		if _, err := f.S.ExpireLeases(f.Ctx, until); err != nil {
			t.Fatal(err)
		}
		if l, _, k := f.Holders(w.ID, until); l != "" || k != "" {
			t.Errorf("after expiry: lease %q, lock %q", l, k)
		}
		f.MustAssign("m2", w, false, until, T0.Add(time.Hour))
		if _, _, k := f.Holders(w.ID, until); k != "" {
			t.Errorf("a non-terminal assignment holds a lock of %q", k)
		}
	})
	t.Run("the lock follows its lease to the session that adopts it", func(t *testing.T) {
		w := pr(4)
		g := f.MustAssign("m1", w, true, T0, until)
		adopted := g.L
		adopted.SessionID, adopted.AdoptedFromSessionID, adopted.AdoptedBySessionID = "m2", "m1", "m2"
		if err := f.S.UpdateLease(f.Ctx, g.L, adopted, controlplane.Event{Type: controlplane.EventAdopted, Actor: "agent-m2", Time: T0}); err != nil {
			t.Fatal(err)
		}
		if _, ls, k := f.Holders(w.ID, T0); ls != "m2" || k != "m2" {
			t.Errorf("after adoption: lease of %q, lock of %q", ls, k)
		}
	})
}
