package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

func get(t *testing.T, h http.Handler, path string) (int, string, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var body map[string]any
	json.Unmarshal(rec.Body.Bytes(), &body)
	return rec.Code, rec.Header().Get("Content-Type"), body
}

func TestReadyOnlyWithCurrentSchema(t *testing.T) {
	ctx := context.Background()
	s, err := testdb.Drivers.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "wq.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := httpapi.NewServer(httpapi.Options{Store: s, Log: testkit.Quiet()})

	if code, _, _ := get(t, h, "/healthz"); code != http.StatusOK {
		t.Errorf("healthz = %d", code)
	}
	code, ctype, body := get(t, h, "/readyz")
	if code != http.StatusServiceUnavailable || ctype != "application/problem+json" || body["code"] != "unavailable" {
		t.Errorf("readyz before migrate = %d %s %v", code, ctype, body)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _, body := get(t, h, "/readyz"); code != http.StatusOK || body["status"] != "ready" {
		t.Errorf("readyz after migrate = %d %v", code, body)
	}
	s.Close()
	if code, _, _ := get(t, h, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("readyz with the database closed = %d", code)
	}
}

func TestUnknownRouteIsAProblem(t *testing.T) {
	h := httpapi.NewServer(httpapi.Options{Store: testdb.Open(t, store.KindSQLite), Log: testkit.Quiet()})
	code, ctype, body := get(t, h, "/nope")
	if code != http.StatusNotFound || ctype != "application/problem+json" || body["code"] != "not_found" || body["status"] != float64(404) {
		t.Errorf("GET /nope = %d %s %v", code, ctype, body)
	}
}
