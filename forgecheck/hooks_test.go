package forgecheck_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forgecheck"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/policy"
)

const hookSecret = "a-hook-secret-never-logged"

// checker is a HookChecker of one repository on the test Gitea, through
// a guarded forge as serve builds it, logging to log.
func checker(t *testing.T, srv testgitea.Server, repo, hookURL string, repair bool, log *bytes.Buffer) *forgecheck.HookChecker {
	t.Helper()
	adapter, err := gitea.New(srv.URL, srv.Token, gitea.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := policy.Guard("gitea", adapter, func(string) policy.Project { return policy.Project{} })
	return &forgecheck.HookChecker{Interval: 10 * time.Second, Repair: repair, Clock: clockwork.NewFakeClock(),
		Log: slog.New(slog.NewTextHandler(log, nil)),
		Targets: []forgecheck.HookTarget{{Name: "gitea", Forge: f, URL: hookURL, Secret: hookSecret,
			Projects: func(context.Context) ([]string, error) { return []string{repo}, nil }}}}
}

// hooks are the repository's hooks to url (any host).
func hooks(t *testing.T, c *sdk.Client, repo string) []*sdk.Hook {
	t.Helper()
	owner, name, _ := strings.Cut(repo, "/")
	got, _, err := c.ListRepoHooks(owner, name, sdk.ListHooksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestTwoInstancesRepairingAtOnceLeaveOneHook(t *testing.T) {
	srv := testgitea.Get(t)
	repo := srv.NewRepo(t)
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	hookURL := "http://127.0.0.1:9/webhooks/gitea"
	var logs bytes.Buffer
	a, b := checker(t, srv, repo, hookURL, true, &bytes.Buffer{}), checker(t, srv, repo, hookURL, true, &logs)

	// Both find no hook and both may make one: the next check of either
	// keeps the same one and deletes the other.
	testkit.AtOnce(2, func(i int) { []*forgecheck.HookChecker{a, b}[i].CheckAll(context.Background()) })
	testkit.AtOnce(2, func(i int) { []*forgecheck.HookChecker{a, b}[i].CheckAll(context.Background()) })
	if got := hooks(t, c, repo); len(got) != 1 {
		t.Fatalf("after two instances' checks: %d hooks, want 1", len(got))
	}

	// Three hooks to the service (a person copied it), one to another
	// host: both instances at once keep one, pointed at the service.
	owner, name, _ := strings.Cut(repo, "/")
	for _, u := range []string{hookURL, hookURL, "http://127.0.0.2:9/webhooks/gitea"} {
		if _, _, err := c.CreateRepoHook(owner, name, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: true,
			Events: gitea.HookEvents, Config: map[string]string{"url": u, "content_type": "json", "secret": hookSecret}}); err != nil {
			t.Fatal(err)
		}
	}
	var found [2][]forgecheck.HookStatus
	testkit.AtOnce(2, func(i int) { found[i] = []*forgecheck.HookChecker{a, b}[i].CheckAll(context.Background()) })
	got := hooks(t, c, repo)
	if len(got) != 1 || got[0].Config["url"] != hookURL || !got[0].Active {
		t.Errorf("after both repaired duplicates: %d hooks (%+v), want one active to %s", len(got), got, hookURL)
	}
	if !slices.Contains(found[0][0].Problems, wq.WebhookDuplicate) && !slices.Contains(found[1][0].Problems, wq.WebhookDuplicate) {
		t.Errorf("neither check reported the duplicates: %+v", found)
	}
	if strings.Contains(logs.String(), hookSecret) {
		t.Errorf("the log holds the webhook secret:\n%s", logs.String())
	}
}

func TestWithRepairOffAWrongHookIsReportedAndLeftAlone(t *testing.T) {
	srv := testgitea.Get(t)
	repo := srv.NewRepo(t)
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	hookURL := "http://127.0.0.1:9/webhooks/gitea"
	var logs bytes.Buffer
	hc := checker(t, srv, repo, hookURL, false, &logs)
	got := hc.CheckAll(context.Background())
	if len(got) != 1 || got[0].Outcome != forgecheck.HookBroken || !slices.Equal(got[0].Problems, []wq.WebhookProblem{wq.WebhookMissing}) {
		t.Errorf("no hook, repair off: %+v, want broken: missing", got)
	}
	if n := len(hooks(t, c, repo)); n != 0 {
		t.Errorf("repair off made %d hooks", n)
	}
	owner, name, _ := strings.Cut(repo, "/")
	if _, _, err := c.CreateRepoHook(owner, name, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: false,
		Events: []string{"pull_request"}, Config: map[string]string{"url": "http://10.0.0.1/webhooks/gitea", "content_type": "json"}}); err != nil {
		t.Fatal(err)
	}
	got = hc.CheckAll(context.Background())
	want := []wq.WebhookProblem{wq.WebhookDisabled, wq.WebhookWrongURL, wq.WebhookWrongEvents}
	if len(got) != 1 || got[0].Outcome != forgecheck.HookBroken || !slices.Equal(got[0].Problems, want) {
		t.Errorf("an inactive hook to another host with one event: %+v, want broken: %v", got, want)
	}
	if broken := hc.Broken(); len(broken) != 1 || broken[0].Project != repo {
		t.Errorf("Broken() = %+v, want the repository", broken)
	}
	if !strings.Contains(logs.String(), "hooks.repair is off") {
		t.Errorf("no log line says the hook is wrong and repair is off:\n%s", logs.String())
	}
}
