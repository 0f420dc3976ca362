package api

import "time"

// WebhookCheck is what serve's last check found of one project's webhook
// (hooks.check_interval; docs/forge-checks.md), as GET /readyz and the
// dashboard show it.
type WebhookCheck struct {
	Forge   string `json:"forge"`
	Project string `json:"project,omitempty"`
	// Problems are what was wrong: missing, disabled, wrong_url,
	// wrong_events, duplicate, no_secret, secret_refused.
	Problems []string `json:"problems,omitempty"`
	// Outcome is ok, repaired, broken (found wrong and left so) or error
	// (the forge did not answer).
	Outcome   string    `json:"outcome"`
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
}

// Webhooks is the webhook detail of GET /readyz: the projects whose hook
// the last check left wrong. The instance stays ready: a forge's hook
// is not this instance's fault, and the sweeps still find what a lost
// delivery would have said.
type Webhooks struct {
	// Checked is false when serve does not check hooks; NotChecked says
	// why (no public_url, no webhook secret).
	Checked    bool           `json:"checked"`
	NotChecked string         `json:"not_checked,omitempty"`
	Broken     []WebhookCheck `json:"broken"`
}
