package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// errUnknownKey is a token signed by a key the issuer does not publish.
var errUnknownKey = errors.New("signed by a key the issuer does not publish")

// keySet verifies JWS signatures with an issuer's published keys. It
// satisfies go-oidc's KeySet. go-oidc's own remote key set refetches on
// every unknown key id, which lets anyone make us hammer the issuer with
// made-up kids; this one refetches at most once per minRefresh, keeps
// the keys it has when a fetch fails, and never makes a token of a known
// key wait for a fetch.
type keySet struct {
	url        string
	client     *http.Client
	minRefresh time.Duration
	now        func() time.Time
	metrics    interface{ JWKSFetched(outcome string) } // nil: not counted

	fetching  sync.Mutex // serialises fetches; verifications of known keys never wait for one
	mu        sync.Mutex // guards the fields below, held briefly
	keys      []jose.JSONWebKey
	fetchedAt time.Time // last fetch attempt
}

// signingAlgs are the algorithms a token may use; "none" and the HMAC
// family never, since an issuer's keys are public.
var signingAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// VerifySignature checks the token's signature with the published key its
// kid names and returns the payload.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, signingAlgs)
	if err != nil {
		return nil, fmt.Errorf("malformed token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("want exactly one signature")
	}
	h := jws.Signatures[0].Header
	key, err := k.key(ctx, h.KeyID)
	if err != nil {
		return nil, err
	}
	if !algFits(key, jose.SignatureAlgorithm(h.Algorithm)) {
		return nil, fmt.Errorf("algorithm %s does not fit key %q", h.Algorithm, h.KeyID)
	}
	return jws.Verify(key.Key)
}

// key returns the published key kid names, fetching the set when it is
// not known and the last fetch is older than minRefresh. Concurrent misses
// wait for one fetch and then look again.
func (k *keySet) key(ctx context.Context, kid string) (jose.JSONWebKey, error) {
	if key, ok := k.cached(kid); ok {
		return key, nil
	}
	k.fetching.Lock()
	defer k.fetching.Unlock()
	k.mu.Lock()
	key, ok := k.find(kid)
	recent := !k.fetchedAt.IsZero() && k.now().Sub(k.fetchedAt) < k.minRefresh
	if !ok && !recent {
		k.fetchedAt = k.now()
	}
	k.mu.Unlock()
	if ok {
		return key, nil // fetched by the one this call waited for
	}
	if recent {
		return jose.JSONWebKey{}, errUnknownKey
	}
	keys, err := k.fetch(ctx)
	if k.metrics != nil {
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		k.metrics.JWKSFetched(outcome)
	}
	if err != nil {
		return jose.JSONWebKey{}, fmt.Errorf("fetch the issuer's keys: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = keys
	if key, ok := k.find(kid); ok {
		return key, nil
	}
	return jose.JSONWebKey{}, errUnknownKey
}

// cached looks kid up without waiting for a fetch in flight.
func (k *keySet) cached(kid string) (jose.JSONWebKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.find(kid)
}

// find returns the signing key with this kid. A token without a kid
// matches only a set of exactly one signing key.
func (k *keySet) find(kid string) (jose.JSONWebKey, bool) {
	var signing []jose.JSONWebKey
	for _, key := range k.keys {
		if key.Use == "" || key.Use == "sig" {
			signing = append(signing, key)
		}
	}
	if kid == "" {
		if len(signing) != 1 {
			return jose.JSONWebKey{}, false
		}
		return signing[0], true
	}
	i := slices.IndexFunc(signing, func(key jose.JSONWebKey) bool { return key.KeyID == kid })
	if i < 0 {
		return jose.JSONWebKey{}, false
	}
	return signing[i], true
}

func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", k.url, resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("%s: %w", k.url, err)
	}
	var keys []jose.JSONWebKey
	for _, key := range set.Keys {
		if key.Valid() && key.IsPublic() {
			keys = append(keys, key)
		}
	}
	return keys, nil
}

// algFits pins the algorithm to the key: its own "alg" when it publishes
// one, else the family its type allows (RSA: RS/PS; EC: the ES of its
// curve; Ed25519: EdDSA).
func algFits(key jose.JSONWebKey, alg jose.SignatureAlgorithm) bool {
	if key.Algorithm != "" && key.Algorithm != string(alg) {
		return false
	}
	switch pub := key.Key.(type) {
	case *rsa.PublicKey:
		return slices.Contains([]jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512}, alg)
	case *ecdsa.PublicKey:
		switch pub.Curve.Params().BitSize {
		case 256:
			return alg == jose.ES256
		case 384:
			return alg == jose.ES384
		case 521:
			return alg == jose.ES512
		}
	case ed25519.PublicKey:
		return alg == jose.EdDSA
	}
	return false
}
