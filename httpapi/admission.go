package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/forge"
)

// Admission: honest work first (docs/DESIGN.md, "Honest work first").
//
// A request is admitted before its body is read, in one of two ways that
// never share bytes:
//
//   - An unauthenticated body (a forge's or an incident provider's
//     delivery, a dashboard form) takes its route's cap from a small
//     budget of its own route (publicBudgets), never a declared length,
//     and only if it fits at once: one that does not is answered 503
//     with Retry-After, so no sender waits behind another. Its body is
//     read under PublicBodyTimeout, so a slow sender is cut off, and a
//     delivery is checked on its headers first (forge.VerifyHeader):
//     GitLab's token is refused before a byte of the body is read.
//   - An authenticated caller is admitted after its token is checked,
//     and only then is its body read: at most MaxRequestsPerIdentity of
//     one identity's requests are handled at once (more wait in that
//     identity's own line), and its body's bytes come from one of two
//     budgets (small bodies, as heartbeats and gate calls send, and large
//     ones, as submissions), in which one identity holds at most its
//     share. A request that does not fit waits without holding up one
//     that does (the budgets are not first-in-first-out), up to
//     BodyWait, then is answered 503 with Retry-After.

const (
	// MaxRequestsPerIdentity bounds the requests of one identity handled
	// at once; more wait their turn in their identity's own line, so that
	// one caller in a loop cannot crowd out the others.
	MaxRequestsPerIdentity = 8
	// MaxQueuedPerIdentity bounds the requests of one identity waiting
	// for their turn; one more is answered 429 with Retry-After.
	MaxQueuedPerIdentity = 64
	// MaxSmallBody is the largest body counted as small: the control
	// plane's cap. Small bodies have a budget of their own, so that a
	// heartbeat or a gate call never waits for submissions' bytes.
	MaxSmallBody = maxControlBody
	// SmallBodyBytesInFlight bounds the bytes of small bodies handled at
	// once, of which one identity holds at most SmallBodyBytesPerIdentity.
	SmallBodyBytesInFlight    = 8 << 20
	SmallBodyBytesPerIdentity = MaxRequestsPerIdentity * MaxSmallBody
	// MaxBodyBytesPerIdentity bounds the bytes of large bodies one
	// identity holds at once, of MaxBodyBytesInFlight: one submission of
	// the largest size, so that another identity always finds a third of
	// the budget free of it.
	MaxBodyBytesPerIdentity = MaxSubmitBytes

	// PublicBodyTimeout bounds how long an unauthenticated body takes
	// to arrive: a forge sends a delivery at once, a slow sender is cut
	// off with 408 and its budget is free again.
	PublicBodyTimeout = 5 * time.Second
	// PublicBodyWait bounds how long an unauthenticated body waits for
	// room in its budget: a burst of a provider's alerts gets in, one
	// after another; a sender that would wait longer is answered 503 with
	// Retry-After. A waiting request holds nothing, so it delays no other.
	PublicBodyWait = time.Second
	// WebhookBytesInFlight is the budget of each configured forge's
	// deliveries being read and handled at once: four at its cap.
	WebhookBytesInFlight = 4 * forge.MaxBodyBytes
	// IncidentBytesInFlight is the budget of each incident provider's
	// deliveries: two at their cap.
	IncidentBytesInFlight = 2 * incident.MaxDeliveryBytes
	// MaxFormBody bounds a dashboard form's body (the dashboard caps a
	// login at less), and FormBytesInFlight the budget of the forms being
	// read at once: sixteen at their cap.
	MaxFormBody       = 64 << 10
	FormBytesInFlight = 16 * MaxFormBody
)

// budget is a number of bytes that requests take and give back. It is
// not first-in-first-out: a request that does not fit waits without
// holding up a later one that does (a FIFO semaphore made every
// heartbeat wait behind one large body). Each key (an identity) holds at
// most perKey of it; 0: no such bound.
type budget struct {
	mu      sync.Mutex
	limit   int64
	perKey  int64
	used    int64
	byKey   map[string]int64
	changed chan struct{} // closed, and replaced, when bytes are given back
}

func newBudget(limit, perKey int64) *budget {
	return &budget{limit: limit, perKey: perKey, byKey: map[string]int64{}, changed: make(chan struct{})}
}

// fits reports whether key may take n more bytes now; b.mu is held.
func (b *budget) fits(key string, n int64) bool {
	return b.used+n <= b.limit && (b.perKey == 0 || b.byKey[key]+n <= b.perKey)
}

// tryTake takes n bytes for key if they fit now.
func (b *budget) tryTake(key string, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.fits(key, n) {
		return false
	}
	b.used += n
	b.byKey[key] += n
	return true
}

// take takes n bytes for key, waiting up to wait on clock for room; false
// if there was none by then or ctx ended.
func (b *budget) take(ctx context.Context, clock clockwork.Clock, key string, n int64, wait time.Duration) bool {
	var timer clockwork.Timer
	for {
		b.mu.Lock()
		if b.fits(key, n) {
			b.used += n
			b.byKey[key] += n
			b.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return true
		}
		changed := b.changed
		b.mu.Unlock()
		if timer == nil {
			timer = clock.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-changed:
		case <-timer.Chan():
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// give gives back n bytes key took.
func (b *budget) give(key string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.byKey[key] -= n; b.byKey[key] <= 0 {
		delete(b.byKey, key)
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// admission holds what requests take while they are handled: each
// identity's line, the authenticated callers' body budgets and the
// unauthenticated routes' own budgets.
type admission struct {
	mu     sync.Mutex
	lines  map[string]*identityLine
	small  *budget // bodies of at most MaxSmallBody
	large  *budget // bodies larger, or of unknown length
	public map[string]*budget
}

// identityLine is one identity's requests: those being handled hold a
// slot; the rest wait for one.
type identityLine struct {
	slots   chan struct{}
	waiting int // guarded by admission.mu
	users   int // requests holding or waiting for a slot; guarded by admission.mu
}

func newAdmission() *admission {
	return &admission{lines: map[string]*identityLine{},
		small:  newBudget(SmallBodyBytesInFlight, SmallBodyBytesPerIdentity),
		large:  newBudget(MaxBodyBytesInFlight, MaxBodyBytesPerIdentity),
		public: map[string]*budget{}}
}

// line is identity's line, counted as used until leave.
func (a *admission) line(identity string) *identityLine {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.lines[identity]
	if l == nil {
		l = &identityLine{slots: make(chan struct{}, MaxRequestsPerIdentity)}
		a.lines[identity] = l
	}
	l.users++
	return l
}

// leave ends a request's use of identity's line; an unused line is
// dropped, so that the lines are those of the identities being served.
func (a *admission) leave(identity string, l *identityLine) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l.users--; l.users == 0 {
		delete(a.lines, identity)
	}
}

// publicBudget is the budget of one unauthenticated route (a configured
// forge's deliveries, a provider's, the dashboard's forms): its name is
// one the server knows, never one a sender chose.
func (a *admission) publicBudget(name string, limit int64) *budget {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.public[name]
	if b == nil {
		b = newBudget(limit, 0)
		a.public[name] = b
	}
	return b
}

// admittedKey marks a request's context as admitted for an identity: a
// request the MCP transport makes in process for a tool call is part of
// the call already admitted, and is not counted again (it would wait for
// its own caller's slot).
type admittedKey struct{}

// admit admits an authenticated caller's request: a slot in identity's
// line, then its body's bytes. It answers the request itself when it
// cannot (429 when identity's line is full or its wait ran out, 503 when
// the bytes are not free in time, both with Retry-After) and returns
// false; else the context to handle it with, and a release to call when
// it has been handled.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, identity string) (context.Context, func(), bool) {
	ctx := r.Context()
	if ctx.Value(admittedKey{}) == identity {
		return ctx, func() {}, true
	}
	a := s.admission
	l := a.line(identity)
	select {
	case l.slots <- struct{}{}:
	default:
		if !s.waitInLine(ctx, l) {
			a.leave(identity, l)
			w.Header().Set("Retry-After", "1")
			s.writeProblem(w, problemOf(http.StatusTooManyRequests, wq.EUNAVAILABLE, "identity_busy",
				"too many of this identity's requests are being handled at once (at most "+
					strconv.Itoa(MaxRequestsPerIdentity)+"); try again shortly"))
			return nil, nil, false
		}
	}
	weight, pool := bodyWeight(r), a.small
	if weight > MaxSmallBody {
		pool = a.large
	}
	if weight > 0 && !pool.take(ctx, s.clock, identity, weight, BodyWait) {
		<-l.slots
		a.leave(identity, l)
		w.Header().Set("Retry-After", "1")
		s.writeProblem(w, problemOf(http.StatusServiceUnavailable, wq.EUNAVAILABLE, "busy",
			"too many large request bodies are being handled at once; try again shortly"))
		return nil, nil, false
	}
	return context.WithValue(ctx, admittedKey{}, identity), func() {
		if weight > 0 {
			pool.give(identity, weight)
		}
		<-l.slots
		a.leave(identity, l)
	}, true
}

// waitInLine waits up to BodyWait for a slot in l; false if there was
// none by then, or too many of the identity's requests wait already.
func (s *Server) waitInLine(ctx context.Context, l *identityLine) bool {
	a := s.admission
	a.mu.Lock()
	if l.waiting >= MaxQueuedPerIdentity {
		a.mu.Unlock()
		return false
	}
	l.waiting++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		l.waiting--
		a.mu.Unlock()
	}()
	timer := s.clock.NewTimer(BodyWait)
	defer timer.Stop()
	select {
	case l.slots <- struct{}{}:
		return true
	case <-timer.Chan():
		return false
	case <-ctx.Done():
		return false
	}
}

// bodyWeight is what a request's body takes from the budget while it is
// read and handled: its declared length, which the server never reads
// past, or, for a body of unknown length (chunked), the largest a route
// reads; 0 without a body.
func bodyWeight(r *http.Request) int64 {
	switch {
	case !hasBody(r):
		return 0
	case r.ContentLength > 0 && r.ContentLength < MaxSubmitBytes:
		return r.ContentLength
	default:
		return MaxSubmitBytes
	}
}

// readPublicBody reads an unauthenticated body of at most max bytes
// under the budget named pool (made with limit the first time): max is
// taken at once or the request is answered 503 with Retry-After, and the
// body must arrive within PublicBodyTimeout, else 408. A larger body is
// 413, one that cannot be read is status. On success the caller holds
// the bytes until it calls release, once it has handled the body.
func (s *Server) readPublicBody(w http.ResponseWriter, r *http.Request, pool string, limit, max int64, status int) ([]byte, func(), bool) {
	b := s.admission.publicBudget(pool, limit)
	if !b.take(r.Context(), s.clock, "", max, PublicBodyWait) {
		w.Header().Set("Retry-After", "1")
		s.writeProblem(w, problemOf(http.StatusServiceUnavailable, wq.EUNAVAILABLE, "busy",
			"too many unauthenticated bodies are being received at once; try again shortly"))
		return nil, nil, false
	}
	release := func() { b.give("", max) }
	if !hasBody(r) {
		return nil, release, true
	}
	type read struct {
		body []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		// A LimitReader, not MaxBytesReader: this goroutine may outlive
		// the handler, which alone writes to w.
		body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
		done <- read{body, err}
	}()
	timer := s.clock.NewTimer(PublicBodyTimeout)
	defer timer.Stop()
	select {
	case got := <-done:
		switch {
		case got.err != nil:
			release()
			s.problem(w, r, status, wq.EINVALID, "body: "+got.err.Error())
			return nil, nil, false
		case int64(len(got.body)) > max:
			release()
			w.Header().Set("Connection", "close")
			s.problem(w, r, http.StatusRequestEntityTooLarge, wq.EINVALID, "body is larger than "+strconv.FormatInt(max, 10)+" bytes")
			return nil, nil, false
		}
		// Read: what it holds while it is handled is what it is, so that
		// a burst of small deliveries is handled side by side.
		held := int64(len(got.body))
		b.give("", max-held)
		return got.body, func() { b.give("", held) }, true
	case <-timer.Chan():
	case <-r.Context().Done():
	}
	// Too slow: the connection's read ends now (where the server
	// supports it), and the bytes are given back once the reader has
	// stopped, not before.
	http.NewResponseController(w).SetReadDeadline(time.Now())
	go func() {
		<-done
		release()
	}()
	w.Header().Set("Connection", "close")
	s.writeProblem(w, problemOf(http.StatusRequestTimeout, wq.EINVALID, "body_too_slow",
		"the body did not arrive within "+PublicBodyTimeout.String()))
	return nil, nil, false
}

// formBodies reads the body of a dashboard form (POST under /ui/, the
// login first of all, which no session vouches for) under the forms'
// own budget and deadline, before the dashboard sees it.
func (s *Server) formBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !hasBody(r) {
			h.ServeHTTP(w, r)
			return
		}
		body, release, ok := s.readPublicBody(w, r, "dashboard forms", FormBytesInFlight, MaxFormBody, http.StatusBadRequest)
		if !ok {
			return
		}
		defer release()
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		h.ServeHTTP(w, r)
	})
}
