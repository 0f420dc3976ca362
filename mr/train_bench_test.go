package mr_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testforge"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
)

// BenchmarkMergeTrain (scripts/bench train, issue 54): 32 changes on the
// GitLab test server, whose CI takes a fixed time on every new head,
// merged through a train of batch 4 against a train of batch 1 (one by
// one, each tested on the target before it merges). It reports the merges
// per hour of each and their ratio, and fails if a merge request was
// merged at a head its CI had not passed.
//
//	go test ./mr -run '^$' -bench MergeTrain -benchtime 1x
//
// BENCH_CHANGES (32) and BENCH_CI_TIME (1s) change the figures' inputs.
func BenchmarkMergeTrain(b *testing.B) {
	changes, ciTime := 32, time.Second
	if n, err := strconv.Atoi(os.Getenv("BENCH_CHANGES")); err == nil && n > 0 {
		changes = n
	}
	if d, err := time.ParseDuration(os.Getenv("BENCH_CI_TIME")); err == nil && d > 0 {
		ciTime = d
	}
	for range b.N {
		one := trainRun(b, changes, 1, ciTime)
		four := trainRun(b, changes, 4, ciTime)
		b.ReportMetric(one, "merges/h@batch1")
		b.ReportMetric(four, "merges/h@batch4")
		b.ReportMetric(four/one, "ratio")
	}
}

// trainRun merges changes through a train of batch on a fresh project and
// returns the merges per hour.
func trainRun(b *testing.B, changes, batch int, ciTime time.Duration) float64 {
	b.Helper()
	fx := testforge.GitLab(b)
	repo := fx.NewProject(b, "main", "README.md", "# readme\n")
	s := testdb.Open(b, store.KindSQLite)
	f := fx.Forge()
	opts := mr.Options{Store: s, Forges: map[string]wq.Forge{"gitlab": f}, Log: testkit.Quiet(),
		MergeTrain:           func(string, string) (bool, int) { return true, batch },
		MergeRecheckInterval: 200 * time.Millisecond, ReconcileInterval: 2 * time.Second}
	cfg := engine.DefaultConfig()
	cfg.Owner, cfg.HandledTypes, cfg.SweepInterval = b.Name(), []string{mr.ItemType}, 100*time.Millisecond
	e, err := engine.New(cfg, s, nil, testkit.CheckedAudit(b), opts.Log)
	if err != nil {
		b.Fatal(err)
	}
	opts.Notify = func(id wq.ItemID) { e.Notify(mr.ItemType, id) }
	e.Register(mr.Type(opts))
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer e.Stop(ctx)

	// CI: every head gets its status ciTime after it is first seen.
	var mu sync.Mutex
	seen := map[string]time.Time{}
	passed := map[string]bool{}
	stop := make(chan struct{})
	var ids []wq.ItemID
	ci := func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for _, id := range ids {
				d, err := s.GetMRDetail(ctx, id)
				if err != nil || d.HeadSHA == "" {
					continue
				}
				mu.Lock()
				at, ok := seen[d.HeadSHA]
				if !ok {
					seen[d.HeadSHA] = time.Now()
				} else if !passed[d.HeadSHA] && time.Since(at) >= ciTime {
					passed[d.HeadSHA] = true
					fx.SetStatus(b, repo, d.HeadSHA, "ci/build", "success")
					e.Notify(mr.ItemType, id)
				}
				mu.Unlock()
			}
		}
	}
	start := time.Now()
	for i := range changes {
		sub := trainSubmission(fmt.Sprintf("wq/bench-%d", i), fmt.Sprintf("f%d.txt", i))
		sub.Forge, sub.Project = "gitlab", repo
		it, _, err := mr.Submit(ctx, s, sub, mr.Project{Label: "managed-by-workqueue", AutoMerge: true, FileModes: true}, "bench", time.Now())
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, it.ID)
		e.Notify(mr.ItemType, it.ID)
	}
	go ci()
	defer close(stop)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		done := 0
		for _, id := range ids {
			it, err := s.GetItem(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if it.Phase.Terminal() {
				if it.Reason != mr.ReasonMerged {
					b.Fatalf("item %s ended %s/%s (%s)", id, it.Phase, it.Reason, it.Error)
				}
				done++
			}
		}
		if done == changes {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("batch %d: %d of %d merged in 10 minutes", batch, done, changes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.Logf("batch %d: %d merged in %s, %d heads CI ran on", batch, changes, elapsed.Round(time.Millisecond), len(seen))
	for _, id := range ids {
		d, _ := s.GetMRDetail(ctx, id)
		pr := fx.MergeRequest(b, repo, d.MRNumber)
		mu.Lock()
		ok := passed[d.HeadSHA]
		mu.Unlock()
		if pr.State != wq.MergeRequestMerged || !ok {
			b.Fatalf("!%d is %s at %.12s, CI passed: %t", d.MRNumber, pr.State, d.HeadSHA, ok)
		}
	}
	return float64(changes) / elapsed.Hours()
}
