// Package cpstoretest is the conformance suite of controlplane.Store.
// Every implementation runs it: controlplane/cpstore on SQLite and on
// PostgreSQL. Time is driven from a fixed T0; nothing sleeps.
package cpstoretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
)

// T0 is the suite's fixed "now"; tests move time from it explicitly.
var T0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// Run runs the suite; open returns a new, empty store for each test.
func Run(t *testing.T, open func(t *testing.T) controlplane.Store) {
	for _, area := range []struct {
		name string
		run  func(t *testing.T, open func(t *testing.T) *F)
	}{
		{"sessions", sessions},
		{"end session", endSession},
		{"counts", counts},
		{"upsert work", upsertWork},
		{"list work", listWork},
		{"candidates", candidates},
		{"assign", assign},
		{"terminal lock", terminalLock},
		{"update lease", updateLease},
		{"reclaim", reclaim},
		{"expire leases", expireLeases},
		{"list leases", listLeases},
		{"events", events},
		{"checkpoints", checkpoints},
	} {
		t.Run(area.name, func(t *testing.T) {
			area.run(t, func(t *testing.T) *F { return &F{T: t, S: open(t), Ctx: context.Background()} })
		})
	}
}

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

// WantCode fails unless err carries code.
func WantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := wq.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

// WantIs fails unless errors.Is(err, target).
func WantIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

// Diff compares stored values: times by instant, JSON by meaning (a
// database may reformat a document).
func Diff(want, got any) string {
	return cmp.Diff(want, got, cmp.Comparer(func(a, b json.RawMessage) bool {
		if len(a) == 0 || len(b) == 0 {
			return len(a) == len(b)
		}
		var x, y any
		return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
	}))
}

// wantRefused fails unless err is target (or, for a nil target, carries
// ECONFLICT) and g's assignment and lease were not written.
func wantRefused(t *testing.T, f *F, err, target error, g Grant) {
	t.Helper()
	if target != nil {
		WantIs(t, err, target)
	}
	WantCode(t, err, wq.ECONFLICT)
	_, err = f.S.GetAssignment(f.Ctx, g.A.ID)
	WantCode(t, err, wq.ENOTFOUND)
	_, err = f.S.GetLease(f.Ctx, g.L.ID)
	WantCode(t, err, wq.ENOTFOUND)
}

func wantDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

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

func upsertWork(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	key := controlplane.WorkKey{Forge: "gitea", Repo: "o/r", Kind: controlplane.KindPR, Number: 7}
	w := controlplane.Work{ID: "w-7", WorkKey: key, State: controlplane.StateOpen, Title: "Add a thing", Labels: []string{"bug", "p1"},
		Author: "alice", HeadSHA: "h1", ReviewState: controlplane.ReviewNone, Mergeable: true, LinkedIssues: []int64{3, 4},
		UpdatedAt: T0}
	upsert := func(t *testing.T, w controlplane.Work, now time.Time) {
		t.Helper()
		if err := f.S.UpsertWork(f.Ctx, []controlplane.Work{w}, now); err != nil {
			t.Fatal(err)
		}
	}
	get := func(t *testing.T) *controlplane.Work {
		t.Helper()
		got, err := f.S.GetWork(f.Ctx, "w-7")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	upsert(t, w, T0.Add(time.Second))
	t.Run("new work reads back with synced_at now, by id and by key", func(t *testing.T) {
		want := w
		want.SyncedAt = T0.Add(time.Second)
		wantDiff(t, "work", &want, get(t))
		found, err := f.S.FindWork(f.Ctx, key)
		if err != nil || found.ID != "w-7" {
			t.Errorf("FindWork = %+v, %v", found, err)
		}
		_, err = f.S.GetWork(f.Ctx, "nope")
		WantCode(t, err, wq.ENOTFOUND)
		_, err = f.S.FindWork(f.Ctx, controlplane.WorkKey{Forge: "gitea", Repo: "o/r", Kind: controlplane.KindIssue, Number: 7})
		WantCode(t, err, wq.ENOTFOUND)
	})
	t.Run("a newer update changes the row and keeps its id", func(t *testing.T) {
		newer := w
		newer.ID, newer.State, newer.Title, newer.Labels, newer.HeadSHA = "other", controlplane.StateClosed, "Renamed", nil, "h2"
		newer.UpdatedAt = T0.Add(time.Hour)
		upsert(t, newer, T0.Add(2*time.Hour))
		want := newer
		want.ID, want.SyncedAt = "w-7", T0.Add(2*time.Hour)
		wantDiff(t, "updated work", &want, get(t))
		_, err := f.S.GetWork(f.Ctx, "other")
		WantCode(t, err, wq.ENOTFOUND)
	})
	t.Run("an older update never moves the state back", func(t *testing.T) {
		before := get(t)
		older := w
		older.UpdatedAt = T0.Add(30 * time.Minute)
		upsert(t, older, T0.Add(3*time.Hour))
		wantDiff(t, "work after a late webhook", before, get(t))
	})
	t.Run("an update as new as the stored one applies", func(t *testing.T) {
		same := *get(t)
		same.Mergeable, same.ReviewState = false, controlplane.ReviewApproved
		upsert(t, same, T0.Add(4*time.Hour))
		if got := get(t); got.Mergeable || got.ReviewState != controlplane.ReviewApproved || !got.SyncedAt.Equal(T0.Add(4*time.Hour)) {
			t.Errorf("after an update of the same time: %+v", got)
		}
	})
	t.Run("a sync that does not know the author session keeps it", func(t *testing.T) {
		cur := *get(t)
		cur.AuthorSession, cur.UpdatedAt = "s1", cur.UpdatedAt.Add(time.Minute)
		upsert(t, cur, T0.Add(5*time.Hour))
		cur.AuthorSession, cur.UpdatedAt = "", cur.UpdatedAt.Add(time.Minute)
		upsert(t, cur, T0.Add(5*time.Hour))
		if got := get(t); got.AuthorSession != "s1" || !got.UpdatedAt.Equal(cur.UpdatedAt) {
			t.Errorf("author session after a sync: %+v", got)
		}
	})
	t.Run("one key twice in a batch is written as one update after the other", func(t *testing.T) {
		key := controlplane.WorkKey{Forge: "gitea", Repo: "o/r", Kind: controlplane.KindIssue, Number: 70}
		newer := controlplane.Work{ID: "w-70", WorkKey: key, State: controlplane.StateClosed, Title: "closed", AuthorSession: "s1", UpdatedAt: T0.Add(time.Hour)}
		older := controlplane.Work{ID: "w-70b", WorkKey: key, State: controlplane.StateOpen, Title: "open", UpdatedAt: T0}
		same := newer
		same.ID, same.Title, same.AuthorSession = "w-70c", "closed, renamed", ""
		if err := f.S.UpsertWork(f.Ctx, []controlplane.Work{newer, older, same}, T0.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, err := f.S.FindWork(f.Ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		want := same
		want.ID, want.AuthorSession, want.SyncedAt = "w-70", "s1", T0.Add(2*time.Hour)
		wantDiff(t, "work", &want, got)
	})
	t.Run("a batch larger than one statement's is written whole", func(t *testing.T) {
		var ws []controlplane.Work
		for i := range 1234 {
			ws = append(ws, controlplane.Work{WorkKey: controlplane.WorkKey{Forge: "gitea", Repo: "o/big", Kind: controlplane.KindIssue,
				Number: int64(i + 1)}, State: controlplane.StateOpen, UpdatedAt: T0})
		}
		if err := f.S.UpsertWork(f.Ctx, ws, T0); err != nil {
			t.Fatal(err)
		}
		cands, err := f.S.Candidates(f.Ctx, T0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range cands {
			if c.Repo == "o/big" {
				n++
				if c.ID == "" {
					t.Fatalf("work without an id: %+v", c)
				}
			}
		}
		if n != len(ws) {
			t.Errorf("%d of %d work items written", n, len(ws))
		}
	})
	t.Run("only issues and pull requests are work, and a refused batch writes nothing", func(t *testing.T) {
		ok := controlplane.Work{ID: "w-8", WorkKey: controlplane.WorkKey{Forge: "gitea", Repo: "o/r", Kind: controlplane.KindIssue, Number: 8},
			State: controlplane.StateOpen, UpdatedAt: T0}
		incident := ok
		incident.ID, incident.Kind, incident.Number = "w-9", "incident", 9
		WantCode(t, f.S.UpsertWork(f.Ctx, []controlplane.Work{ok, incident}, T0), wq.EINVALID)
		_, err := f.S.GetWork(f.Ctx, "w-8")
		WantCode(t, err, wq.ENOTFOUND)
		undated := ok
		undated.UpdatedAt = time.Time{}
		WantCode(t, f.S.UpsertWork(f.Ctx, []controlplane.Work{undated}, T0), wq.EINVALID)
	})
}

func listWork(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	var all []controlplane.Work
	for _, k := range []struct {
		forge, repo string
		kind        controlplane.Kind
		number      int64
		state       controlplane.State
	}{
		{"gitea", "o/b", controlplane.KindPR, 2, controlplane.StateOpen},
		{"gitea", "o/a", controlplane.KindIssue, 10, controlplane.StateOpen},
		{"gitea", "o/a", controlplane.KindIssue, 9, controlplane.StateClosed},
		{"gitlab", "g/a", controlplane.KindIssue, 1, controlplane.StateOpen},
		{"gitea", "o/a", controlplane.KindPR, 1, controlplane.StateMerged},
	} {
		all = append(all, controlplane.Work{ID: fmt.Sprintf("%s-%s-%s-%d", k.forge, k.repo, k.kind, k.number),
			WorkKey: controlplane.WorkKey{Forge: k.forge, Repo: k.repo, Kind: k.kind, Number: k.number}, State: k.state, UpdatedAt: T0})
	}
	if err := f.S.UpsertWork(f.Ctx, all, T0); err != nil {
		t.Fatal(err)
	}
	ids := func(t *testing.T, wf controlplane.WorkFilter) []string {
		t.Helper()
		ws, err := f.S.ListWork(f.Ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, w := range ws {
			out = append(out, w.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    controlplane.WorkFilter
		want []string
	}{
		{"all, in key order", controlplane.WorkFilter{}, []string{"gitea-o/a-issue-9", "gitea-o/a-issue-10", "gitea-o/a-pr-1", "gitea-o/b-pr-2", "gitlab-g/a-issue-1"}},
		{"of a forge", controlplane.WorkFilter{Forge: "gitlab"}, []string{"gitlab-g/a-issue-1"}},
		{"of a repo", controlplane.WorkFilter{Repo: "o/b"}, []string{"gitea-o/b-pr-2"}},
		{"of a kind", controlplane.WorkFilter{Kind: controlplane.KindPR}, []string{"gitea-o/a-pr-1", "gitea-o/b-pr-2"}},
		{"in a state", controlplane.WorkFilter{State: controlplane.StateOpen}, []string{"gitea-o/a-issue-10", "gitea-o/b-pr-2", "gitlab-g/a-issue-1"}},
		{"a first page", controlplane.WorkFilter{Limit: 2}, []string{"gitea-o/a-issue-9", "gitea-o/a-issue-10"}},
		{"the page after a cursor", controlplane.WorkFilter{Limit: 2, After: "gitea-o/a-issue-10"}, []string{"gitea-o/a-pr-1", "gitea-o/b-pr-2"}},
		{"a cursor and a filter", controlplane.WorkFilter{State: controlplane.StateOpen, After: "gitea-o/a-issue-9"}, []string{"gitea-o/a-issue-10", "gitea-o/b-pr-2", "gitlab-g/a-issue-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantDiff(t, "work", tc.want, ids(t, tc.f)) })
	}
}

func candidates(t *testing.T, open func(t *testing.T) *F) {
	f := open(t)
	f.Session("a", controlplane.RoleAuthor)
	f.Session("m", controlplane.RoleMerger)
	free := f.Work(1, func(w *controlplane.Work) { w.Labels, w.LinkedIssues, w.Author = []string{"p1"}, []int64{5}, "alice" })
	held := f.Work(2)
	merging := f.Work(3, func(w *controlplane.Work) {
		w.Kind, w.HeadSHA, w.ReviewState, w.Mergeable = controlplane.KindPR, "abc", controlplane.ReviewApproved, true
	})
	f.Work(4, func(w *controlplane.Work) { w.State = controlplane.StateClosed })
	lapsing := f.Work(5)
	lapsingMerge := f.Work(6, func(w *controlplane.Work) { w.Kind = controlplane.KindPR })
	hour, ten := T0.Add(time.Hour), T0.Add(10*time.Minute)
	gHeld := f.MustAssign("a", held, false, T0, hour)
	gMerging := f.MustAssign("m", merging, true, T0, hour)
	gLapsing := f.MustAssign("a", lapsing, false, T0, ten)
	gLapsingMerge := f.MustAssign("m", lapsingMerge, true, T0, ten)

	check := func(t *testing.T, now time.Time, want []controlplane.Candidate) {
		t.Helper()
		got, err := f.S.Candidates(f.Ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		wantDiff(t, "candidates", want, got)
	}
	cand := func(w *controlplane.Work, g *Grant, lock string) controlplane.Candidate {
		c := controlplane.Candidate{Work: *w, LockSession: lock}
		if g != nil {
			c.LeaseID, c.LeaseSession = g.L.ID, g.L.SessionID
		}
		return c
	}
	t.Run("open work, in key order, with its live lease and terminal lock", func(t *testing.T) {
		check(t, T0.Add(5*time.Minute), []controlplane.Candidate{cand(free, nil, ""), cand(held, &gHeld, ""), cand(lapsing, &gLapsing, ""),
			cand(merging, &gMerging, "m"), cand(lapsingMerge, &gLapsingMerge, "m")})
	})
	t.Run("a lease past its expiry holds nothing, though not yet marked expired", func(t *testing.T) {
		check(t, ten, []controlplane.Candidate{cand(free, nil, ""), cand(held, &gHeld, ""), cand(lapsing, nil, ""),
			cand(merging, &gMerging, "m"), cand(lapsingMerge, nil, "")})
		if l := f.Lease(gLapsingMerge.L.ID); l.State != controlplane.LeaseActive {
			t.Errorf("Candidates wrote: lease %+v", l)
		}
	})
}

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
