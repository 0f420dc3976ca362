package cpstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// The open work an instance keeps between allocations is never older than
// the database: a write by another instance on the same database (an
// upsert, a revision, a state change, even a statement no method makes)
// shows in this instance's next Candidates.
func TestCandidatesSeeEveryWriteOfAnotherInstance(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		url := testdb.URL(t, kind)
		mine, theirs := testdb.ControlPlaneURL(t, url), testdb.ControlPlaneURL(t, url)
		work := func(n int64, state controlplane.State, title string, at time.Time) controlplane.Work {
			return controlplane.Work{ID: fmt.Sprint("w-", n), WorkKey: controlplane.WorkKey{Forge: "gitea", Repo: "o/r", Kind: controlplane.KindIssue, Number: n},
				State: state, Title: title, UpdatedAt: at}
		}
		titles := func() map[int64]string {
			t.Helper()
			cands, err := mine.Candidates(ctx, T0)
			if err != nil {
				t.Fatal(err)
			}
			out := map[int64]string{}
			for _, c := range cands {
				out[c.Number] = c.Title
			}
			return out
		}
		want := func(step string, w map[int64]string) {
			t.Helper()
			if got := titles(); fmt.Sprint(got) != fmt.Sprint(w) {
				t.Fatalf("%s: candidates %v, want %v", step, got, w)
			}
		}
		if err := theirs.UpsertWork(ctx, []controlplane.Work{work(1, controlplane.StateOpen, "one", T0), work(2, controlplane.StateOpen, "two", T0)}, T0); err != nil {
			t.Fatal(err)
		}
		want("first read", map[int64]string{1: "one", 2: "two"})
		want("read again, nothing written", map[int64]string{1: "one", 2: "two"})

		if err := theirs.UpsertWork(ctx, []controlplane.Work{work(3, controlplane.StateOpen, "three", T0)}, T0); err != nil {
			t.Fatal(err)
		}
		want("after another instance's upsert", map[int64]string{1: "one", 2: "two", 3: "three"})

		if err := theirs.UpsertWork(ctx, []controlplane.Work{work(2, controlplane.StateClosed, "two", T0.Add(time.Second))}, T0); err != nil {
			t.Fatal(err)
		}
		want("after another instance closed one", map[int64]string{1: "one", 3: "three"})

		if _, err := theirs.ReviseWork(ctx, work(1, "", "", T0).WorkKey, func(w *controlplane.Work) bool {
			w.Title = "one, revised"
			return true
		}, T0); err != nil {
			t.Fatal(err)
		}
		want("after another instance's revision", map[int64]string{1: "one, revised", 3: "three"})

		if err := cpstore.Exec(theirs, `UPDATE cp_work SET title = 'three, by hand' WHERE id = 'w-3'`); err != nil {
			t.Fatal(err)
		}
		want("after a statement no method makes", map[int64]string{1: "one, revised", 3: "three, by hand"})
	})
}

// One read answers for many sessions' identities; a session the store
// does not have is left out.
func TestSessionIdentitiesReadsManyAtOnce(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		s := testdb.ControlPlane(t, kind)
		for i, identity := range []string{"alice", "bob", "alice"} {
			if err := s.CreateSession(ctx, controlplane.Session{ID: fmt.Sprint("s", i), Identity: identity, Role: controlplane.RoleAuthor,
				CreatedAt: T0, HeartbeatAt: T0}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.(controlplane.IdentityReader).SessionIdentities(ctx, []string{"s0", "s1", "s2", "nobody"})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"s0": "alice", "s1": "bob", "s2": "alice"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("SessionIdentities = %v, want %v", got, want)
		}
	})
}
