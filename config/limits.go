package config

import "github.com/workqueue-dev/workqueue/identity"

// Limits are the per-identity write budgets (package identity, DESIGN
// section 2 "Honest work first"): how many submissions and gated forge
// actions one identity may make per clock hour, counted in the database
// across every instance. Beyond either, the call is answered 429 with
// Retry-After and audited. The defaults are far above what a busy honest
// agent writes.
type Limits struct {
	// SubmissionsPerHour bounds POST /api/v1/items per identity.
	SubmissionsPerHour int `yaml:"submissions_per_hour"`
	// ActionsPerHour bounds the control plane's gated actions (comment,
	// review, merge, close) and the submissions made for an assignment,
	// per identity.
	ActionsPerHour int `yaml:"actions_per_hour"`
}

// maxPerHour bounds each budget from above: beyond it a budget bounds
// nothing a runaway loop would not reach anyway.
const maxPerHour = 1_000_000

func defaultLimits() Limits {
	return Limits{SubmissionsPerHour: identity.DefaultSubmissionsPerHour, ActionsPerHour: identity.DefaultActionsPerHour}
}

func (c Config) validateLimits(bad func(field, format string, args ...any)) {
	for _, b := range []struct {
		field string
		n     int
	}{{"limits.submissions_per_hour", c.Limits.SubmissionsPerHour}, {"limits.actions_per_hour", c.Limits.ActionsPerHour}} {
		if b.n < 1 || b.n > maxPerHour {
			bad(b.field, "want 1 to %d, got %d", maxPerHour, b.n)
		}
	}
}

// IdentityLimits are the budgets as package identity takes them.
func (c Config) IdentityLimits() identity.Limits {
	return identity.Limits{SubmissionsPerHour: c.Limits.SubmissionsPerHour, ActionsPerHour: c.Limits.ActionsPerHour}
}
