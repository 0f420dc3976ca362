package cpstoretest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/controlplane"
)

// F is a store under test with the suite's helpers.
type F struct {
	T   *testing.T
	S   controlplane.Store
	Ctx context.Context
	n   int // the last id made
}

func (f *F) id(prefix string) string {
	f.n++
	return fmt.Sprintf("%s%d", prefix, f.n)
}

// Session registers a session with the role, created at T0.
func (f *F) Session(id string, role controlplane.Role) *controlplane.Session {
	f.T.Helper()
	s := controlplane.Session{ID: id, Identity: "agent-" + id, Role: role, CreatedAt: T0, HeartbeatAt: T0}
	if err := f.S.CreateSession(f.Ctx, s); err != nil {
		f.T.Fatalf("create session %s: %v", id, err)
	}
	return &s
}

// Sessions registers sessions of one role.
func (f *F) Sessions(role controlplane.Role, ids ...string) {
	f.T.Helper()
	for _, id := range ids {
		f.Session(id, role)
	}
}

// Work adds an open issue of gitea o/r (edit changes it), updated at T0,
// and returns it as stored.
func (f *F) Work(number int64, edit ...func(*controlplane.Work)) *controlplane.Work {
	f.T.Helper()
	w := controlplane.Work{ID: fmt.Sprintf("w-%d", number), WorkKey: controlplane.WorkKey{Forge: "gitea", Repo: "o/r", Kind: controlplane.KindIssue,
		Number: number}, State: controlplane.StateOpen, Title: fmt.Sprintf("work %d", number), UpdatedAt: T0}
	for _, e := range edit {
		e(&w)
	}
	if err := f.S.UpsertWork(f.Ctx, []controlplane.Work{w}, T0); err != nil {
		f.T.Fatalf("upsert work %d: %v", number, err)
	}
	got, err := f.S.FindWork(f.Ctx, w.WorkKey)
	if err != nil {
		f.T.Fatal(err)
	}
	return got
}

// Grant is an assignment with its lease.
type Grant struct {
	A controlplane.Assignment
	L controlplane.Lease
}

// Assign assigns w to session at now under a lease until until; terminal
// takes the terminal lock with it.
func (f *F) Assign(session string, w *controlplane.Work, terminal bool, now, until time.Time) (Grant, error) {
	g := f.grant(session, w, terminal, now, until)
	return g, f.S.Assign(f.Ctx, g.A, g.L, controlplane.Event{Actor: "agent-" + session, Reason: "allocated"}, now)
}

func (f *F) grant(session string, w *controlplane.Work, terminal bool, now, until time.Time) Grant {
	a := controlplane.Assignment{ID: f.id("a"), SessionID: session, WorkID: w.ID, AllowedActions: []controlplane.Action{controlplane.ActPush,
		controlplane.ActComment}, ExpectedHeadSHA: w.HeadSHA, Terminal: terminal, CreatedAt: now}
	l := controlplane.Lease{ID: f.id("l"), WorkID: w.ID, SessionID: session, AssignmentID: a.ID, State: controlplane.LeaseActive,
		CreatedAt: now, HeartbeatAt: now, ExpiresAt: until, WorktreePath: "/wt/" + session}
	a.LeaseID = l.ID
	return Grant{A: a, L: l}
}

// MustAssign is Assign that must succeed.
func (f *F) MustAssign(session string, w *controlplane.Work, terminal bool, now, until time.Time) Grant {
	f.T.Helper()
	g, err := f.Assign(session, w, terminal, now, until)
	if err != nil {
		f.T.Fatalf("assign %s to %s: %v", w.ID, session, err)
	}
	return g
}

// Lease returns a lease as stored.
func (f *F) Lease(id string) controlplane.Lease {
	f.T.Helper()
	l, err := f.S.GetLease(f.Ctx, id)
	if err != nil {
		f.T.Fatal(err)
	}
	return *l
}

// Candidate returns the candidate of work id at now; ok is false when it
// is not a candidate.
func (f *F) Candidate(id string, now time.Time) (controlplane.Candidate, bool) {
	f.T.Helper()
	cands, err := f.S.Candidates(f.Ctx, now)
	if err != nil {
		f.T.Fatal(err)
	}
	for _, c := range cands {
		if c.ID == id {
			return c, true
		}
	}
	return controlplane.Candidate{}, false
}

// Holders returns who holds work id at now, as Candidates says.
func (f *F) Holders(id string, now time.Time) (lease, leaseSession, lockSession string) {
	f.T.Helper()
	c, ok := f.Candidate(id, now)
	if !ok {
		f.T.Fatalf("work %s is not a candidate", id)
	}
	return c.LeaseID, c.LeaseSession, c.LockSession
}

// Events returns the events that match, newest first.
func (f *F) Events(filter controlplane.EventFilter) []controlplane.Event {
	f.T.Helper()
	evs, err := f.S.ListEvents(f.Ctx, filter)
	if err != nil {
		f.T.Fatal(err)
	}
	return evs
}

// EventTypes returns the types of the events that match, oldest first.
func (f *F) EventTypes(filter controlplane.EventFilter) []string {
	f.T.Helper()
	var types []string
	evs := f.Events(filter)
	for i := len(evs) - 1; i >= 0; i-- {
		types = append(types, evs[i].Type)
	}
	return types
}
