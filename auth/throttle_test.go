package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/metrics"
)

// countingAuth accepts the tokens it holds and counts every call, so that
// a test sees which attempts were validated at all.
type countingAuth struct {
	valid map[string]bool
	err   error // when set, the answer to every other token
	calls atomic.Int64
}

func (a *countingAuth) Authenticate(_ context.Context, token string) (*auth.Caller, error) {
	a.calls.Add(1)
	if a.valid[token] {
		return &auth.Caller{Identity: "token:" + token}, nil
	}
	if a.err != nil {
		return nil, a.err
	}
	return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token")
}

type throttleCounter struct{ n, global atomic.Int64 }

func (c *throttleCounter) AuthThrottled()       { c.n.Add(1) }
func (c *throttleCounter) AuthGlobalThrottled() { c.global.Add(1) }

func throttled(err error) (*auth.ThrottledError, bool) {
	var th *auth.ThrottledError
	return th, errors.As(err, &th)
}

func TestAnAddressThatFailsTooOftenIsThrottledUntilItsFailuresLeaveTheWindow(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	counter := &throttleCounter{}
	l := auth.NewFailureLimiter(auth.LimiterOptions{Limit: 3, Window: time.Minute, Clock: clock, Metrics: counter})
	authn := &countingAuth{valid: map[string]bool{"good": true, "fresh": true}}
	const guesser = "192.0.2.7:40000"

	if _, err := l.Authenticate(ctx, authn, "192.0.2.7:1", "good"); err != nil {
		t.Fatalf("a valid token: %v", err)
	}
	for i := range 3 {
		_, err := l.Authenticate(ctx, authn, guesser, "guess")
		if wq.ErrorCode(err) != wq.EUNAUTHORIZED {
			t.Fatalf("guess %d: %v, want unauthorized", i+1, err)
		}
		clock.Advance(10 * time.Second)
	}
	_, err := l.Authenticate(ctx, authn, guesser, "guess")
	th, ok := throttled(err)
	if !ok {
		t.Fatalf("the fourth guess within a minute: %v, want throttled", err)
	}
	// The second failure was 20s ago and the fourth one is now in the
	// window too: the second leaves it in 40s.
	if th.RetryAfterSeconds() != 40 || wq.ErrorCode(err) != wq.EUNAVAILABLE || wq.ErrorReason(err) != auth.ReasonThrottled {
		t.Errorf("throttled: retry after %ds, code %q, reason %q; want 40, unavailable, auth_throttled",
			th.RetryAfterSeconds(), wq.ErrorCode(err), wq.ErrorReason(err))
	}
	if th.Client != "192.0.2.0/24" {
		t.Errorf("client %q, want the address's /24", th.Client)
	}

	t.Run("a token valid recently still passes from the throttled address", func(t *testing.T) {
		if c, err := l.Authenticate(ctx, authn, guesser, "good"); err != nil || c.Identity != "token:good" {
			t.Errorf("got %v, %v", c, err)
		}
	})
	t.Run("a token not seen before that validates passes", func(t *testing.T) {
		if c, err := l.Authenticate(ctx, authn, guesser, "fresh"); err != nil || c.Identity != "token:fresh" {
			t.Errorf("a new valid token from a throttled address: %v, %v; want it to pass", c, err)
		}
	})
	t.Run("another address is not affected", func(t *testing.T) {
		if _, err := l.Authenticate(ctx, authn, "198.51.100.1:40000", "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
			t.Errorf("a guess from another address: %v, want unauthorized", err)
		}
	})
	if got := counter.n.Load(); got != 1 {
		t.Errorf("%d throttled attempts counted, want 1 (valid tokens are not refused)", got)
	}

	// 40s later the failures but the one made while throttled have left
	// the window: the address is answered normally again.
	clock.Advance(40 * time.Second)
	if _, err := l.Authenticate(ctx, authn, guesser, "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
		t.Fatalf("one more guess: %v, want unauthorized", err)
	}
	if _, err := l.Authenticate(ctx, authn, guesser, "guess"); err == nil || !isThrottled(err) {
		t.Errorf("the next guess: %v, want throttled again", err)
	}
	clock.Advance(time.Minute)
	for i := range 3 {
		if _, err := l.Authenticate(ctx, authn, guesser, "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
			t.Errorf("a minute later, guess %d: %v, want unauthorized", i+1, err)
		}
	}
}

func isThrottled(err error) bool { _, ok := throttled(err); return ok }

func TestAttemptsInFlightCountAgainstTheLimit(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	var inside sync.WaitGroup
	inside.Add(3)
	var calls atomic.Int64
	slow := authFunc(func(context.Context, string) (*auth.Caller, error) {
		if calls.Add(1) <= 3 {
			inside.Done()
			<-release
		}
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token")
	})
	l := auth.NewFailureLimiter(auth.LimiterOptions{Limit: 3, Clock: clockwork.NewFakeClock()})
	var done sync.WaitGroup
	for range 3 {
		done.Go(func() { l.Authenticate(ctx, slow, "192.0.2.1:1", "guess") })
	}
	inside.Wait()
	// Three guesses are being validated: a fourth is judged as one past
	// the limit, and its failure answered throttled.
	if _, err := l.Authenticate(ctx, slow, "192.0.2.1:2", "guess"); !isThrottled(err) {
		t.Errorf("a fourth concurrent guess: %v, want throttled", err)
	}
	close(release)
	done.Wait()
}

type authFunc func(context.Context, string) (*auth.Caller, error)

func (f authFunc) Authenticate(ctx context.Context, token string) (*auth.Caller, error) {
	return f(ctx, token)
}

func TestOnlyRefusedTokensCountAsFailures(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	l := auth.NewFailureLimiter(auth.LimiterOptions{Limit: 2, Clock: clock})
	down := &countingAuth{err: wq.Errorf(wq.EUNAVAILABLE, "issuer unreachable")}
	for range 5 {
		if _, err := l.Authenticate(ctx, down, "192.0.2.1:1", "jwt"); wq.ErrorCode(err) != wq.EUNAVAILABLE {
			t.Fatalf("with the issuer down: %v, want unavailable (it says nothing of the token)", err)
		}
	}

	// A token that was valid and is refused now (revoked) counts, and is
	// no longer let through.
	authn := &countingAuth{valid: map[string]bool{"kept": true}}
	if _, err := l.Authenticate(ctx, authn, "192.0.2.1:1", "kept"); err != nil {
		t.Fatal(err)
	}
	delete(authn.valid, "kept")
	for range 2 {
		if _, err := l.Authenticate(ctx, authn, "192.0.2.1:1", "kept"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
			t.Fatalf("a revoked token: %v, want unauthorized", err)
		}
	}
	if _, err := l.Authenticate(ctx, authn, "192.0.2.1:1", "kept"); !isThrottled(err) {
		t.Errorf("a revoked token after the limit: %v, want throttled", err)
	}
}

func TestTheLimiterRemembersABoundedNumberOfAddresses(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	l := auth.NewFailureLimiter(auth.LimiterOptions{Limit: 2, MaxAddresses: 2, Clock: clock})
	authn := &countingAuth{}
	for range 2 {
		l.Authenticate(ctx, authn, "192.0.2.1:1", "guess")
	}
	if _, err := l.Authenticate(ctx, authn, "192.0.2.1:1", "guess"); !isThrottled(err) {
		t.Fatalf("after the limit: %v, want throttled", err)
	}
	// Two more prefixes fail: the first, which failed least recently,
	// is forgotten rather than the map growing.
	clock.Advance(time.Second)
	l.Authenticate(ctx, authn, "198.51.100.2:1", "guess")
	l.Authenticate(ctx, authn, "203.0.113.3:1", "guess")
	if _, err := l.Authenticate(ctx, authn, "192.0.2.1:1", "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
		t.Errorf("a forgotten address: %v, want its guess validated", err)
	}
}

func TestClientKeys(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"192.0.2.7:40000", "192.0.2.0/24"},
		{"[::ffff:192.0.2.7]:40000", "192.0.2.0/24"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2::9]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"@", "@"},
		{"", ""},
	} {
		if got := auth.ClientKey(tc.remote); got != tc.want {
			t.Errorf("ClientKey(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

func TestGuessesSpreadOverAPrefixAreThrottledTogether(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		limit   int
		address func(i int) string // the i-th guess's address, each a new one
		outside string             // an address outside the prefix
	}{
		{"IPv4 addresses of one /24", 3, func(i int) string { return fmt.Sprintf("192.0.2.%d:4000", 10+i) }, "192.0.3.1:4000"},
		{"IPv6 addresses of one /64", 3, func(i int) string { return fmt.Sprintf("[2001:db8:1:2::%x]:443", 10+i) }, "[2001:db8:2::1]:443"},
		// A /48 holds 65536 /64s; it may fail four times a /64's limit.
		{"IPv6 /64s of one /48", 12, func(i int) string { return fmt.Sprintf("[2001:db8:1:%x::1]:443", 10+i) }, "[2001:db8:2::1]:443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := auth.NewFailureLimiter(auth.LimiterOptions{Limit: 3, Window: time.Minute, Clock: clockwork.NewFakeClock()})
			authn := &countingAuth{}
			for i := range tc.limit {
				if _, err := l.Authenticate(ctx, authn, tc.address(i), "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
					t.Fatalf("guess %d from %s: %v, want unauthorized", i+1, tc.address(i), err)
				}
			}
			if _, err := l.Authenticate(ctx, authn, tc.address(tc.limit), "guess"); !isThrottled(err) {
				t.Errorf("a guess from yet another address of the prefix: %v, want throttled", err)
			}
			if _, err := l.Authenticate(ctx, authn, tc.outside, "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
				t.Errorf("a guess from outside the prefix: %v, want unauthorized", err)
			}
		})
	}
}

func TestTheGlobalFailureBudgetThrottlesEveryAddress(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	mx := metrics.New()
	l := auth.NewFailureLimiter(auth.LimiterOptions{Limit: 3, GlobalLimit: 5, Window: time.Minute, Clock: clock, Metrics: mx})
	authn := &countingAuth{valid: map[string]bool{"ci-job": true}}
	// Five prefixes fail once each: none is near its own limit.
	for i := range 5 {
		if _, err := l.Authenticate(ctx, authn, fmt.Sprintf("10.%d.0.1:1", i), "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
			t.Fatalf("guess %d: %v, want unauthorized", i+1, err)
		}
	}
	_, err := l.Authenticate(ctx, authn, "10.99.0.1:1", "guess")
	th, ok := throttled(err)
	if !ok || !th.Global {
		t.Fatalf("a guess from a sixth prefix: %v, want throttled by the global budget", err)
	}
	if c, err := l.Authenticate(ctx, authn, "10.98.0.1:1", "ci-job"); err != nil || c.Identity != "token:ci-job" {
		t.Errorf("a valid token while the global budget is spent: %v, %v; want it to pass", c, err)
	}
	rec := httptest.NewRecorder()
	mx.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range []string{"\nworkqueue_auth_global_throttled_total 1\n", "\nworkqueue_auth_throttled_total 1\n"} {
		if !strings.Contains(rec.Body.String(), line) {
			t.Errorf("the metrics lack %q:\n%s", strings.TrimSpace(line), rec.Body)
		}
	}
	clock.Advance(time.Minute)
	if _, err := l.Authenticate(ctx, authn, "10.99.0.1:1", "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
		t.Errorf("a guess once the failures left the window: %v, want unauthorized", err)
	}
}

// introspectionLike validates every token with a remote call that
// blocks until released, and reports the most calls in flight at once.
type introspectionLike struct {
	release  chan struct{}
	entered  chan struct{}
	inflight atomic.Int64
	most     atomic.Int64
}

func (a *introspectionLike) Authenticate(_ context.Context, token string) (*auth.Caller, error) {
	n := a.inflight.Add(1)
	defer a.inflight.Add(-1)
	for m := a.most.Load(); n > m && !a.most.CompareAndSwap(m, n); m = a.most.Load() {
	}
	a.entered <- struct{}{}
	<-a.release
	if token == "fresh-ci-token" {
		return &auth.Caller{Identity: "ci"}, nil
	}
	return nil, wq.Errorf(wq.EUNAUTHORIZED, "refused by the endpoint")
}

func TestAValidatingCredentialFromAThrottledPrefixPasses(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	const nat = "192.0.2.50:1"
	t.Run("a static token, a lookup", func(t *testing.T) {
		static, err := auth.NewStaticTokens([]auth.Token{{Name: "ci", SHA256: auth.HashToken("wq_ci"), Permissions: []auth.Permission{auth.Submit}}})
		if err != nil {
			t.Fatal(err)
		}
		chain := &auth.Chain{Static: static}
		l := auth.NewFailureLimiter(auth.LimiterOptions{Limit: 2, Clock: clock})
		for range 5 {
			l.Authenticate(ctx, chain, "192.0.2.9:1", "wq_guess")
		}
		if _, err := l.Authenticate(ctx, chain, nat, "wq_guess"); !isThrottled(err) {
			t.Fatalf("a guess from the NAT: %v, want throttled", err)
		}
		if c, err := l.Authenticate(ctx, chain, nat, "wq_ci"); err != nil || c.Identity != "token:ci" {
			t.Errorf("a CI token never seen before, from the throttled NAT: %v, %v; want it to pass", c, err)
		}
	})
	t.Run("an opaque token, a remote call in a bounded lane", func(t *testing.T) {
		remote := &introspectionLike{release: make(chan struct{}), entered: make(chan struct{}, 16)}
		l := auth.NewFailureLimiter(auth.LimiterOptions{Limit: 1, RemoteLane: 1, Clock: clock})
		close(remote.release) // the first failure answers at once
		if _, err := l.Authenticate(ctx, remote, nat, "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
			t.Fatalf("the first guess: %v, want unauthorized", err)
		}
		<-remote.entered
		remote.release = make(chan struct{})
		results := make(chan error, 4)
		var done sync.WaitGroup
		for _, token := range []string{"guess-1", "guess-2", "guess-3", "fresh-ci-token"} {
			done.Go(func() { _, err := l.Authenticate(ctx, remote, nat, token); results <- err })
		}
		// One validation at a time: each enters, and is let go, alone.
		for range 4 {
			<-remote.entered
			remote.release <- struct{}{}
		}
		done.Wait()
		close(results)
		var passed, refused int
		for err := range results {
			switch {
			case err == nil:
				passed++
			case isThrottled(err):
				refused++
			default:
				t.Errorf("a throttled attempt: %v, want passed or throttled", err)
			}
		}
		if passed != 1 || refused != 3 {
			t.Errorf("%d passed and %d refused, want the valid token to pass and 3 guesses refused", passed, refused)
		}
		if most := remote.most.Load(); most != 1 {
			t.Errorf("%d remote validations at once for a throttled prefix, want at most the lane's 1", most)
		}
	})
}

func TestOnlyAnOpaqueTokenNotInTheIntrospectionCacheCostsARemoteCall(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	users := newUsersAPI(t)
	static, err := auth.NewStaticTokens([]auth.Token{{Name: "ci", SHA256: auth.HashToken("wq_ci"), Permissions: []auth.Permission{auth.Submit}}})
	if err != nil {
		t.Fatal(err)
	}
	chain := &auth.Chain{Static: static, Introspection: newIntrospection(users, clock)}
	for _, tc := range []struct {
		token string
		want  bool
	}{
		{"wq_ci", false},          // a static token: a lookup
		{"a.b.c", false},          // a JWT: verified against the cached keys
		{"sha256~alice", true},    // opaque, never introspected
		{"sha256~stranger", true}, // opaque, refused: refusals are not cached
	} {
		if got := chain.NeedsRemoteCall(tc.token); got != tc.want {
			t.Errorf("NeedsRemoteCall(%q) = %v, want %v", tc.token, got, tc.want)
		}
	}
	if _, err := chain.Authenticate(ctx, "sha256~alice"); err != nil {
		t.Fatal(err)
	}
	if chain.NeedsRemoteCall("sha256~alice") {
		t.Error("an opaque token whose answer is cached still costs a remote call")
	}

	// A throttled prefix: the cached token passes without waiting for
	// the remote lane, held by a slow validation of a guess.
	l := auth.NewFailureLimiter(auth.LimiterOptions{Limit: 1, RemoteLane: 1, Clock: clock})
	if _, err := l.Authenticate(ctx, chain, "192.0.2.1:1", "sha256~guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
		t.Fatalf("the first guess: %v, want unauthorized", err)
	}
	release, entered := make(chan struct{}), make(chan struct{})
	slow := authFunc(func(context.Context, string) (*auth.Caller, error) {
		close(entered)
		<-release
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "refused")
	})
	done := make(chan struct{})
	go func() { defer close(done); l.Authenticate(ctx, slow, "192.0.2.2:1", "sha256~slow-guess") }()
	<-entered
	calls := users.calls.Load()
	if c, err := l.Authenticate(ctx, chain, "192.0.2.3:1", "sha256~alice"); err != nil || c.Identity != "alice" {
		t.Errorf("a cached opaque token from the throttled prefix, the lane full: %v, %v; want alice", c, err)
	}
	if users.calls.Load() != calls {
		t.Error("the cached token was introspected again")
	}
	close(release)
	<-done
}
