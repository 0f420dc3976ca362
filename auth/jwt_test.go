package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
)

// testIssuer is a real OIDC issuer over HTTP: a discovery document and a
// JWKS that tests can rotate, counting how often the keys are fetched.
type testIssuer struct {
	*httptest.Server
	mu        sync.Mutex
	published []jose.JSONWebKey
	fetches   atomic.Int32
	// gate, when set, holds each key fetch until it is closed; entered
	// hears of each fetch that waits.
	gate, entered chan struct{}
}

type signingKey struct {
	kid string
	alg jose.SignatureAlgorithm
	key any // private key
}

func newIssuer(t testing.TB) *testIssuer {
	t.Helper()
	is := &testIssuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"}})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		gate, entered := is.gate, is.entered
		is.mu.Unlock()
		if gate != nil {
			entered <- struct{}{}
			<-gate
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: is.published})
	})
	is.Server = httptest.NewServer(mux)
	t.Cleanup(is.Close)
	return is
}

func newRSAKey(t testing.TB, kid string) signingKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid, jose.RS256, k}
}

func newECKey(t testing.TB, kid string) signingKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid, jose.ES256, k}
}

func (k signingKey) public() any {
	switch p := k.key.(type) {
	case *rsa.PrivateKey:
		return &p.PublicKey
	case *ecdsa.PrivateKey:
		return &p.PublicKey
	}
	panic("key type")
}

func (is *testIssuer) publish(keys ...signingKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	for _, k := range keys {
		is.published = append(is.published, jose.JSONWebKey{Key: k.public(), KeyID: k.kid, Use: "sig", Algorithm: string(k.alg)})
	}
}

func sign(t testing.TB, k signingKey, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.key, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// handMade builds a token with any header and an HMAC-SHA256 signature
// under secret (or no signature).
func handMade(header, claims map[string]any, secret []byte) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	if secret == nil {
		return input + "."
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

type jwtWorld struct {
	issuer *testIssuer
	rsa    signingKey
	ec     signingKey
	clock  *clockwork.FakeClock
	jwts   *auth.JWTs
}

func newJWTWorld(t *testing.T) *jwtWorld {
	t.Helper()
	w := &jwtWorld{issuer: newIssuer(t), rsa: newRSAKey(t, "rsa-1"), ec: newECKey(t, "ec-1"), clock: clockwork.NewFakeClockAt(time.Now())}
	w.issuer.publish(w.rsa, w.ec)
	rules := []auth.Rule{{Name: "ci", Issuer: w.issuer.URL, IdentityClaim: "project_path",
		Claims:      map[string][]string{"aud": {"workqueue"}, "ref_protected": {"true"}},
		Permissions: []auth.Permission{auth.Submit, auth.Read}, Projects: []string{"g/**"}}}
	var err error
	w.jwts, err = auth.NewJWTs(context.Background(), rules, auth.JWTOptions{Clock: w.clock, MinRefresh: time.Minute, Leeway: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// fetchKeys authenticates a token of the world's RSA key, so that the
// issuer's keys are fetched and held from then on.
func (w *jwtWorld) fetchKeys(t *testing.T) {
	t.Helper()
	if _, err := w.jwts.Authenticate(context.Background(), sign(t, w.rsa, w.claims(nil))); err != nil {
		t.Fatal(err)
	}
}

func (w *jwtWorld) claims(edit func(map[string]any)) map[string]any {
	now := w.clock.Now()
	c := map[string]any{"iss": w.issuer.URL, "sub": "project_path:g/app:ref_type:branch:ref:main", "aud": "workqueue",
		"project_path": "g/app", "ref_protected": true, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
	if edit != nil {
		edit(c)
	}
	return c
}

func TestValidTokensOfRSAAndECKeysAreAccepted(t *testing.T) {
	w := newJWTWorld(t)
	for _, k := range []signingKey{w.rsa, w.ec} {
		c, err := w.jwts.Authenticate(context.Background(), sign(t, k, w.claims(nil)))
		if err != nil {
			t.Fatalf("%s: %v", k.kid, err)
		}
		if c.Identity != "g/app" || c.Kind != auth.KindJWT || !c.CanOn(auth.Submit, "g/app") || c.CanOn(auth.Submit, "other/app") ||
			len(c.Rules()) != 1 || c.Rules()[0] != "ci" {
			t.Errorf("%s: caller %+v", k.kid, c)
		}
	}
	if c, err := w.jwts.Authenticate(context.Background(), sign(t, w.rsa, w.claims(func(c map[string]any) { c["ref_protected"] = false }))); err != nil || len(c.Grants) != 0 {
		t.Errorf("a valid token no rule matches: %+v %v, want a caller without grants", c, err)
	}
}

func TestForgedAndInvalidTokensAreRefused(t *testing.T) {
	w := newJWTWorld(t)
	ctx := context.Background()
	w.fetchKeys(t) // so that the refusals below are about the token
	rsaPub, _ := x509.MarshalPKIXPublicKey(w.rsa.public())
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaPub})
	other := newIssuer(t)
	stranger := newRSAKey(t, "rsa-1") // same kid, another key
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"alg none", handMade(map[string]any{"alg": "none", "kid": "rsa-1"}, w.claims(nil), nil)},
		{"HS256 with the RSA public key (PEM) as secret", handMade(map[string]any{"alg": "HS256", "kid": "rsa-1"}, w.claims(nil), rsaPEM)},
		{"HS256 with the RSA public key (DER) as secret", handMade(map[string]any{"alg": "HS256", "kid": "rsa-1"}, w.claims(nil), rsaPub)},
		{"unknown kid", sign(t, newRSAKey(t, "rsa-unknown"), w.claims(nil))},
		{"known kid, another key", sign(t, stranger, w.claims(nil))},
		{"RS256 claimed for the EC key", handMade(map[string]any{"alg": "RS256", "kid": "ec-1"}, w.claims(nil), []byte("x"))},
		{"expired", sign(t, w.rsa, w.claims(func(c map[string]any) { c["exp"] = w.clock.Now().Add(-time.Minute).Unix() }))},
		{"no exp", sign(t, w.rsa, w.claims(func(c map[string]any) { delete(c, "exp") }))},
		{"nbf beyond the leeway", sign(t, w.rsa, w.claims(func(c map[string]any) { c["nbf"] = w.clock.Now().Add(2 * time.Minute).Unix() }))},
		{"wrong issuer", sign(t, w.rsa, w.claims(func(c map[string]any) { c["iss"] = other.URL }))},
		{"no issuer", sign(t, w.rsa, w.claims(func(c map[string]any) { delete(c, "iss") }))},
		{"wrong audience", sign(t, w.rsa, w.claims(func(c map[string]any) { c["aud"] = "another-service" }))},
		{"missing audience", sign(t, w.rsa, w.claims(func(c map[string]any) { delete(c, "aud") }))},
		{"over-size", sign(t, w.rsa, w.claims(func(c map[string]any) { c["pad"] = strings.Repeat("x", auth.MaxTokenBytes) }))},
		{"two segments", "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0"},
		{"four segments", sign(t, w.rsa, w.claims(nil)) + ".x"},
		{"garbage segments", "!!!.???.***"},
		{"payload not JSON", "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte("nope")) + ".c2ln"},
		{"tampered payload", func() string {
			parts := strings.Split(sign(t, w.rsa, w.claims(nil)), ".")
			c := w.claims(func(c map[string]any) { c["project_path"] = "g/other" })
			b, _ := json.Marshal(c)
			return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := w.jwts.Authenticate(ctx, tc.token); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
				t.Errorf("got %+v, %v; want unauthorized", c, err)
			}
		})
	}
	if _, err := w.jwts.Authenticate(ctx, sign(t, w.rsa, w.claims(func(c map[string]any) { c["nbf"] = w.clock.Now().Add(10 * time.Second).Unix() }))); err != nil {
		t.Errorf("nbf within the leeway: %v", err)
	}
}

func TestUnknownKeyIDsFetchTheKeysAtMostOncePerInterval(t *testing.T) {
	w := newJWTWorld(t)
	ctx := context.Background()
	w.fetchKeys(t)
	w.clock.Advance(2 * time.Minute) // the next miss may fetch once
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			tok := sign(t, newECKey(t, "made-up-"+string(rune('a'+i%26))), w.claims(nil))
			if _, err := w.jwts.Authenticate(ctx, tok); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
				t.Errorf("unknown kid: %v", err)
			}
		})
	}
	wg.Wait()
	if got := w.issuer.fetches.Load(); got != 2 {
		t.Errorf("%d key fetches for one token and 50 unknown kids across one interval, want 2", got)
	}
}

func TestATokenOfANewlyPublishedKeyIsAcceptedAfterTheRefresh(t *testing.T) {
	w := newJWTWorld(t)
	ctx := context.Background()
	w.fetchKeys(t)
	rotated := newRSAKey(t, "rsa-2")
	w.issuer.publish(rotated)
	tok := sign(t, rotated, w.claims(nil))
	if _, err := w.jwts.Authenticate(ctx, tok); err == nil {
		t.Fatal("accepted before the keys could be refetched (the interval had not passed)")
	}
	w.clock.Advance(time.Minute)
	if _, err := w.jwts.Authenticate(ctx, sign(t, rotated, w.claims(nil))); err != nil {
		t.Errorf("after the refresh: %v", err)
	}
	if _, err := w.jwts.Authenticate(ctx, sign(t, w.rsa, w.claims(nil))); err != nil {
		t.Errorf("the old key, still published: %v", err)
	}
}

func TestUnreachableIssuerIsRefusedNotAllowed(t *testing.T) {
	is := newIssuer(t)
	k := newRSAKey(t, "k")
	is.publish(k)
	url := is.URL
	is.Close()
	j, err := auth.NewJWTs(context.Background(), []auth.Rule{{Name: "r", Issuer: url, Claims: map[string][]string{"aud": {"wq"}},
		Permissions: []auth.Permission{auth.Read}}}, auth.JWTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, k, map[string]any{"iss": url, "aud": "wq", "sub": "x", "exp": time.Now().Add(time.Minute).Unix()})
	if c, err := j.Authenticate(context.Background(), tok); err == nil || c != nil {
		t.Errorf("issuer down: %+v %v, want refused", c, err)
	}
}

func TestK8sRulesAreSkippedOutsideACluster(t *testing.T) {
	var logged strings.Builder
	dir := t.TempDir()
	j, err := auth.NewJWTs(context.Background(), []auth.Rule{{Name: "pods", Issuer: auth.IssuerK8s,
		Claims: map[string][]string{"aud": {"wq"}}, Permissions: []auth.Permission{auth.Read}}},
		auth.JWTOptions{Cluster: auth.Cluster{TokenFile: filepath.Join(dir, "token"), CAFile: filepath.Join(dir, "ca.crt")},
			Log: newTextLogger(&logged)})
	if err != nil || j == nil {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(logged.String(), "rules with issuer k8s are skipped") || !strings.Contains(logged.String(), "pods") {
		t.Errorf("no log line naming the skipped rule: %q", logged.String())
	}
}

func TestK8sIssuerIsDiscoveredInCluster(t *testing.T) {
	k := newRSAKey(t, "sa-key")
	const clusterIssuer = "https://oidc.example.com/cluster-a"
	var api *httptest.Server
	api = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sa-token" {
			http.Error(w, "anonymous", http.StatusForbidden)
			return
		}
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			// The published jwks_uri points at an address a pod cannot reach.
			json.NewEncoder(w).Encode(map[string]any{"issuer": clusterIssuer, "jwks_uri": "https://10.0.0.1:6443/openid/v1/jwks"})
		case "/openid/v1/jwks":
			json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: k.public(), KeyID: k.kid, Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "token"), []byte("sa-token\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}), 0o600)
	j, err := auth.NewJWTs(context.Background(), []auth.Rule{{Name: "pods", Issuer: auth.IssuerK8s,
		Claims: map[string][]string{"aud": {"wq"}, "/kubernetes.io/namespace": {"ci"}}, Permissions: []auth.Permission{auth.Submit}}},
		auth.JWTOptions{Cluster: auth.Cluster{URL: api.URL, TokenFile: filepath.Join(dir, "token"), CAFile: filepath.Join(dir, "ca.crt")}})
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, k, map[string]any{"iss": clusterIssuer, "aud": []string{"wq"}, "sub": "system:serviceaccount:ci:bot",
		"kubernetes.io": map[string]any{"namespace": "ci"}, "exp": time.Now().Add(time.Minute).Unix()})
	c, err := j.Authenticate(context.Background(), tok)
	if err != nil || c.Identity != "system:serviceaccount:ci:bot" || !c.Can(auth.Submit) {
		t.Errorf("in-cluster token: %+v %v", c, err)
	}
}

func TestAKnownKeyNeverWaitsForAFetchInFlight(t *testing.T) {
	w := newJWTWorld(t)
	ctx := context.Background()
	w.fetchKeys(t)
	w.clock.Advance(2 * time.Minute)
	w.issuer.mu.Lock()
	w.issuer.gate, w.issuer.entered = make(chan struct{}), make(chan struct{}, 1)
	w.issuer.mu.Unlock()
	missed := make(chan error, 1)
	go func() {
		_, err := w.jwts.Authenticate(ctx, sign(t, newRSAKey(t, "made-up"), w.claims(nil)))
		missed <- err
	}()
	<-w.issuer.entered // the unknown kid's fetch is now stuck at a slow issuer
	known := make(chan error, 1)
	go func() {
		_, err := w.jwts.Authenticate(ctx, sign(t, w.ec, w.claims(nil)))
		known <- err
	}()
	select {
	case err := <-known:
		if err != nil {
			t.Errorf("known key while a fetch is in flight: %v", err)
		}
	case <-time.After(10 * time.Second): // a deadlock guard, not a timing assertion
		t.Error("a token of a known key waited for another token's key fetch")
	}
	close(w.issuer.gate)
	if err := <-missed; err == nil {
		t.Error("the made-up kid was accepted")
	}
}
