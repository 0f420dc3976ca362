package cpstoretest

import (
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/controlplane"
)

// counts: the sizes metrics report (controlplane.Counter).
func counts(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	counter, ok := f.S.(controlplane.Counter)
	if !ok {
		t.Fatalf("%T does not count (controlplane.Counter)", f.S)
	}
	f.Session("m", controlplane.RoleMerger)
	f.Session("r", controlplane.RoleAuthor)
	f.Session("idle", controlplane.RoleAuthor)
	now, until := T0, T0.Add(time.Hour)
	f.MustAssign("m", f.Work(1), false, now, until)
	f.MustAssign("m", f.Work(2), false, now, until)
	f.MustAssign("r", f.Work(3), false, now, until)
	if _, err := f.S.EndSession(f.Ctx, "m", controlplane.Event{Actor: "agent-m"}, T0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err := counter.Count(f.Ctx, T0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := controlplane.Counts{ActiveSessions: 2, LeasesByState: map[string]int64{"active": 1, "released": 2}}
	wantDiff(t, "counts", want, got)
}
