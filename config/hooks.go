package config

import "time"

// Hooks configures serve's check of the projects' webhooks (issue 50,
// docs/forge-checks.md): at start and every CheckInterval, each
// configured project's hook is compared with what the service needs
// (present, active, its URL, its events, its secret) and repaired when
// Repair is on, or reported (a log line, a metric, /readyz, the
// dashboard) when it is off.
type Hooks struct {
	// CheckInterval is how often the hooks are checked (default 10m; at
	// least 10s). A check costs one listing of each project's hooks.
	CheckInterval Duration `yaml:"check_interval"`
	// Repair makes serve repair what it finds wrong (default true): it
	// needs the forge token's right to manage hooks (Gitea repository
	// admin, GitLab Maintainer) and public_url, and it uses the forge's
	// webhook secret.
	Repair bool `yaml:"repair"`
}

// MinHookCheckInterval bounds hooks.check_interval from below.
const MinHookCheckInterval = 10 * time.Second

func defaultHooks() Hooks {
	return Hooks{CheckInterval: Duration(10 * time.Minute), Repair: true}
}

func (c Config) validateHooks(bad func(field, format string, args ...any)) {
	if c.Hooks.CheckInterval < Duration(MinHookCheckInterval) {
		bad("hooks.check_interval", "want at least %s, got %s", MinHookCheckInterval, time.Duration(c.Hooks.CheckInterval))
	}
}
