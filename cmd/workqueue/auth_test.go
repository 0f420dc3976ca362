package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/workqueue-dev/workqueue/config"
)

// TestSubmitOutsideTheRuleProjectsIsForbiddenAndStoresNothing runs serve
// with a real OIDC issuer and a rule narrowed to other projects: the CI
// job's token is valid, /me shows the rule, and a submit to this project
// is 403 with nothing stored.
func TestSubmitOutsideTheRuleProjectsIsForbiddenAndStoresNothing(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var iss *httptest.Server
	iss = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			json.NewEncoder(w).Encode(map[string]any{"issuer": iss.URL, "jwks_uri": iss.URL + "/keys"})
		case "/keys":
			json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Use: "sig", Algorithm: "RS256"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer iss.Close()
	w := startAPI(t, "", func(c *config.Config) {
		c.Auth.Rules = []config.Rule{{Name: "other-projects-ci", Issuer: iss.URL, IdentityClaim: "project_path",
			Claims: map[string]any{"aud": "workqueue", "ref_protected": true}, Permissions: []string{"submit", "read"},
			Projects: []string{"elsewhere/**"}}}
	})
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, nil)
	payload, _ := json.Marshal(map[string]any{"iss": iss.URL, "aud": "workqueue", "sub": "project_path:elsewhere/app",
		"project_path": "elsewhere/app", "ref_protected": true, "project_id": 7, "exp": time.Now().Add(5 * time.Minute).Unix()})
	jws, _ := signer.Sign(payload)
	token, _ := jws.CompactSerialize()

	status, me, _ := w.do("GET", "/me", token, nil)
	if status != http.StatusOK || me["identity"] != "elsewhere/app" || me["kind"] != "jwt" {
		t.Fatalf("/me: %d %v", status, me)
	}
	if rules, _ := me["rules"].([]any); len(rules) != 1 || rules[0] != "other-projects-ci" {
		t.Errorf("/me rules: %v", me["rules"])
	}

	status, body, _ := w.do("POST", "/api/v1/items", token, w.submission("workqueue/not-yours"))
	if status != http.StatusForbidden || body["code"] != "forbidden" {
		t.Errorf("submit outside the rule's projects: %d %v, want 403", status, body)
	}
	status, list, _ := w.do("GET", "/api/v1/items", w.tokens["read"], nil)
	if items, _ := list["items"].([]any); status != http.StatusOK || len(items) != 0 {
		t.Errorf("something was stored: %d %v", status, list)
	}
	// An item of this project, submitted by a caller who may: the scoped
	// caller neither sees it listed nor reads it.
	status, created, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("workqueue/someone-elses"))
	if status != http.StatusCreated {
		t.Fatalf("submit by an unscoped token: %d %v", status, created)
	}
	if status, list, _ := w.do("GET", "/api/v1/items", token, nil); status != http.StatusOK || len(asList(list["items"])) != 0 {
		t.Errorf("the scoped caller's list: %d %v, want no items", status, list)
	}
	// Another project's item is, to the scoped caller, one that does not
	// exist: 404 as for a missing id, so that ids cannot be probed.
	if status, got, _ := w.do("GET", "/api/v1/items/"+created["id"].(string), token, nil); status != http.StatusNotFound || got["code"] != "not_found" {
		t.Errorf("the scoped caller read another project's item: %d %v, want 404", status, got)
	}
	status, list, _ = w.do("GET", "/api/v1/items", w.tokens["read"], nil)
	if items, _ := list["items"].([]any); status != http.StatusOK || len(items) != 1 {
		t.Errorf("an unscoped reader's list: %d %v, want the one item", status, list)
	}

	if status, _, _ := w.do("GET", "/me", "", nil); status != http.StatusUnauthorized {
		t.Errorf("/me without a token: %d", status)
	}

	// Forged tokens get 401 at the API and change nothing.
	b64 := base64.RawURLEncoding.EncodeToString
	none := b64([]byte(`{"alg":"none","kid":"k1"}`)) + "." + b64(payload) + "."
	expiredPayload, _ := json.Marshal(map[string]any{"iss": iss.URL, "aud": "workqueue", "sub": "x", "project_path": w.repo,
		"ref_protected": true, "exp": time.Now().Add(-time.Hour).Unix()})
	expired, _ := signer.Sign(expiredPayload)
	expiredToken, _ := expired.CompactSerialize()
	for name, forged := range map[string]string{"alg none": none, "expired": expiredToken, "tampered": token[:len(token)-4] + "AAAA"} {
		if status, body, _ := w.do("POST", "/api/v1/items", forged, w.submission("workqueue/forged")); status != http.StatusUnauthorized {
			t.Errorf("%s: %d %v, want 401", name, status, body)
		}
	}
	status, list, _ = w.do("GET", "/api/v1/items", w.tokens["read"], nil)
	if items, _ := list["items"].([]any); status != http.StatusOK || len(items) != 1 {
		t.Errorf("a forged token stored something: %d %v", status, list)
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }
