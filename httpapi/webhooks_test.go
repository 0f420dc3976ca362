package httpapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

// TestEveryDocumentedEventIsAnswered2xx posts every delivery of
// forge/testdata (each event kind as GitLab's and Gitea's webhook
// documentation show it, GitLab's work items under Issue Hook included)
// to POST /webhooks/{forge}: each is answered 2xx, since GitLab disables
// a hook after four failed deliveries in a row and then sends nothing,
// and a merge request event of an item's branch is still stored for it.
// Only a wrong token or signature, or a body that is not JSON, is
// refused.
func TestEveryDocumentedEventIsAnswered2xx(t *testing.T) {
	st := testdb.Open(t, store.KindSQLite)
	cfg := config.Default()
	cfg.Forges = []config.Forge{{Name: "lab", Kind: "gitlab", URL: "http://127.0.0.1:1", TokenEnv: "UNUSED"},
		{Name: "tea", Kind: "gitea", URL: "http://127.0.0.1:1", TokenEnv: "UNUSED"}}
	cfg.Projects = []config.Project{{Match: "mike/**", Forge: "lab"}, {Match: "gitea/**", Forge: "tea"}}
	items := testapi.Items(st, cfg)
	tok, hash, _ := auth.NewToken()
	static, err := auth.NewStaticTokens([]auth.Token{{Name: "submit", SHA256: hash, Permissions: []auth.Permission{auth.Submit, auth.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	s := httpapi.NewServer(httpapi.Options{Store: st, Items: items, Webhooks: testapi.Webhooks(st, cfg, items, "hook-secret"), Auth: &auth.Chain{Static: static}, Log: testkit.Quiet()})
	do := func(req *http.Request) (int, map[string]any) {
		t.Helper()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		var out map[string]any
		json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	// The items the merge request fixtures are about, not yet numbered.
	for _, sub := range []string{
		`{"item_type":"mr","forge":"lab","project":"mike/diaspora","source_branch":"workqueue/ms-viewport","target_branch":"main","title":"T","file_actions":[{"action":"create","file_path":"a.txt","content":"a\n"}]}`,
		`{"item_type":"mr","forge":"tea","project":"gitea/webhooks","source_branch":"workqueue/fix-typo","target_branch":"main","title":"T","file_actions":[{"action":"create","file_path":"a.txt","content":"a\n"}]}`,
	} {
		req := httptest.NewRequest("POST", "/api/v1/items", strings.NewReader(sub))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		if code, out := do(req); code != http.StatusCreated {
			t.Fatalf("submit: %d %v", code, out)
		}
	}
	gitlab := func(event, token string, body []byte) *http.Request {
		req := httptest.NewRequest("POST", "/webhooks/lab", strings.NewReader(string(body)))
		req.Header.Set("X-Gitlab-Event", event)
		req.Header.Set("X-Gitlab-Token", token)
		req.Header.Set("X-Gitlab-Event-UUID", "13792a34-cac6-4fda-95a8-c58e00a3954e")
		return req
	}
	gitea := func(event, secret string, body []byte) *http.Request {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		req := httptest.NewRequest("POST", "/webhooks/tea", strings.NewReader(string(body)))
		req.Header.Set("X-Gitea-Event", event)
		req.Header.Set("X-Gitea-Signature", hex.EncodeToString(mac.Sum(nil)))
		req.Header.Set("X-Gitea-Delivery", "d-"+event+"-"+hex.EncodeToString(mac.Sum(nil))[:8])
		return req
	}
	stored := map[string]float64{}
	for kind, request := range map[string]func(event, secret string, body []byte) *http.Request{"gitlab": gitlab, "gitea": gitea} {
		dir := filepath.Join("..", "forge", "testdata", kind)
		b, err := os.ReadFile(filepath.Join(dir, "events.json"))
		if err != nil {
			t.Fatal(err)
		}
		var events map[string]string
		if err := json.Unmarshal(b, &events); err != nil {
			t.Fatal(err)
		}
		for name, event := range events {
			body, err := os.ReadFile(filepath.Join(dir, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			code, out := do(request(event, "hook-secret", body))
			if code/100 != 2 {
				t.Errorf("%s %s (%s): %d %v, want 2xx", kind, name, event, code, out)
			}
			stored[kind+"/"+name], _ = out["stored"].(float64)
			if code, _ := do(request(event, "wrong", body)); code != http.StatusUnauthorized {
				t.Errorf("%s %s with a wrong secret: %d, want 401", kind, name, code)
			}
		}
	}
	for _, name := range []string{"gitlab/merge_request", "gitea/pull_request"} {
		if stored[name] != 1 {
			t.Errorf("%s stored %v events, want 1 (for the item of its branch)", name, stored[name])
		}
	}
	for _, name := range []string{"gitlab/work_item", "gitlab/wiki_page", "gitlab/release", "gitea/release", "gitea/wiki"} {
		if stored[name] != 0 {
			t.Errorf("%s stored %v events, want none", name, stored[name])
		}
	}
	if code, _ := do(gitlab("Merge Request Hook", "hook-secret", []byte(`{"object_kind":`))); code != http.StatusBadRequest {
		t.Errorf("a body that is not JSON: %d, want 400", code)
	}
}
