package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/workqueue-dev/workqueue/auth"
)

// Auth configures who may call the API.
type Auth struct {
	Tokens []Token `yaml:"tokens"`
	// AdminTokenFile names a file holding an admin API token, created
	// (mode 0600) on first start when missing; relative to the working
	// directory. Serve without a config file uses workqueue-admin.token.
	// Empty: no such token.
	AdminTokenFile string `yaml:"admin_token_file"`
	// Rules map remote identities (JWT claims of an issuer, or an
	// introspected user's groups) to permissions (DDR-21..23).
	Rules []Rule `yaml:"rules"`
	// JWT tunes the verification of OIDC tokens.
	JWT JWT `yaml:"jwt"`
	// Introspection validates opaque tokens (DDR-24), e.g. OpenShift's
	// https://api.cluster:6443/apis/user.openshift.io/v1/users/~.
	Introspection Introspection `yaml:"introspection"`
	// ProxyAccessTokenHeader is the header an OAuth proxy in front of
	// GET /me sets to the session's access token (DDR-27), e.g.
	// X-Forwarded-Access-Token. Empty: /me takes bearer tokens only.
	ProxyAccessTokenHeader string `yaml:"proxy_access_token_header"`
	// FailureLimit is how many failed authentications one network
	// prefix (the connection address's /24 for IPv4, /64 for IPv6; an
	// IPv6 /48 may make four times as many) may make within the failure
	// window before its further failures are answered 429 with
	// Retry-After; a token that validates always passes. 0 turns the
	// limit off.
	FailureLimit int `yaml:"failure_limit"`
	// FailureGlobalLimit is how many failed authentications all
	// addresses together may make within the failure window before every
	// address is throttled as one past failure_limit (default 1000).
	FailureGlobalLimit int `yaml:"failure_global_limit"`
	// FailureWindow is how long a failed authentication counts against
	// the failure limit.
	FailureWindow Duration `yaml:"failure_window"`
}

// Rule is one auth rule: groups, or issuer and claims.
type Rule struct {
	Name          string         `yaml:"name"`
	Groups        []string       `yaml:"groups"`
	Issuer        string         `yaml:"issuer"` // an https URL, or k8s
	Claims        map[string]any `yaml:"claims"` // claim → value or list of values; "/a/b" is a JSON pointer
	IdentityClaim string         `yaml:"identity_claim"`
	Permissions   []string       `yaml:"permissions"`
	Projects      []string       `yaml:"projects"` // globs; empty: every project
}

// JWT tunes JWT verification.
type JWT struct {
	Leeway     Duration `yaml:"leeway"`      // clock skew allowed on exp and nbf (default 30s)
	MinRefresh Duration `yaml:"min_refresh"` // least time between two key fetches of an issuer (default 1m)
}

// Introspection configures opaque-token validation.
type Introspection struct {
	URL string   `yaml:"url"`
	TTL Duration `yaml:"ttl"` // how long an answer is trusted (default 5m)
}

// Token is a static API token, configured by its hash only.
type Token struct {
	Name        string   `yaml:"name"`
	SHA256      string   `yaml:"sha256"` // lowercase hex SHA-256 of the token; see workqueue token create
	Permissions []string `yaml:"permissions"`
	Projects    []string `yaml:"projects"` // globs the token is narrowed to; empty: every project
}

var headerName = regexp.MustCompile(`^[A-Za-z0-9-]{1,100}$`)

var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$`)
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (c Config) validateAuth(bad func(field, format string, args ...any)) {
	c.validateRules(bad)
	a := c.Auth
	if a.JWT.Leeway < 0 || a.JWT.Leeway > Duration(5*time.Minute) {
		bad("auth.jwt.leeway", "want between 0 and 5m, got %s", time.Duration(a.JWT.Leeway))
	}
	if a.JWT.MinRefresh < 0 {
		bad("auth.jwt.min_refresh", "must not be negative, got %s", time.Duration(a.JWT.MinRefresh))
	}
	if a.Introspection.URL != "" {
		if u, err := url.Parse(a.Introspection.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("auth.introspection.url", "want an http(s) URL, got %q", a.Introspection.URL)
		}
	}
	if a.Introspection.TTL < 0 || a.Introspection.TTL > Duration(time.Hour) {
		bad("auth.introspection.ttl", "want between 0 and 1h (a revoked token is honoured this long), got %s", time.Duration(a.Introspection.TTL))
	}
	if a.FailureLimit < 0 || a.FailureLimit > 100000 {
		bad("auth.failure_limit", "want between 0 (no limit) and 100000, got %d", a.FailureLimit)
	}
	if a.FailureGlobalLimit < 1 || a.FailureGlobalLimit > 10000000 {
		bad("auth.failure_global_limit", "want between 1 and 10000000, got %d", a.FailureGlobalLimit)
	}
	if a.FailureWindow < Duration(time.Second) || a.FailureWindow > Duration(24*time.Hour) {
		bad("auth.failure_window", "want between 1s and 24h, got %s", time.Duration(a.FailureWindow))
	}
	if h := a.ProxyAccessTokenHeader; h != "" && !headerName.MatchString(h) {
		bad("auth.proxy_access_token_header", "want a header name, got %q", h)
	}
	names, hashes := map[string]bool{}, map[string]bool{}
	for i, t := range c.Auth.Tokens {
		field := fmt.Sprintf("auth.tokens[%d]", i)
		checkUniqueName(bad, field+".name", t.Name, tokenName, "letters, digits and . _ @ -", names)
		if !sha256Hex.MatchString(t.SHA256) {
			bad(field+".sha256", "want the 64 lowercase hex digits of the token's SHA-256 (workqueue token create prints them)")
		} else if hashes[t.SHA256] {
			bad(field+".sha256", "the same token is configured twice")
		}
		hashes[t.SHA256] = true
		validateGrant(field, t.Permissions, t.Projects, bad)
	}
}

// StaticTokens returns the configured tokens for the authenticator.
func (c Config) StaticTokens() []auth.Token {
	out := make([]auth.Token, 0, len(c.Auth.Tokens))
	for _, t := range c.Auth.Tokens {
		out = append(out, auth.Token{Name: t.Name, SHA256: t.SHA256, Permissions: permissionsOf(t.Permissions), Projects: t.Projects})
	}
	return out
}

// validateGrant checks what a token or rule grants: known permissions,
// at least one, and valid project globs.
func validateGrant(field string, permissions, projects []string, bad func(field, format string, args ...any)) {
	if len(permissions) == 0 {
		bad(field+".permissions", "at least one of %v", auth.Permissions)
	}
	for j, p := range permissions {
		if !auth.Permission(p).Valid() {
			bad(fmt.Sprintf("%s.permissions[%d]", field, j), "want one of %v, got %q", auth.Permissions, p)
		}
	}
	for j, p := range projects {
		if !doublestar.ValidatePattern(p) {
			bad(fmt.Sprintf("%s.projects[%d]", field, j), "not a valid glob: %q", p)
		}
	}
}

// permissionsOf converts validated permission names.
func permissionsOf(names []string) []auth.Permission {
	out := make([]auth.Permission, len(names))
	for i, p := range names {
		out[i] = auth.Permission(p)
	}
	return out
}

// validateRules checks every rule, naming the field of each problem.
func (c Config) validateRules(bad func(field, format string, args ...any)) {
	names := map[string]bool{}
	for i, r := range c.Auth.Rules {
		field := fmt.Sprintf("auth.rules[%d]", i)
		if r.Name != "" {
			if !tokenName.MatchString(r.Name) {
				bad(field+".name", "want letters, digits and . _ @ -, got %q", r.Name)
			} else if names[r.Name] {
				bad(field+".name", "%q is used twice", r.Name)
			}
			names[r.Name] = true
		}
		switch {
		case len(r.Groups) > 0 && (r.Issuer != "" || len(r.Claims) > 0):
			bad(field, "a rule has either groups, or issuer and claims, not both")
		case len(r.Groups) == 0 && r.Issuer == "":
			bad(field, "a rule needs groups, or issuer and claims")
		case r.Issuer != "":
			if r.Issuer != auth.IssuerK8s {
				if u, err := url.Parse(r.Issuer); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
					bad(field+".issuer", "want the issuer's URL (as its tokens' iss) or k8s, got %q", r.Issuer)
				}
			}
			if _, ok := r.Claims["aud"]; !ok {
				bad(field+".claims", "issuer rule must bind aud (a token minted for another service must not pass)")
			}
			for name, v := range r.Claims {
				if strings.HasPrefix(name, "/") && !auth.ValidPointer(name) {
					bad(fmt.Sprintf("%s.claims[%q]", field, name), "not a valid JSON pointer")
				}
				if _, err := auth.ClaimValues(v); err != nil {
					bad(fmt.Sprintf("%s.claims[%q]", field, name), "%v", err)
				}
			}
		}
		for j, g := range r.Groups {
			if g == "" {
				bad(fmt.Sprintf("%s.groups[%d]", field, j), "must not be empty")
			}
		}
		if len(r.Groups) > 0 && r.IdentityClaim != "" {
			bad(field+".identity_claim", "only an issuer rule names an identity claim")
		}
		validateGrant(field, r.Permissions, r.Projects, bad)
	}
	if c.Auth.Introspection.URL == "" {
		for i, r := range c.Auth.Rules {
			if len(r.Groups) > 0 {
				bad(fmt.Sprintf("auth.rules[%d].groups", i), "group rules need auth.introspection.url to learn a caller's groups")
				break
			}
		}
	}
}

// AuthRules returns the rules for the auth package; call after Validate.
// A rule without a name is named by its position.
func (c Config) AuthRules() []auth.Rule {
	out := make([]auth.Rule, 0, len(c.Auth.Rules))
	for i, r := range c.Auth.Rules {
		ar := auth.Rule{Name: r.Name, Groups: r.Groups, Issuer: r.Issuer, IdentityClaim: r.IdentityClaim, Projects: r.Projects,
			Permissions: permissionsOf(r.Permissions), Claims: map[string][]string{}}
		if ar.Name == "" {
			ar.Name = fmt.Sprintf("rules[%d]", i)
		}
		for name, v := range r.Claims {
			ar.Claims[name], _ = auth.ClaimValues(v)
		}
		out = append(out, ar)
	}
	return out
}
