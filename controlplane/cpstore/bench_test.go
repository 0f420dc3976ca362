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

// BenchmarkCandidates measures the allocator's one read over an
// inventory of 5,000 open work items, 100 of them leased (10 of those on
// the terminal path).
func BenchmarkCandidates(b *testing.B) {
	for _, kind := range testdb.Kinds {
		b.Run(kind, func(b *testing.B) { benchmarkCandidates(b, kind) })
	}
}

func benchmarkCandidates(b *testing.B, kind string) {
	const open, leased = 5000, 100
	ctx := context.Background()
	s := testdb.ControlPlane(b, kind)
	works := make([]controlplane.Work, open)
	for i := range works {
		kind := controlplane.KindIssue
		if i%3 == 0 {
			kind = controlplane.KindPR
		}
		works[i] = controlplane.Work{ID: fmt.Sprintf("w%d", i), WorkKey: controlplane.WorkKey{Forge: "gitea", Repo: fmt.Sprintf("o/r%d", i%10),
			Kind: kind, Number: int64(i + 1)}, State: controlplane.StateOpen, Title: "A piece of work to do", Labels: []string{"p2", "backend"},
			Author: "alice", HeadSHA: "0123456789abcdef0123456789abcdef01234567", LinkedIssues: []int64{int64(i)}, UpdatedAt: T0}
	}
	if err := s.UpsertWork(ctx, works, T0); err != nil {
		b.Fatal(err)
	}
	for i := range leased {
		session, w := fmt.Sprintf("s%d", i), works[i*(open/leased)]
		if err := s.CreateSession(ctx, controlplane.Session{ID: session, Identity: "agent", Role: controlplane.RoleMerger, CreatedAt: T0, HeartbeatAt: T0}); err != nil {
			b.Fatal(err)
		}
		a := controlplane.Assignment{ID: "a" + session, SessionID: session, WorkID: w.ID, LeaseID: "l" + session, Terminal: i%10 == 0, CreatedAt: T0}
		l := controlplane.Lease{ID: "l" + session, WorkID: w.ID, SessionID: session, AssignmentID: a.ID, State: controlplane.LeaseActive,
			CreatedAt: T0, HeartbeatAt: T0, ExpiresAt: T0.Add(time.Hour)}
		if err := s.Assign(ctx, a, l, controlplane.Event{Actor: "agent"}, T0); err != nil {
			b.Fatal(err)
		}
	}
	if err := cpstore.Exec(s, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	now := T0.Add(time.Minute)
	b.ResetTimer()
	for b.Loop() {
		cands, err := s.Candidates(ctx, now)
		if err != nil {
			b.Fatal(err)
		}
		if len(cands) != open {
			b.Fatalf("%d candidates, want %d", len(cands), open)
		}
	}
	b.StopTimer()
	cands, _ := s.Candidates(ctx, now)
	held, locked := 0, 0
	for _, c := range cands {
		if c.LeaseSession != "" {
			held++
		}
		if c.LockSession != "" {
			locked++
		}
	}
	if held != leased || locked != leased/10 {
		b.Fatalf("%d held, %d locked, want %d and %d", held, locked, leased, leased/10)
	}
}
