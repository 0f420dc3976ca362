package config

import (
	"fmt"
	"regexp"

	"github.com/workqueue-dev/workqueue/auth"
)

// Auth configures who may call the API.
type Auth struct {
	Tokens []Token `yaml:"tokens"`
}

// Token is a static API token, configured by its hash only.
type Token struct {
	Name        string   `yaml:"name"`
	SHA256      string   `yaml:"sha256"` // lowercase hex SHA-256 of the token; see workqueue token create
	Permissions []string `yaml:"permissions"`
}

var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$`)
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (c Config) validateAuth(bad func(field, format string, args ...any)) {
	names, hashes := map[string]bool{}, map[string]bool{}
	for i, t := range c.Auth.Tokens {
		field := fmt.Sprintf("auth.tokens[%d]", i)
		if !tokenName.MatchString(t.Name) {
			bad(field+".name", "want letters, digits and . _ @ -, got %q", t.Name)
		} else if names[t.Name] {
			bad(field+".name", "%q is configured twice", t.Name)
		}
		names[t.Name] = true
		if !sha256Hex.MatchString(t.SHA256) {
			bad(field+".sha256", "want the 64 lowercase hex digits of the token's SHA-256 (workqueue token create prints them)")
		} else if hashes[t.SHA256] {
			bad(field+".sha256", "the same token is configured twice")
		}
		hashes[t.SHA256] = true
		if len(t.Permissions) == 0 {
			bad(field+".permissions", "at least one of %v", auth.Permissions)
		}
		for j, p := range t.Permissions {
			if !auth.Permission(p).Valid() {
				bad(fmt.Sprintf("%s.permissions[%d]", field, j), "want one of %v, got %q", auth.Permissions, p)
			}
		}
	}
}

// StaticTokens returns the configured tokens for the authenticator.
func (c Config) StaticTokens() []auth.Token {
	out := make([]auth.Token, 0, len(c.Auth.Tokens))
	for _, t := range c.Auth.Tokens {
		perms := make([]auth.Permission, len(t.Permissions))
		for i, p := range t.Permissions {
			perms[i] = auth.Permission(p)
		}
		out = append(out, auth.Token{Name: t.Name, SHA256: t.SHA256, Permissions: perms})
	}
	return out
}
