// Package budget is a forge's request budget (issue 53): one per
// configured forge, shared by every caller of that forge — the executors
// of every item, the reconciles, the bulk reconciliation, the control
// plane's reads, the forge checks, the herder — because it sits where
// they all meet, in the RoundTripper of the forge's one HTTP client
// (Budget.Transport). A forge is rate-limited per token, and one token
// carries every caller: a limit one caller meets is every caller's.
//
// It does two things:
//
//   - The forge's own word pauses every caller. A 429 (its Retry-After,
//     in seconds or as an HTTP date, or GitLab's RateLimit-Reset), or an
//     answer with GitLab's RateLimit-Remaining: 0 and RateLimit-Reset,
//     starts a pause until the forge's reset. During it no request is
//     sent: each is answered at once by the budget itself, as the forge
//     would have answered it (429 with Retry-After, the wait left), so
//     that the adapters classify it as a rate limit and the engine backs
//     the item off until the pause ends without a call. When the pause
//     ends one request goes first, alone, as a probe; the others wait for
//     its answer. A forge that answers 429 to everything for a while thus
//     sees the requests already in flight when it started, and then one
//     request per wait it asked for: a handful in all, not a handful per
//     item.
//   - An optional ceiling (forges[].requests_per_minute) keeps the
//     service under a rate the operator chose, with a small burst. It
//     holds in every minute, not on average: the bucket's burst and rate
//     are such that no 60-second window sees more requests than the
//     ceiling. Requests wait their turn (honouring their context), and
//     foreground requests go before background ones: writes and reads
//     that an event or a caller asked for are foreground; periodic sweeps
//     mark their context with InBackground and take what the foreground
//     leaves. A write (any method but GET and HEAD) is always foreground.
//
// Time is the injected clock's, so that tests drive pauses and the
// ceiling without sleeping.
package budget

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/workqueue-dev/workqueue/forge"
)

// Priority is the order in which waiting requests are served.
type Priority int

const (
	// Foreground is a write, or a read an event or a caller is waiting
	// for: the default.
	Foreground Priority = iota
	// Background is a periodic sweep's read (the bulk reconciliation, a
	// scheduled reconcile, the inventory's sync, the webhook check): it
	// is sent only when no foreground request waits.
	Background
)

// Priorities are the priorities, for the metrics' label values.
var Priorities = []Priority{Foreground, Background}

func (p Priority) String() string {
	if p == Background {
		return "background"
	}
	return "foreground"
}

type priorityKey struct{}

// InBackground marks ctx's forge reads as a periodic sweep's: they wait
// behind every foreground request.
func InBackground(ctx context.Context) context.Context {
	return context.WithValue(ctx, priorityKey{}, Background)
}

// PriorityOf is ctx's priority (Foreground unless InBackground marked it).
func PriorityOf(ctx context.Context) Priority {
	if p, ok := ctx.Value(priorityKey{}).(Priority); ok {
		return p
	}
	return Foreground
}

// Refusal reasons: why the budget answered a request itself.
const (
	// RefusedPaused: the forge's rate limit is in force (a pause).
	RefusedPaused = "paused"
	// RefusedDeadline: the request's turn under the ceiling comes after
	// its context's deadline.
	RefusedDeadline = "deadline"
)

// RefusalReasons are the refusal reasons, for the metrics' label values.
var RefusalReasons = []string{RefusedPaused, RefusedDeadline}

// HeaderRefused is the header of an answer the budget made itself,
// without sending the request: its value is the refusal reason.
const HeaderRefused = "X-Workqueue-Budget"

// Metrics receives what a budget measures (package metrics implements it;
// a nil *metrics.Metrics does nothing). Calls never block.
type Metrics interface {
	// BudgetWaited: a request of a priority was sent after waiting d
	// for its turn (0 for most).
	BudgetWaited(forge, priority string, d time.Duration)
	// BudgetRefused: a request was answered by the budget, not sent.
	BudgetRefused(forge, priority, reason string)
	// BudgetPaused: the forge's answer paused every caller.
	BudgetPaused(forge string)
}

// Options configure a Budget.
type Options struct {
	// Forge is the configured forge's name, for metrics and logs.
	Forge string
	// PerMinute is the ceiling of requests in any minute; 0: none (only
	// the forge's own rate limit pauses).
	PerMinute int
	Clock     clockwork.Clock // nil: the real clock
	Metrics   Metrics         // nil: not measured
	Log       *slog.Logger    // nil: not logged
}

// Pause lengths when the forge says nothing of when to come back (a 429
// without Retry-After or RateLimit-Reset): defaultPause, doubling with
// each such pause in a row up to maxDefaultPause.
const (
	defaultPause    = time.Minute
	maxDefaultPause = 15 * time.Minute
)

// Budget is one forge's budget. Its methods are safe for concurrent use.
type Budget struct {
	forge   string
	clock   clockwork.Clock
	metrics Metrics
	log     *slog.Logger

	mu sync.Mutex
	// The ceiling, as a generic cell rate algorithm: a request conforms
	// at now when now >= tat - tolerance, and moves tat one interval on.
	// interval is 0 without a ceiling.
	perMinute int
	burst     int
	interval  time.Duration
	tolerance time.Duration
	tat       time.Time
	// The pause: nothing is sent before pausedUntil. recovering says a
	// pause started and no answer since said the forge takes requests
	// again; probing, that the one request sent to find out is in flight.
	pausedUntil   time.Time
	recovering    bool
	probing       bool
	unstatedPause int // pauses in a row the forge gave no wait for
	// The requests waiting for their turn, by priority, first come first;
	// changed is closed (and made again) whenever one of them may go.
	waiting [2][]*waiter
	changed chan struct{}
	timer   clockwork.Timer
	timerAt time.Time
}

type waiter struct{ p Priority }

// New returns a forge's budget.
func New(o Options) *Budget {
	b := &Budget{forge: o.Forge, clock: o.Clock, metrics: o.Metrics, log: o.Log, changed: make(chan struct{})}
	if b.clock == nil {
		b.clock = clockwork.NewRealClock()
	}
	if b.metrics == nil {
		b.metrics = noMetrics{}
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.log = b.log.With("component", "forge-budget", "forge", o.Forge)
	if n := o.PerMinute; n > 0 {
		// A bucket of burst requests refilled at rate r per minute lets
		// at most burst + r - 1 requests into any 60-second window (the
		// last of them needs a whole token before the window ends):
		// r = n - burst + 1 keeps every window at n or under. The
		// interval is rounded up so that the rate never exceeds r.
		b.perMinute = n
		b.burst = max(1, n/20) // three seconds' worth
		rate := int64(n - b.burst + 1)
		b.interval = time.Duration((int64(time.Minute) + rate - 1) / rate)
		b.tolerance = time.Duration(b.burst-1) * b.interval
	}
	return b
}

// State is a budget's state at one time, for the metrics.
type State struct {
	// PerMinute is the ceiling (0: none).
	PerMinute int
	// Tokens are the requests that may go at once before the ceiling
	// makes the next one wait (0 to the burst); without a ceiling, -1.
	Tokens float64
	// PausedUntil is the end of the forge's pause (zero: not paused).
	PausedUntil time.Time
}

// State returns the budget's state now.
func (b *Budget) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	s := State{PerMinute: b.perMinute, Tokens: -1}
	if now.Before(b.pausedUntil) {
		s.PausedUntil = b.pausedUntil
	}
	if b.interval > 0 {
		// tat is when the bucket is full again.
		s.Tokens = float64(b.burst)
		if ahead := b.tat.Sub(now); ahead > 0 {
			s.Tokens = max(0, float64(b.burst)-float64(ahead)/float64(b.interval))
		}
	}
	return s
}

// Transport returns next (nil: http.DefaultTransport) with every request
// passing the budget first.
func (b *Budget) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{b: b, next: next}
}

type transport struct {
	b    *Budget
	next http.RoundTripper
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	p := PriorityOf(r.Context())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		p = Foreground // a write is never a sweep's
	}
	probe, refused, err := t.b.acquire(r.Context(), p)
	if err != nil || refused != nil {
		if r.Body != nil {
			r.Body.Close() // a RoundTripper closes the body, sent or not
		}
		if err != nil {
			return nil, err
		}
		t.b.metrics.BudgetRefused(t.b.forge, p.String(), refused.reason)
		return refused.response(r, t.b.forge), nil
	}
	resp, err := t.next.RoundTrip(r)
	t.b.answered(resp, probe)
	return resp, err
}

// refusal is a request the budget answers itself.
type refusal struct {
	reason string
	wait   time.Duration // how long until it may be sent
}

// response is the answer the forge would have given: 429 with
// Retry-After, in whole seconds rounded up, and a message saying that
// nothing was sent.
func (f *refusal) response(r *http.Request, forgeName string) *http.Response {
	secs := max(1, int64((f.wait+time.Second-1)/time.Second))
	msg := fmt.Sprintf("forge %s is rate limiting for %ds more, as its last answer said: workqueue did not send the request", forgeName, secs)
	if f.reason == RefusedDeadline {
		msg = fmt.Sprintf("forge %s: the request's turn under forges[].requests_per_minute comes in %ds, after its deadline: workqueue did not send it", forgeName, secs)
	}
	body := `{"message":` + strconv.Quote(msg) + `}`
	return &http.Response{
		Status: "429 Too Many Requests", StatusCode: http.StatusTooManyRequests,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}, "Retry-After": {strconv.FormatInt(secs, 10)},
			HeaderRefused: {f.reason}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}
}

// acquire waits for the request's turn: it returns whether the request is
// the probe after a pause, or the refusal the budget answers instead, or
// ctx's error when ctx ended first.
func (b *Budget) acquire(ctx context.Context, p Priority) (probe bool, refused *refusal, err error) {
	start := b.clock.Now()
	w := &waiter{p: p}
	queued := false
	b.mu.Lock()
	defer func() {
		if queued {
			b.dequeue(w)
		}
		b.mu.Unlock()
		if refused == nil && err == nil {
			b.metrics.BudgetWaited(b.forge, p.String(), b.clock.Since(start))
		}
	}()
	for {
		now := b.clock.Now()
		if now.Before(b.pausedUntil) {
			return false, &refusal{reason: RefusedPaused, wait: b.pausedUntil.Sub(now)}, nil
		}
		if b.first(w, queued) && !b.probing {
			at := b.conformsAt(now)
			if !at.After(now) {
				b.take(now)
				if b.recovering {
					b.probing, probe = true, true
				}
				return probe, nil, nil
			}
			b.wakeAt(at)
		}
		if !queued {
			if r := b.tooLate(ctx, w, now); r != nil {
				return false, r, nil
			}
			b.waiting[p] = append(b.waiting[p], w)
			queued = true
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			b.mu.Lock()
			return false, nil, ctx.Err()
		}
		b.mu.Lock()
	}
}

// first says whether no request waiting goes before w: none of a higher
// priority, and none of its own that came earlier.
func (b *Budget) first(w *waiter, queued bool) bool {
	if w.p == Background && len(b.waiting[Foreground]) > 0 {
		return false
	}
	q := b.waiting[w.p]
	if queued {
		return q[0] == w
	}
	return len(q) == 0
}

// conformsAt is when the ceiling lets the next request go (now or
// earlier when it may go at once).
func (b *Budget) conformsAt(now time.Time) time.Time {
	if b.interval == 0 {
		return now
	}
	return b.tat.Add(-b.tolerance)
}

// take spends one request of the ceiling at now.
func (b *Budget) take(now time.Time) {
	if b.interval == 0 {
		return
	}
	b.tat = later(b.tat, now).Add(b.interval)
}

// tooLate refuses a foreground request whose turn under the ceiling would
// come after its context's deadline: failing now, with the wait as
// Retry-After, frees its caller (an executor backs the item off) instead
// of holding it until the deadline. A background request waits as long
// as its context lets it.
func (b *Budget) tooLate(ctx context.Context, w *waiter, now time.Time) *refusal {
	deadline, ok := ctx.Deadline()
	if !ok || w.p != Foreground || b.interval == 0 || b.probing {
		return nil
	}
	turn := later(b.conformsAt(now), now).Add(time.Duration(len(b.waiting[Foreground])) * b.interval)
	wait := turn.Sub(now)
	if wait <= time.Until(deadline) {
		return nil
	}
	return &refusal{reason: RefusedDeadline, wait: wait}
}

// dequeue removes w from its queue, and lets the next ones look again.
func (b *Budget) dequeue(w *waiter) {
	q := b.waiting[w.p]
	if i := slices.Index(q, w); i >= 0 {
		b.waiting[w.p] = slices.Delete(q, i, i+1)
	}
	b.wake()
}

// wake lets every waiting request look at the state again.
func (b *Budget) wake() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// wakeAt arranges a wake at at, when the ceiling lets the next request
// go, unless one comes earlier.
func (b *Budget) wakeAt(at time.Time) {
	if b.timer != nil && !b.timerAt.After(at) {
		return
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timerAt = at
	var t clockwork.Timer
	// The callback takes the lock the caller holds: t is set before it runs.
	t = b.clock.AfterFunc(at.Sub(b.clock.Now()), func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.timer == t {
			b.timer = nil
		}
		b.wake()
	})
	b.timer = t
}

// answered reads the forge's answer to a request the budget let through:
// a rate limit pauses every caller; any other answer to the probe ends
// the recovery.
func (b *Budget) answered(resp *http.Response, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	wait, stated, limited := b.pauseOf(resp, now)
	if limited {
		if !stated {
			wait = min(defaultPause<<min(b.unstatedPause, 8), maxDefaultPause)
			b.unstatedPause++
		}
		until := now.Add(wait)
		if until.After(b.pausedUntil) {
			b.pausedUntil = until
			b.log.Warn("the forge is rate limiting: every caller pauses until its reset",
				"status", resp.StatusCode, "until", until, "wait", wait.Round(time.Second), "stated", stated)
			b.metrics.BudgetPaused(b.forge)
		}
		b.recovering = true
	}
	if probe {
		// An answer that is not a rate limit ends the recovery; no answer
		// at all (the network, the caller gave up) says nothing, and the
		// next request probes again.
		b.probing = false
		if resp != nil && !limited {
			b.recovering, b.unstatedPause = false, 0
		}
	}
	if limited || probe {
		b.wake() // the waiting requests are refused now, or may go
	}
}

// pauseOf reads whether resp puts the forge's rate limit in force, and
// for how long: a 429 until its Retry-After or RateLimit-Reset (stated
// false when it gives neither), and any answer with RateLimit-Remaining
// 0 until its reset (when it says when: no reset, no pause).
func (b *Budget) pauseOf(resp *http.Response, now time.Time) (wait time.Duration, stated, limited bool) {
	if resp == nil {
		return 0, false, false
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		wait = forge.RetryAfter(resp.StatusCode, resp.Header, now)
		return wait, wait > 0, true
	}
	if strings.TrimSpace(resp.Header.Get("RateLimit-Remaining")) == "0" {
		if wait = forge.RateLimitReset(resp.Header, now); wait > 0 {
			return wait, true, true
		}
	}
	return 0, false, false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

type noMetrics struct{}

func (noMetrics) BudgetWaited(string, string, time.Duration) {}
func (noMetrics) BudgetRefused(string, string, string)       {}
func (noMetrics) BudgetPaused(string)                        {}
