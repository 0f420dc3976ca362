package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

// auditText is the audited entries as JSON, to search.
func auditText(m *audit.Memory) string {
	b, _ := json.Marshal(m.Entries())
	return string(b)
}

func newAuthServer(t *testing.T, with ...func(*httpapi.Options)) (*httpapi.Server, *audit.Memory, string, string) {
	t.Helper()
	st := testdb.Open(t, store.KindSQLite)
	reader, readerHash, _ := auth.NewToken()
	admin, adminHash, _ := auth.NewToken()
	static, err := auth.NewStaticTokens([]auth.Token{
		{Name: "reader", SHA256: readerHash, Permissions: []auth.Permission{auth.Read}, Projects: []string{"g/**"}},
		{Name: "root", SHA256: adminHash, Permissions: []auth.Permission{auth.Admin}}})
	if err != nil {
		t.Fatal(err)
	}
	log := testkit.CheckedAudit(t)
	opts := httpapi.Options{Store: st, Items: testapi.Items(st, config.Default()), Auth: &auth.Chain{Static: static}, Log: testkit.Quiet(),
		Audit: log, ProxyAccessTokenHeader: "X-Forwarded-Access-Token"}
	for _, w := range with {
		w(&opts)
	}
	s := httpapi.NewServer(opts)
	return s, log, reader, admin
}

func call(h http.Handler, method, path string, header http.Header) (int, map[string]any) {
	req := httptest.NewRequest(method, path, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var body map[string]any
	json.Unmarshal(rec.Body.Bytes(), &body)
	return rec.Code, body
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

func TestEveryAuthDecisionIsAuditedWithoutTheToken(t *testing.T) {
	s, log, reader, _ := newAuthServer(t)
	if code, _ := call(s, "GET", "/api/v1/items", bearer(reader)); code != http.StatusOK {
		t.Errorf("allowed: %d", code)
	}
	if code, _ := call(s, "POST", "/api/v1/items", bearer(reader)); code != http.StatusForbidden {
		t.Errorf("no submit permission: %d", code)
	}
	if code, _ := call(s, "GET", "/api/v1/items", bearer("wq_not-a-token")); code != http.StatusUnauthorized {
		t.Errorf("bad token: %d", code)
	}
	if code, _ := call(s, "GET", "/api/v1/items", nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	got := auditText(log)
	for _, want := range []string{`"auth_allowed"`, `"token:reader"`, `"no matched rule grants submit"`, `"invalid token"`, `"no bearer token"`} {
		if !strings.Contains(got, want) {
			t.Errorf("audit lacks %s: %s", want, got)
		}
	}
	if strings.Contains(got, reader) || strings.Contains(got, "wq_not-a-token") {
		t.Error("a token reached the audit log")
	}
	if n := strings.Count(got, `"auth_`); n != 4 {
		t.Errorf("%d audited decisions for four requests", n)
	}
}

func TestMeShowsRulesAndPermissionsAndBridgesTheProxyToken(t *testing.T) {
	s, _, reader, admin := newAuthServer(t)
	code, me := call(s, "GET", "/me", bearer(reader))
	if code != http.StatusOK || me["identity"] != "token:reader" || me["access_token"] != nil {
		t.Fatalf("/me: %d %v", code, me)
	}
	if perms, _ := me["permissions"].([]any); len(perms) != 1 || perms[0] != "read" {
		t.Errorf("permissions %v", me["permissions"])
	}
	if grants, _ := me["grants"].([]any); len(grants) != 1 || !strings.Contains(jsonOf(grants), `"projects":["g/**"]`) {
		t.Errorf("grants %v", me["grants"])
	}
	// Behind the OAuth proxy the session's token authenticates /me and is
	// handed back, to be used as a bearer token (DDR-27).
	code, me = call(s, "GET", "/me", http.Header{"X-Forwarded-Access-Token": {admin}})
	if code != http.StatusOK || me["identity"] != "token:root" || me["access_token"] != admin {
		t.Errorf("/me behind the proxy: %d %v", code, me)
	}
	// The header counts only on /me.
	if code, _ := call(s, "GET", "/api/v1/items", http.Header{"X-Forwarded-Access-Token": {admin}}); code != http.StatusUnauthorized {
		t.Errorf("proxy header on another route: %d, want 401", code)
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }
