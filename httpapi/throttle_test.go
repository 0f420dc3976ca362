package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/metrics"
)

// callFrom is call from a client address.
func callFrom(h http.Handler, remote, path, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	req.RemoteAddr = remote
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestGuessingTokensIsThrottledPerClientPrefix(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	mx := metrics.New()
	s, log, reader, admin := newAuthServer(t, func(o *httpapi.Options) {
		o.Clock = clock
		o.FailureLimiter = auth.NewFailureLimiter(auth.LimiterOptions{Limit: 10, Window: time.Minute, Clock: clock, Metrics: mx})
	})
	const guesser, bystander = "192.0.2.1:50000", "198.51.100.2:50000"

	if rec := callFrom(s, "192.0.2.1:40000", "/api/v1/items", reader); rec.Code != http.StatusOK {
		t.Fatalf("the reader's token: %d", rec.Code)
	}
	for i := range 10 {
		if rec := callFrom(s, guesser, "/api/v1/items", "wq_guess"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i+1, rec.Code)
		}
	}
	for i := 10; i < 300; i++ {
		rec := callFrom(s, guesser, "/api/v1/items", "wq_guess")
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "60" {
			t.Fatalf("guess %d: %d, Retry-After %q; want 429, 60", i+1, rec.Code, rec.Header().Get("Retry-After"))
		}
		if i == 10 {
			var p map[string]any
			json.Unmarshal(rec.Body.Bytes(), &p)
			if p["reason"] != "auth_throttled" || p["code"] != "unavailable" || p["status"] != float64(429) {
				t.Errorf("the 429's problem: %v", p)
			}
		}
	}
	if rec := callFrom(s, guesser, "/api/v1/items", reader); rec.Code != http.StatusOK {
		t.Errorf("a token valid recently, from the throttled address: %d, want 200", rec.Code)
	}
	if rec := callFrom(s, "192.0.2.77:1", "/me", admin); rec.Code != http.StatusOK {
		t.Errorf("a token not seen before, from the throttled prefix: %d, want 200 (a token that validates always passes)", rec.Code)
	}
	if rec := callFrom(s, bystander, "/api/v1/items", "wq_guess"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a guess from another address: %d, want 401", rec.Code)
	}

	got := auditText(log)
	if n := strings.Count(got, `"auth_throttled: too many failed authentications from this address"`); n != 290 {
		t.Errorf("%d throttled attempts audited, want 290", n)
	}
	if !strings.Contains(got, `"client":"192.0.2.0/24"`) || strings.Contains(got, "wq_guess") || strings.Contains(got, admin) {
		t.Errorf("the audit should name the client address and no token: %s", got)
	}
	rec := httptest.NewRecorder()
	mx.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "\nworkqueue_auth_throttled_total 290\n") {
		t.Errorf("the metric does not count 290 throttled attempts:\n%s", rec.Body.String())
	}

	// After the window, the address's attempts are validated again.
	clock.Advance(time.Minute)
	if rec := callFrom(s, guesser, "/api/v1/items", "wq_guess"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a guess a minute later: %d, want 401", rec.Code)
	}
	if rec := callFrom(s, guesser, "/me", admin); rec.Code != http.StatusOK {
		t.Errorf("a valid token a minute later: %d, want 200", rec.Code)
	}
}
