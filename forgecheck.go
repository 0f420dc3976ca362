package workqueue

import "context"

// The forge as it really is (issue 50): a version the adapter relies on,
// project settings the service's safety relies on, and webhooks that a
// forge disables or a person deletes. Each is an optional capability of a
// Forge, as DefaultBrancher is; policy.Guard forwards them (reads pass,
// and a hook's repair is EnsureWebhook, a guarded write). A guarded forge
// whose adapter lacks one answers an error wrapping errors.ErrUnsupported:
// "not checked", never a pass.

// VersionReader is the optional capability of a forge that reports its
// server version (Gitea GET /api/v1/version, GitLab GET /api/v4/version).
type VersionReader interface {
	// ServerVersion returns the version string exactly as the forge
	// reports it ("1.26.0", "1.27.0+dev-12-gabc", "17.5.0-ee"): package
	// forge reads it (forge.ParseVersion) and holds it to
	// MinServerVersion (forge.CheckVersion). *ForgeError as Forge's
	// methods.
	ServerVersion(ctx context.Context) (string, error)
	// MinServerVersion is the oldest server version the adapter works
	// with ("1.26.0"): serve refuses a forge below it and config check
	// --online reports it. "": every version.
	MinServerVersion() string
}

// SettingsReader is the optional capability of a forge that reads the
// project settings the service's safety relies on.
type SettingsReader interface {
	// ProjectSettings reads them for project, each with what it means for
	// the service. NotFound for a missing project; a setting the token
	// cannot read is reported as one (Known false), not as an error.
	ProjectSettings(ctx context.Context, project string) ([]ProjectSetting, error)
}

// ProjectSetting is one setting of a project, in words an operator reads.
type ProjectSetting struct {
	// Name is the forge's own name for it ("reset_approvals_on_push",
	// "branch_protection(main).dismiss_stale_approvals").
	Name string
	// Value is the value read; "" when it could not be read.
	Value string
	// Known is false when the forge did not say (a tier without the
	// setting, a token that may not read it).
	Known bool
	// Safe is true when the value keeps the guarantee Meaning names.
	Safe bool
	// Meaning says what the value means for the service's guarantees, and
	// what to change when it is not safe.
	Meaning string
}

// WebhookInspector is the optional capability of a forge that reads a
// project's webhooks without changing them: the hook check of serve
// (package forgecheck) compares and, when told to, repairs with
// EnsureWebhook.
type WebhookInspector interface {
	// InspectWebhook reports what is wrong with project's hook to url:
	// nothing (an empty Problems) when exactly one hook delivers every
	// event the webhook package reads to url, active. A hook is the
	// service's when its URL is url, or ends with url's path (a hook
	// whose host a person changed). *ForgeError as Forge's methods.
	InspectWebhook(ctx context.Context, project, url string) (WebhookHealth, error)
}

// WebhookHealth is what InspectWebhook found.
type WebhookHealth struct {
	// Problems are the WebhookProblem values that hold, in a fixed order.
	Problems []WebhookProblem
	// HookIDs are the ids of the service's hooks on the project.
	HookIDs []int64
}

// OK reports whether the hook needs nothing.
func (h WebhookHealth) OK() bool { return len(h.Problems) == 0 }

// WebhookProblem is one thing wrong with a project's webhook.
type WebhookProblem string

// Webhook problems. A hook's secret cannot be read back from either forge:
// a secret that no longer matches shows as deliveries refused by the
// receiver (WebhookSecretRefused, reported by the receiver's count, not by
// InspectWebhook).
const (
	WebhookMissing       WebhookProblem = "missing"        // no hook delivers to the service
	WebhookDisabled      WebhookProblem = "disabled"       // inactive, or disabled by the forge after failing deliveries
	WebhookWrongURL      WebhookProblem = "wrong_url"      // the service's hook delivers to another host
	WebhookWrongEvents   WebhookProblem = "wrong_events"   // an event the service reads is not sent, or the content type is not JSON
	WebhookDuplicate     WebhookProblem = "duplicate"      // more than one hook delivers to the service
	WebhookNoSecret      WebhookProblem = "no_secret"      // the hook sends no secret (GitLab's token_present false)
	WebhookSecretRefused WebhookProblem = "secret_refused" // deliveries came signed with another secret
)

// WebhookSecretResetter is the optional capability of a forge whose hook
// secret can be written again when deliveries show it wrong
// (WebhookSecretRefused): EnsureWebhook, with the secret written even to
// a hook that looks right. A write: policy.Guard checks it as
// EnsureWebhook.
type WebhookSecretResetter interface {
	ResetWebhookSecret(ctx context.Context, project, url, secret string) (WebhookOutcome, error)
}
