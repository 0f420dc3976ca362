package controlplane_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

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
