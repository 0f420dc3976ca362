package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/forgecheck"
)

// forgeChecks are fixed findings of serve's forge checks.
type forgeChecks struct {
	reports []forgecheck.Report
	hooks   []forgecheck.HookStatus
}

func (f forgeChecks) Reports() []forgecheck.Report             { return f.reports }
func (f forgeChecks) Hooks() ([]forgecheck.HookStatus, string) { return f.hooks, "" }

var _ dashboard.ForgeChecks = forgeChecks{}

func TestTheForgesPageShowsVersionsUnsafeSettingsAndBrokenHooks(t *testing.T) {
	checks := forgeChecks{
		reports: []forgecheck.Report{{Forge: "gl", Kind: "gitlab", Version: "17.5.0-ee", VersionStatus: "supported",
			VersionMessage: "gitlab 17.5.0-ee (at least 17.0.0)", Projects: []forgecheck.ProjectReport{{Project: "g/p",
				Settings: []wq.ProjectSetting{{Name: "reset_approvals_on_push", Value: "false", Known: true, Safe: false,
					Meaning: "an approval survives a push"}}}}}},
		hooks: []forgecheck.HookStatus{{Forge: "gl", Project: "g/p", Outcome: forgecheck.HookBroken,
			Problems: []wq.WebhookProblem{wq.WebhookDisabled}, CheckedAt: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}},
	}
	w := newWorldWith(t, func(o *dashboard.Options) { o.Forges = checks })
	reader := browserClient(t)
	login(t, reader, w.base, w.tokens["reader"])
	status, body := get(t, reader, w.base+"/ui/forges")
	if status != http.StatusOK {
		t.Fatalf("/ui/forges for a reader: %d\n%s", status, body)
	}
	for _, want := range []string{"17.5.0-ee", "reset_approvals_on_push", "an approval survives a push", "<strong>no</strong>",
		"hk-broken", "<code>disabled</code>"} {
		if !strings.Contains(body, want) {
			t.Errorf("/ui/forges does not show %q", want)
		}
	}
	agent := browserClient(t)
	login(t, agent, w.base, w.tokens["agent"])
	if status, _ := get(t, agent, w.base+"/ui/forges"); status != http.StatusForbidden {
		t.Errorf("/ui/forges without read: %d, want 403", status)
	}
}
