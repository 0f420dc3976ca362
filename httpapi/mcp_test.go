package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestMCPWithoutATokenPointsAtItsProtectedResourceMetadata: a host that
// reaches /mcp without a token gets the bearer challenge, naming the
// RFC 9728 metadata of /mcp, and the metadata says that /mcp takes bearer
// tokens in the header and names no authorization server, so that the
// host asks for a token rather than starting an OAuth login.
func TestMCPWithoutATokenPointsAtItsProtectedResourceMetadata(t *testing.T) {
	s, _ := testServer(t)
	get := func(method, target string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	rec := get("POST", "http://wq.example:8080/mcp")
	challenge := rec.Header().Get("WWW-Authenticate")
	const metadata = "http://wq.example:8080/.well-known/oauth-protected-resource/mcp"
	if rec.Code != http.StatusUnauthorized || !strings.HasPrefix(challenge, `Bearer realm="workqueue"`) ||
		!strings.Contains(challenge, `resource_metadata="`+metadata+`"`) {
		t.Fatalf("POST /mcp without a token: %d, WWW-Authenticate %q; want 401 naming %s", rec.Code, challenge, metadata)
	}
	if c := get("GET", "http://wq.example:8080/api/v1/items").Header().Get("WWW-Authenticate"); strings.Contains(c, "resource_metadata") {
		t.Errorf("the API's challenge %q names the metadata of /mcp", c)
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		rec := get("GET", "http://wq.example:8080"+path)
		var got struct {
			Resource             string   `json:"resource"`
			BearerMethods        []string `json:"bearer_methods_supported"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if got.Resource != "http://wq.example:8080/mcp" || !slices.Equal(got.BearerMethods, []string{"header"}) || len(got.AuthorizationServers) != 0 {
			t.Errorf("GET %s: %+v, want resource http://wq.example:8080/mcp taking bearer tokens in the header, no authorization server", path, got)
		}
	}
	s, _ = testServer(t, func(o *Options) { o.PublicURL = "https://workqueue.example/" })
	if c := get("POST", "http://10.0.0.7/mcp").Header().Get("WWW-Authenticate"); !strings.Contains(c, `resource_metadata="https://workqueue.example/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("with public_url, the challenge %q does not name its metadata under public_url", c)
	}
}
