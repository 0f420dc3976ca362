package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
)

// Permission is one thing a caller may do.
type Permission string

// The permissions. admin implies every other one.
const (
	Read      Permission = "read"
	Submit    Permission = "submit"
	Retry     Permission = "retry"
	Admin     Permission = "admin"
	Agent     Permission = "agent"     // reserved for the control plane
	Incidents Permission = "incidents" // reserved for the incident bridge
	// ScrapeMetrics reads GET /metrics on the main listener: a Prometheus
	// scraper's token needs nothing else (issue 15).
	ScrapeMetrics Permission = "metrics"
)

// Permissions lists every permission, for validation and help.
var Permissions = []Permission{Read, Submit, Retry, Admin, Agent, Incidents, ScrapeMetrics}

// Valid reports whether p is a known permission.
func (p Permission) Valid() bool { return slices.Contains(Permissions, p) }

// Caller is an authenticated caller.
type Caller struct {
	Identity string   `json:"identity"` // recorded as caller_identity and as the audit actor
	Kind     string   `json:"kind"`     // how it authenticated: token, jwt, introspection
	Issuer   string   `json:"issuer,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	Grants   []Grant  `json:"grants"` // one per matched rule (a static token is its own rule)
}

// Can reports whether any grant holds p (admin holds everything),
// whatever its projects: for routes that concern no one project.
func (c *Caller) Can(p Permission) bool {
	if c == nil {
		return false
	}
	for _, g := range c.Grants {
		if g.holds(p) {
			return true
		}
	}
	return false
}

// CanOn reports whether a grant holds p for project.
func (c *Caller) CanOn(p Permission, project string) bool {
	if c == nil {
		return false
	}
	for _, g := range c.Grants {
		if g.holds(p) && g.covers(project) {
			return true
		}
	}
	return false
}

// CanEverywhere reports whether a grant holds p on every project.
func (c *Caller) CanEverywhere(p Permission) bool {
	if c == nil {
		return false
	}
	for _, g := range c.Grants {
		if g.holds(p) && len(g.Projects) == 0 {
			return true
		}
	}
	return false
}

// Scope is where the caller holds p, as a test of a project for the
// layers that must not link this package (the control plane): nil when
// a grant holds p on every project, as a grant without projects means;
// otherwise a function reporting whether a grant holding p covers the
// project (a caller holding p nowhere covers none). The forge is not
// named by grants, which narrow by project path alone.
func (c *Caller) Scope(p Permission) func(forge, project string) bool {
	if c.CanEverywhere(p) {
		return nil
	}
	return func(_, project string) bool { return c.CanOn(p, project) }
}

// Rules names the rules that matched, for the audit.
func (c *Caller) Rules() []string {
	out := make([]string, 0, len(c.Grants))
	for _, g := range c.Grants {
		out = append(out, g.Rule)
	}
	return out
}

// Permissions is the union of the grants' permissions, in the order of
// Permissions (admin expanded).
func (c *Caller) Permissions() []Permission {
	var out []Permission
	for _, p := range Permissions {
		if c.Can(p) {
			out = append(out, p)
		}
	}
	return out
}

// Authenticator turns a bearer token into a caller. It returns an
// EUNAUTHORIZED error for a token it does not accept; it never logs or
// returns the token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*Caller, error)
}

// Token is a configured static token.
type Token struct {
	Name        string
	SHA256      string // lowercase hex of the token's SHA-256
	Permissions []Permission
	Projects    []string // globs; empty: every project
}

// How a caller authenticated.
const (
	KindToken         = "token"
	KindJWT           = "jwt"
	KindIntrospection = "introspection"
)

// MaxTokenBytes bounds a bearer token: longer ones are refused before
// anything parses them.
const MaxTokenBytes = 8 << 10

// StaticTokens authenticates configured static tokens by their hash.
type StaticTokens struct {
	byHash map[[sha256.Size]byte]*Caller
}

// NewStaticTokens checks and indexes tokens.
func NewStaticTokens(tokens []Token) (*StaticTokens, error) {
	s := &StaticTokens{byHash: map[[sha256.Size]byte]*Caller{}}
	for i, t := range tokens {
		var h [sha256.Size]byte
		if b, err := hex.DecodeString(t.SHA256); err != nil || len(b) != sha256.Size || strings.ToLower(t.SHA256) != t.SHA256 {
			return nil, fmt.Errorf("auth.tokens[%d].sha256: want 64 lowercase hex digits", i)
		} else {
			copy(h[:], b)
		}
		if _, dup := s.byHash[h]; dup {
			return nil, fmt.Errorf("auth.tokens[%d].sha256: the same token is configured twice", i)
		}
		s.byHash[h] = &Caller{Identity: "token:" + t.Name, Kind: KindToken,
			Grants: []Grant{{Rule: "token:" + t.Name, Permissions: slices.Clone(t.Permissions), Projects: slices.Clone(t.Projects)}}}
	}
	return s, nil
}

// Authenticate looks the token's hash up. Comparing hashes, not tokens,
// leaks nothing useful through timing: the hash has no known preimage.
func (s *StaticTokens) Authenticate(_ context.Context, token string) (*Caller, error) {
	if token == "" || len(token) > MaxTokenBytes {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token")
	}
	c, ok := s.byHash[sha256.Sum256([]byte(token))]
	if !ok {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token")
	}
	return c, nil
}

// NeedsRemoteCall implements RemoteCoster: a static token is a lookup.
func (s *StaticTokens) NeedsRemoteCall(string) bool { return false }

// holds reports whether token is one of the configured tokens.
func (s *StaticTokens) holds(token string) bool {
	_, ok := s.byHash[sha256.Sum256([]byte(token))]
	return ok
}

// NewToken returns a new random token ("wq_" and 43 base64url characters,
// 256 bits) and the hex SHA-256 to configure for it.
func NewToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = "wq_" + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token), nil
}

// HashToken returns the lowercase hex SHA-256 of a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
