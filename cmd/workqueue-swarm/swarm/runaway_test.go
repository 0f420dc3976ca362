package swarm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mcpserver"
)

// The runaway loops until its budget answers 429, the stage freezes it
// after RunawayFreezeAfter of those, and its next call, refused
// identity_frozen, stops it; nothing it asked for was written. Unfrozen
// at the end, it may end its session again.
func TestTheRunawayIsStoppedByItsBudgetThenFrozen(t *testing.T) {
	url := testdb.URL(t, "sqlite")
	st := testdb.OpenURL(t, url)
	cps := testdb.ControlPlaneURL(t, url)
	control := &cp.Service{Store: cps}
	const budget = 5
	guard := &identity.Guard{Store: testdb.IdentitiesURL(t, url), Limits: identity.Limits{SubmissionsPerHour: budget, ActionsPerHour: budget},
		OnFreeze: func(ctx context.Context, id, by string) (int, error) {
			ended, err := control.EndLeasesOf(ctx, cp.Caller{Identity: by, Admin: true}, id)
			return len(ended), err
		}}
	adminTok, adminHash, _ := auth.NewToken()
	loopTok, loopHash, _ := auth.NewToken()
	static, err := auth.NewStaticTokens([]auth.Token{{Name: "ops", SHA256: adminHash, Permissions: []auth.Permission{auth.Admin}},
		{Name: "loop", SHA256: loopHash, Permissions: []auth.Permission{auth.Agent}}})
	if err != nil {
		t.Fatal(err)
	}
	items := testapi.Items(st, config.Default())
	items.Identities = guard
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Options{Store: st, Items: items, Auth: &auth.Chain{Static: static},
		Log: testkit.Quiet(), ControlPlane: control, Identities: guard,
		MCP: func(api http.Handler) http.Handler {
			return mcpserver.HTTPHandler(api, mcpserver.HTTPOptions{Faces: testapi.Types.Faces()})
		}}))
	t.Cleanup(srv.Close)
	admin, err := client.New(srv.URL, adminTok)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{cfg: Config{Service: srv.URL, RunawayToken: loopTok, Out: io.Discard}, admin: admin, start: time.Now(),
		report: &Report{}, sessions: map[string]sessionRecord{}}

	w, err := r.startRunaway(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w.loop(ctx)
	rep := w.end()

	if !rep.Frozen || !rep.Stopped || rep.Written != 0 || len(r.report.Violations) != 0 {
		t.Errorf("runaway report %+v, violations %v: want it frozen and stopped with nothing written", rep, r.report.Violations)
	}
	if got, want := rep.Refusals[identity.ReasonActionsBudget], RunawayFreezeAfter; got != want {
		t.Errorf("%d calls answered %s, want %d before the stage froze it", got, identity.ReasonActionsBudget, want)
	}
	if got, want := rep.Calls, budget+RunawayFreezeAfter+1; got != want {
		t.Errorf("%d calls, want %d: its budget's, the refused ones, and the one refused frozen", got, want)
	}
	var s struct{ Status string }
	if err := admin.Call(t.Context(), "GET", "/api/v1/sessions/"+w.session, nil, nil, &s); err != nil || s.Status != "ended" {
		t.Errorf("the runaway's session after the unfreeze: %+v %v, want ended by its own call", s, err)
	}
}
