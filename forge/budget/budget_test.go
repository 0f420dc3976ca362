package budget

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/workqueue-dev/workqueue/internal/eventually"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// fakeForge answers what answer says, recording when (on the test's
// clock) each request arrived.
type fakeForge struct {
	clock  *clockwork.FakeClock
	answer func(r *http.Request, now time.Time) *http.Response

	mu   sync.Mutex
	sent []time.Time
}

func (f *fakeForge) RoundTrip(r *http.Request) (*http.Response, error) {
	now := f.clock.Now()
	f.mu.Lock()
	f.sent = append(f.sent, now)
	f.mu.Unlock()
	if f.answer != nil {
		if resp := f.answer(r, now); resp != nil {
			return resp, nil
		}
	}
	return answer(http.StatusOK, nil), nil
}

func (f *fakeForge) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sent)
}

func answer(status int, h http.Header) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("{}"))}
}

// tooMany answers 429 until end, with the headers h.
func tooMany(end time.Time, h http.Header) func(*http.Request, time.Time) *http.Response {
	return func(_ *http.Request, now time.Time) *http.Response {
		if now.Before(end) {
			return answer(http.StatusTooManyRequests, h.Clone())
		}
		return nil
	}
}

func get(t *testing.T, rt http.RoundTripper, ctx context.Context) *http.Response {
	t.Helper()
	return do(t, rt, ctx, http.MethodGet)
}

func do(t *testing.T, rt http.RoundTripper, ctx context.Context, method string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, "http://forge.test/api/v4/projects", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	resp.Body.Close()
	return resp
}

// refusedFor says whether resp is the budget's own answer, and the wait
// its Retry-After gives.
func refusedFor(resp *http.Response) (string, time.Duration) {
	secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.Header.Get(HeaderRefused), time.Duration(secs) * time.Second
}

// A 429 stops every caller of the forge until the wait it states: until
// then each request is answered by the budget, not sent, with the wait
// left as Retry-After; background callers and writes alike.
func TestA429PausesEveryCallerUntilItsRetryAfter(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	f := &fakeForge{clock: clock, answer: tooMany(t0.Add(time.Second), http.Header{"Retry-After": {"90"}})}
	rt := New(Options{Forge: "lab", Clock: clock}).Transport(f)
	ctx := context.Background()

	if resp := get(t, rt, ctx); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get(HeaderRefused) != "" {
		t.Fatalf("the forge's own 429: %d %v", resp.StatusCode, resp.Header)
	}
	clock.Advance(30 * time.Second)
	for _, c := range []struct {
		ctx    context.Context
		method string
	}{{ctx, http.MethodGet}, {InBackground(ctx), http.MethodGet}, {ctx, http.MethodPost}} {
		resp := do(t, rt, c.ctx, c.method)
		reason, wait := refusedFor(resp)
		if resp.StatusCode != http.StatusTooManyRequests || reason != RefusedPaused || wait != 60*time.Second {
			t.Errorf("%s %v during the pause: %d %q Retry-After %s, want the budget's 429 with 60s left",
				c.method, PriorityOf(c.ctx), resp.StatusCode, reason, wait)
		}
	}
	if n := f.count(); n != 1 {
		t.Errorf("the forge got %d requests, want only the first", n)
	}
	clock.Advance(60 * time.Second)
	if resp := get(t, rt, ctx); resp.StatusCode != http.StatusOK {
		t.Errorf("after the pause: %d, want the forge's 200", resp.StatusCode)
	}
	if n := f.count(); n != 2 {
		t.Errorf("the forge got %d requests, want 2", n)
	}
}

// Every way the forge states its reset pauses the callers until then: a
// Retry-After as an HTTP date, GitLab's RateLimit-Reset on a 429, and
// RateLimit-Remaining: 0 with RateLimit-Reset on an answer that
// succeeded; a 429 that states nothing pauses a minute, and longer each
// time in a row.
func TestEveryStatedResetPausesUntilIt(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		header func(now time.Time) http.Header
		want   time.Duration
	}{
		{"Retry-After as an HTTP date", http.StatusTooManyRequests, func(now time.Time) http.Header {
			return http.Header{"Retry-After": {now.Add(2 * time.Minute).Format(http.TimeFormat)}}
		}, 2 * time.Minute},
		{"RateLimit-Reset on a 429", http.StatusTooManyRequests, func(now time.Time) http.Header {
			return http.Header{"Ratelimit-Reset": {strconv.FormatInt(now.Add(45*time.Second).Unix(), 10)}}
		}, 45 * time.Second},
		{"RateLimit-Remaining 0 on a 200", http.StatusOK, func(now time.Time) http.Header {
			return http.Header{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {strconv.FormatInt(now.Add(20*time.Second).Unix(), 10)}}
		}, 20 * time.Second},
		{"a 429 stating nothing", http.StatusTooManyRequests, func(time.Time) http.Header { return nil }, defaultPause},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := clockwork.NewFakeClockAt(t0)
			first := true
			f := &fakeForge{clock: clock, answer: func(_ *http.Request, now time.Time) *http.Response {
				if first {
					first = false
					return answer(c.status, c.header(now))
				}
				return nil
			}}
			rt := New(Options{Forge: "lab", Clock: clock}).Transport(f)
			get(t, rt, context.Background())
			if reason, wait := refusedFor(get(t, rt, context.Background())); reason != RefusedPaused || wait != c.want {
				t.Errorf("the next request: refused %q for %s, want paused for %s", reason, wait, c.want)
			}
			clock.Advance(c.want)
			if resp := get(t, rt, context.Background()); resp.StatusCode != http.StatusOK {
				t.Errorf("at the reset: %d, want the forge's answer", resp.StatusCode)
			}
		})
	}

	// Stating nothing in a row: a minute, then two.
	clock := clockwork.NewFakeClockAt(t0)
	f := &fakeForge{clock: clock, answer: tooMany(t0.Add(90*time.Second), nil)}
	rt := New(Options{Forge: "lab", Clock: clock}).Transport(f)
	get(t, rt, context.Background())
	clock.Advance(defaultPause)
	get(t, rt, context.Background()) // the probe: 429 again
	if _, wait := refusedFor(get(t, rt, context.Background())); wait != 2*defaultPause {
		t.Errorf("the second unstated pause in a row: %s, want %s", wait, 2*defaultPause)
	}
}

// When a pause ends, one request goes first, alone: the others wait for
// its answer, and go only if it was not another 429. A forge that keeps
// answering 429 thus gets one request per wait it asks for, however many
// callers there are.
func TestAfterAPauseOneProbeGoesFirstAlone(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	end := t0.Add(150 * time.Second)
	release := make(chan struct{})
	var mu sync.Mutex
	held := false
	f := &fakeForge{clock: clock}
	f.answer = func(_ *http.Request, now time.Time) *http.Response {
		mu.Lock()
		hold := !held && !now.Before(end)
		held = held || hold
		mu.Unlock()
		if hold {
			<-release // the probe that succeeds is slow: the others queue behind it
		}
		if now.Before(end) {
			return answer(http.StatusTooManyRequests, http.Header{"Retry-After": {"60"}})
		}
		return nil
	}
	b := New(Options{Forge: "lab", Clock: clock})
	rt := b.Transport(f)
	ctx := context.Background()

	get(t, rt, ctx) // t0: 429 → paused until 60s
	for range 10 {
		if reason, _ := refusedFor(get(t, rt, ctx)); reason != RefusedPaused {
			t.Fatalf("during the pause: %q, want paused", reason)
		}
	}
	clock.Advance(60 * time.Second)
	get(t, rt, ctx) // the probe at 60s: 429 → paused until 120s
	if reason, _ := refusedFor(get(t, rt, ctx)); reason != RefusedPaused {
		t.Fatalf("after a probe's 429: %q, want paused", reason)
	}
	clock.Advance(60 * time.Second)
	get(t, rt, ctx) // 120s: 429 → paused until 180s
	clock.Advance(60 * time.Second)
	if n := f.count(); n != 3 {
		t.Fatalf("the forge got %d requests over three pauses, want 3 (the first and one probe each)", n)
	}

	// 180s, the forge is back: the probe is held; ten others queue behind it.
	probe := make(chan *http.Response)
	go func() { probe <- get(t, rt, ctx) }()
	eventually.True(t, time.Minute, "the probe reaches the forge", func() (bool, any) { return f.count() == 4, f.count() })
	others := make(chan *http.Response)
	for range 10 {
		go func() { others <- get(t, rt, InBackground(ctx)) }()
	}
	waitQueued(t, b, Background, 10)
	if n := f.count(); n != 4 {
		t.Fatalf("the forge got %d requests while the probe was out, want the probe alone (4)", n)
	}
	close(release)
	if resp := <-probe; resp.StatusCode != http.StatusOK {
		t.Fatalf("the probe: %d", resp.StatusCode)
	}
	for range 10 {
		if resp := <-others; resp.StatusCode != http.StatusOK {
			t.Errorf("a request after the probe succeeded: %d", resp.StatusCode)
		}
	}
	if n := f.count(); n != 14 {
		t.Errorf("the forge got %d requests, want 14", n)
	}
}

// The ceiling holds in every minute, whatever the callers do: no
// 60-second window (sliding, not only the clock's minutes) sees more
// requests than requests_per_minute.
func TestTheCeilingHoldsInEverySlidingMinute(t *testing.T) {
	for _, perMinute := range []int{1, 7, 60, 600} {
		t.Run(strconv.Itoa(perMinute), func(t *testing.T) {
			clock := clockwork.NewFakeClockAt(t0)
			f := &fakeForge{clock: clock}
			b := New(Options{Forge: "lab", PerMinute: perMinute, Clock: clock})
			rt := b.Transport(f)
			total := 3*perMinute + 5
			drive(t, clock, b, 4, total, func(i int) {
				ctx := context.Background()
				if i%2 == 1 {
					ctx = InBackground(ctx)
				}
				if resp := get(t, rt, ctx); resp.StatusCode != http.StatusOK {
					t.Errorf("request %d: %d", i, resp.StatusCode)
				}
			})
			f.mu.Lock()
			defer f.mu.Unlock()
			slices.SortFunc(f.sent, time.Time.Compare)
			if len(f.sent) != total {
				t.Fatalf("%d requests sent, want %d", len(f.sent), total)
			}
			worst := maxInWindow(f.sent, time.Minute)
			if worst > perMinute {
				t.Errorf("%d requests in one 60s window, ceiling %d", worst, perMinute)
			}
			// And the ceiling is a ceiling, not a crawl: the requests took
			// about total/perMinute minutes.
			if took := f.sent[len(f.sent)-1].Sub(f.sent[0]); took > time.Duration(float64(total)/float64(perMinute)*1.2*float64(time.Minute)) {
				t.Errorf("%d requests took %s at %d a minute", total, took, perMinute)
			}
		})
	}
}

// drive runs n requests from workers goroutines, each request i calling
// do(i), and moves the clock to b's next wake-up each time every worker
// still busy waits in b, until every request is done. Moving it only
// then, and under b's lock, the clock stands still between the moment
// the budget lets a request go and the moment the forge records it, as
// real time nearly does.
func drive(t *testing.T, clock *clockwork.FakeClock, b *Budget, workers, n int, do func(i int)) {
	t.Helper()
	next := make(chan int)
	var active atomic.Int64
	active.Store(int64(workers))
	for range workers {
		go func() {
			defer active.Add(-1)
			for i := range next {
				do(i)
			}
		}()
	}
	go func() {
		for i := range n {
			next <- i
		}
		close(next)
	}()
	// A liveness bound: a budget that left its waiters without a wake-up
	// fails the test instead of hanging it.
	deadline := time.Now().Add(time.Minute)
	wait := func(what string, cond func() bool) {
		for {
			b.mu.Lock()
			ok := cond()
			b.mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
			runtime.Gosched()
		}
	}
	for {
		var fired clockwork.Timer
		wait("every busy worker waits for a wake-up the budget set", func() bool {
			a := active.Load()
			if a == 0 {
				return true
			}
			if int64(len(b.waiting[Foreground])+len(b.waiting[Background])) != a || b.timer == nil {
				return false
			}
			fired = b.timer
			if d := b.timerAt.Sub(clock.Now()); d > 0 {
				clock.Advance(d)
			}
			return true
		})
		if fired == nil {
			return
		}
		wait("the wake-up runs", func() bool { return b.timer != fired })
	}
}

// maxInWindow is the most times in any half-open window [t, t+w).
func maxInWindow(times []time.Time, w time.Duration) int {
	worst := 0
	j := 0
	for i := range times {
		for times[i].Sub(times[j]) >= w {
			j++
		}
		worst = max(worst, i-j+1)
	}
	return worst
}

// Under the ceiling, a foreground request waiting goes before every
// background one that waited longer; a write goes in the foreground
// even from a background context.
func TestForegroundRequestsGoBeforeBackgroundOnes(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	var mu sync.Mutex
	var order []string
	f := &fakeForge{clock: clock, answer: func(r *http.Request, _ time.Time) *http.Response {
		mu.Lock()
		order = append(order, r.Header.Get("X-Test"))
		mu.Unlock()
		return nil
	}}
	b := New(Options{Forge: "lab", PerMinute: 6, Clock: clock}) // a burst of 1, one request every 10s
	rt := b.Transport(f)
	send := func(ctx context.Context, method, name string) chan struct{} {
		done := make(chan struct{})
		req, _ := http.NewRequestWithContext(ctx, method, "http://forge.test/api/v4/projects", nil)
		req.Header.Set("X-Test", name)
		go func() {
			defer close(done)
			if resp, err := rt.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}()
		return done
	}
	bg := InBackground(context.Background())
	<-send(bg, http.MethodGet, "first") // the burst
	var waits []chan struct{}
	for _, name := range []string{"bg1", "bg2"} {
		waits = append(waits, send(bg, http.MethodGet, name))
		waitQueued(t, b, Background, len(waits))
	}
	waits = append(waits, send(context.Background(), http.MethodGet, "fg"))
	waitQueued(t, b, Foreground, 1)
	waits = append(waits, send(bg, http.MethodPut, "write"))
	waitQueued(t, b, Foreground, 2)
	// Every request is queued now: whatever the moments the clock's
	// ticks let them go, the order is the budget's.
	for i := range waits {
		if err := clock.BlockUntilContext(bounded(t), 1); err != nil {
			t.Fatalf("request %d waits and the budget set no timer to wake it", i+2)
		}
		clock.Advance(10 * time.Second)
		waitSent(t, &mu, &order, 2+i)
	}
	for _, w := range waits {
		<-w
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(order, " "); got != "first fg write bg1 bg2" {
		t.Errorf("sent in the order %s, want first fg write bg1 bg2", got)
	}
}

// bounded is a context that ends with the test or after a minute: a
// liveness bound, so that a budget that lost a wake-up fails the test
// instead of hanging it.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// waitQueued waits until n requests of priority p wait in b.
func waitQueued(t *testing.T, b *Budget, p Priority, n int) {
	t.Helper()
	eventually.True(t, time.Minute, fmt.Sprintf("%d %v requests queue", n, p), func() (bool, any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.waiting[p]) >= n, len(b.waiting[p])
	})
}

// waitSent waits until the forge got n requests.
func waitSent(t *testing.T, mu *sync.Mutex, order *[]string, n int) {
	t.Helper()
	eventually.True(t, time.Minute, fmt.Sprintf("the forge gets request %d", n), func() (bool, any) {
		mu.Lock()
		defer mu.Unlock()
		return len(*order) >= n, *order
	})
}

// A request whose context ends while it waits returns the context's error
// and leaves its place to the next; one whose turn would come after its
// deadline is refused at once, with the wait as Retry-After.
func TestAWaitEndsWithItsContext(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	f := &fakeForge{clock: clock}
	b := New(Options{Forge: "lab", PerMinute: 1, Clock: clock})
	rt := b.Transport(f)
	get(t, rt, context.Background()) // the burst of one: the next may go at 60s

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		req, _ := http.NewRequestWithContext(InBackground(ctx), http.MethodGet, "http://forge.test/api/v4/projects", nil)
		_, err := rt.RoundTrip(req)
		errc <- err
	}()
	waitQueued(t, b, Background, 1)
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Errorf("a wait whose context ended: %v, want context.Canceled", err)
	}

	short, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	resp := get(t, rt, short)
	if reason, wait := refusedFor(resp); reason != RefusedDeadline || wait != time.Minute {
		t.Errorf("a request 60s from its turn with 5s to live: %q, Retry-After %s, want deadline with 60s", reason, wait)
	}
	clock.Advance(time.Minute)
	if resp := get(t, rt, context.Background()); resp.StatusCode != http.StatusOK {
		t.Errorf("at its turn: %d", resp.StatusCode)
	}
	if n := f.count(); n != 2 {
		t.Errorf("the forge got %d requests, want 2", n)
	}
}

// State reports the ceiling, the tokens left and the pause, for the
// metrics.
func TestStateShowsTokensAndThePause(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	f := &fakeForge{clock: clock}
	b := New(Options{Forge: "lab", PerMinute: 600, Clock: clock}) // a burst of 30
	if s := b.State(); s.PerMinute != 600 || s.Tokens != 30 || !s.PausedUntil.IsZero() {
		t.Errorf("a fresh budget: %+v, want 600 a minute, 30 tokens, no pause", s)
	}
	rt := b.Transport(f)
	for range 10 {
		get(t, rt, context.Background())
	}
	if s := b.State(); s.Tokens != 20 {
		t.Errorf("after 10 requests: %v tokens, want 20", s.Tokens)
	}
	f.answer = tooMany(t0.Add(time.Hour), http.Header{"Retry-After": {"30"}})
	get(t, rt, context.Background())
	if s := b.State(); !s.PausedUntil.Equal(t0.Add(30 * time.Second)) {
		t.Errorf("after a 429: paused until %v, want %v", s.PausedUntil, t0.Add(30*time.Second))
	}
	if s := New(Options{}).State(); s.Tokens != -1 || s.PerMinute != 0 {
		t.Errorf("without a ceiling: %+v, want -1 tokens", s)
	}
}
