package auth_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/workqueue-dev/workqueue/auth"
)

// FuzzJWTsAcceptOnlyWhatTheIssuerSigned feeds arbitrary tokens to a
// verifier trusting a real issuer: nothing but the seeded, genuinely
// signed token may pass, and nothing may panic.
func FuzzJWTsAcceptOnlyWhatTheIssuerSigned(f *testing.F) {
	w := newJWTWorldFor(f)
	valid := sign(f, w.rsa, w.claims(nil))
	f.Add(valid)
	f.Add(strings.Replace(valid, ".", "..", 1))
	f.Add("eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := w.jwts.Authenticate(context.Background(), token)
		if err == nil && token != valid {
			t.Fatalf("accepted a token the issuer did not sign: %q → %+v", token, c)
		}
	})
}

// FuzzClaimRules matches arbitrary claim documents against pointer and
// plain claim names: never a panic.
func FuzzClaimRules(f *testing.F) {
	f.Add(`{"a":{"b":[1,true,"x"]}}`, "/a/b/1", "true")
	f.Add(`{"a~b":{"c/d":"v"}}`, "/a~0b/c~1d", "v")
	f.Add(`[1,2]`, "a", "1")
	f.Fuzz(func(t *testing.T, doc, name, value string) {
		claims, err := decodeClaims(doc)
		if err != nil {
			return
		}
		r := auth.Rule{Claims: map[string][]string{name: {strings.ToLower(value)}}}
		r.MatchClaims(claims)
	})
}

func decodeClaims(doc string) (map[string]any, error) {
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	var m map[string]any
	err := d.Decode(&m)
	return m, err
}

func newJWTWorldFor(f *testing.F) *jwtWorld {
	w := &jwtWorld{rsa: newRSAKey(f, "rsa-1"), ec: newECKey(f, "ec-1"), clock: clockwork.NewFakeClockAt(time.Now())}
	w.issuer = newIssuer(f)
	w.issuer.publish(w.rsa, w.ec)
	var err error
	w.jwts, err = auth.NewJWTs(context.Background(), []auth.Rule{{Name: "ci", Issuer: w.issuer.URL,
		Claims: map[string][]string{"aud": {"workqueue"}}, Permissions: []auth.Permission{auth.Read}}},
		auth.JWTOptions{Clock: w.clock})
	if err != nil {
		f.Fatal(err)
	}
	return w
}
