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

// Defaults of FailureLimiter (auth.failure_limit, auth.failure_window,
// auth.failure_global_limit).
const (
	DefaultFailureLimit  = 10
	DefaultFailureWindow = time.Minute
	// DefaultGlobalFailureLimit is the failures within the window, from
	// all addresses together, past which every address is throttled: a
	// guesser with many prefixes meets it, an honest fleet never does.
	DefaultGlobalFailureLimit = 1000
	// wideLimitFactor sets an IPv6 /48's limit from its /64's: a site
	// may hold many hosts, but not many times more guessers.
	wideLimitFactor = 4
	// defaultRemoteLane bounds the validations that cost a remote call
	// (an introspection endpoint) made at once for throttled attempts.
	defaultRemoteLane = 2
	// defaultMaxAddresses bounds the prefixes a limiter remembers: at
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
	// AuthThrottled counts one failed attempt answered 429 because its
	// prefix, or all addresses together, failed too often.
	AuthThrottled()
	// AuthGlobalThrottled counts one failed attempt answered 429 while
	// the global failure budget was spent.
	AuthGlobalThrottled()
}

// RemoteCoster is implemented by an Authenticator that can tell, before
// validating a token, whether validating it may cost a call to another
// service that nothing else bounds (an introspection endpoint). An
// Authenticator that does not implement it is taken to always cost one.
type RemoteCoster interface {
	NeedsRemoteCall(token string) bool
}

// LimiterOptions configure a FailureLimiter. Zero fields take the
// defaults.
type LimiterOptions struct {
	// Limit is how many failed authentications from one network prefix
	// (an IPv4 /24, an IPv6 /64; an IPv6 /48 has four times as many)
	// within Window are answered normally; past it the prefix is
	// throttled until the oldest of them leaves the window.
	Limit  int
	Window time.Duration
	// GlobalLimit is how many failed authentications from all
	// addresses together within Window are answered normally; past it
	// every address is throttled.
	GlobalLimit int
	// RemoteLane bounds the throttled attempts whose validation costs a
	// remote call that run at once; the others wait for a place.
	RemoteLane int
	// MaxAddresses bounds the prefixes remembered; the one that failed
	// least recently is forgotten first.
	MaxAddresses int
	// MaxValidTokens bounds the hashes of recently valid tokens.
	MaxValidTokens int
	Clock          clockwork.Clock // nil: the real clock
	Metrics        LimiterMetrics  // nil: not counted
}

// FailureLimiter bounds token guessing without ever refusing a token
// that validates. It counts failed authentications per network prefix
// (an IPv4 address's /24; an IPv6 address's /64 and /48) and across all
// addresses. Once a prefix has failed Limit times within Window (its /48
// four times that), or all addresses GlobalLimit times, the prefix (or
// every address) is throttled until the oldest failure leaves the
// window. A throttled attempt is still validated, so that a CI job's
// fresh token behind the NAT of a guesser passes, but at bounded cost:
// a static token is a hash lookup, a JWT is checked locally against the
// cached keys (their refetch is bounded by the key set), an
// introspection answer in cache is a lookup; only a validation that
// costs a remote call waits for one of RemoteLane places. A throttled
// attempt that fails is answered with a ThrottledError (429) and counts
// as a failure. A token that authenticated recently (its SHA-256 is kept
// in a bounded set) skips the limiter. Attempts in flight count against
// the limits as if they will fail, so that a burst of concurrent
// guesses is judged throttled together. Memory is bounded: at most
// MaxAddresses prefixes and MaxValidTokens hashes. Safe for concurrent
// use; one limiter serves the API and the dashboard, so that failures
// on either count together.
type FailureLimiter struct {
	o LimiterOptions

	// lane holds a place per remote validation of a throttled attempt.
	lane chan struct{}

	mu sync.Mutex
	// addrs are the remembered prefixes, most recently failed (or
	// tried) at the front of order.
	addrs map[string]*list.Element // of *addrState
	order *list.List
	// global counts the failures of all addresses together.
	global *addrState
	// valid are the hashes of recently valid tokens, most recently
	// used at the front of validOrder.
	valid      map[[sha256.Size]byte]*list.Element // of *validToken
	validOrder *list.List
}

type addrState struct {
	key   string
	limit int
	// failures are the times of the latest failures, at most limit, as
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
	if o.GlobalLimit <= 0 {
		o.GlobalLimit = DefaultGlobalFailureLimit
	}
	if o.RemoteLane <= 0 {
		o.RemoteLane = defaultRemoteLane
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
	return &FailureLimiter{o: o, lane: make(chan struct{}, o.RemoteLane),
		addrs: map[string]*list.Element{}, order: list.New(),
		global: &addrState{key: "global", limit: o.GlobalLimit},
		valid:  map[[sha256.Size]byte]*list.Element{}, validOrder: list.New()}
}

// ThrottledError refuses a failed attempt from a prefix that failed too
// often (or while all addresses together did). It unwraps to an
// EUNAVAILABLE *wq.Error with reason auth_throttled ("try again
// later"); HTTP answers it 429 with Retry-After.
type ThrottledError struct {
	// Client is the prefix the failures were counted for (an IPv4
	// address's /24, an IPv6 address's /64), for the audit.
	Client string
	// Global is set when the failures of all addresses together were
	// past their budget.
	Global bool
	// RetryAfter is how long until the prefix may try again.
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
// request's RemoteAddr, host:port), with authn. A token that validates
// is always answered with its caller. When the address's prefixes, or
// all addresses, failed too often, a token that does not validate is
// answered with a *ThrottledError, and a validation that costs a remote
// call (see RemoteCoster) first waits for a place in the remote lane. An
// EUNAUTHORIZED answer of authn counts as a failure; other errors (an
// issuer unreachable) do not, since they say nothing of the token.
func (l *FailureLimiter) Authenticate(ctx context.Context, authn Authenticator, remoteAddr, token string) (*Caller, error) {
	keys := clientKeys(remoteAddr, l.o.Limit)
	hash := sha256.Sum256([]byte(token))
	l.mu.Lock()
	now := l.o.Clock.Now()
	known := l.recentlyValid(hash, now)
	var states []*addrState
	throttled, global := false, false
	if !known {
		for _, k := range keys {
			st := l.state(k.key, k.limit)
			states = append(states, st)
			throttled = throttled || l.blockedFor(st, now) > 0
		}
		global = l.blockedFor(l.global, now) > 0
		for _, st := range states {
			st.inflight++
		}
		l.global.inflight++
	}
	l.mu.Unlock()

	var caller *Caller
	var err error
	if (throttled || global) && needsRemoteCall(authn, token) {
		select {
		case l.lane <- struct{}{}:
			caller, err = authn.Authenticate(ctx, token)
			<-l.lane
		case <-ctx.Done():
			err = wq.Errorf(wq.EUNAVAILABLE, "authentication abandoned: %v", ctx.Err())
		}
	} else {
		caller, err = authn.Authenticate(ctx, token)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	now = l.o.Clock.Now()
	if !known {
		for _, st := range states {
			st.inflight = max(0, st.inflight-1)
		}
		l.global.inflight = max(0, l.global.inflight-1)
	}
	switch {
	case err == nil:
		l.rememberValid(hash, now)
	case wq.ErrorCode(err) == wq.EUNAUTHORIZED:
		l.forgetValid(hash)
		if known {
			for _, k := range keys {
				states = append(states, l.state(k.key, k.limit))
			}
		}
		for _, st := range states {
			l.fail(st, now)
		}
		l.fail(l.global, now)
		if throttled || global {
			var wait time.Duration
			for _, st := range append(states, l.global) {
				wait = max(wait, l.blockedFor(st, now))
			}
			err = &ThrottledError{Client: keys[0].key, Global: global, RetryAfter: max(time.Second, wait)}
			if l.o.Metrics != nil {
				l.o.Metrics.AuthThrottled()
				if global {
					l.o.Metrics.AuthGlobalThrottled()
				}
			}
		}
	}
	for _, st := range states {
		l.release(st, now)
	}
	return caller, err
}

// needsRemoteCall reports whether authn may call another service to
// validate token.
func needsRemoteCall(authn Authenticator, token string) bool {
	if c, ok := authn.(RemoteCoster); ok {
		return c.NeedsRemoteCall(token)
	}
	return true
}

// limitKey is one prefix failures are counted for, with its limit.
type limitKey struct {
	key   string
	limit int
}

// clientKeys are the prefixes remoteAddr's failures count for, the
// narrowest first: an IPv4 address's /24, an IPv6 address's /64 and
// /48 (with wideLimitFactor times limit).
func clientKeys(remoteAddr string, limit int) []limitKey {
	narrow := ClientKey(remoteAddr)
	p, err := netip.ParsePrefix(narrow)
	if err != nil || !p.Addr().Is6() {
		return []limitKey{{narrow, limit}}
	}
	wide, _ := p.Addr().Prefix(48)
	return []limitKey{{narrow, limit}, {wide.String(), limit * wideLimitFactor}}
}

// ClientKey is the prefix failures are counted for: the host of
// remoteAddr's /24 for IPv4 (an IPv4-mapped address as IPv4), its /64
// for IPv6. Anything that does not parse counts as itself.
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
	bits := 64
	if a.Is4() {
		bits = 24
	}
	p, _ := a.Prefix(bits)
	return p.String()
}

// state returns key's entry, made (and the least recently failed one
// forgotten when the map is full) if it has none. l.mu is held.
func (l *FailureLimiter) state(key string, limit int) *addrState {
	if e, ok := l.addrs[key]; ok {
		return e.Value.(*addrState)
	}
	for len(l.addrs) >= l.o.MaxAddresses {
		oldest := l.order.Back()
		l.order.Remove(oldest)
		delete(l.addrs, oldest.Value.(*addrState).key)
	}
	st := &addrState{key: key, limit: limit}
	l.addrs[key] = l.order.PushFront(st)
	return st
}

// blockedFor is how long st's prefix must wait: until its oldest
// failure leaves the window, when its failures and attempts in flight
// reach the limit; 0 when it may try now. It allocates nothing, since
// the global state is judged on every attempt. l.mu is held.
func (l *FailureLimiter) blockedFor(st *addrState, now time.Time) time.Duration {
	n := l.countRecent(st, now)
	if n+st.inflight < st.limit {
		return 0
	}
	// The failure that has to leave the window for one more attempt.
	i := n + st.inflight - st.limit
	if i >= n {
		// Attempts in flight alone reach the limit: wait for their answers.
		return time.Second
	}
	return max(time.Second, l.nthRecent(st, now, i).Add(l.o.Window).Sub(now))
}

// countRecent is how many of st's failures are within the window.
func (l *FailureLimiter) countRecent(st *addrState, now time.Time) int {
	n := 0
	for _, t := range st.failures {
		if now.Sub(t) < l.o.Window {
			n++
		}
	}
	return n
}

// nthRecent is st's i-th failure within the window, oldest first.
func (l *FailureLimiter) nthRecent(st *addrState, now time.Time, i int) time.Time {
	n := len(st.failures)
	for j := range n {
		t := st.failures[(st.next+j)%n]
		if now.Sub(t) < l.o.Window {
			if i == 0 {
				return t
			}
			i--
		}
	}
	return now
}

// fail records a failure of st's address at now. l.mu is held.
func (l *FailureLimiter) fail(st *addrState, now time.Time) {
	if len(st.failures) < st.limit {
		st.failures = append(st.failures, now)
		st.next = len(st.failures) % st.limit
	} else {
		st.failures[st.next] = now
		st.next = (st.next + 1) % st.limit
	}
	if e, ok := l.addrs[st.key]; ok && e.Value.(*addrState) == st {
		l.order.MoveToFront(e)
	}
}

// release forgets st's prefix once nothing about it matters any more:
// no attempt in flight and no failure within the window. l.mu is held.
func (l *FailureLimiter) release(st *addrState, now time.Time) {
	if st.inflight > 0 || l.countRecent(st, now) > 0 {
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
