package mr_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/budget"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mr"
)

// manyProjects is a store whose only answer is the open merge requests
// of one item in each of n projects: all the bulk reconciliation reads.
type manyProjects struct {
	mr.Store
	open []mr.OpenMR
}

func (m manyProjects) OpenMRs(context.Context, string) ([]mr.OpenMR, error) { return m.open, nil }

// noEvents takes the bulk reconciliation's events and keeps none.
type noEvents struct{}

func (noEvents) InsertDelivery(context.Context, string, string, []wq.Event, time.Time) (wq.Delivery, error) {
	return wq.Delivery{}, nil
}

// sentAt records, on the test's clock, when each request reached the
// forge.
// reached is closed once want requests were sent.
type sentAt struct {
	clock   clockwork.Clock
	next    http.RoundTripper
	want    int
	reached chan struct{}
	mu      sync.Mutex
	times   []time.Time
}

func (s *sentAt) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.times = append(s.times, s.clock.Now())
	if len(s.times) == s.want {
		close(s.reached)
	}
	s.mu.Unlock()
	return s.next.RoundTrip(r)
}

func (s *sentAt) sent() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.times)
}

// bulkOver runs the bulk reconciliation of n projects on the GitLab test
// server, every 2 minutes, through a budget of perMinute (0: no ceiling),
// on a clock the test moves in 10ms steps whenever the sweep waits for
// it, until the forge got n requests; it returns when each was sent, and
// when the first sweep started.
func bulkOver(t *testing.T, n, perMinute int) (sent []time.Time, start time.Time) {
	t.Helper()
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	open := make([]mr.OpenMR, n)
	for i := range open {
		project := fmt.Sprintf("g/p%03d", i)
		srv.CreateProject(project)
		open[i] = mr.OpenMR{ItemID: wq.NewItemID(), Project: project, Number: 1, HeadSHA: "0123abcd"}
	}
	clock := clockwork.NewFakeClockAt(t0)
	rec := &sentAt{clock: clock, next: http.DefaultTransport, want: n, reached: make(chan struct{})}
	b := budget.New(budget.Options{Forge: "lab", PerMinute: perMinute, Clock: clock})
	f, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{HTTPClient: &http.Client{Transport: b.Transport(rec)}})
	if err != nil {
		t.Fatal(err)
	}
	const interval = 2 * time.Minute
	bulk := &mr.BulkReconciler{Store: manyProjects{open: open}, Forges: map[string]wq.Forge{"lab": f}, Events: noEvents{},
		Interval: interval, Clock: clock, Log: testkit.Quiet()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); bulk.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// A liveness bound: a sweep that waits for nothing the clock can end
	// fails the test instead of hanging it.
	bound, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	if err := clock.BlockUntilContext(bound, 1); err != nil { // the ticker
		t.Fatal(err)
	}
	clock.Advance(interval)
	start = clock.Now()
	// The clock moves only while the sweep waits on it (the ticker and
	// one wait of the sweep's or the budget's): it stands still between
	// the budget letting a request go and the forge recording it.
	waiting, enough := context.WithCancel(bound)
	defer enough()
	go func() {
		select {
		case <-rec.reached:
			enough()
		case <-waiting.Done():
		}
	}()
	for {
		err := clock.BlockUntilContext(waiting, 2)
		select {
		case <-rec.reached:
			return rec.sent(), start
		default:
		}
		if err != nil {
			t.Fatalf("after %d requests the sweep waits for nothing the clock ends", len(rec.sent()))
		}
		clock.Advance(10 * time.Millisecond)
	}
}

// mostInAMinute is the most requests any 60-second window holds
// (sliding, not only the clock's minutes).
func mostInAMinute(times []time.Time) int {
	slices.SortFunc(times, time.Time.Compare)
	worst, j := 0, 0
	for i := range times {
		for times[i].Sub(times[j]) >= time.Minute {
			j++
		}
		worst = max(worst, i-j+1)
	}
	return worst
}

// Bulk reconciliation of 500 projects on the GitLab test server never
// exceeds the configured requests per minute (issue 53): a sweep that
// would read them in two minutes takes five at 100 a minute, and no
// 60-second window sees more than 100 requests.
func TestBulkReconciliationOf500ProjectsStaysUnderRequestsPerMinute(t *testing.T) {
	const projects, perMinute = 500, 100
	sent, start := bulkOver(t, projects, perMinute)
	most := mostInAMinute(sent)
	took := sent[len(sent)-1].Sub(start)
	t.Logf("%d projects listed in %s, at most %d requests in any minute (ceiling %d)", projects, took, most, perMinute)
	if most > perMinute {
		t.Errorf("%d requests in one 60-second window, over the ceiling of %d", most, perMinute)
	}
	if took < 4*time.Minute {
		t.Errorf("%d listings took %s: faster than the ceiling allows", projects, took)
	}
}

// The bulk reconciliation spreads its projects' listings over its
// interval instead of reading them all at once (issue 53): 500 projects
// every 2 minutes are about 250 a minute, and all within the interval.
func TestBulkReconciliationSpreadsItsProjectsOverTheInterval(t *testing.T) {
	const projects = 500
	sent, start := bulkOver(t, projects, 0)
	most := mostInAMinute(sent)
	took := sent[len(sent)-1].Sub(start)
	t.Logf("%d projects listed in %s, at most %d in any minute", projects, took, most)
	if most > projects/2+1 {
		t.Errorf("%d listings in one minute of a 2-minute interval, want at most %d: not spread", most, projects/2+1)
	}
	if took >= 2*time.Minute || took < 119*time.Second {
		t.Errorf("the sweep's listings took %s, want just under its 2-minute interval", took)
	}
}
