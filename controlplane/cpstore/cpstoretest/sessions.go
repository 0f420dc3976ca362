package cpstoretest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
)

func sessions(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	a := controlplane.Session{ID: "a", Identity: "alice", Name: "laptop", Role: controlplane.RoleAuthor,
		Capabilities: json.RawMessage(`{"langs": ["go"], "max": 2}`), CreatedAt: T0, HeartbeatAt: T0}
	b := controlplane.Session{ID: "b", Identity: "bob", Role: controlplane.RoleReviewer, CreatedAt: T0.Add(time.Second), HeartbeatAt: T0}
	c := controlplane.Session{ID: "c", Identity: "bob", Role: controlplane.RoleMerger, CreatedAt: T0.Add(2 * time.Second), HeartbeatAt: T0}
	for _, s := range []controlplane.Session{a, b, c} {
		if err := f.S.CreateSession(f.Ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("a session reads back as registered", func(t *testing.T) {
		got, err := f.S.GetSession(f.Ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		wantDiff(t, "session", &a, got)
		_, err = f.S.GetSession(f.Ctx, "nope")
		WantCode(t, err, wq.ENOTFOUND)
		WantCode(t, f.S.CreateSession(f.Ctx, a), wq.ECONFLICT)
	})
	t.Run("sessions list newest first, of one identity, up to a limit", func(t *testing.T) {
		for _, tc := range []struct {
			identity string
			limit    int
			want     []string
		}{{"", 0, []string{"c", "b", "a"}}, {"bob", 0, []string{"c", "b"}}, {"", 2, []string{"c", "b"}}, {"carol", 0, nil}} {
			got, err := f.S.ListSessions(f.Ctx, tc.identity, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			wantDiff(t, fmt.Sprintf("sessions of %q, limit %d", tc.identity, tc.limit), tc.want, ids)
		}
	})
	t.Run("a heartbeat moves heartbeat_at", func(t *testing.T) {
		if err := f.S.HeartbeatSession(f.Ctx, "b", T0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		got, _ := f.S.GetSession(f.Ctx, "b")
		if !got.HeartbeatAt.Equal(T0.Add(time.Minute)) || got.Status(T0.Add(2*time.Minute), 5*time.Minute) != controlplane.SessionActive {
			t.Errorf("after a heartbeat: %+v", got)
		}
		WantCode(t, f.S.HeartbeatSession(f.Ctx, "nope", T0), wq.ENOTFOUND)
	})
}

func endSession(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	f.Session("m", controlplane.RoleMerger)
	f.Session("r", controlplane.RoleAuthor)
	pr := f.Work(1, func(w *controlplane.Work) { w.Kind = controlplane.KindPR })
	w2, w3 := f.Work(2), f.Work(3)
	now, until := T0, T0.Add(time.Hour)
	g1 := f.MustAssign("m", pr, true, now, until)
	g2 := f.MustAssign("m", w2, false, now, until)
	f.MustAssign("r", w3, false, now, until)

	end := T0.Add(time.Minute)
	released, err := f.S.EndSession(f.Ctx, "m", controlplane.Event{Actor: "agent-m", Reason: "done for the day"}, end)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("it returns the leases it released", func(t *testing.T) {
		want := []controlplane.Lease{g1.L, g2.L}
		for i := range want {
			want[i].State, want[i].EndedAt = controlplane.LeaseReleased, end
		}
		wantDiff(t, "released leases", want, released)
		wantDiff(t, "stored lease", want[0], f.Lease(g1.L.ID))
	})
	t.Run("the session is ended and refuses heartbeats", func(t *testing.T) {
		s, err := f.S.GetSession(f.Ctx, "m")
		if err != nil || !s.EndedAt.Equal(end) || s.Status(end, time.Hour) != controlplane.SessionEnded {
			t.Fatalf("ended session: %+v, %v", s, err)
		}
		WantCode(t, f.S.HeartbeatSession(f.Ctx, "m", end), wq.ECONFLICT)
		_, err = f.S.EndSession(f.Ctx, "m", controlplane.Event{}, end)
		WantCode(t, err, wq.ECONFLICT)
		_, err = f.S.EndSession(f.Ctx, "nope", controlplane.Event{}, end)
		WantCode(t, err, wq.ENOTFOUND)
	})
	t.Run("its work is free, terminal lock and all; other sessions' is not", func(t *testing.T) {
		for _, id := range []string{pr.ID, w2.ID} {
			if l, ls, k := f.Holders(id, end); l != "" || ls != "" || k != "" {
				t.Errorf("work %s after its session ended: lease %q of %q, lock of %q", id, l, ls, k)
			}
		}
		if _, ls, _ := f.Holders(w3.ID, end); ls != "r" {
			t.Errorf("another session's work: held by %q", ls)
		}
		f.Session("m2", controlplane.RoleMerger)
		f.MustAssign("m2", pr, true, end, until)
	})
	t.Run("one session event and a release per lease are logged", func(t *testing.T) {
		evs := f.Events(controlplane.EventFilter{SessionID: "m"})
		if len(evs) != 5 {
			t.Fatalf("events of the session: %+v", evs)
		}
		want := controlplane.Event{Time: end, Type: controlplane.EventSession, Actor: "agent-m", SessionID: "m", Reason: "done for the day"}
		evs[0].ID = 0
		wantDiff(t, "session event", want, evs[0])
		for i, l := range []controlplane.Lease{g2.L, g1.L} {
			if e := evs[1+i]; e.Type != controlplane.EventReleased || e.LeaseID != l.ID || e.WorkID != l.WorkID || e.AssignmentID != l.AssignmentID ||
				!e.Time.Equal(end) || e.Actor != "agent-m" {
				t.Errorf("release event of lease %s: %+v", l.ID, e)
			}
		}
	})
}
