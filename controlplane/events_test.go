package controlplane_test

import (
	"testing"

	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

func TestEventsShowACallerOnlyItsOwnSessions(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1), openIssue(2))
		alice, as := w.session("alice", cp.RoleAuthor)
		bob, bs := w.session("bob", cp.RoleAuthor)
		w.assign(alice, as)
		w.assign(bob, bs)

		sessionsOf := func(events []cp.Event) map[string]bool {
			out := map[string]bool{}
			for _, e := range events {
				out[e.SessionID] = true
			}
			return out
		}
		mine, err := w.svc.Events(w.ctx, alice, cp.EventFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if got := sessionsOf(mine); !got[as] || got[bs] || len(got) != 1 {
			t.Errorf("alice sees events of sessions %v, want only her own %s", got, as)
		}
		all, err := w.svc.Events(w.ctx, cp.Caller{Identity: "root", Admin: true}, cp.EventFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if got := sessionsOf(all); !got[as] || !got[bs] {
			t.Errorf("an admin sees events of sessions %v, want both %s and %s", got, as, bs)
		}
		if _, err := w.svc.Events(w.ctx, alice, cp.EventFilter{SessionID: bs}); err == nil {
			t.Error("alice read the events of bob's session by its id")
		}
	})
}
