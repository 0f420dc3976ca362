package cpstoretest

import (
	"fmt"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
)

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
		c := controlplane.Candidate{Work: w, LockSession: lock}
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
