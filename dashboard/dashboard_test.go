package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/auth"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/service"
)

// start is the time the world's clock starts at, so that pages (and the
// screenshots of them) show the same times on every run.
var start = time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)

// world is the real HTTP server (the API with the dashboard mounted, as
// serve wires them) on a real SQLite store and control plane.
type world struct {
	t      *testing.T
	ctx    context.Context
	base   string
	server http.Handler // what base serves, for requests from other addresses
	clock  *clockwork.FakeClock
	store  wq.Store
	cps    *cp.Service
	tokens map[string]string // by name: admin, operator (read, retry), reader (read), agent
	// history is the items' history in the database, when the world
	// keeps one (newWorldOn).
	history *audit.History
	// items is the item service the pages call; trail what they show
	// an item's history from.
	items *service.Items
	trail wq.AuditSink
}

func newWorld(t *testing.T, publicURL string) *world {
	t.Helper()
	return newWorldWith(t, func(o *dashboard.Options) { o.PublicURL = publicURL })
}

// newWorldWith is newWorld with the dashboard's options edited.
func newWorldWith(t *testing.T, edit func(*dashboard.Options)) *world {
	t.Helper()
	return newWorldOn(t, "", edit)
}

// newWorldOn is newWorldWith on the database at dbURL, its trail the
// items' history kept there (audit.History), as serve has it; with dbURL
// "", on a database of its own with an in-memory trail.
func newWorldOn(t *testing.T, dbURL string, edit func(*dashboard.Options)) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), clock: clockwork.NewFakeClockAt(start), tokens: map[string]string{}}
	var trail interface {
		wq.AuditSink
		dashboard.AuditTrail
	}
	if dbURL == "" {
		w.store = testdb.Open(t, "sqlite").Queue
		trail = audit.NewRecent(1000, 200)
	} else {
		w.store = testdb.OpenURL(t, dbURL).Queue
		w.history = &audit.History{Store: w.store.(wq.HistoryStore), Retention: time.Hour, Clock: w.clock, Log: testkit.Quiet()}
		trail = w.history
	}
	items := &service.Items{Store: w.store, Audit: trail, Clock: w.clock, HandledHere: []string{"example"}}
	w.items, w.trail = items, trail
	items.Register(example.Type(example.Options{}), example.API(w.store))
	var tokens []auth.Token
	for name, perms := range map[string][]auth.Permission{
		"admin": {auth.Admin}, "operator": {auth.Read, auth.Retry}, "reader": {auth.Read}, "agent": {auth.Agent},
	} {
		tok, hash, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		w.tokens[name] = tok
		tokens = append(tokens, auth.Token{Name: name, SHA256: hash, Permissions: perms})
	}
	authn, err := auth.NewStaticTokens(tokens)
	if err != nil {
		t.Fatal(err)
	}
	w.cps = &cp.Service{Store: testdb.ControlPlane(t, "sqlite"), Clock: w.clock, LeaseTTL: 30 * time.Minute, SessionTTL: time.Hour}
	opts := dashboard.Options{Items: items, ControlPlane: w.cps, Auth: authn, Audit: trail, Trail: trail,
		Log: testkit.Quiet(), Clock: w.clock,
		WorkURL: func(forge, repo, kind string, n int64) string {
			return fmt.Sprintf("https://%s.example/%s/%s/%d", forge, repo, map[string]string{"pr": "pulls", "issue": "issues"}[kind], n)
		}}
	edit(&opts)
	dash, err := dashboard.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	api := httpapi.NewServer(httpapi.Options{Store: w.store, Items: items, Auth: authn, Log: testkit.Quiet(), Clock: w.clock,
		ControlPlane: w.cps, Dashboard: dash,
		FailureLimiter: opts.Limiter}) // as serve shares it
	w.server = api
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	w.base = srv.URL
	return w
}

// api calls the JSON API with a token and decodes the answer into out.
func (w *world) api(method, path, token string, body any, out any) {
	w.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, w.base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		w.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			w.t.Fatal(err)
		}
	}
}

// submit submits an example item through the API, as a caller would.
func (w *world) submit(steps int) string {
	w.t.Helper()
	var got struct{ ID string }
	w.api("POST", "/api/v1/items", w.tokens["admin"], map[string]any{"item_type": "example", "steps": steps}, &got)
	w.clock.Advance(time.Minute)
	return got.ID
}

// fail makes an item fail as a worker whose action failed for good does.
func (w *world) fail(id, why string) {
	w.t.Helper()
	itemID, err := service.ParseID("id", id)
	if err != nil {
		w.t.Fatal(err)
	}
	l, err := w.store.ClaimItem(w.ctx, itemID, "worker-1", w.clock.Now(), time.Minute)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.store.RecordFailure(w.ctx, l, wq.Failure{Error: why, Fail: true}, w.clock.Now()); err != nil {
		w.t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
}

// complete makes an item complete as its last action does, leaving its
// needs_* rows as they were.
func (w *world) complete(id string) {
	w.t.Helper()
	itemID, err := service.ParseID("id", id)
	if err != nil {
		w.t.Fatal(err)
	}
	l, err := w.store.ClaimItem(w.ctx, itemID, "worker-1", w.clock.Now(), time.Minute)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.store.ApplyChange(w.ctx, l, wq.Change{Phase: wq.PhaseCompleted, Reason: "done"}, w.clock.Now()); err != nil {
		w.t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
}

func (w *world) phase(id string) wq.Phase {
	w.t.Helper()
	itemID, _ := service.ParseID("id", id)
	it, err := w.store.GetItem(w.ctx, itemID)
	if err != nil {
		w.t.Fatal(err)
	}
	return it.Phase
}

// controlPlane gives the control plane's pages something to show: two
// agent sessions, the inventory of one repository, and an assignment.
func (w *world) controlPlane() {
	w.t.Helper()
	work := []cp.Work{
		{ID: "w-issue-7", WorkKey: cp.WorkKey{Forge: "gitea", Repo: "platform/api", Kind: cp.KindIssue, Number: 7},
			State: cp.StateOpen, Title: "Retry webhooks that time out", Labels: []string{"priority/high"}, Author: "dana", UpdatedAt: start},
		{ID: "w-pr-9", WorkKey: cp.WorkKey{Forge: "gitea", Repo: "platform/api", Kind: cp.KindPR, Number: 9},
			State: cp.StateOpen, Title: "Bound the audit buffer", Author: "lee", HeadSHA: "4be1c0de9a7d", ReviewState: cp.ReviewNone, UpdatedAt: start},
	}
	if err := w.cps.Store.UpsertWork(w.ctx, work, w.clock.Now()); err != nil {
		w.t.Fatal(err)
	}
	var author, reviewer struct{ ID string }
	w.api("POST", "/api/v1/sessions", w.tokens["agent"], map[string]any{"role": "author", "name": "author-1"}, &author)
	w.api("POST", "/api/v1/sessions", w.tokens["agent"], map[string]any{"role": "reviewer", "name": "reviewer-1"}, &reviewer)
	w.api("POST", "/api/v1/allocations", w.tokens["agent"], map[string]any{"session_id": author.ID, "apply": true}, nil)
	w.api("POST", "/api/v1/allocations", w.tokens["agent"], map[string]any{"session_id": reviewer.ID, "apply": true}, nil)
}

// browserClient is a plain HTTP client with a cookie jar that does not
// follow redirects, for what a browser would not let a test do.
func browserClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login logs c in with token through the login form, and returns the
// answer to the form's post.
func login(t *testing.T, c *http.Client, base, token string) *http.Response {
	t.Helper()
	resp, err := c.Get(base + "/ui/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfInput.FindSubmatch(page)
	if m == nil {
		t.Fatalf("the login page has no CSRF token:\n%s", page)
	}
	resp, err = c.PostForm(base+"/ui/login", url.Values{"token": {token}, "csrf": {string(m[1])}, "next": {"/ui/items"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAFormPostWithoutTheSessionsCSRFTokenIsRefused(t *testing.T) {
	w := newWorld(t, "")
	id := w.submit(1)
	w.fail(id, "boom")
	c := browserClient(t)
	if resp := login(t, c, w.base, w.tokens["operator"]); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login answered %d, want 303", resp.StatusCode)
	}

	post := func(form url.Values, header http.Header) int {
		req, _ := http.NewRequest("POST", w.base+"/ui/items/"+id+"/retry", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(url.Values{}, nil); got != http.StatusForbidden {
		t.Errorf("a retry posted without a CSRF token answered %d, want 403", got)
	}
	if got := post(url.Values{"csrf": {"forged"}}, nil); got != http.StatusForbidden {
		t.Errorf("a retry posted with a forged CSRF token answered %d, want 403", got)
	}
	if got := w.phase(id); got != wq.PhaseFailed {
		t.Fatalf("after refused posts the item is %s, want failed", got)
	}

	_, page := get(t, c, w.base+"/ui/items/"+id)
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the item page has no form with a CSRF token:\n%s", page)
	}
	if got := post(url.Values{"csrf": {m[1]}}, http.Header{"Origin": {"https://elsewhere.example"}, "Sec-Fetch-Site": {"cross-site"}}); got != http.StatusForbidden {
		t.Errorf("a cross-site retry with the session's token answered %d, want 403", got)
	}
	if got := post(url.Values{"csrf": {m[1]}}, nil); got != http.StatusSeeOther {
		t.Errorf("a retry with the session's CSRF token answered %d, want 303", got)
	}
	if got := w.phase(id); got != wq.PhaseActive {
		t.Errorf("after a retry with the session's CSRF token the item is %s, want active", got)
	}

	// A second login is a new session: the first one's forms stop working.
	other := browserClient(t)
	login(t, other, w.base, w.tokens["operator"])
	_, otherPage := get(t, other, w.base+"/ui/items/"+id)
	if m2 := csrfInput.FindStringSubmatch(otherPage); m2 == nil || m2[1] == m[1] {
		t.Errorf("two logins with one token share a CSRF token")
	}
}

func TestTheLoginFormNeedsItsOwnCSRFToken(t *testing.T) {
	w := newWorld(t, "")
	c := browserClient(t)
	resp, err := c.PostForm(w.base+"/ui/login", url.Values{"token": {w.tokens["admin"]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a login posted without the form's token answered %d, want 403", resp.StatusCode)
	}
	u, _ := url.Parse(w.base + "/ui/")
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "wq_session" {
			t.Error("a login without the form's token set a session")
		}
	}
}

func TestTheSessionCookieIsHttpOnlyStrictAndSecureBehindHTTPS(t *testing.T) {
	for _, tc := range []struct {
		name, publicURL string
		secure          bool
	}{{"over plain HTTP", "", false}, {"with an https public_url", "https://wq.example", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.publicURL)
			c := browserClient(t)
			resp := login(t, c, w.base, w.tokens["reader"])
			var session *http.Cookie
			for _, ck := range resp.Cookies() {
				if ck.Name == "wq_session" {
					session = ck
				}
			}
			if session == nil {
				t.Fatalf("login set no session cookie (status %d)", resp.StatusCode)
			}
			if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Secure != tc.secure || session.Path != "/ui/" {
				t.Errorf("session cookie: HttpOnly %v, SameSite %v, Secure %v, Path %q; want true, Strict, %v, /ui/",
					session.HttpOnly, session.SameSite, session.Secure, session.Path, tc.secure)
			}
			status, page := get(t, c, w.base+"/ui/items")
			if status != http.StatusOK {
				t.Fatalf("items page: %d", status)
			}
			if strings.Contains(page, w.tokens["reader"]) {
				t.Error("a page shows the token")
			}
		})
	}
}

func TestPagesNeedALogin(t *testing.T) {
	w := newWorld(t, "")
	c := browserClient(t)
	for _, path := range []string{"/ui/items", "/ui/sessions", "/ui/items/0190d7e4-7b3a-7c1e-8f00-000000000000"} {
		resp, err := c.Get(w.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?next=") {
			t.Errorf("%s without a session: %d to %q, want 303 to the login page", path, resp.StatusCode, loc)
		}
	}
	// A session whose token is no longer accepted is no session.
	u, _ := url.Parse(w.base + "/ui/")
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "wq_session", Value: "nonce.d3Ffbm90LWEtdG9rZW4", Path: "/ui/"}})
	if resp, _ := c.Get(w.base + "/ui/items"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a session cookie with an unknown token: %d, want 303 to the login page", resp.StatusCode)
	}
}

func TestControlPlanePagesNeedTheAgentPermission(t *testing.T) {
	w := newWorld(t, "")
	w.controlPlane()
	reader, admin := browserClient(t), browserClient(t)
	login(t, reader, w.base, w.tokens["reader"])
	login(t, admin, w.base, w.tokens["admin"])
	for _, page := range []string{"sessions", "work", "leases", "allocations"} {
		if status, _ := get(t, reader, w.base+"/ui/"+page); status != http.StatusForbidden {
			t.Errorf("/ui/%s for a reader: %d, want 403", page, status)
		}
		status, body := get(t, admin, w.base+"/ui/"+page)
		if status != http.StatusOK {
			t.Errorf("/ui/%s for an admin: %d, want 200", page, status)
		}
		for want, on := range map[string]string{"author-1": "sessions", "Retry webhooks that time out": "work", "active": "leases", "assigned": "allocations"} {
			if on == page && !strings.Contains(body, want) {
				t.Errorf("/ui/%s does not show %q", page, want)
			}
		}
	}
}

// update regenerates the screenshots under docs/ from the browser test:
//
//	go test ./dashboard -run TestDashboardInChromium -screenshots
//
// -screenshot-dir writes them elsewhere (a review's pictures, kept out of
// the repository).
var (
	screenshots   = flag.Bool("screenshots", false, "write the dashboard's screenshots to docs/ (or -screenshot-dir)")
	screenshotDir = flag.String("screenshot-dir", filepath.Join("..", "docs"), "where -screenshots writes")
)

func writeScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	if !*screenshots {
		return
	}
	path := filepath.Join(*screenshotDir, "dashboard-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d KiB)", path, len(png)>>10)
}

// DDR-27: an OAuth proxy in front of /ui/login/proxy passes its session's
// token in a header; the dashboard takes it as a bearer token.
func TestTheProxyBridgeLogsInWithTheProxysToken(t *testing.T) {
	const header = "X-Forwarded-Access-Token"
	proxyLogin := func(w *world, token string) (*http.Client, *http.Response) {
		c := browserClient(t)
		req, _ := http.NewRequest("GET", w.base+"/ui/login/proxy?next=/ui/items%3Fphase%3Dfailed", nil)
		if token != "" {
			req.Header.Set(header, token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return c, resp
	}

	w := newWorldWith(t, func(o *dashboard.Options) { o.ProxyAccessTokenHeader = header })
	c, resp := proxyLogin(w, w.tokens["reader"])
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/items?phase=failed" {
		t.Fatalf("a proxy login answered %d to %q, want 303 to the page asked for", resp.StatusCode, resp.Header.Get("Location"))
	}
	if status, page := get(t, c, w.base+"/ui/items"); status != http.StatusOK || !strings.Contains(page, "token:reader") {
		t.Errorf("after a proxy login the items page is %d and does not name token:reader", status)
	}
	if _, resp := proxyLogin(w, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a proxy login without the proxy's header answered %d, want 401", resp.StatusCode)
	}
	if _, resp := proxyLogin(w, "not-a-token"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a proxy login with a token nobody accepts answered %d, want 401", resp.StatusCode)
	}

	// Without a configured header, nobody's header is trusted.
	plain := newWorld(t, "")
	if _, resp := proxyLogin(plain, plain.tokens["reader"]); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("with no proxy configured, the header logged someone in (%d)", resp.StatusCode)
	}
}
