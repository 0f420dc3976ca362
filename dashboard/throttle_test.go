package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/dashboard"
)

// loginFrom posts the login form from a client address, straight to the
// handler, with a login cookie and form token of its own (the double
// submit needs only that they agree).
func loginFrom(h http.Handler, remote, token string) *httptest.ResponseRecorder {
	form := url.Values{"token": {token}, "csrf": {"form-nonce"}, "next": {"/ui/items"}}
	req := httptest.NewRequest("POST", "/ui/login", strings.NewReader(form.Encode()))
	req.RemoteAddr = remote
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "wq_login", Value: "form-nonce"})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestGuessingTokensAtTheLoginFormIsThrottled(t *testing.T) {
	refusals := &audit.Memory{}
	w := newWorldWith(t, func(o *dashboard.Options) {
		o.Limiter = auth.NewFailureLimiter(auth.LimiterOptions{Limit: 10, Window: time.Minute, Clock: o.Clock})
		o.Audit = refusals
	})
	const guesser, bystander = "203.0.113.9:50000", "198.51.100.4:50000"
	if rec := loginFrom(w.server, guesser, w.tokens["reader"]); rec.Code != http.StatusSeeOther {
		t.Fatalf("the reader's login: %d, want 303", rec.Code)
	}
	// Failures on the API and at the login form count together.
	for i := range 5 {
		req := httptest.NewRequest("GET", "/api/v1/items", nil)
		req.RemoteAddr = guesser
		req.Header.Set("Authorization", "Bearer wq_guess")
		rec := httptest.NewRecorder()
		w.server.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("API guess %d: %d, want 401", i+1, rec.Code)
		}
	}
	for i := range 5 {
		if rec := loginFrom(w.server, guesser, "wq_guess"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("login guess %d: %d, want 401", i+1, rec.Code)
		}
	}
	for i := range 290 {
		rec := loginFrom(w.server, guesser, "wq_guess")
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "60" {
			t.Fatalf("login guess %d past the limit: %d, Retry-After %q; want 429, 60", i+6, rec.Code, rec.Header().Get("Retry-After"))
		}
		if i == 0 && !strings.Contains(rec.Body.String(), "Too many failed logins from your address: try again in 60 seconds.") {
			t.Errorf("the 429 page does not say why:\n%s", rec.Body)
		}
	}
	if rec := loginFrom(w.server, guesser, w.tokens["reader"]); rec.Code != http.StatusSeeOther {
		t.Errorf("a token valid recently, from the throttled address: %d, want 303", rec.Code)
	}
	if rec := loginFrom(w.server, "203.0.113.10:1", w.tokens["admin"]); rec.Code != http.StatusSeeOther {
		t.Errorf("a token not seen before, from the throttled prefix: %d, want 303 (a token that validates always passes)", rec.Code)
	}
	if rec := loginFrom(w.server, bystander, "wq_guess"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a guess from another address: %d, want 401", rec.Code)
	}
	if rec := loginFrom(w.server, bystander, w.tokens["admin"]); rec.Code != http.StatusSeeOther {
		t.Errorf("a new token from another address: %d, want 303", rec.Code)
	}
	entries, _ := json.Marshal(refusals.Entries())
	trail := string(entries)
	if n := strings.Count(trail, `"auth_throttled: too many failed authentications from this address"`); n != 290 {
		t.Errorf("%d throttled logins audited, want 290", n)
	}
	if strings.Contains(trail, "wq_guess") || strings.Contains(trail, w.tokens["admin"]) {
		t.Error("a token reached the audit")
	}

	w.clock.Advance(time.Minute)
	if rec := loginFrom(w.server, guesser, "wq_guess"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a guess a minute later: %d, want 401", rec.Code)
	}
	if rec := loginFrom(w.server, guesser, w.tokens["operator"]); rec.Code != http.StatusSeeOther {
		t.Errorf("a new token a minute later: %d, want 303", rec.Code)
	}
}
