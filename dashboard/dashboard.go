// Package dashboard is workqueue's web dashboard for people (DESIGN
// section 10): server-rendered pages of items, their dimensions and
// trail, and the control plane's sessions, work, leases and allocations,
// under /ui/. It calls the same services as the API (service.Items,
// controlplane.Service) with the same tokens and rules: a person logs in
// with a bearer token, which an HttpOnly cookie carries from then on,
// sealed with authenticated encryption under the service's cookie key.
// Every form is protected against cross-site requests twice: by
// net/http's cross-origin protection and by a token bound to the session.
// It names no item type: a type's detail is shown as the JSON it renders.
// The first page pictures the last hour (overview.go); its one script,
// static/refresh.js, fetches that picture again without a reload.
package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/service"
)

// Prefix is where the dashboard is served. A merge request's status note
// links to public_url + Prefix + "items/" + id.
const Prefix = "/ui/"

// AuditTrail gives the audit entries kept for an item, oldest first
// (audit.Recent implements it).
type AuditTrail interface {
	ItemAudit(ctx context.Context, itemID string) []wq.AuditEntry
}

// Options are the dashboard's dependencies.
type Options struct {
	Items        *service.Items
	ControlPlane *controlplane.Service // nil: no control-plane pages
	Auth         auth.Authenticator
	// Audit receives the dashboard's logins and refusals (never a token).
	Audit wq.AuditSink
	// Trail, when set, shows an item's audit trail on its page.
	Trail AuditTrail
	// PublicURL: when it is https, cookies are Secure even if the request
	// reached the service over plain HTTP (TLS ended at a proxy).
	PublicURL string
	// ProxyAccessTokenHeader names the header in which an OAuth proxy
	// passes the session's access token to GET /ui/login/proxy (DDR-27).
	ProxyAccessTokenHeader string
	// CookieKey is the secret the session cookies' key is derived from
	// (at least MinCookieKeyBytes): configured, or StoredCookieKey's, so
	// that every instance accepts every other's cookies. Empty: a random
	// key of this process only (sessions end when it stops).
	CookieKey []byte
	// Limiter, when set, limits failed logins per client address, shared
	// with the API (httpapi.Options.FailureLimiter).
	Limiter *auth.FailureLimiter
	// Sessions records logouts in the database every instance shares,
	// so that a logged-out cookie is refused by all of them at once (the
	// store: both drivers keep them). nil: this process's memory only.
	Sessions wq.SessionRevocations
	// Identities, when set, refuses a frozen identity's pages and forms
	// (403, identity_frozen) and lets an admin of every project freeze
	// and unfreeze identities from the sessions page.
	Identities *identity.Guard
	// WorkURL, when set, gives the web page of a work item on its forge
	// (forge name, repository, kind "issue" or "pr", number), which the
	// control plane's pages link; "" for none.
	WorkURL func(forge, repo, kind string, number int64) string
	// PictureRefresh is how often the first page fetches its picture
	// of the last hour again; 0: every 30 s.
	PictureRefresh time.Duration
	// Forges, when set, is the forges' checks the Forges page shows.
	Forges ForgeChecks
	Log    *slog.Logger
	Clock  clockwork.Clock // nil: the real clock
}

// Dashboard serves the pages.
type Dashboard struct {
	o       Options
	sealer  *sealer
	revoked *revokedCache // logins known revoked, so that they cost no read
	log     *slog.Logger
	pages   map[string]*template.Template
	handler http.Handler
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Cookie names. The session cookie seals a login nonce, an expiry and
// the bearer token (session.go); it is HttpOnly, so no script reads it,
// and scoped to the dashboard.
const (
	sessionCookie = "wq_session"
	loginCookie   = "wq_login" // the login form's own CSRF token, before there is a session
	csrfField     = "csrf"
	// maxCookieBytes is what every browser keeps of one cookie.
	maxCookieBytes = 4000
	sessionTTL     = 12 * time.Hour
)

// New returns the dashboard.
func New(o Options) (*Dashboard, error) {
	if o.Items == nil || o.Auth == nil {
		return nil, errors.New("dashboard: Items and Auth are required")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if len(o.CookieKey) == 0 {
		o.CookieKey = make([]byte, 32)
		rand.Read(o.CookieKey)
	}
	sealer, err := newSealer(o.CookieKey)
	if err != nil {
		return nil, err
	}
	if o.Sessions == nil {
		o.Sessions = &memoryRevocations{revoked: map[string]time.Time{}}
	}
	d := &Dashboard{o: o, sealer: sealer, log: o.Log.With("component", "dashboard"), pages: map[string]*template.Template{},
		revoked: newRevokedCache()}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	names, _ := fs.Glob(templateFS, "templates/*.html")
	for _, name := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, name)
		if err != nil {
			return nil, fmt.Errorf("dashboard: %w", err)
		}
		d.pages[page] = t
	}
	d.handler = http.NewCrossOriginProtection().Handler(d.routes())
	return d, nil
}

// ServeHTTP serves the dashboard's routes.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	d.handler.ServeHTTP(w, r)
}

// pageRoute is one of the dashboard's routes: a ServeMux pattern and
// its handler.
type pageRoute struct {
	pattern string
	handler http.Handler
}

// pageRoutes lists every route of the dashboard; registration and the
// test that holds each to the caller's projects use it.
func (d *Dashboard) pageRoutes() []pageRoute {
	static, _ := fs.Sub(staticFS, "static")
	f := func(pattern string, h http.HandlerFunc) pageRoute { return pageRoute{pattern, h} }
	return []pageRoute{
		{"GET /ui/static/", http.StripPrefix("/ui/static/", staticHandler(http.FileServerFS(static)))},
		f("GET /ui/{$}", d.get(d.overviewPage)),
		f("GET /ui/overview/picture", d.get(d.overviewPicture)),
		f("GET /ui/login", d.loginForm),
		f("POST /ui/login", d.login),
		f("GET /ui/login/proxy", d.loginProxy),
		f("POST /ui/logout", d.post(d.logout)),
		f("GET /ui/items", d.get(d.itemsPage)),
		f("GET /ui/items/{id}", d.get(d.itemPage)),
		f("POST /ui/items/{id}/retry", d.post(d.itemAction(d.o.Items.Retry))),
		f("POST /ui/items/{id}/cancel", d.post(d.itemAction(d.o.Items.Cancel))),
		f("POST /ui/bulk/{action}", d.post(d.bulkAction)),
		f("GET /ui/sessions", d.get(d.controlPage(d.sessionsPage))),
		f("GET /ui/work", d.get(d.controlPage(d.workPage))),
		f("GET /ui/leases", d.get(d.controlPage(d.leasesPage))),
		f("GET /ui/allocations", d.get(d.controlPage(d.allocationsPage))),
		f("GET /ui/forges", d.get(d.forgesPage)),
		f("GET /ui/queues", d.get(d.queuesPage)),
		f("POST /ui/identities/freeze", d.post(d.identityAction(true))),
		f("POST /ui/identities/unfreeze", d.post(d.identityAction(false))),
		f("/ui/", d.get(func(w http.ResponseWriter, r *http.Request, s *session) {
			d.fail(w, r, s, wq.Errorf(wq.ENOTFOUND, "no page at %s", r.URL.Path))
		})),
	}
}

func (d *Dashboard) routes() http.Handler {
	mux := http.NewServeMux()
	for _, p := range d.pageRoutes() {
		mux.Handle(p.pattern, p.handler)
	}
	return mux
}

// staticHandler lets the embedded assets be cached: they change only
// with the binary.
func staticHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// session is a logged-in person: the caller their token proves, and the
// CSRF token of this login.
type session struct {
	caller *auth.Caller
	csrf   string
	// login names the login (loginID of its nonce) and expires is its
	// cookie's expiry: what a logout revokes, and until when.
	login   string
	expires time.Time
}

// csrfToken binds a form token to one login: an HMAC, keyed by the
// bearer token, of the login's random nonce. Nobody without the token can
// make it, and a new login (a new nonce) makes the old forms invalid. It
// needs no server-side state, so any instance checks any form.
func csrfToken(token, nonce string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("workqueue dashboard csrf\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func randomString() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// secure reports whether cookies must be Secure: the request came over
// HTTPS, a proxy says it did, or the public URL is https.
func (d *Dashboard) secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") ||
		strings.HasPrefix(strings.ToLower(d.o.PublicURL), "https://")
}

func (d *Dashboard) setCookie(w http.ResponseWriter, r *http.Request, name, value, path string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: d.secure(r), SameSite: http.SameSiteStrictMode})
}

// readSession opens the session cookie and authenticates its token as
// the API would authenticate it in a header. ok is false without a
// cookie this service sealed, unexpired, whose token is still accepted.
// The failure limiter is not asked: only the service makes these
// cookies, so nobody guesses tokens through them.
func (d *Dashboard) readSession(r *http.Request) (s *session, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, false
	}
	sealed, err := d.sealer.open(c.Value, d.o.Clock.Now())
	if err != nil {
		return nil, false
	}
	login := loginID(sealed.nonce)
	if d.ended(r.Context(), login) {
		return nil, false
	}
	caller, err := d.o.Auth.Authenticate(r.Context(), sealed.token)
	if err != nil {
		return nil, false
	}
	return &session{caller: caller, csrf: csrfToken(sealed.token, sealed.nonce), login: login, expires: sealed.expires}, true
}

// authenticate checks a token a person presents to log in, through the
// failure limiter when there is one (the client address is
// r.RemoteAddr's host, as for the API).
func (d *Dashboard) authenticate(r *http.Request, token string) (*auth.Caller, error) {
	if d.o.Limiter == nil {
		return d.o.Auth.Authenticate(r.Context(), token)
	}
	return d.o.Limiter.Authenticate(r.Context(), d.o.Auth, r.RemoteAddr, token)
}

// get wraps a page: without a valid session, the person is sent to log in
// and brought back.
func (d *Dashboard) get(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := d.readSession(r)
		if !ok {
			http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if d.refuseFrozen(w, r, s) {
			return
		}
		h(w, r, s)
	}
}

// post wraps a form's action: it needs a valid session and the session's
// CSRF token in the form, else 403.
func (d *Dashboard) post(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		s, ok := d.readSession(r)
		if !ok {
			d.refuse(r, nil, "form posted without a valid session")
			d.render(w, r, nil, http.StatusForbidden, "error", errorPage{Status: http.StatusForbidden,
				Message: "Your session has ended or is missing: log in again."})
			return
		}
		if !hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(s.csrf)) {
			d.refuse(r, s.caller, "form posted without the session's CSRF token")
			d.render(w, r, s, http.StatusForbidden, "error", errorPage{Status: http.StatusForbidden,
				Message: "This form is not from this session (missing or stale CSRF token). Reload the page and try again."})
			return
		}
		if d.refuseFrozen(w, r, s) {
			return
		}
		h(w, r, s)
	}
}

// refuse audits a refused request.
func (d *Dashboard) refuse(r *http.Request, c *auth.Caller, why string) {
	d.decision(r, c, false, why)
}

// refuseThrottled audits a login the failure limiter refused, with the
// client address it counted.
func (d *Dashboard) refuseThrottled(r *http.Request, th *auth.ThrottledError) {
	d.audit(r, nil, false, auth.ReasonThrottled+": too many failed authentications from this address",
		map[string]any{"client": th.Client, "retry_after_seconds": th.RetryAfterSeconds()})
}

func (d *Dashboard) decision(r *http.Request, c *auth.Caller, allowed bool, why string) {
	d.audit(r, c, allowed, why, nil)
}

func (d *Dashboard) audit(r *http.Request, c *auth.Caller, allowed bool, why string, extra map[string]any) {
	if d.o.Audit == nil {
		return
	}
	e := wq.AuditEntry{Time: d.o.Clock.Now(), EventType: wq.AuditAuthRefused, Actor: "anonymous",
		Trigger: map[string]any{"source": "dashboard", "method": r.Method, "path": r.URL.Path}, Metadata: map[string]any{}}
	if allowed {
		e.EventType = wq.AuditAuthAllowed
	}
	if why != "" {
		e.Metadata["reason"] = why
	}
	if c != nil {
		e.Actor = c.Identity
		e.Metadata["kind"], e.Metadata["rules"] = c.Kind, c.Rules()
	}
	for k, v := range extra {
		e.Metadata[k] = v
	}
	d.o.Audit.WriteAudit(r.Context(), e)
}

// safeNext keeps a post-login redirect on the dashboard: a path under
// /ui/, never another host ("//host" or "/\host").
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/items"
	}
	return next
}

type loginPage struct {
	Next, LoginCSRF, Error string
	Proxy                  bool
}

func (d *Dashboard) loginForm(w http.ResponseWriter, r *http.Request) {
	d.showLogin(w, r, http.StatusOK, "")
}

func (d *Dashboard) showLogin(w http.ResponseWriter, r *http.Request, status int, message string) {
	nonce := randomString()
	d.setCookie(w, r, loginCookie, nonce, "/ui/login", 600)
	d.render(w, r, nil, status, "login", loginPage{Next: safeNext(r.FormValue("next")), LoginCSRF: nonce, Error: message,
		Proxy: d.o.ProxyAccessTokenHeader != ""})
}

// login takes a token from the form. The form carries the login cookie's
// nonce (double submit), so another site cannot log a person in as
// someone else.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 2*auth.MaxTokenBytes)
	c, err := r.Cookie(loginCookie)
	if err != nil || c.Value == "" || !hmac.Equal([]byte(c.Value), []byte(r.PostFormValue(csrfField))) {
		d.refuse(r, nil, "login form posted without its CSRF token")
		d.render(w, r, nil, http.StatusForbidden, "error", errorPage{Status: http.StatusForbidden,
			Message: "This login form is not from this browser (missing or stale CSRF token). Open the login page again."})
		return
	}
	d.startSession(w, r, strings.TrimSpace(r.PostFormValue("token")), safeNext(r.PostFormValue("next")))
}

// loginProxy is the DDR-27 bridge for the dashboard: an OAuth proxy that
// protects this path (and GET /me) passes the login session's access
// token in the configured header; the dashboard checks it as a bearer
// token and keeps it in its cookie. A proxy's --cookie-refresh makes it
// fresh again at the next visit here.
func (d *Dashboard) loginProxy(w http.ResponseWriter, r *http.Request) {
	token := ""
	if d.o.ProxyAccessTokenHeader != "" {
		token = r.Header.Get(d.o.ProxyAccessTokenHeader)
	}
	if token == "" {
		d.showLogin(w, r, http.StatusUnauthorized, "No OAuth proxy session reached the service: log in with a token.")
		return
	}
	d.startSession(w, r, token, safeNext(r.FormValue("next")))
}

func (d *Dashboard) startSession(w http.ResponseWriter, r *http.Request, token, next string) {
	if token == "" || len(token) > auth.MaxTokenBytes {
		d.showLogin(w, r, http.StatusUnauthorized, "Enter a token.")
		return
	}
	caller, err := d.authenticate(r, token)
	var throttled *auth.ThrottledError
	if errors.As(err, &throttled) {
		d.refuseThrottled(r, throttled)
		w.Header().Set("Retry-After", strconv.Itoa(throttled.RetryAfterSeconds()))
		d.showLogin(w, r, http.StatusTooManyRequests, fmt.Sprintf(
			"Too many failed logins from your address: try again in %d seconds.", throttled.RetryAfterSeconds()))
		return
	}
	if err != nil {
		d.refuse(r, nil, wq.ErrorMessage(err))
		msg := "That token is not accepted."
		if wq.ErrorCode(err) != wq.EUNAUTHORIZED {
			msg = "The token could not be checked now: " + wq.ErrorMessage(err)
		}
		d.showLogin(w, r, http.StatusUnauthorized, msg)
		return
	}
	value := d.sealer.seal(token, d.o.Clock.Now().Add(sessionTTL))
	if len(sessionCookie)+len(value) > maxCookieBytes {
		d.showLogin(w, r, http.StatusUnprocessableEntity, "That token is too long for a browser cookie; use the API with it.")
		return
	}
	d.decision(r, caller, true, "dashboard login")
	d.setCookie(w, r, sessionCookie, value, Prefix, int(sessionTTL/time.Second))
	d.setCookie(w, r, loginCookie, "", "/ui/login", -1)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the login on every instance: its revocation is stored
// before the answer, and the cookie is cleared. A revocation that could
// not be stored is said, not hidden: the cookie would still open pages
// elsewhere until its expiry.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request, s *session) {
	d.setCookie(w, r, sessionCookie, "", Prefix, -1)
	if err := d.o.Sessions.RevokeSession(r.Context(), s.login, s.expires, d.o.Clock.Now()); err != nil {
		d.fail(w, r, nil, fmt.Errorf("log out: %w", err))
		return
	}
	d.revoked.add(s.login, s.expires)
	d.decision(r, s.caller, true, "dashboard logout")
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

type errorPage struct {
	Status    int
	Title     string
	Message   string
	RequestID string
}

// fail renders err as an error page with the status the API would
// answer; an internal error is logged with a request id, and the page
// shows only the id.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	code := wq.ErrorCode(err)
	p := errorPage{Status: api.StatusOf(code), Message: wq.ErrorMessage(err)}
	if p.Status == http.StatusInternalServerError {
		p.RequestID = randomString()[:16]
		d.log.Error("internal error", "request_id", p.RequestID, "method", r.Method, "path", r.URL.Path, "err", err)
		p.Message = "internal error"
	}
	d.render(w, r, s, p.Status, "error", p)
}

// view is what every page's layout reads.
type view struct {
	Title        string
	Nav          string
	Caller       *auth.Caller
	CSRF         string
	ControlPlane bool
	Page         any
	// Refresh, when not 0, reloads the page this often (seconds), with
	// a meta refresh.
	Refresh int
	// Now is the time the page is rendered at, which its relative times
	// count from.
	Now time.Time
	// HandlesNothing: this instance's engine processes no item type
	// (handled_types is empty), which the items pages say.
	HandlesNothing bool
}

func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, s *session, status int, page string, data any) {
	t, ok := d.pages[page]
	if !ok {
		http.Error(w, "no template "+page, http.StatusInternalServerError)
		return
	}
	v := view{Nav: page, ControlPlane: d.o.ControlPlane != nil, Page: data, Now: d.o.Clock.Now(),
		HandlesNothing: len(d.o.Items.HandledHere) == 0}
	if r, ok := data.(interface{ RefreshSeconds() int }); ok {
		v.Refresh = r.RefreshSeconds()
	}
	if s != nil {
		v.Caller, v.CSRF = s.caller, s.csrf
	}
	var buf strings.Builder
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		id := randomString()[:16]
		d.log.Error("render page", "request_id", id, "page", page, "err", err)
		http.Error(w, "internal error (request id "+id+")", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(buf.String()))
}
