package auth

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
)

// IssuerK8s is the rule issuer shorthand for the cluster the service runs
// in (DDR-26): resolved from the in-cluster discovery document, skipped
// with a log line when not in a cluster.
const IssuerK8s = "k8s"

// JWTOptions tune JWT verification.
type JWTOptions struct {
	// Leeway is the clock skew allowed on exp and nbf (default 30s).
	Leeway time.Duration
	// MinRefresh is the least time between two fetches of an issuer's
	// keys, however many tokens with unknown key ids arrive (default 1m).
	MinRefresh time.Duration
	// Client fetches discovery documents and keys (default: 10s timeout).
	Client *http.Client
	// Clock is the clock (default the real one).
	Clock clockwork.Clock
	// Cluster locates the in-cluster API server for the k8s shorthand
	// (default: the standard service account mount).
	Cluster Cluster
	Log     *slog.Logger
	// Metrics, when set, counts every fetch of a key set by outcome ("ok",
	// "error"); package metrics implements it.
	Metrics interface{ JWKSFetched(outcome string) }
}

// Cluster is where a pod finds its API server and credentials.
type Cluster struct {
	URL       string // default https://kubernetes.default.svc
	TokenFile string // default /var/run/secrets/kubernetes.io/serviceaccount/token
	CAFile    string // default /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
}

func (o *JWTOptions) defaults() {
	if o.Leeway <= 0 {
		o.Leeway = 30 * time.Second
	}
	if o.MinRefresh <= 0 {
		o.MinRefresh = time.Minute
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
	if o.Cluster.URL == "" {
		o.Cluster.URL = "https://kubernetes.default.svc"
	}
	if o.Cluster.TokenFile == "" {
		o.Cluster.TokenFile = sa + "token"
	}
	if o.Cluster.CAFile == "" {
		o.Cluster.CAFile = sa + "ca.crt"
	}
}

// issuer verifies the tokens of one OIDC issuer. Discovery is lazy and a
// failed one is retried after a few seconds, never cached for long.
type issuer struct {
	url    string // the issuer, as tokens name it
	opts   *JWTOptions
	rules  []Rule
	client *http.Client
	// jwksURL is set for issuers resolved up front (k8s); empty, go-oidc
	// discovery finds it.
	jwksURL string

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	keys     *keySet
	failedAt time.Time
}

const rediscoverAfter = 5 * time.Second

func (is *issuer) verifierFor(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.verifier != nil {
		return is.verifier, nil
	}
	if !is.failedAt.IsZero() && is.opts.Clock.Now().Sub(is.failedAt) < rediscoverAfter {
		return nil, wq.Errorf(wq.EUNAVAILABLE, "issuer %s is unreachable; retrying shortly", is.url)
	}
	jwksURL := is.jwksURL
	if jwksURL == "" {
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, is.client), is.url)
		if err != nil {
			is.failedAt = is.opts.Clock.Now()
			is.opts.Log.Warn("OIDC discovery failed", "issuer", is.url, "err", err)
			return nil, wq.Errorf(wq.EUNAVAILABLE, "issuer %s is unreachable", is.url)
		}
		var meta struct {
			JWKSURI string `json:"jwks_uri"`
		}
		if err := p.Claims(&meta); err != nil || meta.JWKSURI == "" {
			is.failedAt = is.opts.Clock.Now()
			return nil, wq.Errorf(wq.EUNAVAILABLE, "issuer %s publishes no jwks_uri", is.url)
		}
		jwksURL = meta.JWKSURI
	}
	algs := make([]string, len(signingAlgs))
	for i, a := range signingAlgs {
		algs[i] = string(a)
	}
	is.keys = &keySet{url: jwksURL, client: is.client, minRefresh: is.opts.MinRefresh, now: is.opts.Clock.Now,
		metrics: is.opts.Metrics}
	// aud is a claim the rules bind (DDR-22), and the time claims are
	// checked here with a leeway: go-oidc checks signature and issuer.
	is.verifier = oidc.NewVerifier(is.url, is.keys, &oidc.Config{SkipClientIDCheck: true, SkipExpiryCheck: true,
		SupportedSigningAlgs: algs})
	return is.verifier, nil
}

// audiences are the aud values this issuer's rules bind.
func (is *issuer) audiences() []string {
	var out []string
	for _, r := range is.rules {
		out = append(out, r.Claims["aud"]...)
	}
	return out
}

// JWTs authenticates OIDC ID tokens against the issuers the rules name.
type JWTs struct {
	opts    JWTOptions
	issuers map[string]*issuer
}

// NewJWTs sets up verification for the issuers of rules (those with an
// Issuer). The k8s shorthand is resolved now: when not in a cluster its
// rules are skipped with a log line (DDR-26).
func NewJWTs(ctx context.Context, rules []Rule, opts JWTOptions) (*JWTs, error) {
	opts.defaults()
	j := &JWTs{opts: opts, issuers: map[string]*issuer{}}
	var k8s []Rule
	for _, r := range rules {
		switch {
		case r.Issuer == "":
		case r.Issuer == IssuerK8s:
			k8s = append(k8s, r)
		default:
			is := j.issuers[r.Issuer]
			if is == nil {
				is = &issuer{url: r.Issuer, opts: &j.opts, client: opts.Client}
				j.issuers[r.Issuer] = is
			}
			is.rules = append(is.rules, r)
		}
	}
	if len(k8s) > 0 {
		is, err := j.inCluster(ctx)
		if err != nil {
			return nil, err
		}
		if is == nil {
			names := make([]string, len(k8s))
			for i, r := range k8s {
				names[i] = r.Name
			}
			opts.Log.Info("not running in a cluster: rules with issuer k8s are skipped", "rules", names)
		} else {
			if other := j.issuers[is.url]; other != nil {
				is.rules = other.rules
			}
			is.rules = append(is.rules, k8s...)
			j.issuers[is.url] = is
		}
	}
	return j, nil
}

// inCluster resolves the k8s issuer from the API server's discovery
// document (DDR-11): the issuer is whatever the cluster says, and the key
// set is fetched from the API server's own host, which a pod can always
// reach, with the service account token (OpenShift refuses anonymous
// reads). nil when not in a cluster.
func (j *JWTs) inCluster(ctx context.Context) (*issuer, error) {
	c := j.opts.Cluster
	token, err := os.ReadFile(c.TokenFile)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("k8s issuer: %w", err)
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("k8s issuer: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("k8s issuer: %s holds no certificate", c.CAFile)
	}
	client := &http.Client{Timeout: j.opts.Client.Timeout, Transport: &bearerTransport{token: strings.TrimSpace(string(token)),
		base: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.URL, "/")+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, fmt.Errorf("k8s issuer: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("k8s issuer discovery: %w", err)
	}
	defer resp.Body.Close()
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("k8s issuer discovery: %s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil || doc.Issuer == "" || doc.JWKSURI == "" {
		return nil, fmt.Errorf("k8s issuer discovery: want issuer and jwks_uri (%v)", err)
	}
	jwks, err := url.Parse(doc.JWKSURI)
	if err != nil {
		return nil, fmt.Errorf("k8s issuer discovery: jwks_uri: %w", err)
	}
	api, _ := url.Parse(c.URL)
	jwks.Scheme, jwks.Host = api.Scheme, api.Host
	return &issuer{url: doc.Issuer, opts: &j.opts, client: client, jwksURL: jwks.String()}, nil
}

type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}

// LooksLikeJWT reports whether a token has a JWT's three segments.
func LooksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// NeedsRemoteCall implements RemoteCoster: a JWT is verified locally
// once its issuer's keys are cached, and their fetches are bounded by
// the key set (at most once per MinRefresh), not by the callers.
func (j *JWTs) NeedsRemoteCall(string) bool { return false }

// Authenticate verifies a JWT and maps it through the rules of its
// issuer. A verified token that no rule matches is a caller without
// grants (403 on every route), not a stranger.
func (j *JWTs) Authenticate(ctx context.Context, token string) (*Caller, error) {
	if len(token) > MaxTokenBytes {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "token is larger than %d bytes", MaxTokenBytes)
	}
	iss, err := unverifiedIssuer(token)
	if err != nil {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "malformed token: %v", err)
	}
	is, ok := j.issuers[iss]
	if !ok {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "no rule trusts issuer %q", iss)
	}
	v, err := is.verifierFor(ctx)
	if err != nil {
		return nil, err
	}
	idt, err := v.Verify(ctx, token)
	if err != nil {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "token refused: %v", err)
	}
	claims := map[string]any{}
	if err := idt.Claims(&rawClaims{claims}); err != nil {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "token claims: %v", err)
	}
	if err := j.checkTimes(claims); err != nil {
		return nil, err
	}
	if !anyValueMatches(claims["aud"], is.audiences()) {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "token audience is not one the rules of %s accept", iss)
	}
	c := &Caller{Kind: KindJWT, Issuer: iss, Grants: []Grant{}}
	for _, r := range is.rules {
		if !r.MatchClaims(claims) {
			continue
		}
		c.Grants = append(c.Grants, Grant{Rule: r.Name, Permissions: slices.Clone(r.Permissions), Projects: slices.Clone(r.Projects)})
		if c.Identity == "" {
			c.Identity = identityOf(claims, r.IdentityClaim)
		}
	}
	if c.Identity == "" {
		c.Identity = identityOf(claims, "sub")
	}
	return c, nil
}

// checkTimes requires exp and honours nbf, each with the leeway.
func (j *JWTs) checkTimes(claims map[string]any) error {
	now := j.opts.Clock.Now()
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return wq.Errorf(wq.EUNAUTHORIZED, "token has no exp")
	}
	if now.After(exp.Add(j.opts.Leeway)) {
		return wq.Errorf(wq.EUNAUTHORIZED, "token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if v, present := claims["nbf"]; present {
		nbf, ok := numericDate(v)
		if !ok {
			return wq.Errorf(wq.EUNAUTHORIZED, "token nbf is not a date")
		}
		if now.Add(j.opts.Leeway).Before(nbf) {
			return wq.Errorf(wq.EUNAUTHORIZED, "token not valid before %s", nbf.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

func numericDate(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e11 {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

func identityOf(claims map[string]any, claim string) string {
	if claim == "" {
		claim = "sub"
	}
	v, _ := lookupClaim(claims, claim)
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}

// rawClaims decodes claims keeping numbers as json.Number.
type rawClaims struct{ m map[string]any }

func (r *rawClaims) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(&r.m)
}

// unverifiedIssuer reads iss from a token's payload, to pick the issuer
// whose keys verify it. Nothing else of an unverified payload is used.
func unverifiedIssuer(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", fmt.Errorf("want three segments")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("payload: %v", err)
	}
	var p struct {
		Iss string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &p); err != nil || p.Iss == "" {
		return "", fmt.Errorf("payload names no issuer")
	}
	return p.Iss, nil
}
