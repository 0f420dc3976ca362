// Package httpapi is workqueue's HTTP interface, one handler (Server,
// built by NewServer from Options) serving:
//
//   - the probes, GET /healthz and GET /readyz;
//   - the items API under /api/v1/items, GET /me and the OpenAPI
//     document (openapi.json, which a test holds every route and answer
//     to);
//   - the forges' webhooks at POST /webhooks/{forge};
//   - the control plane's routes: sessions, allocations, the gate, gated
//     actions, leases, checkpoints and the inventory's work;
//   - the incident bridge's reconcile route and its providers' webhook
//     receivers;
//   - the MCP transport at /mcp, with its OAuth protected-resource
//     metadata;
//   - GET /metrics, and the dashboard under /ui/.
//
// Every API route takes a bearer token (or, for webhooks, the delivery's
// signature) and audits the decision; request bodies are bounded and
// decoded strictly. Bodies are package api's wire types: the domain's
// values are mapped to them here (wire.go). Errors are RFC 9457 problem
// documents (api.Problem) with the application error code as a stable
// "code" member and the status api.StatusOf gives it.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/service"
)

// Options are a Server's dependencies, all given at once to NewServer.
// Every field may be left out: a server without Items or Auth answers
// only the probes, and every API route with 401.
type Options struct {
	// Store is the queue's store, which GET /readyz asks.
	Store wq.Store
	// Items serves the items API under /api/v1/items, GET /me and the
	// OpenAPI document; nil: none of them.
	Items *service.Items
	// Webhooks serves POST /webhooks/{forge}; nil: none.
	Webhooks *service.Webhooks
	// Auth authenticates bearer tokens; nil: every API route is 401.
	Auth auth.Authenticator
	// FailureLimiter limits failed authentications per client address:
	// once an address has failed too often, its attempts with a token not
	// recently valid are answered 429 with Retry-After, unvalidated. The
	// dashboard shares the limiter, so that failures on either count
	// together. nil: no limit.
	FailureLimiter *auth.FailureLimiter
	// Log receives internal errors with their request ids (nil: none).
	Log *slog.Logger
	// Audit makes every authentication and authorisation decision an
	// audit entry, never with the token; nil: none.
	Audit wq.AuditSink
	// Clock stamps audit entries; nil: the real clock.
	Clock clockwork.Clock
	// ProxyAccessTokenHeader names the header in which an OAuth proxy in
	// front of GET /me passes the session's access token (DDR-27); "":
	// none.
	ProxyAccessTokenHeader string
	// ControlPlane serves the control plane's routes (sessions,
	// allocations, the gate, gated actions, leases, checkpoints, work):
	// permission agent for a caller's own sessions, admin for any. nil:
	// none.
	ControlPlane *controlplane.Service
	// Incidents is the incident bridge behind POST
	// /api/v1/incidents/reconcile (permission incidents) and, for each
	// provider with a secret in IncidentSecrets, its webhook receiver,
	// which feeds the same path with apply. nil: the route answers 503.
	Incidents       *incident.Bridge
	IncidentSecrets IncidentSecrets
	// MCP builds the MCP server's Streamable HTTP transport
	// (mcpserver.HTTPHandler) served at /mcp, given the server's own
	// handler, on which it makes each tool's REST call in process. A
	// bearer token is required as on every API route, but no permission:
	// each tool is authorized as the route it calls. nil: no /mcp.
	MCP func(api http.Handler) http.Handler
	// Metrics is the Prometheus exposition (metrics.Handler), served at
	// GET /metrics behind the "metrics" permission; nil: none (a
	// deployment may serve it on a listener of its own instead).
	Metrics http.Handler
	// Dashboard is the web dashboard (package dashboard), served under
	// /ui/. It authenticates people itself, with the same tokens and
	// authorizer as the API, carried by a cookie instead of a header.
	// nil: none.
	Dashboard http.Handler
	// Identities keeps the per-identity write budgets and the freezes
	// (package identity): a frozen identity's every request but GET /me
	// is refused 403 (identity_frozen), a control-plane action beyond
	// its budget 429 with Retry-After (the items service spends the
	// submissions' budget), and the admin's freeze, unfreeze and list
	// routes are served. nil: no budgets, nobody frozen, no routes.
	Identities *identity.Guard
	// Webhooks, when set, gives GET /readyz the detail of the webhook
	// check (api.Webhooks): the projects whose hook is wrong. It never
	// makes the instance unready.
	WebhookHealth func() api.Webhooks
	// PublicURL is the service's base URL as clients reach it
	// (public_url), which the OAuth protected-resource metadata of /mcp
	// names; "": each request's scheme and host.
	PublicURL string
}

// Server holds the handlers' dependencies.
type Server struct {
	// document is the API's description with the item types' schemas,
	// made once, at the first request for it (Document).
	document func() ([]byte, error)
	store    wq.Store
	items    *service.Items
	webhooks *service.Webhooks
	auth     auth.Authenticator
	limiter  *auth.FailureLimiter // nil: failed authentications are not limited
	log      *slog.Logger
	audit    wq.AuditSink
	// proxyHeader carries an OAuth proxy's access token to GET /me (DDR-27).
	proxyHeader string
	clock       clockwork.Clock
	cp          *controlplane.Service // nil: no control-plane routes
	ids         *identity.Guard       // nil: no budgets or freezes
	// webhookHealth is Options.WebhookHealth.
	webhookHealth func() api.Webhooks
	// incidents is the incident bridge; nil: no incident routes.
	incidents       *incident.Bridge
	incidentSecrets IncidentSecrets
	mcp             http.Handler // the MCP transport at /mcp; nil: none
	publicURL       string       // public_url without its trailing slash; "": each request's host
	metrics         http.Handler // the Prometheus exposition at /metrics; nil: none
	mux             *http.ServeMux
	admission       *admission // what the requests being handled hold: identities' turns, bodies' bytes
}

// NewServer returns the HTTP interface with the routes opts provide for.
func NewServer(opts Options) *Server {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clock := opts.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	s := &Server{store: opts.Store, items: opts.Items, webhooks: opts.Webhooks, auth: opts.Auth, limiter: opts.FailureLimiter,
		log: log.With("component", "http"), audit: opts.Audit, proxyHeader: opts.ProxyAccessTokenHeader, clock: clock,
		cp: opts.ControlPlane, ids: opts.Identities, incidents: opts.Incidents, incidentSecrets: opts.IncidentSecrets,
		publicURL: strings.TrimSuffix(opts.PublicURL, "/"), metrics: opts.Metrics, webhookHealth: opts.WebhookHealth,
		document: sync.OnceValues(func() ([]byte, error) {
			if opts.Items == nil {
				return nil, errors.New("no items API")
			}
			return Document(opts.Items.Faces())
		}),
		mux: http.NewServeMux(), admission: newAdmission()}
	if opts.MCP != nil {
		s.mcp = opts.MCP(s)
	}
	s.handle(s.routes())
	if opts.Dashboard != nil {
		s.mountDashboard(opts.Dashboard)
	}
	s.mux.HandleFunc("/", s.noRoute)
	return s
}

// routeMethods are the methods a route may take.
var routeMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}

// noRoute answers a request no route takes: 405 with Allow when the path
// is a route's with another method (the catch-all would otherwise hide
// the mux's own 405), else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range routeMethods {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) == 0 {
		s.Error(w, r, wq.Errorf(wq.ENOTFOUND, "no route for %s %s", r.Method, r.URL.Path))
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	s.problem(w, r, http.StatusMethodNotAllowed, wq.EINVALID, fmt.Sprintf("%s takes %s, not %s", r.URL.Path, strings.Join(allowed, ", "), r.Method))
}

type route struct {
	method, path string
	handler      http.HandlerFunc
}

// handle registers routes on the server's mux.
func (s *Server) handle(routes []route) {
	for _, rt := range routes {
		s.mux.HandleFunc(rt.method+" "+rt.path, rt.handler)
	}
}

// routes lists every route; registration and the OpenAPI test use it.
func (s *Server) routes() []route {
	rs := []route{
		{"GET", "/healthz", s.healthz},
		{"GET", "/readyz", s.readyz},
	}
	if s.webhooks != nil {
		rs = append(rs, route{"POST", "/webhooks/{forge}", s.receiveWebhook})
	}
	rs = append(rs, s.controlRoutes()...)
	rs = append(rs, s.identityRoutes()...)
	rs = append(rs, s.incidentRoutes()...)
	rs = append(rs, s.mcpRoutes()...)
	rs = append(rs, s.metricsRoutes()...)
	if s.items == nil {
		return rs
	}
	return append(rs,
		// The document describes the API, not its data: a client reads it
		// before it has a token (issue 17).
		route{"GET", "/api/v1/openapi.json", s.openAPIDocument},
		route{"GET", "/me", s.authenticated("", s.me)},
		route{"POST", "/api/v1/items", s.authenticatedEither(auth.Submit, auth.Agent, s.submitItem)}, // agent: see service.Items.Submit
		route{"GET", "/api/v1/items", s.authenticatedEither(auth.Read, auth.Agent, s.listItems)},     // agent: see service.mayRead
		route{"GET", "/api/v1/items/{id}", s.authenticatedEither(auth.Read, auth.Agent, s.getItem)},  // agent: see service.mayRead
		route{"POST", "/api/v1/items/{id}/retry", s.authenticated(auth.Retry, s.itemAction(s.items.Retry))},
		route{"POST", "/api/v1/items/{id}/cancel", s.authenticated(auth.Retry, s.itemAction(s.items.Cancel))},
	)
}

// ServeHTTP serves the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// healthz answers while the process is up.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when the database answers and its schema is
// current.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.Error(w, r, wq.Errorf(wq.EUNAVAILABLE, "database unreachable"))
		return
	}
	applied, latest, err := s.store.SchemaVersion(ctx)
	if err != nil {
		s.Error(w, r, wq.Errorf(wq.EUNAVAILABLE, "cannot read schema version"))
		return
	}
	if applied != latest {
		s.Error(w, r, wq.Errorf(wq.EUNAVAILABLE, "schema has %d of its %d migrations: run workqueue migrate", applied, latest))
		return
	}
	ready := map[string]any{"status": "ready", "schema_version": applied}
	if s.webhookHealth != nil {
		ready["webhooks"] = s.webhookHealth()
	}
	writeJSON(w, http.StatusOK, ready)
}

// Error writes err as a problem document (api.Problem) with the status of
// its code. A refusal is shown whole. Internal errors are logged with
// their detail and a request id; the caller sees only "internal error"
// and the request id, to quote when asking what went wrong.
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	s.errorAs(w, r, err, api.StatusOf)
}

// errorAs is Error with the caller's mapping of codes to statuses.
func (s *Server) errorAs(w http.ResponseWriter, r *http.Request, err error, status func(code string) int) {
	if s.budgetRefused(w, err) {
		return
	}
	code := wq.ErrorCode(err)
	p := api.Problem{Code: code, Detail: wq.ErrorMessage(err)}
	var refusals wq.Refusals
	switch {
	case errors.As(err, &refusals):
		p.Refusal, p.Refusals = refusals[0], refusals
	case errors.As(err, &p.Refusal):
		p.Refusals = []*wq.Refusal{p.Refusal}
	}
	var e *wq.Error
	if errors.As(err, &e) {
		p.Reason = e.Reason
	}
	if code == wq.EINTERNAL || api.StatusOf(code) == http.StatusInternalServerError {
		p.RequestID = newRequestID()
		s.log.Error("internal error", "request_id", p.RequestID, "method", r.Method, "path", r.URL.Path, "err", err)
	}
	p.Status = status(code)
	s.writeProblem(w, p)
}

// problem writes a problem document with an explicit status.
func (s *Server) problem(w http.ResponseWriter, r *http.Request, status int, code, detail string) {
	s.writeProblem(w, api.Problem{Status: status, Code: code, Detail: detail})
}

func (s *Server) writeProblem(w http.ResponseWriter, p api.Problem) {
	p.Type, p.Title = "about:blank", http.StatusText(p.Status)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p)
}

// newRequestID names one failed request in the log and in its answer.
func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode response: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
