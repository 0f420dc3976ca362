package auth_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
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

type throttleCounter struct{ n atomic.Int64 }

func (c *throttleCounter) AuthThrottled() { c.n.Add(1) }

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
	calls := authn.calls.Load()
	_, err := l.Authenticate(ctx, authn, guesser, "guess")
	th, ok := throttled(err)
	if !ok {
		t.Fatalf("the fourth guess within a minute: %v, want throttled", err)
	}
	if authn.calls.Load() != calls {
		t.Error("a throttled attempt was validated")
	}
	// The first failure was 30s ago: it leaves the window in 30s.
	if th.RetryAfterSeconds() != 30 || wq.ErrorCode(err) != wq.EUNAVAILABLE || wq.ErrorReason(err) != auth.ReasonThrottled {
		t.Errorf("throttled: retry after %ds, code %q, reason %q; want 30, unavailable, auth_throttled",
			th.RetryAfterSeconds(), wq.ErrorCode(err), wq.ErrorReason(err))
	}
	if th.Client != "192.0.2.7" {
		t.Errorf("client %q, want the host without its port", th.Client)
	}

	t.Run("a token valid recently still passes from the throttled address", func(t *testing.T) {
		if c, err := l.Authenticate(ctx, authn, guesser, "good"); err != nil || c.Identity != "token:good" {
			t.Errorf("got %v, %v", c, err)
		}
	})
	t.Run("a token not seen before is refused unvalidated", func(t *testing.T) {
		calls := authn.calls.Load()
		if _, err := l.Authenticate(ctx, authn, guesser, "fresh"); err == nil || authn.calls.Load() != calls {
			t.Errorf("an unknown token from a throttled address: %v, validated %v", err, authn.calls.Load() != calls)
		}
	})
	t.Run("another address is not affected", func(t *testing.T) {
		if _, err := l.Authenticate(ctx, authn, "198.51.100.1:40000", "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
			t.Errorf("a guess from another address: %v, want unauthorized", err)
		}
	})
	if got := counter.n.Load(); got != 2 {
		t.Errorf("%d throttled attempts counted, want 2", got)
	}

	// 30s later the first failure has left the window: one more attempt.
	clock.Advance(30 * time.Second)
	if _, err := l.Authenticate(ctx, authn, guesser, "fresh"); err != nil {
		t.Errorf("once the oldest failure left the window: %v, want the token validated", err)
	}
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
	slow := authFunc(func(context.Context, string) (*auth.Caller, error) {
		inside.Done()
		<-release
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token")
	})
	l := auth.NewFailureLimiter(auth.LimiterOptions{Limit: 3, Clock: clockwork.NewFakeClock()})
	var done sync.WaitGroup
	for range 3 {
		done.Go(func() { l.Authenticate(ctx, slow, "192.0.2.1:1", "guess") })
	}
	inside.Wait()
	// Three guesses are being validated: a fourth may not join them.
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
	// Two more addresses fail: the first, which failed least recently,
	// is forgotten rather than the map growing.
	clock.Advance(time.Second)
	l.Authenticate(ctx, authn, "192.0.2.2:1", "guess")
	l.Authenticate(ctx, authn, "192.0.2.3:1", "guess")
	if _, err := l.Authenticate(ctx, authn, "192.0.2.1:1", "guess"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
		t.Errorf("a forgotten address: %v, want its guess validated", err)
	}
}

func TestClientKeys(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"192.0.2.7:40000", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:40000", "192.0.2.7"},
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
