package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/auth"
)

// A body the API reads must say it is JSON (issue 28, defect 8): a
// text/plain, form or multipart body, none at all, two Content-Types, or
// another charset is 415 with Accept-Post, on submissions and on the
// control plane alike; what a browser form or a bare fetch sends never
// reaches a decoder. JSON with charset=utf-8 is read.
func TestABodyThatDoesNotSayItIsJSONIsRefused415(t *testing.T) {
	s, tok := testServer(t)
	body := `{"item_type":"mr","forge":"gitea","project":"team/app","source_branch":"workqueue/ct","target_branch":"main",
		"title":"T","file_actions":[{"action":"create","file_path":"a.txt","content":"a\n"}]}`
	send := func(path string, types ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		for _, ct := range types {
			req.Header.Add("Content-Type", ct)
		}
		who := auth.Submit
		if strings.HasPrefix(path, "/api/v1/sessions") {
			who = auth.Agent
		}
		req.Header.Set("Authorization", "Bearer "+tok[who])
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	for _, types := range [][]string{nil, {"text/plain"}, {"application/x-www-form-urlencoded"}, {"multipart/form-data; boundary=x"},
		{"application/json", "application/json"}, {"application/json; charset=latin1"}, {"application/jsonx"}, {"not a type"}} {
		for _, path := range []string{"/api/v1/items", "/api/v1/sessions"} {
			rec := send(path, types...)
			var p map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &p)
			if rec.Code != http.StatusUnsupportedMediaType || p["reason"] != "unsupported_media_type" || rec.Header().Get("Accept-Post") != "application/json" {
				t.Errorf("POST %s with Content-Type %q: %d %v, want 415 unsupported_media_type", path, types, rec.Code, p)
			}
		}
	}
	if rec := send("/api/v1/items", "application/json; charset=UTF-8"); rec.Code == http.StatusUnsupportedMediaType {
		t.Errorf("JSON with charset=UTF-8: %d %s", rec.Code, rec.Body)
	}
	if rec := send("/api/v1/items", "application/merge-patch+json"); rec.Code == http.StatusUnsupportedMediaType {
		t.Errorf("a +json type: %d %s", rec.Code, rec.Body)
	}
}

// A submission whose shape would cost gigabytes to decode is refused on
// its bytes, naming the member and the limit (issue 28, defect 6).
func TestASubmissionOfMillionsOfNullsIsRefusedBeforeDecoding(t *testing.T) {
	s, tok := testServer(t)
	for member, list := range map[string]string{"file_actions": "null", "labels": `"x"`} {
		body := `{"item_type":"mr","forge":"gitea","project":"team/app","source_branch":"workqueue/n","target_branch":"main","title":"T",` +
			`"` + member + `":[` + strings.TrimSuffix(strings.Repeat(list+",", 2_000_000), ",") + `]}`
		req := httptest.NewRequest("POST", "/api/v1/items", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok[auth.Submit])
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		var p map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		if rec.Code != http.StatusUnprocessableEntity || p["reason"] != "body_too_complex" || !strings.Contains(p["detail"].(string), member) {
			t.Errorf("%s of 2,000,000: %d %v, want 422 body_too_complex naming it", member, rec.Code, p)
		}
	}
}
