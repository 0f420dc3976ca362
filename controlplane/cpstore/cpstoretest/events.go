package cpstoretest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
)

func events(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	evs := []controlplane.Event{
		{Time: T0, Type: controlplane.EventRefused, Actor: "alice", SessionID: "s1", WorkID: "w1", Reason: "head_moved",
			Detail: json.RawMessage(`{"live_head": "abc", "pinned": "def"}`)},
		{Time: T0.Add(time.Second), Type: controlplane.EventHeartbeat, Actor: "alice", SessionID: "s1", WorkID: "w1", LeaseID: "l1"},
		{Time: T0.Add(2 * time.Second), Type: controlplane.EventRefused, Actor: "bob", SessionID: "s2", WorkID: "w1", Reason: "not_owner"},
	}
	for _, e := range evs {
		if err := f.S.AppendEvent(f.Ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("events read back newest first with increasing ids", func(t *testing.T) {
		got := f.Events(controlplane.EventFilter{})
		if len(got) != 3 || !(got[0].ID > got[1].ID && got[1].ID > got[2].ID) {
			t.Fatalf("events: %+v", got)
		}
		for i := range got {
			got[i].ID = 0
		}
		wantDiff(t, "events", []controlplane.Event{evs[2], evs[1], evs[0]}, got)
	})
	t.Run("events filter by session, work and lease, up to a limit", func(t *testing.T) {
		for _, tc := range []struct {
			f    controlplane.EventFilter
			want []string
		}{
			{controlplane.EventFilter{SessionID: "s1"}, []string{controlplane.EventRefused, controlplane.EventHeartbeat}},
			{controlplane.EventFilter{WorkID: "w1", Limit: 2}, []string{controlplane.EventHeartbeat, controlplane.EventRefused}},
			{controlplane.EventFilter{LeaseID: "l1"}, []string{controlplane.EventHeartbeat}},
			{controlplane.EventFilter{SessionID: "s2", WorkID: "w1"}, []string{controlplane.EventRefused}},
			{controlplane.EventFilter{SessionID: "nobody"}, nil},
		} {
			wantDiff(t, fmt.Sprintf("events of %+v", tc.f), tc.want, f.EventTypes(tc.f))
		}
	})
	t.Run("a detail that is not JSON is refused", func(t *testing.T) {
		WantCode(t, f.S.AppendEvent(f.Ctx, controlplane.Event{Time: T0, Type: "x", Detail: json.RawMessage(`{nope`)}), wq.EINVALID)
	})
}
