package auth

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
)

// Defaults of FailureLimiter (auth.failure_limit, auth.failure_window).
const (
	DefaultFailureLimit  = 10
	DefaultFailureWindow = time.Minute
	// defaultMaxAddresses bounds the addresses a limiter remembers: at
	// most the limit's failure times each, a few megabytes at most.
	defaultMaxAddresses = 10000
	// defaultMaxValidTokens bounds the hashes of recently valid tokens,
	// and validTokenTTL how long one is remembered since its last use.
	defaultMaxValidTokens = 4096
	validTokenTTL         = 24 * time.Hour
)

// ReasonThrottled is the stable reason of a ThrottledError, in problem
// documents and audit entries.
const ReasonThrottled = "auth_throttled"

// LimiterMetrics counts the attempts a FailureLimiter refuses
// (*metrics.Metrics implements it).
type LimiterMetrics interface {
	AuthThrottled()
}

// LimiterOptions configure a FailureLimiter. Zero fields take the
// defaults.
type LimiterOptions struct {
	// Limit is how many failed authentications from one client address
	// within Window are answered normally; further attempts with a token
	// not recently valid are refused unvalidated until the oldest of them
	// leaves the window.
	Limit  int
	Window time.Duration
	// MaxAddresses bounds the addresses remembered; the one that failed
	// least recently is forgotten first.
	MaxAddresses int
	// MaxValidTokens bounds the hashes of recently valid tokens.
	MaxValidTokens int
	Clock          clockwork.Clock // nil: the real clock
	Metrics        LimiterMetrics  // nil: not counted
}

// FailureLimiter makes token guessing slow: it counts failed
// authentications per client address, and once an address has failed
// Limit times within Window it refuses that address's further attempts
// with a ThrottledError, without validating them, until the oldest
// failure leaves the window. A token that authenticated recently (its
// SHA-256 is kept in a bounded set) is still validated and passes from a
// throttled address, so that a guesser behind the same proxy or NAT does
// not lock valid callers out. Attempts in flight count against the limit
// as if they will fail, so that a burst of concurrent guesses cannot pass
// the check together. Memory is bounded: at most MaxAddresses addresses
// (IPv6 by /64, which one host usually holds whole) and MaxValidTokens
// hashes. Safe for concurrent use; one limiter serves the API and the
// dashboard, so that failures on either count together.
type FailureLimiter struct {
	o LimiterOptions

	mu sync.Mutex
	// addrs are the remembered addresses, most recently failed (or
	// tried) at the front of order.
	addrs map[string]*list.Element // of *addrState
	order *list.List
	// valid are the hashes of recently valid tokens, most recently
	// used at the front of validOrder.
	valid      map[[sha256.Size]byte]*list.Element // of *validToken
	validOrder *list.List
}

type addrState struct {
	key string
	// failures are the times of the latest failures, at most Limit, as
	// a ring: next is where the next one goes, and, once the ring is
	// full, the oldest.
	failures []time.Time
	next     int
	inflight int // attempts being validated
}

type validToken struct {
	hash [sha256.Size]byte
	seen time.Time
}

// NewFailureLimiter returns a limiter with o's settings, defaults for
// the zero ones.
func NewFailureLimiter(o LimiterOptions) *FailureLimiter {
	if o.Limit <= 0 {
		o.Limit = DefaultFailureLimit
	}
	if o.Window <= 0 {
		o.Window = DefaultFailureWindow
	}
	if o.MaxAddresses <= 0 {
		o.MaxAddresses = defaultMaxAddresses
	}
	if o.MaxValidTokens <= 0 {
		o.MaxValidTokens = defaultMaxValidTokens
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	return &FailureLimiter{o: o, addrs: map[string]*list.Element{}, order: list.New(),
		valid: map[[sha256.Size]byte]*list.Element{}, validOrder: list.New()}
}

// ThrottledError refuses an attempt from an address that failed too
// often. It unwraps to an EUNAVAILABLE *wq.Error with reason
// auth_throttled ("try again later"); HTTP answers it 429 with
// Retry-After.
type ThrottledError struct {
	// Client is the address the failures were counted for (an IPv6
	// address's /64), for the audit.
	Client string
	// RetryAfter is how long until the address may try again.
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("%s: %s", wq.EUNAVAILABLE, e.message())
}

func (e *ThrottledError) message() string {
	return fmt.Sprintf("too many failed authentications from this address: retry in %d s", e.RetryAfterSeconds())
}

// Unwrap makes wq.ErrorCode read the refusal as EUNAVAILABLE.
func (e *ThrottledError) Unwrap() error {
	return &wq.Error{Code: wq.EUNAVAILABLE, Reason: ReasonThrottled, Message: e.message()}
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up, at least
// 1: what a Retry-After header says.
func (e *ThrottledError) RetryAfterSeconds() int {
	return max(1, int((e.RetryAfter+time.Second-1)/time.Second))
}

// Authenticate authenticates token, presented from remoteAddr (a
// request's RemoteAddr, host:port), with authn. It returns a
// *ThrottledError without calling authn when the address has failed
// too often and the token was not valid recently. An EUNAUTHORIZED
// answer of authn counts as a failure of the address; other errors (an
// issuer unreachable) do not, since they say nothing of the token.
func (l *FailureLimiter) Authenticate(ctx context.Context, authn Authenticator, remoteAddr, token string) (*Caller, error) {
	key := ClientKey(remoteAddr)
	hash := sha256.Sum256([]byte(token))
	l.mu.Lock()
	now := l.o.Clock.Now()
	known := l.recentlyValid(hash, now)
	var st *addrState
	if !known {
		st = l.state(key)
		if wait := l.blockedFor(st, now); wait > 0 {
			l.release(st, now)
			l.mu.Unlock()
			if l.o.Metrics != nil {
				l.o.Metrics.AuthThrottled()
			}
			return nil, &ThrottledError{Client: key, RetryAfter: wait}
		}
		st.inflight++
	}
	l.mu.Unlock()

	caller, err := authn.Authenticate(ctx, token)

	l.mu.Lock()
	defer l.mu.Unlock()
	now = l.o.Clock.Now()
	if st != nil {
		st.inflight = max(0, st.inflight-1)
	}
	switch {
	case err == nil:
		l.rememberValid(hash, now)
	case wq.ErrorCode(err) == wq.EUNAUTHORIZED:
		l.forgetValid(hash)
		if st == nil {
			st = l.state(key)
		}
		l.fail(st, now)
	}
	if st != nil {
		l.release(st, now)
	}
	return caller, err
}

// ClientKey is the address failures are counted for: the host of
// remoteAddr, an IPv4-mapped address as IPv4, and an IPv6 address's /64.
// Anything that does not parse counts as itself.
func ClientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// state returns key's entry, made (and the least recently failed one
// forgotten when the map is full) if it has none. l.mu is held.
func (l *FailureLimiter) state(key string) *addrState {
	if e, ok := l.addrs[key]; ok {
		return e.Value.(*addrState)
	}
	for len(l.addrs) >= l.o.MaxAddresses {
		oldest := l.order.Back()
		l.order.Remove(oldest)
		delete(l.addrs, oldest.Value.(*addrState).key)
	}
	st := &addrState{key: key}
	l.addrs[key] = l.order.PushFront(st)
	return st
}

// blockedFor is how long st's address must wait: until its oldest
// failure leaves the window, when its failures and attempts in flight
// reach the limit; 0 when it may try now. l.mu is held.
func (l *FailureLimiter) blockedFor(st *addrState, now time.Time) time.Duration {
	recent := l.recent(st, now)
	if len(recent)+st.inflight < l.o.Limit {
		return 0
	}
	// The failure that has to leave the window for one more attempt.
	i := len(recent) + st.inflight - l.o.Limit
	if i >= len(recent) {
		// Attempts in flight alone reach the limit: wait for their answers.
		return time.Second
	}
	return max(time.Second, recent[i].Add(l.o.Window).Sub(now))
}

// recent are st's failures within the window, oldest first.
func (l *FailureLimiter) recent(st *addrState, now time.Time) []time.Time {
	out := make([]time.Time, 0, len(st.failures))
	n := len(st.failures)
	for i := range n {
		t := st.failures[(st.next+i)%n]
		if now.Sub(t) < l.o.Window {
			out = append(out, t)
		}
	}
	return out
}

// fail records a failure of st's address at now. l.mu is held.
func (l *FailureLimiter) fail(st *addrState, now time.Time) {
	if len(st.failures) < l.o.Limit {
		st.failures = append(st.failures, now)
		st.next = len(st.failures) % l.o.Limit
	} else {
		st.failures[st.next] = now
		st.next = (st.next + 1) % l.o.Limit
	}
	if e, ok := l.addrs[st.key]; ok {
		l.order.MoveToFront(e)
	}
}

// release forgets st's address once nothing about it matters any more:
// no attempt in flight and no failure within the window. l.mu is held.
func (l *FailureLimiter) release(st *addrState, now time.Time) {
	if st.inflight > 0 || len(l.recent(st, now)) > 0 {
		return
	}
	if e, ok := l.addrs[st.key]; ok && e.Value.(*addrState) == st {
		l.order.Remove(e)
		delete(l.addrs, st.key)
	}
}

// recentlyValid reports whether the token of hash authenticated within
// validTokenTTL. l.mu is held.
func (l *FailureLimiter) recentlyValid(hash [sha256.Size]byte, now time.Time) bool {
	e, ok := l.valid[hash]
	if !ok {
		return false
	}
	if now.Sub(e.Value.(*validToken).seen) >= validTokenTTL {
		l.forgetValid(hash)
		return false
	}
	return true
}

func (l *FailureLimiter) rememberValid(hash [sha256.Size]byte, now time.Time) {
	if e, ok := l.valid[hash]; ok {
		e.Value.(*validToken).seen = now
		l.validOrder.MoveToFront(e)
		return
	}
	for len(l.valid) >= l.o.MaxValidTokens {
		oldest := l.validOrder.Back()
		l.validOrder.Remove(oldest)
		delete(l.valid, oldest.Value.(*validToken).hash)
	}
	l.valid[hash] = l.validOrder.PushFront(&validToken{hash: hash, seen: now})
}

func (l *FailureLimiter) forgetValid(hash [sha256.Size]byte) {
	if e, ok := l.valid[hash]; ok {
		l.validOrder.Remove(e)
		delete(l.valid, hash)
	}
}
