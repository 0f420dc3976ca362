package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

// TestAWrongMethodIsAnswered405WithAllow: a path the API serves, asked
// with a method it does not take, is 405 with the methods it takes, not
// the catch-all's 404 (a client would think the path gone).
func TestAWrongMethodIsAnswered405WithAllow(t *testing.T) {
	s, tok := testServer(t)
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", "/api/v1/items", "GET, HEAD, POST"},
		{"PUT", "/api/v1/items/01JB0000000000000000000000", "GET, HEAD"},
		{"GET", "/api/v1/incidents/reconcile", "POST"},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+tok[auth.Read])
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q", tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), tc.allow)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			t.Errorf("%s %s: Content-Type %q, want a problem document", tc.method, tc.path, ct)
		}
	}
	req := httptest.NewRequest("GET", "/api/v1/nothing", nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /api/v1/nothing: %d, want 404", rec.Code)
	}
}

// TestReconcilingWithTheBridgeOffIsADeclaredStatus: with no incident
// bridge configured, POST /api/v1/incidents/reconcile answers 503 (code
// unavailable), which its OpenAPI description declares, not an
// undeclared 404.
func TestReconcilingWithTheBridgeOffIsADeclaredStatus(t *testing.T) {
	doc := loadOpenAPI(t)
	st := testdb.Open(t, store.KindSQLite)
	tokenOf, hash, _ := auth.NewToken()
	authn, err := auth.NewStaticTokens([]auth.Token{{Name: "incidents", SHA256: hash, Permissions: []auth.Permission{auth.Incidents}}})
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Options{Store: st, Items: testapi.Items(st, config.Default()), Auth: authn, Log: testkit.Quiet()})
	req := httptest.NewRequest("POST", "/api/v1/incidents/reconcile", strings.NewReader(`{"observation":{"provider":"sentry","fingerprint":"1"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tokenOf)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"unavailable"`) {
		t.Errorf("reconcile with the bridge off: %d %s, want 503 unavailable", rec.Code, rec.Body)
	}
	declared := doc.Paths.Find("/api/v1/incidents/reconcile").Post.Responses.Status(rec.Code)
	if declared == nil {
		t.Errorf("%d is not declared for POST /api/v1/incidents/reconcile", rec.Code)
	}
	req = httptest.NewRequest("POST", "/api/v1/incidents/reconcile", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401 first", rec.Code)
	}
}
