package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mcpserver"
	"github.com/workqueue-dev/workqueue/metrics"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
)

// shippedDocument is the document a server taking the shipped item types
// serves.
func shippedDocument(t *testing.T) []byte {
	t.Helper()
	doc, err := Document(testapi.Types.Faces())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(shippedDocument(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v", err)
	}
	return doc
}

func testServer(t *testing.T, with ...func(*Options)) (*Server, map[auth.Permission]string) {
	t.Helper()
	st := testdb.Open(t, store.KindSQLite)
	cfg := config.Default()
	cfg.Forges = []config.Forge{{Name: "gitea", Kind: "gitea", URL: "http://127.0.0.1:1", TokenEnv: "UNUSED"}}
	cfg.Projects = []config.Project{{Match: "team/**", Forge: "gitea"}}
	tokens := map[auth.Permission]string{}
	var configured []auth.Token
	for _, p := range []auth.Permission{auth.Read, auth.Submit, auth.Retry, auth.Agent, auth.Incidents, auth.ScrapeMetrics, auth.Admin} {
		tok, hash, _ := auth.NewToken()
		tokens[p] = tok
		configured = append(configured, auth.Token{Name: string(p), SHA256: hash, Permissions: []auth.Permission{p, auth.Read}})
	}
	authn, err := auth.NewStaticTokens(configured)
	if err != nil {
		t.Fatal(err)
	}
	items := testapi.Items(st, cfg)
	hooks := testapi.Webhooks(st, cfg, items, "hook-secret")
	cps := testdb.ControlPlane(t, store.KindSQLite)
	opts := Options{Store: st, Items: items, Webhooks: hooks, Auth: authn, Log: testkit.Quiet(),
		ControlPlane: &controlplane.Service{Store: cps},
		Incidents:    testapi.Incidents(t, cps), IncidentSecrets: IncidentSecrets{Sentry: "sentry-secret", GlitchTip: "glitchtip-secret"},
		MCP: func(api http.Handler) http.Handler {
			return mcpserver.HTTPHandler(api, mcpserver.HTTPOptions{Faces: testapi.Types.Faces()})
		},
		Metrics:    metrics.New().Handler(),
		Identities: &identity.Guard{Store: testdb.IdentitiesURL(t, testdb.URL(t, store.KindSQLite))}}
	for _, w := range with {
		w(&opts)
	}
	s := NewServer(opts)
	return s, tokens
}

func TestEveryRouteIsDocumentedAndEveryDocumentedRouteExists(t *testing.T) {
	doc := loadOpenAPI(t)
	s, _ := testServer(t)
	served := map[string]bool{}
	for _, rt := range s.routes() {
		key := rt.method + " " + rt.path
		served[key] = true
		if item := doc.Paths.Find(rt.path); item == nil || item.GetOperation(rt.method) == nil {
			t.Errorf("%s is served but not in openapi.json", key)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !served[method+" "+path] {
				t.Errorf("%s %s is in openapi.json but not served", method, path)
			}
		}
	}
}

// TestResponsesFollowTheOpenAPIDocument sends real requests and checks
// each request and response against the document.
func TestResponsesFollowTheOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	s, tok := testServer(t)
	submission := `{"item_type":"mr","forge":"gitea","project":"team/app","source_branch":"workqueue/a","target_branch":"main",
		"title":"T","file_actions":[{"action":"create","file_path":"a.txt","content":"a\n"}]}`
	refused := strings.Replace(submission, "a.txt", ".git/config", 1)
	var id string
	for _, tc := range []struct {
		method, path, template, token, body string
		want                                int
	}{
		{"GET", "/healthz", "/healthz", "", "", 200},
		{"GET", "/readyz", "/readyz", "", "", 200},
		{"GET", "/metrics", "/metrics", "", "", 401},
		{"GET", "/metrics", "/metrics", tok[auth.Agent], "", 403},
		{"GET", "/metrics", "/metrics", tok[auth.ScrapeMetrics], "", 200},
		{"GET", "/api/v1/openapi.json", "/api/v1/openapi.json", tok[auth.Read], "", 200},
		{"POST", "/api/v1/items", "/api/v1/items", tok[auth.Submit], submission, 201},
		{"POST", "/api/v1/items", "/api/v1/items", tok[auth.Submit], submission, 200},
		{"POST", "/api/v1/items", "/api/v1/items", tok[auth.Submit], refused, 422},
		{"POST", "/api/v1/items", "/api/v1/items", "", submission, 401},
		{"POST", "/api/v1/items", "/api/v1/items", tok[auth.Read], submission, 403},
		{"GET", "/api/v1/items?item_type=mr&limit=10", "/api/v1/items", tok[auth.Read], "", 200},
		{"GET", "/api/v1/items?phase=later", "/api/v1/items", tok[auth.Read], "", 422},
		{"GET", "/api/v1/items/{id}", "/api/v1/items/{id}", tok[auth.Read], "", 200},
		{"GET", "/api/v1/items/0190a0a0-0000-7000-8000-000000000000", "/api/v1/items/{id}", tok[auth.Read], "", 404},
		{"GET", "/api/v1/items/not-an-id", "/api/v1/items/{id}", tok[auth.Read], "", 422},
		{"POST", "/api/v1/items/{id}/retry", "/api/v1/items/{id}/retry", tok[auth.Retry], "", 409},
		// An mr item winds down on cancel: the request is taken (and taken
		// again) while the item is still active.
		{"POST", "/api/v1/items/{id}/cancel", "/api/v1/items/{id}/cancel", tok[auth.Retry], "", 200},
		{"POST", "/api/v1/items/{id}/cancel", "/api/v1/items/{id}/cancel", tok[auth.Retry], "", 200},
		// An example item is cancelled at once; {id} is it from here on.
		{"POST", "/api/v1/items", "/api/v1/items", tok[auth.Submit], `{"item_type":"example","steps":1}`, 201},
		{"GET", "/api/v1/items/{id}", "/api/v1/items/{id}", tok[auth.Read], "", 200},
		{"POST", "/api/v1/items/{id}/cancel", "/api/v1/items/{id}/cancel", tok[auth.Retry], "", 200},
		{"POST", "/api/v1/items/{id}/cancel", "/api/v1/items/{id}/cancel", tok[auth.Retry], "", 409},
		{"POST", "/api/v1/items/{id}/retry", "/api/v1/items/{id}/retry", tok[auth.Retry], "", 200},
		// The control plane; {id} is a session from here on.
		{"POST", "/api/v1/sessions", "/api/v1/sessions", tok[auth.Agent], `{"role":"author","name":"t"}`, 201},
		{"POST", "/api/v1/sessions", "/api/v1/sessions", tok[auth.Agent], `{"role":"janitor"}`, 422},
		{"POST", "/api/v1/sessions", "/api/v1/sessions", tok[auth.Read], `{"role":"author"}`, 403},
		{"GET", "/api/v1/sessions", "/api/v1/sessions", tok[auth.Agent], "", 200},
		{"GET", "/api/v1/sessions/{id}", "/api/v1/sessions/{id}", tok[auth.Agent], "", 200},
		{"POST", "/api/v1/sessions/{id}/heartbeat", "/api/v1/sessions/{id}/heartbeat", tok[auth.Agent], "", 200},
		{"POST", "/api/v1/allocations", "/api/v1/allocations", tok[auth.Agent], `{"session_id":"{id}","apply":true}`, 200},
		{"POST", "/api/v1/allocations", "/api/v1/allocations", tok[auth.Agent], `{"session_id":"{id}","extra":1}`, 422},
		{"POST", "/api/v1/gate", "/api/v1/gate", tok[auth.Agent], `{"session_id":"{id}","assignment_id":"none","action":"push"}`, 200},
		{"GET", "/api/v1/leases", "/api/v1/leases", tok[auth.Agent], "", 200},
		{"POST", "/api/v1/leases/expire", "/api/v1/leases/expire", tok[auth.Agent], "", 200},
		{"GET", "/api/v1/leases/0190a0a0-0000-7000-8000-000000000000", "/api/v1/leases/{id}", tok[auth.Agent], "", 404},
		{"POST", "/api/v1/leases/0190a0a0-0000-7000-8000-000000000000/heartbeat", "/api/v1/leases/{id}/heartbeat", tok[auth.Agent], `{"session_id":"{id}"}`, 404},
		{"POST", "/api/v1/leases/0190a0a0-0000-7000-8000-000000000000/adopt", "/api/v1/leases/{id}/adopt", tok[auth.Agent], `{"session_id":"{id}"}`, 404},
		{"POST", "/api/v1/leases/0190a0a0-0000-7000-8000-000000000000/release", "/api/v1/leases/{id}/release", tok[auth.Agent], `{"session_id":"{id}"}`, 404},
		{"POST", "/api/v1/leases/0190a0a0-0000-7000-8000-000000000000/abandon", "/api/v1/leases/{id}/abandon", tok[auth.Agent], `{"session_id":"{id}","proof":{"dead_process":true}}`, 404},
		{"POST", "/api/v1/leases/0190a0a0-0000-7000-8000-000000000000/reclaim", "/api/v1/leases/{id}/reclaim", tok[auth.Agent], `{"session_id":"{id}"}`, 404},
		{"GET", "/api/v1/work", "/api/v1/work", tok[auth.Agent], "", 200},
		{"GET", "/api/v1/work?state=later", "/api/v1/work", tok[auth.Agent], "", 422},
		{"GET", "/api/v1/leases?all=yes", "/api/v1/leases", tok[auth.Agent], "", 422},
		{"POST", "/api/v1/allocations", "/api/v1/allocations", tok[auth.Agent], `{"session_id":"{id}","repo":"org/["}`, 422},
		{"POST", "/api/v1/sessions", "/api/v1/sessions", tok[auth.Agent], `{"role":"author","capabilities":[1]}`, 422},
		{"POST", "/api/v1/work/sync", "/api/v1/work/sync", tok[auth.Agent], "", 403},
		{"PUT", "/api/v1/checkpoints", "/api/v1/checkpoints", tok[auth.Agent], `{"session_id":"{id}","forge":"gitea","repo":"team/app","workflow_stage":"fix","evidence":{"k":[1]}}`, 200},
		{"PUT", "/api/v1/checkpoints?require_complete=true", "/api/v1/checkpoints", tok[auth.Agent], `{"session_id":"{id}","forge":"gitea","repo":"team/app"}`, 422},
		{"PUT", "/api/v1/checkpoints", "/api/v1/checkpoints", tok[auth.Agent], `{"session_id":"{id}","forge":"gitea","repo":"team/app","transcript":"…"}`, 422},
		{"PUT", "/api/v1/checkpoints", "/api/v1/checkpoints", tok[auth.Read], `{"session_id":"{id}","forge":"gitea","repo":"team/app"}`, 403},
		{"GET", "/api/v1/checkpoints?session_id={id}&work_number=0", "/api/v1/checkpoints", tok[auth.Agent], "", 200},
		{"GET", "/api/v1/checkpoints?work_number=-1", "/api/v1/checkpoints", tok[auth.Agent], "", 422},
		{"POST", "/api/v1/checkpoints/reconcile", "/api/v1/checkpoints/reconcile", tok[auth.Agent], `{"session_id":"{id}","forge":"gitea","repo":"team/app","head_sha":"abcdef0"}`, 200},
		{"POST", "/api/v1/checkpoints/reconcile", "/api/v1/checkpoints/reconcile", tok[auth.Agent], `{"session_id":"{id}","forge":"gitea","repo":"team/app","work_kind":"pr","work_number":9}`, 404},
		// The incident bridge: dry runs only (no forge here).
		{"POST", "/api/v1/incidents/reconcile", "/api/v1/incidents/reconcile", tok[auth.Incidents], `{"observation":{"provider":"sentry","organization":"shop","project":"web","fingerprint":"42","title":"boom","event_count":3}}`, 200},
		{"POST", "/api/v1/incidents/reconcile", "/api/v1/incidents/reconcile", tok[auth.Incidents], `{"observation":{"provider":"sentry","organization":"shop","project":"web"}}`, 422},
		{"POST", "/api/v1/incidents/reconcile", "/api/v1/incidents/reconcile", tok[auth.Agent], `{"observation":{"provider":"sentry","organization":"shop","project":"web","fingerprint":"42"}}`, 403},
		{"POST", "/webhooks/incidents/sentry", "/webhooks/incidents/sentry", "", `{"action":"created","data":{}}`, 401},
		{"POST", "/webhooks/incidents/glitchtip?secret=wrong", "/webhooks/incidents/glitchtip", "", `{"text":"GlitchTip Alert","attachments":[]}`, 401},
		// MCP: a bearer token at the door, then the transport's own answers.
		{"POST", "/mcp", "/mcp", "", mcpInitialize, 401},
		{"POST", "/mcp", "/mcp", "not-a-token", mcpInitialize, 401},
		{"POST", "/mcp", "/mcp", tok[auth.Agent], mcpInitialize, 200},
		{"POST", "/mcp", "/mcp", tok[auth.Agent], `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202},
		{"GET", "/mcp", "/mcp", tok[auth.Agent], "", 405},
		{"DELETE", "/mcp", "/mcp", tok[auth.Agent], "", 405},
		{"POST", "/api/v1/actions", "/api/v1/actions", tok[auth.Agent], `{"session_id":"{id}","assignment_id":"none","action":"merge"}`, 409},
		{"POST", "/api/v1/actions", "/api/v1/actions", tok[auth.Agent], `{"session_id":"{id}","assignment_id":"none","action":"push"}`, 422},
		{"POST", "/api/v1/actions", "/api/v1/actions", tok[auth.Read], `{"session_id":"{id}","assignment_id":"none","action":"close"}`, 403},
		// An admin's freeze of an identity, and its unfreeze.
		{"POST", "/api/v1/identities/token:retry/freeze", "/api/v1/identities/{identity}/freeze", tok[auth.Admin], `{"reason":"loops"}`, 200},
		{"POST", "/api/v1/identities/token:retry/freeze", "/api/v1/identities/{identity}/freeze", tok[auth.Admin], `{"why":"loops"}`, 422},
		{"POST", "/api/v1/identities/token:retry/freeze", "/api/v1/identities/{identity}/freeze", tok[auth.Agent], "", 403},
		{"GET", "/api/v1/identities/frozen", "/api/v1/identities/frozen", tok[auth.Admin], "", 200},
		{"GET", "/api/v1/identities/frozen", "/api/v1/identities/frozen", tok[auth.Read], "", 403},
		{"POST", "/api/v1/items/{id}/retry", "/api/v1/items/{id}/retry", tok[auth.Retry], "", 403},
		{"POST", "/api/v1/identities/token:retry/unfreeze", "/api/v1/identities/{identity}/unfreeze", tok[auth.Admin], "", 200},
		{"POST", "/api/v1/sessions/{id}/end", "/api/v1/sessions/{id}/end", tok[auth.Agent], "", 200},
		{"POST", "/api/v1/sessions/{id}/end", "/api/v1/sessions/{id}/end", tok[auth.Agent], "", 409},
	} {
		path := strings.Replace(tc.path, "{id}", id, 1)
		tc.body = strings.Replace(tc.body, "{id}", id, 1)
		req := httptest.NewRequest(tc.method, path, strings.NewReader(tc.body))
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/json, text/event-stream") // as MCP's transport requires
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Fatalf("%s %s: %d %s, want %d", tc.method, path, rec.Code, rec.Body, tc.want)
		}
		if tc.want == 201 {
			var body map[string]any
			json.Unmarshal(rec.Body.Bytes(), &body)
			id = body["id"].(string)
		}

		item := doc.Paths.Find(tc.template)
		op := item.GetOperation(tc.method)
		params := map[string]string{}
		for i, seg := range strings.Split(tc.template, "/") {
			if seg == "{id}" || seg == "{identity}" {
				params[strings.Trim(seg, "{}")] = strings.Split(strings.SplitN(path, "?", 2)[0], "/")[i]
			}
		}
		input := &openapi3filter.RequestValidationInput{
			Request: httptest.NewRequest(tc.method, path, strings.NewReader(tc.body)), PathParams: params,
			Route:   &routers.Route{Spec: doc, Path: tc.template, PathItem: item, Method: tc.method, Operation: op},
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		}
		if tc.body != "" {
			input.Request.Header.Set("Content-Type", "application/json")
		}
		if tc.want < 400 {
			if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
				t.Errorf("%s %s: the request does not follow the document: %v", tc.method, path, err)
			}
		}
		err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: input, Status: rec.Code, Header: rec.Header(), Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
			Options: &openapi3filter.Options{IncludeResponseStatus: true},
		})
		if err != nil {
			t.Errorf("%s %s → %d: the response does not follow the document: %v\n%s", tc.method, path, rec.Code, err, rec.Body)
		}
	}
}

// mcpInitialize is an MCP client's first message.
const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

func TestOpenAPIDocumentNeedsNoToken(t *testing.T) {
	s, _ := testServer(t)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), shippedDocument(t)) {
		t.Errorf("without a token: %d", rec.Code)
	}
}

func TestOpenAPIOperationsHaveUniqueIDsAndDeclaredTags(t *testing.T) {
	doc := loadOpenAPI(t)
	declared := map[string]bool{}
	for _, tag := range doc.Tags {
		declared[tag.Name] = true
	}
	seen := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", key)
			} else if other, ok := seen[op.OperationID]; ok {
				t.Errorf("%s and %s share operationId %s", key, other, op.OperationID)
			}
			seen[op.OperationID] = key
			if len(op.Tags) != 1 || !declared[op.Tags[0]] {
				t.Errorf("%s: tags %v, want one of the document's tags", key, op.Tags)
			}
		}
	}
}

// The document enumerates every rule a refusal can name (mr.Rules).
func TestTheDocumentEnumeratesEveryRefusalRule(t *testing.T) {
	doc := loadOpenAPI(t)
	var enum []string
	for _, v := range doc.Components.Schemas["Refusal"].Value.Properties["rule"].Value.Enum {
		enum = append(enum, v.(string))
	}
	want := slices.Clone(mr.Rules)
	slices.Sort(want)
	slices.Sort(enum)
	if !slices.Equal(enum, want) {
		t.Errorf("Refusal.rule enum %v\nwant mr.Rules %v", enum, want)
	}
}

// A refused submission names every refused action at once, in order,
// each with its rule, and the first again as refusal.
func TestARefusedSubmissionListsEveryRefusal(t *testing.T) {
	s, tok := testServer(t)
	body := `{"item_type":"mr","forge":"gitea","project":"team/app","source_branch":"workqueue/a","target_branch":"main",
		"title":"T","file_actions":[
			{"action":"create","file_path":"ok.txt","content":"a\n"},
			{"action":"create","file_path":".git/config","content":"x"},
			{"action":"create","file_path":"fine/b.txt","content":"b\n"},
			{"action":"create","file_path":"../up.txt","content":"c"},
			{"action":"delete","file_path":"gone.txt","content":"d"}]}`
	req := httptest.NewRequest("POST", "/api/v1/items", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok[auth.Submit])
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var p api.Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	type got struct {
		Index int
		Rule  string
	}
	var refusals []got
	for _, r := range p.Refusals {
		refusals = append(refusals, got{r.Index, r.Rule})
	}
	want := []got{{1, mr.RulePathGitDir}, {3, mr.RulePathDotDot}, {4, mr.RuleUnexpectedField}}
	if !slices.Equal(refusals, want) {
		t.Errorf("refusals %+v, want %+v", refusals, want)
	}
	if p.Refusal == nil || *p.Refusal != *p.Refusals[0] {
		t.Errorf("refusal %+v, want the first of refusals", p.Refusal)
	}
	if !strings.Contains(p.Detail, "and 2 more refusals") {
		t.Errorf("detail %q: want it to say more refusals follow", p.Detail)
	}
}
