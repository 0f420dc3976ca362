package controlplane_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	wqforge "github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testforge"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// world is a Service on a real database with a clock the test moves.
type world struct {
	t     *testing.T
	ctx   context.Context
	clock *clockwork.FakeClock
	svc   *cp.Service
}

func newWorld(t *testing.T, kind string) *world {
	clock := clockwork.NewFakeClockAt(now)
	return &world{t: t, ctx: context.Background(), clock: clock,
		svc: &cp.Service{Store: testdb.ControlPlane(t, kind), Clock: clock, LeaseTTL: 10 * time.Minute, SessionTTL: time.Hour}}
}

func (w *world) work(items ...cp.Work) {
	w.t.Helper()
	if err := w.svc.Store.UpsertWork(w.ctx, items, w.clock.Now()); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) session(who string, role cp.Role) (cp.Caller, string) {
	w.t.Helper()
	c := cp.Caller{Identity: who}
	s, err := w.svc.RegisterSession(w.ctx, c, role, who, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	return c, s.ID
}

func (w *world) assign(c cp.Caller, session string) *cp.Allocation {
	w.t.Helper()
	a, err := w.svc.Allocate(w.ctx, c, session, "", true)
	if err != nil || a.Outcome != cp.OutcomeAssigned {
		w.t.Fatalf("allocate: %+v, %v", a, err)
	}
	return a
}

// countEvents counts the logged events of one type among those the filter selects.
func (w *world) countEvents(f cp.EventFilter, typ string) int {
	w.t.Helper()
	events, err := w.svc.Store.ListEvents(w.ctx, f)
	if err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func openIssue(n int64) cp.Work {
	return cp.Work{ID: "issue-" + string(rune('0'+n)), WorkKey: cp.WorkKey{Forge: "f", Repo: "o/r", Kind: cp.KindIssue, Number: n},
		State: cp.StateOpen, Title: "t", UpdatedAt: now}
}

func openPR(n int64, head string) cp.Work {
	w := openIssue(n)
	w.ID, w.Kind, w.HeadSHA, w.ReviewState = "pr-"+string(rune('0'+n)), cp.KindPR, head, cp.ReviewChangesRequested
	return w
}

func reasonOf(err error) string {
	var e *wq.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func TestADryRunWritesNothing(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1), openIssue(2))
		c, s := w.session("alice", cp.RoleAuthor)
		eventsBefore, _ := w.svc.Store.ListEvents(w.ctx, cp.EventFilter{Limit: 500})
		a, err := w.svc.Allocate(w.ctx, c, s, "", false)
		if err != nil || a.Outcome != cp.OutcomePreview || a.Work == nil || a.Lease != nil || len(a.Candidates) != 1 {
			t.Fatalf("dry run: %+v, %v", a, err)
		}
		leases, _ := w.svc.Store.ListLeases(w.ctx, cp.LeaseFilter{All: true})
		events, _ := w.svc.Store.ListEvents(w.ctx, cp.EventFilter{Limit: 500})
		if len(leases) != 0 || len(events) != len(eventsBefore) {
			t.Errorf("a dry run wrote %d leases and %d events", len(leases), len(events)-len(eventsBefore))
		}
	})
}

// #601 hard rule 2: a live foreign lease is never stolen, through any verb.
func TestALiveForeignLeaseCannotBeStolen(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1))
		alice, as := w.session("alice", cp.RoleAuthor)
		bob, bs := w.session("bob", cp.RoleAuthor)
		lease := w.assign(alice, as).Lease.ID
		if _, err := w.svc.AdoptLease(w.ctx, bob, lease, bs, "/tmp/wt", ""); reasonOf(err) != cp.RefuseWaitForeignActive {
			t.Errorf("adopt: %v, want %s", err, cp.RefuseWaitForeignActive)
		}
		if _, err := w.svc.ReclaimLease(w.ctx, bob, lease, bs); reasonOf(err) != cp.RefuseWaitForeignActive {
			t.Errorf("reclaim: %v, want %s", err, cp.RefuseWaitForeignActive)
		}
		if _, err := w.svc.ReleaseLease(w.ctx, bob, lease, bs); reasonOf(err) != cp.RefuseNotOwner {
			t.Errorf("release: %v, want %s", err, cp.RefuseNotOwner)
		}
		if _, err := w.svc.HeartbeatLease(w.ctx, bob, lease, bs, ""); reasonOf(err) != cp.RefuseNotOwner {
			t.Errorf("heartbeat: %v, want %s", err, cp.RefuseNotOwner)
		}
		if v, err := w.svc.InspectLease(w.ctx, bob, lease, bs); wq.ErrorCode(err) != wq.ENOTFOUND {
			t.Errorf("bob inspected alice's lease: %+v, %v, want not found", v, err)
		}
		if v, err := w.svc.InspectLease(w.ctx, cp.Caller{Identity: "ops", Admin: true}, lease, ""); err != nil || v.SessionID != as {
			t.Errorf("an admin inspects any lease: %+v, %v", v, err)
		}
		if _, err := w.svc.Session(w.ctx, bob, as); wq.ErrorCode(err) != wq.ENOTFOUND {
			t.Errorf("bob read alice's session: %v", err)
		}
	})
}

// #601 hard rule 4: adopt and reclaim record where the lease came from.
// Another session of the holder's identity adopts only once the holder
// went quiet; the head it reports is recorded as a claim, never pinned.
func TestAdoptAndReclaimRecordProvenance(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1), openIssue(2))
		alice, first := w.session("alice", cp.RoleAuthor)
		lease := w.assign(alice, first).Lease.ID
		_, second := w.session("alice", cp.RoleAuthor)
		if _, err := w.svc.AdoptLease(w.ctx, alice, lease, second, "/work/alice", ""); reasonOf(err) != cp.RefuseWaitForeignActive {
			t.Fatalf("a sibling session adopting a live holder's lease: %v", err)
		}
		if _, err := w.svc.AdoptLease(w.ctx, alice, lease, second, "/work/alice", "abc123"); wq.ErrorCode(err) != wq.EINVALID {
			t.Fatalf("a head that is not a commit id: %v", err)
		}
		// Alice's first process dies: its session and lease go quiet for
		// the session TTL (an hour here), and the lease's own TTL is 10m,
		// so the sibling keeps heartbeating itself meanwhile.
		for range 7 {
			w.clock.Advance(9 * time.Minute)
			if _, err := w.svc.HeartbeatSession(w.ctx, alice, second); err != nil {
				t.Fatal(err)
			}
		}
		const head = "0123456789abcdef0123456789abcdef01234567"
		v, err := w.svc.AdoptLease(w.ctx, alice, lease, second, "/work/alice", head)
		if err != nil {
			t.Fatal(err)
		}
		if v.SessionID != second || v.AdoptedFromSessionID != first || v.AdoptedBySessionID != second ||
			v.WorktreePath != "/work/alice" || v.HeadSHA != "" || v.WorkID == "" || !v.Freshness.Live {
			t.Errorf("after adopt: %+v", v)
		}
		events, _ := w.svc.Store.ListEvents(w.ctx, cp.EventFilter{LeaseID: lease, Limit: 10})
		if len(events) == 0 || events[0].Type != cp.EventAdopted || !strings.Contains(string(events[0].Detail), head) {
			t.Errorf("the adoption's event does not record the reported head: %+v", events)
		}
		// Bob reclaims the lease once it expired.
		bob, bs := w.session("bob", cp.RoleAuthor)
		w.clock.Advance(11 * time.Minute)
		a, err := w.svc.ReclaimLease(w.ctx, bob, lease, bs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.svc.Store.GetLease(w.ctx, a.Lease.ID)
		if err != nil || got.SessionID != bs || got.AdoptedFromSessionID != second || got.AdoptedBySessionID != bs || got.WorkID != v.WorkID {
			t.Errorf("after reclaim: %+v, %v", got, err)
		}
		old, _ := w.svc.Store.GetLease(w.ctx, lease)
		if old.State != cp.LeaseReclaimed {
			t.Errorf("the reclaimed lease is %s", old.State)
		}
	})
}

// #601 hard rule 3 through the service: without the proof, nothing ends.
func TestAbandonWithoutProofLeavesTheLease(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1))
		alice, as := w.session("alice", cp.RoleAuthor)
		lease := w.assign(alice, as).Lease.ID
		if _, err := w.svc.AbandonLease(w.ctx, alice, lease, as, cp.AbandonProof{DeadProcess: true}); reasonOf(err) != cp.RefuseProof {
			t.Fatalf("abandon without no_live_mutation_risk: %v", err)
		}
		if l, _ := w.svc.Store.GetLease(w.ctx, lease); l.State != cp.LeaseActive {
			t.Fatalf("the lease is %s", l.State)
		}
		v, err := w.svc.AbandonLease(w.ctx, alice, lease, as, cp.AbandonProof{DeadProcess: true, NoLiveMutationRisk: true})
		if err != nil || v.State != cp.LeaseAbandoned {
			t.Fatalf("abandon with proof: %+v, %v", v, err)
		}
	})
}

// Hard rules 3 and 4 at the gate: the work's inventory state, fed by
// webhooks, refuses a held assignment once the work ended or its head
// moved; the owner's own declared push does not.
func TestTheGateFollowsTheInventory(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		pr := openPR(1, "h1")
		pr.AuthorSession = "" // set below
		alice, as := w.session("alice", cp.RoleAuthor)
		pr.AuthorSession = as
		w.work(pr)
		a := w.assign(alice, as)
		gate := func() cp.Decision {
			t.Helper()
			d, err := w.svc.Gate(w.ctx, alice, as, a.Assignment.ID, cp.ActPush, "")
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		if d := gate(); !d.Allowed || !d.HeadChecked {
			t.Fatalf("a fresh assignment: %+v", d)
		}
		w.clock.Advance(time.Second)
		pr.HeadSHA, pr.UpdatedAt = "h2", w.clock.Now() // someone pushed
		w.work(pr)
		if d := gate(); d.Reason != cp.GateHeadMoved {
			t.Fatalf("after a foreign push: %+v", d)
		}
		if _, err := w.svc.HeartbeatLease(w.ctx, alice, a.Lease.ID, as, "h2"); wq.ErrorCode(err) != wq.EINVALID {
			t.Fatalf("a heartbeat naming a head that is no commit id: %v", err)
		}
		if _, err := w.svc.HeartbeatLease(w.ctx, alice, a.Lease.ID, as, strings.Repeat("b", 40)); reasonOf(err) != cp.GateHeadMoved {
			t.Fatalf("a heartbeat naming another head: %v, want %s", err, cp.GateHeadMoved)
		}
		if d := gate(); d.Reason != cp.GateHeadMoved {
			t.Fatalf("an agent's claim moved the pinned head: %+v", d)
		}
		if err := w.svc.ChangePushed(w.ctx, alice, a.Assignment.ID, "h2"); err != nil { // the service pushed h2 for alice
			t.Fatal(err)
		}
		if d := gate(); !d.Allowed {
			t.Fatalf("after the service's own push for the owner: %+v", d)
		}
		w.clock.Advance(time.Second)
		pr.State, pr.UpdatedAt = cp.StateMerged, w.clock.Now()
		w.work(pr)
		if d := gate(); d.Reason != cp.GateWorkTerminal {
			t.Fatalf("after the merge: %+v", d)
		}
		if refused := w.countEvents(cp.EventFilter{SessionID: as, Limit: 50}, cp.EventRefused); refused != 3 {
			t.Errorf("%d refusals in the event log, want 3", refused)
		}
	})
}

// A stale session gets no work.
func TestAStaleSessionGetsNoWork(t *testing.T) {
	w := newWorld(t, "sqlite")
	w.work(openIssue(1))
	c, s := w.session("alice", cp.RoleAuthor)
	w.clock.Advance(2 * time.Hour)
	if _, err := w.svc.Allocate(w.ctx, c, s, "", true); reasonOf(err) != "session_stale" {
		t.Fatalf("allocate on a stale session: %v", err)
	}
}

// BenchmarkAllocate measures allocation latency with 5,000 open issues
// and 100 author sessions: dry runs, then applies (each taking one issue),
// reporting p50 and p99 in milliseconds. Run it on PostgreSQL with
// scripts/test -run '^$' -bench Allocate ./controlplane/.
func BenchmarkAllocate(b *testing.B) {
	for _, kind := range testdb.Kinds {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			svc := &cp.Service{Store: testdb.ControlPlane(b, kind), LeaseTTL: time.Hour, SessionTTL: time.Hour}
			nowT := time.Now()
			works := make([]cp.Work, 5000)
			for i := range works {
				works[i] = cp.Work{ID: fmt.Sprint("w", i), WorkKey: cp.WorkKey{Forge: "f", Repo: fmt.Sprintf("org/r%02d", i%50), Kind: cp.KindIssue,
					Number: int64(i)}, State: cp.StateOpen, Title: "work", Labels: []string{"bug"}, UpdatedAt: nowT.Add(-time.Duration(i) * time.Second)}
			}
			if err := svc.Store.UpsertWork(ctx, works, nowT); err != nil {
				b.Fatal(err)
			}
			caller := cp.Caller{Identity: "bench"}
			sessions := make([]string, 100)
			for i := range sessions {
				s, err := svc.RegisterSession(ctx, caller, cp.RoleAuthor, "", nil)
				if err != nil {
					b.Fatal(err)
				}
				sessions[i] = s.ID
			}
			measure := func(name string, apply bool, n int) {
				lat := make([]time.Duration, 0, n)
				for i := range n {
					start := time.Now()
					a, err := svc.Allocate(ctx, caller, sessions[i%len(sessions)], "", apply)
					if err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
					if want := map[bool]cp.Outcome{false: cp.OutcomePreview, true: cp.OutcomeAssigned}[apply]; a.Outcome != want {
						b.Fatalf("%s: outcome %s", name, a.Outcome)
					}
				}
				slices.Sort(lat)
				ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
				b.ReportMetric(ms(lat[len(lat)/2]), name+"-p50-ms")
				b.ReportMetric(ms(lat[len(lat)*99/100]), name+"-p99-ms")
			}
			b.ResetTimer()
			for range b.N {
				measure("dryrun", false, 200)
				measure("apply", true, 200)
			}
		})
	}
}

// invStore is an in-memory Store of work, with cpstore's UpsertWork
// rules: rows by key, the ID of an existing row kept, an empty author
// session keeping the recorded one, a row with a newer forge time left as
// it is, synced_at set to now. The inventory uses no other method.
type invStore struct {
	cp.Store // nil: any other method panics
	mu       sync.Mutex
	work     map[cp.WorkKey]cp.Work
	upserted chan struct{} // receives after every UpsertWork, when set
}

func newInvStore() *invStore { return &invStore{work: map[cp.WorkKey]cp.Work{}} }

func (s *invStore) UpsertWork(_ context.Context, ws []cp.Work, now time.Time) error {
	s.mu.Lock()
	upserted := s.upserted
	defer func() {
		s.mu.Unlock()
		if upserted != nil {
			upserted <- struct{}{}
		}
	}()
	for _, w := range ws {
		if !w.Kind.Valid() || (w.State != cp.StateOpen && !w.State.Terminal()) || w.UpdatedAt.IsZero() || w.ID == "" {
			return wq.Errorf(wq.EINVALID, "invalid work %+v", w)
		}
		old, ok := s.work[w.WorkKey]
		if ok && old.UpdatedAt.After(w.UpdatedAt) {
			continue
		}
		if ok {
			w.ID = old.ID
			if w.AuthorSession == "" {
				w.AuthorSession = old.AuthorSession
			}
		}
		w.SyncedAt = now
		s.work[w.WorkKey] = w
	}
	return nil
}

// ListLeases: the fake holds no leases.
func (s *invStore) ListLeases(context.Context, cp.LeaseFilter) ([]cp.Lease, error) { return nil, nil }

func (s *invStore) FindWork(_ context.Context, k cp.WorkKey) (*cp.Work, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.work[k]
	if !ok {
		return nil, wq.Errorf(wq.ENOTFOUND, "no work %v", k)
	}
	return &w, nil
}

func (s *invStore) Candidates(context.Context, time.Time) ([]cp.Candidate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []cp.Candidate
	for _, w := range s.work {
		if w.State == cp.StateOpen {
			out = append(out, cp.Candidate{Work: &w})
		}
	}
	return out, nil
}

// get returns the stored work of a key of forge "g".
func (s *invStore) get(repo string, kind cp.Kind, n int64) (cp.Work, bool) {
	return s.find(cp.WorkKey{Forge: "g", Repo: repo, Kind: kind, Number: n})
}

func (s *invStore) find(k cp.WorkKey) (cp.Work, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.work[k]
	return w, ok
}

func (s *invStore) put(w cp.Work) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.work[w.WorkKey] = w
}

// invForge is a forge of work only: projects of issues and pull requests
// in any state. It counts calls, and fails those it is told to.
type invForge struct {
	wq.Forge // nil: any other method panics
	mu       sync.Mutex
	work     map[string][]wq.WorkInfo // project → work in any state
	hidden   map[string]bool          // "project kind n": missing from ListOpenWork though open (a page boundary moved)
	calls    map[string]int
	fail     map[string]error // by "method project" ("ListProjects" alone)
	onList   func(project string)
}

func newInvForge() *invForge {
	return &invForge{work: map[string][]wq.WorkInfo{}, hidden: map[string]bool{}, calls: map[string]int{}, fail: map[string]error{}}
}

func (f *invForge) Kind() string { return wq.ForgeGitea }

func (f *invForge) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[call]
}

func (f *invForge) ListProjects(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["ListProjects"]++
	if err := f.fail["ListProjects"]; err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(f.work)), nil
}

func (f *invForge) ListOpenWork(_ context.Context, project string) ([]wq.WorkInfo, error) {
	f.mu.Lock()
	f.calls["ListOpenWork"]++
	err := f.fail["ListOpenWork "+project]
	var out []wq.WorkInfo
	for _, w := range f.work[project] {
		if w.State == wq.MergeRequestOpen && !f.hidden[fmt.Sprintf("%s %s %d", project, w.Kind, w.Number)] {
			out = append(out, w)
		}
	}
	onList := f.onList
	f.mu.Unlock()
	if onList != nil {
		onList(project)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (f *invForge) GetWork(_ context.Context, project, kind string, n int64) (*wq.WorkInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["GetWork"]++
	if err := f.fail["GetWork "+project]; err != nil {
		return nil, err
	}
	for _, w := range f.work[project] {
		if w.Kind == kind && w.Number == n {
			return &w, nil
		}
	}
	return nil, &wq.ForgeError{Kind: wq.ForgeNotFound, Op: "fake: get work", Status: 404}
}

// set adds or replaces work of a project.
func (f *invForge) set(project string, ws ...wq.WorkInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range ws {
		i := slices.IndexFunc(f.work[project], func(o wq.WorkInfo) bool { return o.Kind == w.Kind && o.Number == w.Number })
		if i >= 0 {
			f.work[project][i] = w
		} else {
			f.work[project] = append(f.work[project], w)
		}
	}
}

// remove deletes work from a project, as a forge that deleted or moved it.
func (f *invForge) remove(project, kind string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.work[project] = slices.DeleteFunc(f.work[project], func(w wq.WorkInfo) bool { return w.Kind == kind && w.Number == n })
}

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func anIssue(n int64, title string, labels ...string) wq.WorkInfo {
	return wq.WorkInfo{Kind: wq.WorkIssue, Number: n, State: wq.MergeRequestOpen, Title: title, Labels: labels, Author: "alice",
		UpdatedAt: t0.Add(-time.Hour)}
}

func aPR(n int64, verdict string, closes ...int64) wq.WorkInfo {
	return wq.WorkInfo{Kind: wq.WorkPR, Number: n, State: wq.MergeRequestOpen, Title: fmt.Sprintf("PR %d", n), Author: "bob",
		HeadSHA: fmt.Sprintf("sha%d", n), ReviewState: verdict, Mergeable: true, LinkedIssues: closes, UpdatedAt: t0.Add(-time.Hour)}
}

// newInventory is an inventory of forge "g" over org/*, on a fake clock
// at t0.
func newInventory(t *testing.T) (*cp.Inventory, *invStore, *invForge, *clockwork.FakeClock) {
	t.Helper()
	store, forge, clock := newInvStore(), newInvForge(), clockwork.NewFakeClockAt(t0)
	return &cp.Inventory{Store: store, Forges: map[string]wq.Forge{"g": forge}, Repos: []cp.RepoMatch{{Forge: "g", Match: "org/*"}},
		Clock: clock}, store, forge, clock
}

func mustSync(t *testing.T, inv *cp.Inventory) cp.SyncReport {
	t.Helper()
	rep, err := inv.Sync(context.Background())
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return rep
}

// repoReport is the report's entry for repo, without its times.
func repoReport(t *testing.T, rep cp.SyncReport, repo string) cp.RepoSync {
	t.Helper()
	i := slices.IndexFunc(rep.Repos, func(r cp.RepoSync) bool { return r.Repo == repo })
	if i < 0 {
		t.Fatalf("no report of %s in %+v", repo, rep.Repos)
	}
	return rep.Repos[i]
}

func TestSyncWritesTheOpenWorkOfConfiguredReposOnly(t *testing.T) {
	inv, store, forge, _ := newInventory(t)
	forge.set("org/a", anIssue(1, "Broken", "bug"), aPR(2, wq.ReviewApproved, 1))
	forge.set("org/b", anIssue(7, "Slow"), wq.WorkInfo{Kind: wq.WorkIssue, Number: 8, State: wq.MergeRequestClosed, Title: "Done",
		UpdatedAt: t0.Add(-time.Hour)})
	forge.set("other/c", anIssue(1, "Not ours"))
	forge.set("org/a/deeper", anIssue(1, "Not matched: * stays in one segment"))
	rep := mustSync(t, inv)

	want := map[cp.WorkKey]cp.Work{
		{Forge: "g", Repo: "org/a", Kind: cp.KindIssue, Number: 1}: {State: cp.StateOpen, Title: "Broken", Labels: []string{"bug"},
			Author: "alice", UpdatedAt: t0.Add(-time.Hour), SyncedAt: t0},
		{Forge: "g", Repo: "org/a", Kind: cp.KindPR, Number: 2}: {State: cp.StateOpen, Title: "PR 2", Labels: []string{}, Author: "bob",
			HeadSHA: "sha2", ReviewState: cp.ReviewApproved, Mergeable: true, LinkedIssues: []int64{1}, UpdatedAt: t0.Add(-time.Hour), SyncedAt: t0},
		{Forge: "g", Repo: "org/b", Kind: cp.KindIssue, Number: 7}: {State: cp.StateOpen, Title: "Slow", Labels: []string{}, Author: "alice",
			UpdatedAt: t0.Add(-time.Hour), SyncedAt: t0},
	}
	for k, w := range want {
		w.WorkKey = k
		want[k] = w
	}
	if diff := cmp.Diff(want, store.work, cmpopts.IgnoreFields(cp.Work{}, "ID")); diff != "" {
		t.Errorf("stored work (-want +got):\n%s", diff)
	}
	for _, w := range store.work {
		if _, err := uuid.Parse(w.ID); err != nil {
			t.Errorf("%v has ID %q, want a new item id", w.WorkKey, w.ID)
		}
	}
	if got := repoReport(t, rep, "org/a"); got.Open != 2 || got.Reread != 0 || got.Closed != 0 || got.Err != "" {
		t.Errorf("org/a: %+v", got)
	}
	if got := repoReport(t, rep, "org/b"); got.Open != 1 {
		t.Errorf("org/b: %+v", got)
	}
	if len(rep.Repos) != 2 || !rep.Started.Equal(t0) || !rep.Finished.Equal(t0) {
		t.Errorf("report %+v, want org/a and org/b at t0", rep)
	}
	if n := forge.count("GetWork"); n != 0 {
		t.Errorf("a first sync read %d items one by one", n)
	}
}

func TestSyncKeepsTheIdentityOfStoredWork(t *testing.T) {
	inv, store, forge, clock := newInventory(t)
	forge.set("org/a", aPR(2, wq.ReviewNone))
	mustSync(t, inv)
	w, _ := store.get("org/a", cp.KindPR, 2)
	w.AuthorSession = "s1" // a session opened it under an assignment
	store.put(w)
	clock.Advance(time.Minute)
	moved := aPR(2, wq.ReviewChangesRequested)
	moved.HeadSHA, moved.UpdatedAt = "sha2b", t0
	forge.set("org/a", moved)
	mustSync(t, inv)
	got, _ := store.get("org/a", cp.KindPR, 2)
	if got.ID != w.ID || got.AuthorSession != "s1" || got.HeadSHA != "sha2b" || got.ReviewState != cp.ReviewChangesRequested ||
		!got.SyncedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("after the second sync: %+v; want ID %s, author session s1, the new head and verdict", got, w.ID)
	}
}

func TestSyncReadsBackWhatLeftTheOpenList(t *testing.T) {
	inv, store, forge, clock := newInventory(t)
	forge.set("org/a", anIssue(1, "Deleted soon"), anIssue(3, "Still open"), aPR(2, wq.ReviewNone), aPR(4, wq.ReviewNone))
	mustSync(t, inv)
	clock.Advance(time.Minute)

	merged := aPR(2, wq.ReviewApproved)
	merged.State, merged.UpdatedAt = wq.MergeRequestMerged, t0
	forge.set("org/a", merged)             // merged while its webhook was lost
	forge.remove("org/a", wq.WorkIssue, 1) // deleted: GetWork finds nothing
	renamed := anIssue(3, "Still open, renamed")
	renamed.UpdatedAt = t0
	forge.set("org/a", renamed)
	forge.hidden["org/a issue 3"] = true // a page boundary moved under the listing
	rep := mustSync(t, inv)

	if got := repoReport(t, rep, "org/a"); got.Open != 1 || got.Reread != 3 || got.Closed != 2 || got.Err != "" {
		t.Errorf("report %+v, want 1 listed, 3 read back, 2 of them closed", got)
	}
	if n := forge.count("GetWork"); n != 3 {
		t.Errorf("%d reads one by one, want 3: only what left the list", n)
	}
	if w, _ := store.get("org/a", cp.KindPR, 2); w.State != cp.StateMerged || w.ReviewState != cp.ReviewApproved {
		t.Errorf("the merged pull request: %+v", w)
	}
	if w, _ := store.get("org/a", cp.KindIssue, 1); w.State != cp.StateClosed || !w.UpdatedAt.Equal(t0.Add(-time.Hour)) {
		t.Errorf("the deleted issue: %+v; want closed, its forge time kept", w)
	}
	if w, _ := store.get("org/a", cp.KindIssue, 3); w.State != cp.StateOpen || w.Title != "Still open, renamed" {
		t.Errorf("the issue the listing skipped: %+v; want still open, as the forge has it now", w)
	}
	if w, _ := store.get("org/a", cp.KindPR, 4); w.State != cp.StateOpen {
		t.Errorf("the listed pull request: %+v", w)
	}
}

func TestSyncLeavesWhatAWebhookDeliveredMeanwhileToIt(t *testing.T) {
	// The listing ran before the issue was opened; its delivery arrived
	// before the sync was done. Closing it for being unlisted would be
	// wrong until the next sync.
	inv, store, forge, _ := newInventory(t)
	forge.set("org/a", anIssue(1, "Old"))
	fresh := anIssue(9, "Opened during the sync")
	forge.onList = func(string) {
		if _, err := inv.Apply(context.Background(), "g", &wqforge.Delivery{Project: "org/a", Work: &fresh}); err != nil {
			t.Error(err)
		}
	}
	rep := mustSync(t, inv)
	if w, ok := store.get("org/a", cp.KindIssue, 9); !ok || w.State != cp.StateOpen {
		t.Errorf("the delivered issue: %+v, %v", w, ok)
	}
	if got := repoReport(t, rep, "org/a"); got.Reread != 0 || forge.count("GetWork") != 0 {
		t.Errorf("report %+v, %d reads: want none", got, forge.count("GetWork"))
	}
}

func TestAFailedListingClosesNothing(t *testing.T) {
	inv, store, forge, clock := newInventory(t)
	forge.set("org/a", anIssue(1, "A"))
	forge.set("org/b", anIssue(2, "B"))
	mustSync(t, inv)
	clock.Advance(time.Minute)
	forge.set("org/b", anIssue(3, "B again"))
	forge.fail["ListOpenWork org/a"] = &wq.ForgeError{Kind: wq.ForgeTransient, Op: "fake: list", Status: 502}
	rep, err := inv.Sync(context.Background())
	if err == nil || !wq.IsForgeError(err, wq.ForgeTransient) {
		t.Errorf("Sync: %v, want the failed listing", err)
	}
	if got := repoReport(t, rep, "org/a"); got.Err == "" {
		t.Errorf("org/a: %+v, want its error", got)
	}
	if w, _ := store.get("org/a", cp.KindIssue, 1); w.State != cp.StateOpen || !w.SyncedAt.Equal(t0) {
		t.Errorf("org/a's work after a failed listing: %+v, want it untouched", w)
	}
	if _, ok := store.get("org/b", cp.KindIssue, 3); !ok {
		t.Error("org/b was not synced after org/a failed")
	}

	forge.fail["ListProjects"] = errors.New("forge down")
	if _, err := inv.Sync(context.Background()); err == nil {
		t.Error("Sync with a forge down: no error")
	}
	for _, k := range []struct {
		repo string
		n    int64
	}{{"org/a", 1}, {"org/b", 2}, {"org/b", 3}} {
		if w, _ := store.get(k.repo, cp.KindIssue, k.n); w.State != cp.StateOpen {
			t.Errorf("%s#%d after the forge's projects could not be listed: %+v", k.repo, k.n, w)
		}
	}
}

func TestWorkOfARepoNoLongerConfiguredIsClosedAndComesBack(t *testing.T) {
	inv, store, forge, clock := newInventory(t)
	forge.set("org/a", anIssue(1, "A"))
	forge.set("org/b", anIssue(2, "B"), aPR(3, wq.ReviewNone))
	mustSync(t, inv)
	clock.Advance(time.Minute)
	inv.Repos = []cp.RepoMatch{{Forge: "g", Match: "org/a"}}
	rep := mustSync(t, inv)
	if got := repoReport(t, rep, "org/b"); !got.Dropped || got.Closed != 2 {
		t.Errorf("org/b: %+v, want dropped with its 2 items closed", got)
	}
	for _, k := range []cp.Kind{cp.KindIssue, cp.KindPR} {
		if w, _ := store.get("org/b", k, map[cp.Kind]int64{cp.KindIssue: 2, cp.KindPR: 3}[k]); w.State != cp.StateClosed {
			t.Errorf("org/b's %s: %+v, want closed", k, w)
		}
	}
	if forge.count("GetWork") != 0 {
		t.Error("a dropped repository's work was read from the forge")
	}
	clock.Advance(time.Minute)
	inv.Repos = []cp.RepoMatch{{Forge: "g", Match: "org/**"}}
	mustSync(t, inv)
	if w, _ := store.get("org/b", cp.KindIssue, 2); w.State != cp.StateOpen {
		t.Errorf("configured again, org/b's issue: %+v, want open again", w)
	}
	clock.Advance(time.Minute)
	inv.Repos = nil // the forge is no longer configured at all
	mustSync(t, inv)
	if w, _ := store.get("org/a", cp.KindIssue, 1); w.State != cp.StateClosed {
		t.Errorf("with no repos configured, org/a's issue: %+v, want closed", w)
	}
}

func TestApplyWritesADeliveredIssue(t *testing.T) {
	inv, store, forge, clock := newInventory(t)
	ctx := context.Background()
	opened := anIssue(5, "Broken", "bug")
	if ok, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: "org/a", Work: &opened}); !ok || err != nil {
		t.Fatalf("Apply = %v, %v", ok, err)
	}
	w, _ := store.get("org/a", cp.KindIssue, 5)
	if w.Title != "Broken" || w.Author != "alice" || !slices.Equal(w.Labels, []string{"bug"}) || w.State != cp.StateOpen ||
		!w.SyncedAt.Equal(t0) || w.ID == "" {
		t.Errorf("stored %+v", w)
	}
	// GitLab's hook names the author by id only: the stored one stays.
	clock.Advance(time.Second)
	closed := opened
	closed.State, closed.Author, closed.UpdatedAt = wq.MergeRequestClosed, "", t0
	if ok, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: "org/a", Work: &closed}); !ok || err != nil {
		t.Fatalf("Apply = %v, %v", ok, err)
	}
	got, _ := store.get("org/a", cp.KindIssue, 5)
	if got.State != cp.StateClosed || got.Author != "alice" || got.ID != w.ID {
		t.Errorf("after the close: %+v; want closed, author and ID kept", got)
	}
	if n := forge.count("GetWork"); n != 0 {
		t.Errorf("%d forge reads for deliveries that said everything", n)
	}
	for name, d := range map[string]*wqforge.Delivery{
		"an unconfigured repo":  {Project: "other/c", Work: &opened},
		"an unconfigured forge": {Project: "org/a", Work: &opened},
		"no work":               {Project: "org/a", Number: 3},
	} {
		forgeName := "g"
		if name == "an unconfigured forge" {
			forgeName = "h"
		}
		if ok, err := inv.Apply(ctx, forgeName, d); ok || err != nil {
			t.Errorf("%s: Apply = %v, %v; want nothing written", name, ok, err)
		}
	}
	if ok, err := inv.Apply(ctx, "g", nil); ok || err != nil {
		t.Errorf("a nil delivery: %v, %v", ok, err)
	}
	if len(store.work) != 1 {
		t.Errorf("stored %d items, want the one issue", len(store.work))
	}
}

func TestApplyKeepsOrRechecksAPullRequestsVerdict(t *testing.T) {
	ctx := context.Background()
	stored := func(t *testing.T, verdict string) (*cp.Inventory, *invStore, *invForge) {
		t.Helper()
		inv, store, forge, clock := newInventory(t)
		forge.set("org/a", aPR(2, verdict))
		mustSync(t, inv)
		w, _ := store.get("org/a", cp.KindPR, 2)
		w.AuthorSession = "s1"
		store.put(w)
		clock.Advance(time.Second)
		return inv, store, forge
	}
	delivered := func(verdict string) *wq.WorkInfo {
		w := aPR(2, verdict)
		w.HeadSHA, w.UpdatedAt = "sha-new", t0
		return &w
	}

	t.Run("an event that says nothing of reviews keeps the verdict at the same head, without a forge call", func(t *testing.T) {
		inv, store, forge := stored(t, wq.ReviewChangesRequested)
		same := delivered("")
		same.HeadSHA = aPR(2, "").HeadSHA
		if _, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: "org/a", Number: 2, Work: same}); err != nil {
			t.Fatal(err)
		}
		w, _ := store.get("org/a", cp.KindPR, 2)
		if w.ReviewState != cp.ReviewChangesRequested || w.AuthorSession != "s1" || forge.count("GetWork") != 0 {
			t.Errorf("%+v, %d reads", w, forge.count("GetWork"))
		}
	})
	t.Run("a verdict counts only for the head it was given on: a new head the event does not judge has none", func(t *testing.T) {
		for _, verdict := range []string{wq.ReviewApproved, wq.ReviewChangesRequested} {
			inv, store, _ := stored(t, verdict)
			if _, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: "org/a", Number: 2, Work: delivered("")}); err != nil {
				t.Fatal(err)
			}
			w, _ := store.get("org/a", cp.KindPR, 2)
			if w.ReviewState != cp.ReviewNone || w.HeadSHA != "sha-new" || w.AuthorSession != "s1" {
				t.Errorf("%s before the push: %+v", verdict, w)
			}
		}
	})
	t.Run("a verdict the payload settles is written", func(t *testing.T) {
		inv, store, forge := stored(t, wq.ReviewApproved)
		if _, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: "org/a", Work: delivered(wq.ReviewChangesRequested)}); err != nil {
			t.Fatal(err)
		}
		if w, _ := store.get("org/a", cp.KindPR, 2); w.ReviewState != cp.ReviewChangesRequested || forge.count("GetWork") != 0 {
			t.Errorf("%+v", w)
		}
	})
	t.Run("an event that may have changed the verdict reads it from the forge", func(t *testing.T) {
		inv, store, forge := stored(t, wq.ReviewChangesRequested)
		answered := aPR(2, wq.ReviewApproved) // the reviewer who asked for changes approved
		answered.HeadSHA, answered.UpdatedAt = "sha-new", t0
		forge.set("org/a", answered)
		if _, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: "org/a", Work: delivered(""), RecheckReview: true}); err != nil {
			t.Fatal(err)
		}
		w, _ := store.get("org/a", cp.KindPR, 2)
		if w.ReviewState != cp.ReviewApproved || w.AuthorSession != "s1" || forge.count("GetWork") != 1 {
			t.Errorf("%+v after %d reads, want approved after one", w, forge.count("GetWork"))
		}
	})
	t.Run("a recheck the forge cannot answer keeps the verdict of the same head and writes the rest", func(t *testing.T) {
		inv, store, forge := stored(t, wq.ReviewChangesRequested)
		forge.fail["GetWork org/a"] = &wq.ForgeError{Kind: wq.ForgeTransient, Op: "fake", Status: 503}
		same := delivered("")
		same.HeadSHA, same.Title = aPR(2, "").HeadSHA, "renamed"
		ok, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: "org/a", Work: same, RecheckReview: true})
		if !ok || err != nil {
			t.Fatalf("Apply = %v, %v", ok, err)
		}
		if w, _ := store.get("org/a", cp.KindPR, 2); w.ReviewState != cp.ReviewChangesRequested || w.Title != "renamed" {
			t.Errorf("%+v", w)
		}
	})
	t.Run("a pull request new to the inventory is read for what its payload lacks", func(t *testing.T) {
		inv, store, forge, _ := newInventory(t)
		forge.set("org/a", aPR(6, wq.ReviewApproved))
		hook := aPR(6, "")
		hook.Author = "" // GitLab
		if _, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: "org/a", Work: &hook}); err != nil {
			t.Fatal(err)
		}
		if w, _ := store.get("org/a", cp.KindPR, 6); w.Author != "bob" || w.ReviewState != cp.ReviewApproved || forge.count("GetWork") != 1 {
			t.Errorf("%+v", w)
		}
		forge.fail["GetWork org/a"] = errors.New("down")
		other := aPR(7, "")
		if _, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: "org/a", Work: &other}); err != nil {
			t.Fatal(err)
		}
		if w, _ := store.get("org/a", cp.KindPR, 7); w.ReviewState != cp.ReviewNone || w.Author != "bob" {
			t.Errorf("unread: %+v, want verdict none until the sync", w)
		}
	})
}

func TestApplyRefusesWhatIsNotWork(t *testing.T) {
	inv, store, _, _ := newInventory(t)
	for _, w := range []wq.WorkInfo{
		{Kind: "incident", Number: 1, State: wq.MergeRequestOpen, UpdatedAt: t0},
		{Kind: wq.WorkIssue, Number: 1, State: "reopened", UpdatedAt: t0},
		{Kind: wq.WorkIssue, Number: 0, State: wq.MergeRequestOpen, UpdatedAt: t0},
	} {
		if ok, err := inv.Apply(context.Background(), "g", &wqforge.Delivery{Project: "org/a", Work: &w}); ok || wq.ErrorCode(err) != wq.EINVALID {
			t.Errorf("%+v: %v, %v; want invalid", w, ok, err)
		}
	}
	if len(store.work) != 0 {
		t.Errorf("stored %v", store.work)
	}
}

func TestRunSyncsAtOnceAndThenEveryInterval(t *testing.T) {
	inv, store, forge, clock := newInventory(t)
	inv.Interval = 5 * time.Minute
	forge.set("org/a", anIssue(1, "A"))
	store.upserted = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inv.Run(ctx) }()
	<-store.upserted // the first sync, at once: one write, as nothing left the list
	if w, ok := store.get("org/a", cp.KindIssue, 1); !ok || !w.SyncedAt.Equal(t0) {
		t.Errorf("after the first sync: %+v, %v", w, ok)
	}
	forge.set("org/a", anIssue(2, "B"))
	clock.Advance(5 * time.Minute) // the ticker was made before the first sync
	<-store.upserted
	if w, ok := store.get("org/a", cp.KindIssue, 2); !ok || !w.SyncedAt.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("after the second sync: %+v, %v", w, ok)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil once its context is done", err)
	}
	if n := forge.count("ListOpenWork"); n != 2 {
		t.Errorf("%d listings, want 2", n)
	}
}

func TestAGiteaIssueIsInventoriedAndKeptCurrentByItsWebhook(t *testing.T) {
	srv := testgitea.Get(t)
	people := testforge.Gitea(t)
	f, err := gitea.New(srv.URL, srv.Token, gitea.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	repo := srv.NewRepo(t)
	store := newInvStore()
	inv := &cp.Inventory{Store: store, Forges: map[string]wq.Forge{"gitea": f}, Repos: []cp.RepoMatch{{Forge: "gitea", Match: repo}},
		Log: testkit.Quiet()}
	key := func(kind cp.Kind, n int64) cp.WorkKey {
		return cp.WorkKey{Forge: "gitea", Repo: repo, Kind: kind, Number: n}
	}

	issue := people.OpenIssue(t, repo, "Broken", "bug")
	rep, err := inv.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := repoReport(t, rep, repo); got.Open != 1 {
		t.Errorf("report %+v, want the one issue", got)
	}
	w, ok := store.find(key(cp.KindIssue, issue))
	if !ok || w.State != cp.StateOpen || w.Title != "Broken" || !slices.Equal(w.Labels, []string{"bug"}) || w.Author != srv.User {
		t.Fatalf("after the sync: %+v, %v", w, ok)
	}

	// The deliveries of a real Gitea hook, as the service receives them.
	const secret = "inventory-s3cret"
	receiver := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d, err := testapi.Kinds.ParseWebhook(wq.ForgeGitea, secret, r.Header, body)
		if err != nil {
			t.Errorf("a delivery the webhook package refuses: %v", err)
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		if _, err := inv.Apply(r.Context(), "gitea", d); err != nil {
			t.Errorf("Apply: %v", err)
		}
	}))
	defer receiver.Close()
	if _, err := f.EnsureWebhook(ctx, repo, receiver.URL, secret); err != nil {
		t.Fatal(err)
	}
	stored := func(what string, k cp.WorkKey, ok func(w cp.Work) bool) {
		t.Helper()
		eventually.True(t, 30*time.Second, what, func() (bool, any) {
			w, found := store.find(k)
			return found && ok(w), w
		})
	}
	people.CloseIssue(t, repo, issue)
	stored("the closed issue, by its delivery", key(cp.KindIssue, issue), func(w cp.Work) bool { return w.State == cp.StateClosed })

	c, err := f.CommitFiles(ctx, wq.CommitRequest{Project: repo, Base: "main", Branch: "fix", Message: "fix",
		Changes: []wq.FileChange{{Action: "create", Path: "fix.txt", Content: []byte("fixed\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: repo, SourceBranch: "fix", TargetBranch: "main", Title: "Fix",
		Description: fmt.Sprintf("Fixes #%d", issue)})
	if err != nil {
		t.Fatal(err)
	}
	stored("the opened pull request", key(cp.KindPR, mr.Number), func(w cp.Work) bool {
		return w.State == cp.StateOpen && w.HeadSHA == c.SHA && w.Author == srv.User && w.ReviewState == cp.ReviewNone &&
			slices.Equal(w.LinkedIssues, []int64{issue})
	})
	people.Review(t, repo, mr.Number, wq.ReviewChangesRequested)
	stored("the request for changes", key(cp.KindPR, mr.Number), func(w cp.Work) bool { return w.ReviewState == cp.ReviewChangesRequested })
	// The approval's payload cannot tell whether others still request
	// changes: the inventory reads the verdict back.
	people.Review(t, repo, mr.Number, wq.ReviewApproved)
	stored("the approval that answers it", key(cp.KindPR, mr.Number), func(w cp.Work) bool { return w.ReviewState == cp.ReviewApproved })
}

// ListWork lists the open pull requests of one repository, as the push
// path asks.
func (s *invStore) ListWork(_ context.Context, f cp.WorkFilter) ([]cp.Work, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []cp.Work
	for _, w := range s.work {
		if (f.Forge == "" || w.Forge == f.Forge) && (f.Repo == "" || w.Repo == f.Repo) && (f.Kind == "" || w.Kind == f.Kind) &&
			(f.State == "" || w.State == f.State) {
			out = append(out, w)
		}
	}
	return out, nil
}

// A push reaches the service before the pull request's own event: the
// inventory moves the head of the open pull request whose head it was, at
// once, so that the gate refuses a mutation on the old head; a later
// event from the forge still applies.
func TestAPushMovesTheHeadOfThePullRequestItHeads(t *testing.T) {
	inv, store, _, clock := newInventory(t)
	ctx := context.Background()
	for _, w := range []cp.Work{
		{ID: "a2", WorkKey: cp.WorkKey{Forge: "g", Repo: "org/a", Kind: cp.KindPR, Number: 2}, State: cp.StateOpen, HeadSHA: "h1", UpdatedAt: t0},
		{ID: "a3", WorkKey: cp.WorkKey{Forge: "g", Repo: "org/a", Kind: cp.KindPR, Number: 3}, State: cp.StateOpen, HeadSHA: "h2", UpdatedAt: t0},
		{ID: "b2", WorkKey: cp.WorkKey{Forge: "g", Repo: "org/b", Kind: cp.KindPR, Number: 2}, State: cp.StateOpen, HeadSHA: "h1", UpdatedAt: t0},
	} {
		store.put(w)
	}
	push := func(repo, before, after string) bool {
		t.Helper()
		ok, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: repo, Push: &wqforge.BranchPush{Branch: "x", Before: before, After: after}})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !push("org/a", "h1", "h9") {
		t.Fatal("the push moved nothing")
	}
	heads := map[string]string{}
	for _, k := range []struct {
		repo string
		n    int64
	}{{"org/a", 2}, {"org/a", 3}, {"org/b", 2}} {
		w, _ := store.get(k.repo, cp.KindPR, k.n)
		heads[w.ID] = w.HeadSHA
	}
	if heads["a2"] != "h9" || heads["a3"] != "h2" || heads["b2"] != "h1" {
		t.Errorf("heads after the push: %v, want only org/a's pull request at h1 moved", heads)
	}
	if push("org/a", "0000000000000000000000000000000000000000", "h7") || push("org/c", "h2", "h8") {
		t.Error("a new branch, or a push to a repository not configured, moved a head")
	}
	// The forge's own event, a second later, applies over the push's mark.
	clock.Advance(time.Second)
	later := aPR(2, "none")
	later.HeadSHA, later.UpdatedAt, later.State = "h9", t0.Add(time.Second), wq.MergeRequestMerged
	if ok, err := inv.Apply(ctx, "g", &wqforge.Delivery{Project: "org/a", Work: &later}); !ok || err != nil {
		t.Fatalf("the pull request's own event: %v, %v", ok, err)
	}
	if w, _ := store.get("org/a", cp.KindPR, 2); w.State != cp.StateMerged {
		t.Errorf("after the forge's event: %s, want merged", w.State)
	}
}

// Reclaim and adoption follow the allocator's routing for the taker's
// role, and keep the pinned head (issue 25): an author cannot take a
// merger's expired lease, the pull request's own author identity cannot
// take its review, and once the head moved there is nothing to take at
// the pinned head; a merger of another identity takes it at that head.
func TestReclaimFollowsTheRoutingAndKeepsThePinnedHead(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		forge := &actionForge{heads: map[int64]string{5: "1111111"}}
		w.svc.Forges = map[string]wq.Forge{"f": forge}
		alice, as := w.session("alice", cp.RoleAuthor)
		pr := openPR(5, "1111111")
		pr.ReviewState, pr.AuthorSession, pr.Mergeable = cp.ReviewApproved, as, true
		w.work(pr)
		meg, ms := w.session("meg", cp.RoleMerger)
		held := w.assign(meg, ms)
		w.clock.Advance(11 * time.Minute) // past the lease TTL
		if _, err := w.svc.HeartbeatSession(w.ctx, alice, as); err != nil {
			t.Fatal(err)
		}
		_, err := w.svc.ReclaimLease(w.ctx, alice, held.Lease.ID, as)
		wantReason(t, err, cp.SkipWrongRole)
		_, aliceMerger := w.session("alice", cp.RoleMerger)
		_, err = w.svc.ReclaimLease(w.ctx, alice, held.Lease.ID, aliceMerger)
		wantReason(t, err, cp.SkipOwnPR)
		_, err = w.svc.AdoptLease(w.ctx, alice, held.Lease.ID, aliceMerger, "", "")
		wantReason(t, err, cp.SkipOwnPR)

		forge.mu.Lock()
		forge.heads[5] = "2222222"
		forge.mu.Unlock()
		max, mx := w.session("max", cp.RoleMerger)
		_, err = w.svc.ReclaimLease(w.ctx, max, held.Lease.ID, mx)
		wantReason(t, err, cp.GateHeadMoved)

		forge.mu.Lock()
		forge.heads[5] = "1111111"
		forge.mu.Unlock()
		got, err := w.svc.ReclaimLease(w.ctx, max, held.Lease.ID, mx)
		if err != nil || got.Assignment.ExpectedHeadSHA != "1111111" || !slices.Contains(got.Assignment.AllowedActions, cp.ActMerge) {
			t.Fatalf("a merger of another identity reclaims: %+v, %v", got, err)
		}
	})
}

// A foreign abandon needs the holder quiet and a no_open_pr the
// inventory agrees with; every proof given is in the lease's events.
func TestAbandonChecksWhatTheServiceCanKnow(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		w := newWorld(t, kind)
		w.work(openIssue(1))
		alice, as := w.session("alice", cp.RoleAuthor)
		lease := w.assign(alice, as).Lease.ID
		pr := openPR(2, "1111111")
		pr.ReviewState, pr.LinkedIssues = cp.ReviewNone, []int64{1}
		w.work(pr)
		bob, bs := w.session("bob", cp.RoleAuthor)
		full := cp.AbandonProof{DeadProcess: true, MissingWorktree: true, NoOpenPR: true, NoLiveMutationRisk: true}
		_, err := w.svc.AbandonLease(w.ctx, bob, lease, bs, full)
		wantReason(t, err, cp.RefuseProof) // alice heartbeated a moment ago
		// Alice goes quiet for longer than the session TTL (an hour here);
		// bob keeps his own session alive.
		for range 7 {
			w.clock.Advance(9 * time.Minute)
			if _, err := w.svc.HeartbeatSession(w.ctx, bob, bs); err != nil {
				t.Fatal(err)
			}
		}
		_, err = w.svc.AbandonLease(w.ctx, bob, lease, bs, full)
		wantReason(t, err, cp.RefuseProof) // pull request #2 closes issue 1: no_open_pr is false
		if !strings.Contains(wq.ErrorMessage(err), "#2") {
			t.Errorf("the refusal does not name the open pull request: %v", err)
		}
		w.clock.Advance(time.Second)
		pr.State, pr.UpdatedAt = cp.StateClosed, w.clock.Now()
		w.work(pr)
		if v, err := w.svc.AbandonLease(w.ctx, bob, lease, bs, full); err != nil || v.State != cp.LeaseAbandoned {
			t.Fatalf("abandon of a quiet holder's lease with a true proof: %+v, %v", v, err)
		}
		events, _ := w.svc.Store.ListEvents(w.ctx, cp.EventFilter{LeaseID: lease, Limit: 20})
		proofs := 0
		for _, e := range events {
			var d struct {
				Proof cp.AbandonProof `json:"proof"`
			}
			if json.Unmarshal(e.Detail, &d) == nil && d.Proof == full {
				proofs++
			}
		}
		if proofs != 3 {
			t.Errorf("%d events record the proof, want the two refusals and the abandon: %+v", proofs, events)
		}
	})
}
