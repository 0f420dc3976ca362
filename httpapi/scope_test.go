package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mcpserver"
	"github.com/workqueue-dev/workqueue/mcpserver/mcptest"
	"github.com/workqueue-dev/workqueue/metrics"
)

// Project scope (issue 48): a caller narrowed to team-a's projects, on
// the same identity as a caller of every project that made things in
// team-b, so that nothing but the project scope keeps it out of them.

// The permissions both callers hold: everything an agent, a reader and
// an operator of their projects have, short of admin.
var scopePermissions = []auth.Permission{auth.Agent, auth.Read, auth.Retry, auth.Submit, auth.Incidents, auth.ScrapeMetrics}

// scopeFixture is the server and what was made in team-b, as the
// attacker (token "a", narrowed to team-a/**) would name it.
type scopeFixture struct {
	srv   *Server
	cps   cp.Store
	clock *clockwork.FakeClock
	forge *scopeForge
	// Team-b's things, made by the identity's unnarrowed token.
	itemB, itemA         string // an item of each project (team-b's cancelled)
	author, merger       string // sessions of the shared identity
	leaseB, assignmentB  string // the author's lease and assignment on team-b's issue
	mergeLeaseB, mergeAB string // the merger's on team-b's approved pull request
	workB                []string
}

// scopeAuth authenticates two tokens of one identity: "all" holds the
// permissions on every project, "a" on team-a's only.
type scopeAuth struct{}

func (scopeAuth) Authenticate(_ context.Context, token string) (*auth.Caller, error) {
	grant := auth.Grant{Rule: "bots", Permissions: scopePermissions}
	switch token {
	case "all":
	case "a":
		grant.Projects = []string{"team-a/**"}
	default:
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token")
	}
	return &auth.Caller{Identity: "bot", Kind: auth.KindToken, Grants: []auth.Grant{grant}}, nil
}

// scopeForge is the forge of the control plane's reads and gated
// actions: every pull request approved and mergeable at head "aaaaaaa",
// and every write recorded.
type scopeForge struct {
	wq.Forge // nil: any other method panics
	mu       sync.Mutex
	writes   []string
}

const scopeHead = "aaaaaaa"

func (f *scopeForge) GetWork(_ context.Context, _, kind string, n int64) (*wq.WorkInfo, error) {
	return &wq.WorkInfo{Kind: kind, Number: n, State: wq.MergeRequestOpen, Title: "pr", HeadSHA: scopeHead,
		ReviewState: wq.ReviewApproved, Mergeable: true, UpdatedAt: time.Unix(1, 0)}, nil
}

func (f *scopeForge) GetMergeRequest(_ context.Context, _ string, n int64) (*wq.MergeRequest, error) {
	return &wq.MergeRequest{Number: n, HeadSHA: scopeHead, State: wq.MergeRequestOpen}, nil
}

func (f *scopeForge) write(what string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, what)
	return nil
}

func (f *scopeForge) CommentOnWork(_ context.Context, repo, _ string, _ int64, _ string) (int64, error) {
	return 1, f.write("comment on " + repo)
}
func (f *scopeForge) ReviewPullRequest(_ context.Context, repo string, _ int64, _, _, _ string) error {
	return f.write("review on " + repo)
}
func (f *scopeForge) MergeMergeRequest(_ context.Context, repo string, _ int64, _ string) error {
	return f.write("merge on " + repo)
}
func (f *scopeForge) CloseIssue(_ context.Context, repo string, _ int64) error {
	return f.write("close on " + repo)
}

func (f *scopeForge) written() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.writes)
}

func newScopeFixture(t *testing.T, kind string) *scopeFixture {
	t.Helper()
	st := testdb.Open(t, kind)
	cfg := config.Default()
	cfg.Forges = []config.Forge{{Name: "gitea", Kind: "gitea", URL: "http://127.0.0.1:1", TokenEnv: "UNUSED"}}
	cfg.Projects = []config.Project{{Match: "team-*/**", Forge: "gitea"}}
	cps := testdb.ControlPlane(t, kind)
	links, err := cpstore.NewIncidents(cps)
	if err != nil {
		t.Fatal(err)
	}
	bridge, err := incident.New(links, func(string) (incident.IssueForge, bool) { return nil, true }, []incident.Project{
		{Provider: "sentry", Organization: "shop", Project: "web-a", Forge: "gitea", Repo: "team-a/app"},
		{Provider: "sentry", Organization: "shop", Project: "web-b", Forge: "gitea", Repo: "team-b/app"},
	}, nil, testkit.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	fx := &scopeFixture{cps: cps, clock: clockwork.NewFakeClockAt(time.Now()), forge: &scopeForge{}}
	items := testapi.Items(st, cfg)
	control := &cp.Service{Store: cps, Clock: fx.clock, Forges: map[string]wq.Forge{"gitea": fx.forge}}
	dash, err := dashboard.New(dashboard.Options{Items: items, ControlPlane: control, Auth: scopeAuth{}, Log: testkit.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	fx.srv = NewServer(Options{Dashboard: dash, Store: st, Items: items, Webhooks: testapi.Webhooks(st, cfg, items, "hook-secret"), Auth: scopeAuth{},
		Log:          testkit.Quiet(),
		ControlPlane: control,
		Incidents:    bridge, IncidentSecrets: IncidentSecrets{Sentry: "sentry-secret", GlitchTip: "glitchtip-secret"},
		MCP: func(api http.Handler) http.Handler {
			return mcpserver.HTTPHandler(api, mcpserver.HTTPOptions{Faces: testapi.Types.Faces()})
		},
		Metrics:    metrics.New().Handler(),
		Identities: &identity.Guard{Store: testdb.IdentitiesURL(t, testdb.URL(t, kind))}})

	ctx := t.Context()
	now := time.Now()
	for _, project := range []string{"team-b/app", "team-a/app"} {
		it, err := st.CreateItem(ctx, wq.NewItem{ItemType: "scope-test", CallerIdentity: "bot", Scope: wq.Scope{Forge: "gitea", Project: project}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if project == "team-b/app" {
			if _, err := st.CancelItem(ctx, it.ID, "made retryable", now); err != nil {
				t.Fatal(err)
			}
			fx.itemB = it.ID.String()
		} else {
			fx.itemA = it.ID.String()
		}
	}
	var work []cp.Work
	for i, key := range []cp.WorkKey{
		{Forge: "gitea", Repo: "team-b/app", Kind: cp.KindIssue, Number: 1},
		{Forge: "gitea", Repo: "team-b/app", Kind: cp.KindPR, Number: 2},
		{Forge: "gitea", Repo: "team-a/app", Kind: cp.KindIssue, Number: 1},
		{Forge: "gitea", Repo: "team-a/app", Kind: cp.KindIssue, Number: 2},
	} {
		w := cp.Work{ID: uuid.NewString(), WorkKey: key, State: cp.StateOpen, Title: "work", Labels: []string{}, UpdatedAt: now.Add(time.Duration(i) * time.Second)}
		if key.Kind == cp.KindPR {
			w.HeadSHA, w.ReviewState, w.Mergeable = scopeHead, cp.ReviewApproved, true
		}
		if key.Repo == "team-b/app" {
			fx.workB = append(fx.workB, w.ID)
		}
		work = append(work, w)
	}
	if err := cps.UpsertWork(ctx, work, now); err != nil {
		t.Fatal(err)
	}

	// The identity's unnarrowed token takes team-b's work.
	var author, merger cptype.SessionView
	fx.must(t, "all", "POST", "/api/v1/sessions", `{"role":"author"}`, http.StatusCreated, &author)
	fx.must(t, "all", "POST", "/api/v1/sessions", `{"role":"merger"}`, http.StatusCreated, &merger)
	fx.author, fx.merger = author.ID, merger.ID
	var got cptype.Allocation
	fx.must(t, "all", "POST", "/api/v1/allocations", `{"session_id":"`+fx.author+`","repo":"team-b/**","apply":true}`, http.StatusOK, &got)
	if got.Outcome != "assigned" || got.Work.Repo != "team-b/app" {
		t.Fatalf("the unnarrowed token's allocation of team-b's issue: %+v", got)
	}
	fx.leaseB, fx.assignmentB = got.Lease.ID, got.Assignment.ID
	fx.must(t, "all", "POST", "/api/v1/allocations", `{"session_id":"`+fx.merger+`","repo":"team-b/**","apply":true}`, http.StatusOK, &got)
	if got.Outcome != "assigned" || got.Work.Kind != "pr" {
		t.Fatalf("the unnarrowed token's allocation of team-b's pull request: %+v", got)
	}
	fx.mergeLeaseB, fx.mergeAB = got.Lease.ID, got.Assignment.ID
	fx.must(t, "all", "PUT", "/api/v1/checkpoints", `{"session_id":"`+fx.author+`","forge":"gitea","repo":"team-b/app","work_kind":"issue","work_number":1,"lease_id":"`+fx.leaseB+`","workflow_stage":"team-b stage"}`, http.StatusOK, nil)
	return fx
}

// do sends a request as token and returns the status and body.
func (fx *scopeFixture) do(t *testing.T, token, method, path, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(t.Context(), method, path, r)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	fx.srv.ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

// must sends a request that must answer want, decoding the answer into v.
func (fx *scopeFixture) must(t *testing.T, token, method, path, body string, want int, v any) {
	t.Helper()
	status, got := fx.do(t, token, method, path, body)
	if status != want {
		t.Fatalf("%s %s as %q: %d %s, want %d", method, path, token, status, got, want)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(got), v); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, got, err)
		}
	}
}

// secrets are the strings that name team-b's things.
func (fx *scopeFixture) secrets() []string {
	return append([]string{"team-b", fx.itemB, fx.leaseB, fx.assignmentB, fx.mergeLeaseB, fx.mergeAB}, fx.workB...)
}

// tellsNothing fails when an answer to the narrowed caller names any of
// team-b's things.
func (fx *scopeFixture) tellsNothing(t *testing.T, what, body string) {
	t.Helper()
	for _, s := range fx.secrets() {
		if s != "" && strings.Contains(body, s) {
			t.Errorf("%s names team-b's %q: %s", what, s, body)
		}
	}
}

// sameAsMissing sends the request the narrowed caller makes about
// team-b's thing (foreign) and the same about one that does not exist
// (missing), and fails unless both answers are alike to the byte, but
// for the name the caller gave.
func (fx *scopeFixture) sameAsMissing(t *testing.T, method, path, body, foreign, missing string) {
	t.Helper()
	fs, fb := fx.do(t, "a", method, strings.ReplaceAll(path, "{x}", foreign), strings.ReplaceAll(body, "{x}", foreign))
	ms, mb := fx.do(t, "a", method, strings.ReplaceAll(path, "{x}", missing), strings.ReplaceAll(body, "{x}", missing))
	fb, mb = strings.ReplaceAll(fb, foreign, "{x}"), strings.ReplaceAll(mb, missing, "{x}")
	if fs != ms || fb != mb {
		t.Errorf("%s %s: team-b's answers %d %s; a missing one %d %s: want the same", method, path, fs, fb, ms, mb)
	}
	fx.tellsNothing(t, method+" "+path, fb)
}

// routeScope is how a route keeps a caller narrowed to some projects out
// of the others': a probe that attacks it as team-a's caller, or why it
// concerns no one project.
type routeScope struct {
	none  string
	probe func(t *testing.T, fx *scopeFixture)
}

func missingID() string { return uuid.NewString() }

// lease probes a lease route: team-b's lease answers as a missing one.
func leaseProbe(method, suffix, body string) routeScope {
	return routeScope{probe: func(t *testing.T, fx *scopeFixture) {
		b := strings.ReplaceAll(body, "{session}", fx.author)
		fx.sameAsMissing(t, method, "/api/v1/leases/{x}"+suffix, b, fx.leaseB, missingID())
		if method == "POST" {
			// Through the merger's lease on the pull request too.
			b = strings.ReplaceAll(body, "{session}", fx.merger)
			fx.sameAsMissing(t, method, "/api/v1/leases/{x}"+suffix, b, fx.mergeLeaseB, missingID())
		}
	}}
}

// actionProbe probes a gated action on team-b's assignment.
func actionProbe(action, extra string) func(t *testing.T, fx *scopeFixture) {
	return func(t *testing.T, fx *scopeFixture) {
		session, assignment := fx.author, fx.assignmentB
		if action == "review" || action == "merge" {
			session, assignment = fx.merger, fx.mergeAB
		}
		body := `{"session_id":"` + session + `","assignment_id":"{x}","action":"` + action + `"` + extra + `}`
		fx.sameAsMissing(t, "POST", "/api/v1/actions", body, assignment, missingID())
		if w := fx.forge.written(); len(w) != 0 {
			t.Errorf("the forge was written to for team-a's caller: %q", w)
		}
	}
}

// routeScopes lists every route the server serves: a new route fails
// TestEveryRouteKeepsANarrowedCallerToItsProjects until it is here.
var routeScopes = map[string]routeScope{
	"GET /healthz":                       {none: "a probe: says the process is up"},
	"GET /readyz":                        {none: "a probe: says the database answers"},
	"GET /api/v1/openapi.json":           {none: "the API's description, the same for everyone"},
	"GET /me":                            {none: "the caller's own grants"},
	"POST /webhooks/{forge}":             {none: "a forge's signed delivery, no caller's request"},
	"POST /webhooks/incidents/sentry":    {none: "a provider's signed delivery, no caller's request"},
	"POST /webhooks/incidents/glitchtip": {none: "a provider's signed delivery, no caller's request"},
	"POST /mcp":                          {none: "the MCP transport: each tool is its REST route's (TestEveryMCPToolIsItsScopedRoute)"},
	"GET /mcp":                           {none: "the MCP transport's stream"},
	"DELETE /mcp":                        {none: "the end of an MCP session"},
	"GET /.well-known/oauth-protected-resource":     {none: "metadata of /mcp, the same for everyone"},
	"GET /.well-known/oauth-protected-resource/mcp": {none: "metadata of /mcp, the same for everyone"},
	"POST /api/v1/sessions":                         {none: "a session is its identity's, of no project"},
	"GET /api/v1/sessions":                          {none: "the caller identity's own sessions, of no project"},
	"GET /api/v1/sessions/{id}":                     {none: "the caller identity's own session, of no project"},
	"POST /api/v1/sessions/{id}/heartbeat":          {none: "the caller identity's own session, of no project"},
	"POST /api/v1/sessions/{id}/end": {probe: func(t *testing.T, fx *scopeFixture) {
		// Ending the identity's session would release team-b's lease.
		status, body := fx.do(t, "a", "POST", "/api/v1/sessions/"+fx.author+"/end", "")
		if status != http.StatusForbidden {
			t.Errorf("ending the session that holds team-b's lease: %d %s, want 403", status, body)
		}
		fx.tellsNothing(t, "POST /api/v1/sessions/{id}/end", body)
		var l cptype.LeaseView
		fx.must(t, "all", "GET", "/api/v1/leases/"+fx.leaseB, "", http.StatusOK, &l)
		if l.State != "active" {
			t.Errorf("team-b's lease after team-a's caller tried to end its session: %s, want active", l.State)
		}
	}},
	"POST /api/v1/work/sync":                      {none: "admin of every project only (ControlCaller's Admin)"},
	"POST /api/v1/identities/{identity}/freeze":   {none: "admin of every project only (adminEverywhere)"},
	"POST /api/v1/identities/{identity}/unfreeze": {none: "admin of every project only (adminEverywhere)"},
	"GET /api/v1/identities/frozen":               {none: "admin only: names identities, of no project"},

	"GET /metrics": {probe: func(t *testing.T, fx *scopeFixture) {
		// Its counts span every project: a narrowed scraper gets none.
		status, body := fx.do(t, "a", "GET", "/metrics", "")
		if status != http.StatusForbidden {
			t.Errorf("GET /metrics narrowed to team-a: %d, want 403", status)
		}
		fx.tellsNothing(t, "GET /metrics", body)
	}},
	"GET /api/v1/items": {probe: func(t *testing.T, fx *scopeFixture) {
		// Page by one: every page and cursor is team-a's.
		var page api.ItemPage
		fx.must(t, "a", "GET", "/api/v1/items?limit=1", "", http.StatusOK, &page)
		if len(page.Items) != 1 || page.Items[0].ID != fx.itemA {
			t.Errorf("the first page: %+v, want team-a's item alone", page)
		}
		if page.NextCursor != "" {
			fx.must(t, "a", "GET", "/api/v1/items?limit=1&cursor="+page.NextCursor, "", http.StatusOK, &page)
			if len(page.Items) != 0 || page.NextCursor != "" {
				t.Errorf("the page after team-a's only item: %+v, want none", page)
			}
		}
		for _, q := range []string{"?limit=1", "?phase=cancelled", "?project=team-b/app", "?cursor=" + missingID()} {
			_, body := fx.do(t, "a", "GET", "/api/v1/items"+q, "")
			fx.tellsNothing(t, "GET /api/v1/items"+q, body)
		}
		fx.sameAsMissing(t, "GET", "/api/v1/items?phase=cancelled&project={x}", "", "team-b/app", "team-c/app")
	}},
	"GET /api/v1/items/{id}": {probe: func(t *testing.T, fx *scopeFixture) {
		fx.sameAsMissing(t, "GET", "/api/v1/items/{x}", "", fx.itemB, missingID())
		// A prefix of 31 digits names team-b's item alone.
		fx.sameAsMissing(t, "GET", "/api/v1/items/{x}", "", fx.itemB[:35], "ffffffff-ffff-ffff-ffff-fffffffffff")
	}},
	"POST /api/v1/items/{id}/retry": {probe: func(t *testing.T, fx *scopeFixture) {
		fx.sameAsMissing(t, "POST", "/api/v1/items/{x}/retry", "", fx.itemB, missingID())
	}},
	"POST /api/v1/items/{id}/cancel": {probe: func(t *testing.T, fx *scopeFixture) {
		fx.sameAsMissing(t, "POST", "/api/v1/items/{x}/cancel", "", fx.itemB, missingID())
	}},
	"POST /api/v1/items": {probe: func(t *testing.T, fx *scopeFixture) {
		// Refused on the caller's own words, before anything is read.
		status, body := fx.do(t, "a", "POST", "/api/v1/items", `{"item_type":"mr","forge":"gitea","project":"team-b/app","source_branch":"workqueue/a","target_branch":"main","title":"T","file_actions":[{"action":"create","file_path":"a.txt","content":"a\n"}]}`)
		if status != http.StatusForbidden {
			t.Errorf("a submission to team-b: %d %s, want 403", status, body)
		}
	}},
	"POST /api/v1/allocations": {probe: func(t *testing.T, fx *scopeFixture) {
		var s cptype.SessionView
		fx.must(t, "a", "POST", "/api/v1/sessions", `{"role":"author"}`, http.StatusCreated, &s)
		for _, body := range []string{`{"session_id":"` + s.ID + `"}`, `{"session_id":"` + s.ID + `","repo":"team-b/**"}`} {
			_, got := fx.do(t, "a", "POST", "/api/v1/allocations", body)
			fx.tellsNothing(t, "a dry run "+body, got)
		}
		for range 3 {
			var got cptype.Allocation
			fx.must(t, "a", "POST", "/api/v1/allocations", `{"session_id":"`+s.ID+`","apply":true}`, http.StatusOK, &got)
			if got.Work != nil && got.Work.Repo != "team-a/app" {
				t.Errorf("allocated %+v to team-a's caller", got.Work)
			}
			b, _ := json.Marshal(got)
			fx.tellsNothing(t, "an applied allocation", string(b))
		}
		// Asked for team-b's alone, it is as if there were no work.
		fx.sameAsMissing(t, "POST", "/api/v1/allocations", `{"session_id":"`+s.ID+`","repo":"{x}"}`, "team-b/**", "team-c/**")
	}},
	"POST /api/v1/gate": {probe: func(t *testing.T, fx *scopeFixture) {
		for _, action := range []string{"comment", "push", "open_pr", "close"} {
			fx.sameAsMissing(t, "POST", "/api/v1/gate", `{"session_id":"`+fx.author+`","assignment_id":"{x}","action":"`+action+`"}`, fx.assignmentB, missingID())
		}
		for _, action := range []string{"review", "merge"} {
			fx.sameAsMissing(t, "POST", "/api/v1/gate", `{"session_id":"`+fx.merger+`","assignment_id":"{x}","action":"`+action+`","live_head_sha":"`+scopeHead+`"}`, fx.mergeAB, missingID())
		}
	}},
	"POST /api/v1/actions": {probe: func(t *testing.T, fx *scopeFixture) {
		actionProbe("comment", `,"body":"mine now"`)(t, fx)
		actionProbe("close", "")(t, fx)
		actionProbe("review", `,"verdict":"approve"`)(t, fx)
		actionProbe("merge", "")(t, fx)
	}},
	"GET /api/v1/leases": {probe: func(t *testing.T, fx *scopeFixture) {
		for _, q := range []string{"", "?all=true", "?session_id=" + fx.author, "?session_id=" + fx.merger, "?work_id=" + fx.workB[0]} {
			_, body := fx.do(t, "a", "GET", "/api/v1/leases"+q, "")
			fx.tellsNothing(t, "GET /api/v1/leases"+q, body)
		}
	}},
	"GET /api/v1/leases/{id}":            leaseProbe("GET", "", ""),
	"POST /api/v1/leases/{id}/heartbeat": leaseProbe("POST", "/heartbeat", `{"session_id":"{session}"}`),
	"POST /api/v1/leases/{id}/adopt":     leaseProbe("POST", "/adopt", `{"session_id":"{session}","worktree_path":"/tmp/x"}`),
	"POST /api/v1/leases/{id}/release":   leaseProbe("POST", "/release", `{"session_id":"{session}"}`),
	"POST /api/v1/leases/{id}/abandon":   leaseProbe("POST", "/abandon", `{"session_id":"{session}","proof":{"dead_process":true,"no_live_mutation_risk":true}}`),
	"POST /api/v1/leases/{id}/reclaim":   leaseProbe("POST", "/reclaim", `{"session_id":"{session}"}`),
	"POST /api/v1/leases/expire": {probe: func(t *testing.T, fx *scopeFixture) {
		fx.clock.Advance(2 * time.Hour) // team-b's leases expire
		var got api.ExpiredLeases
		fx.must(t, "a", "POST", "/api/v1/leases/expire", "{}", http.StatusOK, &got)
		b, _ := json.Marshal(got)
		fx.tellsNothing(t, "the expiry sweep's answer", string(b))
		var all api.LeaseList
		fx.must(t, "all", "GET", "/api/v1/leases?all=true", "", http.StatusOK, &all)
		if i := slices.IndexFunc(all.Leases, func(l cptype.Lease) bool { return l.ID == fx.leaseB }); i < 0 || all.Leases[i].State != "expired" {
			t.Errorf("team-b's lease after the sweep: %+v, want it expired", all.Leases)
		}
		// Expired, team-b's leases are still another project's.
		fx.sameAsMissing(t, "POST", "/api/v1/leases/{x}/reclaim", `{"session_id":"`+fx.author+`"}`, fx.leaseB, missingID())
	}},
	"GET /api/v1/work": {probe: func(t *testing.T, fx *scopeFixture) {
		var list api.WorkList
		fx.must(t, "a", "GET", "/api/v1/work?limit=1", "", http.StatusOK, &list)
		if len(list.Work) != 1 || list.Work[0].Repo != "team-a/app" {
			t.Errorf("a page of one: %+v, want team-a's first", list.Work)
		}
		for _, q := range []string{"", "?kind=pr", "?repo=team-b/app"} {
			_, body := fx.do(t, "a", "GET", "/api/v1/work"+q, "")
			fx.tellsNothing(t, "GET /api/v1/work"+q, body)
		}
	}},
	"PUT /api/v1/checkpoints": {probe: func(t *testing.T, fx *scopeFixture) {
		// Refused on the caller's own words, before anything is read.
		status, _ := fx.do(t, "a", "PUT", "/api/v1/checkpoints", `{"session_id":"`+fx.author+`","forge":"gitea","repo":"team-b/app","work_kind":"issue","work_number":1,"workflow_stage":"overwritten"}`)
		if status != http.StatusForbidden {
			t.Errorf("a checkpoint for team-b: %d, want 403", status)
		}
	}},
	"GET /api/v1/checkpoints": {probe: func(t *testing.T, fx *scopeFixture) {
		for _, q := range []string{"", "?session_id=" + fx.author, "?forge=gitea&repo=team-b/app", "?forge=gitea&repo=team-b/app&work_kind=issue&work_number=1"} {
			var list api.CheckpointList
			fx.must(t, "a", "GET", "/api/v1/checkpoints"+q, "", http.StatusOK, &list)
			if len(list.Checkpoints) != 0 {
				t.Errorf("GET /api/v1/checkpoints%s: %+v, want none of team-b's", q, list.Checkpoints)
			}
		}
	}},
	"POST /api/v1/checkpoints/reconcile": {probe: func(t *testing.T, fx *scopeFixture) {
		fx.sameAsMissing(t, "POST", "/api/v1/checkpoints/reconcile", `{"session_id":"`+fx.author+`","forge":"gitea","repo":"{x}","work_kind":"issue","work_number":1}`, "team-b/app", "team-a/app")
	}},
	"POST /api/v1/incidents/reconcile": {probe: func(t *testing.T, fx *scopeFixture) {
		fx.sameAsMissing(t, "POST", "/api/v1/incidents/reconcile", `{"observation":{"provider":"sentry","organization":"shop","project":"{x}","fingerprint":"1","title":"boom"}}`, "web-b", "web-z")
		fx.sameAsMissing(t, "POST", "/api/v1/incidents/reconcile", `{"observation":{"provider":"sentry","project":"{x}","fingerprint":"1","title":"boom"}}`, "web-b", "web-z")
	}},
}

// Every route the server serves is in routeScopes: either it concerns no
// one project, or its probe shows that a caller narrowed to team-a gets,
// for team-b's things, the answer a missing thing gets, and never a
// name, id, cursor or count of team-b's.
func TestEveryRouteKeepsANarrowedCallerToItsProjects(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		fx := newScopeFixture(t, kind)
		served := map[string]bool{}
		for _, rt := range fx.srv.routes() {
			key := rt.method + " " + rt.path
			served[key] = true
			sc, ok := routeScopes[key]
			switch {
			case !ok:
				t.Errorf("%s is served but not in routeScopes: give it a probe showing it keeps a narrowed caller to its projects, or say why it concerns none", key)
			case (sc.none == "") == (sc.probe == nil):
				t.Errorf("%s in routeScopes: want either a probe or why it concerns no project", key)
			case sc.probe != nil:
				t.Run(key, func(t *testing.T) { sc.probe(t, fx) })
			}
		}
		for key := range routeScopes {
			if !served[key] {
				t.Errorf("%s is in routeScopes but not served", key)
			}
		}
		// The unnarrowed token of the same identity still has it all.
		_, body := fx.do(t, "all", "GET", "/api/v1/leases?all=true", "")
		if !strings.Contains(body, fx.leaseB) || !strings.Contains(body, fx.mergeLeaseB) {
			t.Errorf("the unnarrowed token's leases: %s, want team-b's two among them", body)
		}
		if status, _ := fx.do(t, "all", "GET", "/api/v1/items/"+fx.itemB, ""); status != http.StatusOK {
			t.Errorf("team-b's item to the unnarrowed token: %d, want 200", status)
		}
	})
}

// mcpToolRoutes is the REST route each MCP tool calls: a tool is scoped
// as its route is (routeScopes). A new tool fails
// TestEveryMCPToolIsItsScopedRoute until it is here.
var mcpToolRoutes = map[string]string{
	"submit_change":        "POST /api/v1/items",
	"get_item":             "GET /api/v1/items/{id}",
	"list_items":           "GET /api/v1/items",
	"start_session":        "POST /api/v1/sessions",
	"heartbeat_session":    "POST /api/v1/sessions/{id}/heartbeat",
	"end_session":          "POST /api/v1/sessions/{id}/end",
	"allocate_work":        "POST /api/v1/allocations",
	"check_gate":           "POST /api/v1/gate",
	"comment":              "POST /api/v1/actions",
	"review_pull_request":  "POST /api/v1/actions",
	"merge_pull_request":   "POST /api/v1/actions",
	"close_issue":          "POST /api/v1/actions",
	"list_work":            "GET /api/v1/work",
	"list_leases":          "GET /api/v1/leases",
	"inspect_lease":        "GET /api/v1/leases/{id}",
	"heartbeat_lease":      "POST /api/v1/leases/{id}/heartbeat",
	"release_lease":        "POST /api/v1/leases/{id}/release",
	"adopt_lease":          "POST /api/v1/leases/{id}/adopt",
	"abandon_lease":        "POST /api/v1/leases/{id}/abandon",
	"reclaim_lease":        "POST /api/v1/leases/{id}/reclaim",
	"expire_leases":        "POST /api/v1/leases/expire",
	"write_checkpoint":     "PUT /api/v1/checkpoints",
	"get_checkpoint":       "GET /api/v1/checkpoints",
	"list_checkpoints":     "GET /api/v1/checkpoints",
	"reconcile_checkpoint": "POST /api/v1/checkpoints/reconcile",
	"reconcile_incident":   "POST /api/v1/incidents/reconcile",
}

// Every MCP tool the server offers is one REST route of routeScopes, so
// that it is scoped as that route is; and through the tools, team-a's
// caller is answered about team-b's things as about missing ones.
func TestEveryMCPToolIsItsScopedRoute(t *testing.T) {
	fx := newScopeFixture(t, "sqlite")
	srv := httptest.NewServer(fx.srv)
	t.Cleanup(srv.Close)
	agent := mcptest.OverHTTP(t, srv.URL+"/mcp", "a")
	tools, err := agent.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	offered := map[string]bool{}
	for _, tool := range tools.Tools {
		offered[tool.Name] = true
		route, ok := mcpToolRoutes[tool.Name]
		if !ok {
			t.Errorf("MCP tool %s is not in mcpToolRoutes: name the REST route it calls", tool.Name)
			continue
		}
		if _, ok := routeScopes[route]; !ok {
			t.Errorf("MCP tool %s calls %s, which is not in routeScopes", tool.Name, route)
		}
	}
	for name := range mcpToolRoutes {
		if !offered[name] {
			t.Errorf("%s is in mcpToolRoutes but not offered", name)
		}
	}

	// The tools answer as their routes do.
	same := func(tool string, foreign, missing map[string]any, names ...string) {
		t.Helper()
		ft, mt := mcptest.Refused(t, agent, tool, foreign), mcptest.Refused(t, agent, tool, missing)
		for i := 0; i+1 < len(names); i += 2 {
			ft, mt = strings.ReplaceAll(ft, names[i], "{x}"), strings.ReplaceAll(mt, names[i+1], "{x}")
		}
		if ft != mt {
			t.Errorf("%s about team-b's: %q; about a missing one: %q", tool, ft, mt)
		}
		fx.tellsNothing(t, tool, ft)
	}
	missing := missingID()
	same("get_item", map[string]any{"id": fx.itemB}, map[string]any{"id": missing}, fx.itemB, missing)
	same("inspect_lease", map[string]any{"lease_id": fx.leaseB}, map[string]any{"lease_id": missing}, fx.leaseB, missing)
	same("adopt_lease", map[string]any{"lease_id": fx.leaseB, "session_id": fx.author}, map[string]any{"lease_id": missing, "session_id": fx.author}, fx.leaseB, missing)
	same("comment", map[string]any{"session_id": fx.author, "assignment_id": fx.assignmentB, "body": "x"},
		map[string]any{"session_id": fx.author, "assignment_id": missing, "body": "x"}, fx.assignmentB, missing)
	same("merge_pull_request", map[string]any{"session_id": fx.merger, "assignment_id": fx.mergeAB},
		map[string]any{"session_id": fx.merger, "assignment_id": missing}, fx.mergeAB, missing)
	for _, tool := range []string{"list_items", "list_work", "list_leases", "list_checkpoints"} {
		res := mcptest.Call[map[string]any](t, agent, tool, map[string]any{})
		b, _ := json.Marshal(res)
		fx.tellsNothing(t, tool, string(b))
	}
	if w := fx.forge.written(); len(w) != 0 {
		t.Errorf("the forge was written to for team-a's caller: %q", w)
	}
}

var scopeCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// The dashboard's pages go through the same services: a person logged
// in with team-a's token sees team-b's item as a missing one, cannot
// retry or cancel it, and no page (items, bulk, work, leases,
// allocations, sessions) names team-b's things.
func TestTheDashboardShowsANarrowedCallerItsProjectsOnly(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		fx := newScopeFixture(t, kind)
		srv := httptest.NewServer(fx.srv)
		t.Cleanup(srv.Close)
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		send := func(method, path string, form url.Values) (int, string) {
			t.Helper()
			var resp *http.Response
			var err error
			if method == "GET" {
				resp, err = c.Get(srv.URL + path)
			} else {
				resp, err = c.PostForm(srv.URL+path, form)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		_, page := send("GET", "/ui/login", nil)
		m := scopeCSRF.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no CSRF token on the login page: %s", page)
		}
		if status, _ := send("POST", "/ui/login", url.Values{"token": {"a"}, "csrf": {m[1]}, "next": {"/ui/items"}}); status != http.StatusSeeOther {
			t.Fatalf("login: %d", status)
		}
		status, page := send("GET", "/ui/items", nil)
		m = scopeCSRF.FindStringSubmatch(page)
		if status != http.StatusOK || m == nil || !strings.Contains(page, fx.itemA) {
			t.Fatalf("the items page: %d, want 200 with team-a's item and a form:\n%s", status, page)
		}
		csrf := m[1]
		fx.tellsNothing(t, "the items page", page)

		same := func(method, path string, form url.Values, foreign, missing string) {
			t.Helper()
			fs, fb := send(method, strings.ReplaceAll(path, "{x}", foreign), form)
			ms, mb := send(method, strings.ReplaceAll(path, "{x}", missing), form)
			fb, mb = strings.ReplaceAll(fb, foreign, "{x}"), strings.ReplaceAll(mb, missing, "{x}")
			if fs != ms || fb != mb {
				t.Errorf("%s %s: team-b's answers %d, a missing one %d; bodies differ: %v", method, path, fs, ms, fb != mb)
			}
			if fs != http.StatusNotFound {
				t.Errorf("%s %s about team-b's: %d, want 404", method, path, fs)
			}
			fx.tellsNothing(t, method+" "+path, fb)
		}
		missing := missingID()
		same("GET", "/ui/items/{x}", nil, fx.itemB, missing)
		same("GET", "/ui/items/{x}", nil, fx.itemB[:35], "ffffffff-ffff-ffff-ffff-fffffffffff")
		same("POST", "/ui/items/{x}/retry", url.Values{"csrf": {csrf}}, fx.itemB, missing)
		same("POST", "/ui/items/{x}/cancel", url.Values{"csrf": {csrf}}, fx.itemB, missing)

		for _, path := range []string{"/ui/items?project=team-b/app", "/ui/items?phase=cancelled", "/ui/items?q=team-b",
			"/ui/work", "/ui/work?repo=team-b/app", "/ui/leases", "/ui/leases?all=true", "/ui/allocations",
			"/ui/allocations?session=" + fx.author, "/ui/sessions", "/ui/", "/ui/overview/picture", "/ui/queues"} {
			status, body := send("GET", path, nil)
			if status != http.StatusOK {
				t.Errorf("GET %s: %d, want 200", path, status)
			}
			// The filter form shows the caller's own words back.
			body = strings.NewReplacer(`value="team-b/app"`, "", `value="team-b"`, "").Replace(body)
			fx.tellsNothing(t, "GET "+path, body)
		}
		for _, action := range []string{"retry", "cancel"} {
			_, body := send("POST", "/ui/bulk/"+action, url.Values{"csrf": {csrf}, "project": {"team-b/app"}})
			body = strings.NewReplacer(`value="team-b/app"`, "", "project=team-b%2Fapp", "").Replace(body)
			fx.tellsNothing(t, "the bulk "+action+" confirmation", body)
			send("POST", "/ui/bulk/"+action, url.Values{"csrf": {csrf}, "confirm": {"yes"}, "id": {fx.itemB}})
		}
		var it api.Item
		fx.must(t, "all", "GET", "/api/v1/items/"+fx.itemB, "", http.StatusOK, &it)
		if it.Phase != wq.PhaseCancelled {
			t.Errorf("team-b's item after team-a's bulk retry and cancel: %s, want cancelled still", it.Phase)
		}
		// The unnarrowed token of the same identity sees team-b's work.
		_, body := fx.do(t, "all", "GET", "/api/v1/work", "")
		if !strings.Contains(body, "team-b") {
			t.Errorf("the unnarrowed token's work: %s, want team-b's", body)
		}
	})
}
