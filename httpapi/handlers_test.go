package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

// A submission of a type no instance handles would wait without a word:
// its answer and its view say so, until an instance records the type, and
// again once none has for longer than the window.
func TestAnItemOfATypeNoInstanceHandlesIsFlagged(t *testing.T) {
	st := testdb.Open(t, store.KindSQLite)
	clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	items := testapi.Items(st, config.Default())
	items.HandledHere, items.Clock, items.HandlerWindow = nil, clock, 5*time.Minute // an API-only instance
	items.Handlers = st.Queue.(wq.HandlerRegistry)
	admin, hash, _ := auth.NewToken()
	static, err := auth.NewStaticTokens([]auth.Token{{Name: "root", SHA256: hash, Permissions: []auth.Permission{auth.Admin}}})
	if err != nil {
		t.Fatal(err)
	}
	s := httpapi.NewServer(httpapi.Options{Store: st, Items: items, Auth: &auth.Chain{Static: static}, Log: testkit.Quiet()})
	do := func(method, path, body string) map[string]any {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+admin)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	warnings := func(v map[string]any) string {
		w, _ := json.Marshal(v["warnings"])
		return string(w)
	}

	submitted := do("POST", "/api/v1/items", `{"item_type":"example","steps":1}`)
	if w := warnings(submitted); !strings.Contains(w, "no instance handles example items") || !strings.Contains(w, "handled_types") {
		t.Errorf("submission answer's warnings %s: want it flagged as unhandled, naming handled_types", w)
	}
	path := "/api/v1/items/" + submitted["id"].(string)
	if w := warnings(do("GET", path, "")); !strings.Contains(w, "no instance handles example items") {
		t.Errorf("view's warnings %s: want it flagged", w)
	}

	if err := items.Handlers.RecordHandlers(t.Context(), "worker-1", []string{"example"}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(4 * time.Minute)
	if v := do("GET", path, ""); v["warnings"] != nil {
		t.Errorf("an instance handled the type 4m ago: warnings %s, want none", warnings(v))
	}
	clock.Advance(2 * time.Minute)
	if w := warnings(do("GET", path, "")); !strings.Contains(w, "the last one that did swept 6m0s ago") {
		t.Errorf("warnings %s: want the type flagged again, saying when it was last handled", w)
	}

	items.HandledHere = []string{"example"} // this instance handles it
	if v := do("GET", path, ""); v["warnings"] != nil {
		t.Errorf("handled here: warnings %s, want none", warnings(v))
	}
}

var _ http.Handler = (*httpapi.Server)(nil)
