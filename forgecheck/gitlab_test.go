package forgecheck_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/forgecheck"
	"github.com/workqueue-dev/workqueue/policy"
)

// A hook GitLab disabled after failing deliveries is replaced by the next
// check, and counted.
func TestAHookGitLabDisabledIsReplacedAtTheNextCheck(t *testing.T) {
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	srv.CreateProject("g/p")
	var down atomic.Bool
	down.Store(true)
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	t.Cleanup(service.Close)
	adapter, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hookURL := service.URL + "/webhooks/lab"
	var logs bytes.Buffer
	counted := map[string]int{}
	hc := &forgecheck.HookChecker{Interval: 10 * time.Second, Repair: true, Clock: clockwork.NewFakeClock(),
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Metrics: countMetrics(counted),
		Targets: []forgecheck.HookTarget{{Name: "lab", Forge: policy.Guard("lab", adapter, func(string) policy.Project { return policy.Project{} }),
			URL: hookURL, Secret: hookSecret, Projects: func(context.Context) ([]string, error) { return []string{"g/p"}, nil }}}}
	if got := hc.CheckAll(context.Background()); len(got) != 1 || got[0].Outcome != forgecheck.HookRepaired {
		t.Fatalf("the first check: %+v, want the missing hook made", got)
	}
	for i := range 4 { // the service is down for four pushes
		if _, err := adapter.CommitFiles(context.Background(), wq.CommitRequest{Project: "g/p", Base: "main", Branch: "workqueue/x",
			Message: "m", Changes: []wq.FileChange{{Action: "create", Path: fmt.Sprint(i), Content: []byte("x")}}}); err != nil {
			t.Fatal(err)
		}
	}
	srv.WaitForDeliveries()
	down.Store(false)
	got := hc.CheckAll(context.Background())
	if len(got) != 1 || got[0].Outcome != forgecheck.HookRepaired || !slices.Contains(got[0].Problems, wq.WebhookDisabled) {
		t.Fatalf("the check of the disabled hook: %+v, want it repaired", got)
	}
	if ev := srv.HookEvents("g/p", hookURL); !ev["alert_status:executable"] || srv.HookCount("g/p") != 1 {
		t.Errorf("after the repair: %v with %d hooks, want one working hook", ev, srv.HookCount("g/p"))
	}
	if got := hc.CheckAll(context.Background()); got[0].Outcome != forgecheck.HookOK {
		t.Errorf("the check after the repair: %+v, want ok", got)
	}
	if counted["lab/repaired"] != 2 || counted["lab/ok"] != 1 || counted["lab/broken-gauge"] != 0 {
		t.Errorf("counted %v, want 2 repaired, 1 ok, no broken project", counted)
	}
}

// countMetrics counts the checks by forge/outcome, and the broken gauge.
type countMetrics map[string]int

func (c countMetrics) WebhookChecked(forge, outcome string) { c[forge+"/"+outcome]++ }
func (c countMetrics) WebhooksBroken(forge string, n int)   { c[forge+"/broken-gauge"] = n }
