package config

import (
	"fmt"
)

// Dashboard configures the web dashboard at /ui/.
type Dashboard struct {
	// CookieKeyEnv names the environment variable holding the secret (at
	// least 32 characters, e.g. from openssl rand -base64 32) whose key
	// seals the session cookie, so that a leaked cookie gives away
	// neither the API token it carries nor a session past its expiry.
	// With neither this nor CookieKeyFile set, a key is made once and kept
	// in the database, which every instance on that database shares.
	CookieKeyEnv string `yaml:"cookie_key_env"`
	// CookieKeyFile names a file holding that secret instead.
	CookieKeyFile string `yaml:"cookie_key_file"`
}

// minCookieKey is the shortest cookie key secret taken: 256 bits of
// base64 or hex is longer.
const minCookieKey = 32

func (c Config) validateDashboard(bad func(field, format string, args ...any)) {
	if c.Dashboard.CookieKeyEnv != "" && c.Dashboard.CookieKeyFile != "" {
		bad("dashboard", "set at most one of cookie_key_env and cookie_key_file")
	}
}

// CookieKey reads the configured secret of the dashboard's session
// cookies; nil when none is configured (the database keeps one).
func (d Dashboard) CookieKey() ([]byte, error) {
	v, err := optionalSecret(d.CookieKeyEnv, d.CookieKeyFile, "dashboard.cookie_key")
	if err != nil || v == "" {
		return nil, err
	}
	if len(v) < minCookieKey {
		return nil, fmt.Errorf("dashboard.cookie_key: want at least %d characters (openssl rand -base64 32), got %d", minCookieKey, len(v))
	}
	return []byte(v), nil
}
