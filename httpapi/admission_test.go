package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/service"
)

// heldBody is a request body that sends nothing until the test lets it
// go: a slow sender, driven by the test instead of by time.
type heldBody struct {
	started chan struct{} // closed at the first Read
	release chan struct{} // closed by the test: the body ends
	once    sync.Once
	reads   atomic.Int64
}

func newHeldBody() *heldBody {
	return &heldBody{started: make(chan struct{}), release: make(chan struct{})}
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	b.once.Do(func() { close(b.started) })
	<-b.release
	return 0, io.EOF
}

func (b *heldBody) Close() error { return nil }

// let ends the body, once.
func (b *heldBody) let() {
	select {
	case <-b.release:
	default:
		close(b.release)
	}
}

// endless is a chunked body that never ends, counting what was read.
type endless struct{ read atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.read.Add(int64(len(p)))
	return len(p), nil
}

// admissionServer is testServer on a fake clock, with a GitLab forge
// "lab" beside the Gitea forge "gitea", both with secret "hook-secret".
func admissionServer(t *testing.T) (*Server, *clockwork.FakeClock, map[auth.Permission]string) {
	t.Helper()
	clock := clockwork.NewFakeClock()
	s, tok := testServer(t, func(o *Options) {
		o.Clock = clock
		hooks := *o.Webhooks
		hooks.Forges = maps.Clone(hooks.Forges)
		hooks.Forges["lab"] = service.WebhookForge{Kind: "gitlab", Secret: "hook-secret"}
		o.Webhooks = &hooks
	})
	return s, clock, tok
}

// delivery is a Gitea delivery whose body is body, of declared length
// length (-1: chunked), signed with a signature that has the right form
// (the body decides whether it matches).
func delivery(body io.Reader, length int64) *http.Request {
	req := httptest.NewRequest("POST", "/webhooks/gitea", body)
	req.ContentLength = length
	req.Header.Set("X-Gitea-Event", "pull_request")
	req.Header.Set("X-Gitea-Delivery", "d-1")
	req.Header.Set("X-Gitea-Signature", strings.Repeat("ab", 32))
	return req
}

// call is an authenticated JSON request.
func call(method, path, token, body string) *http.Request {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// inBackground serves req on another goroutine; the answer is on the
// channel once it is written.
func inBackground(s *Server, req *http.Request) <-chan *httptest.ResponseRecorder {
	out := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		out <- rec
	}()
	return out
}

// servedWithoutWaiting serves req and returns its answer, failing the
// test if the request began to wait on the clock instead (every wait
// in admission is on the server's clock, which only the test moves):
// waiters is how many waited on it before.
func servedWithoutWaiting(t *testing.T, s *Server, clock *clockwork.FakeClock, waiters int, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	answered := inBackground(s, req)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := make(chan struct{})
	go func() {
		if clock.BlockUntilContext(ctx, waiters+1) == nil {
			close(waiting)
		}
	}()
	select {
	case rec := <-answered:
		return rec
	case <-waiting:
		t.Fatalf("%s %s waits instead of being served", req.Method, req.URL.Path)
		return nil
	}
}

// reason is a problem document's reason.
func reason(rec *httptest.ResponseRecorder) string {
	var p map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &p)
	r, _ := p["reason"].(string)
	return r
}

// Slow webhook senders, declaring a huge length or sending chunks, hold
// only their forge's own budget, each at the route's cap: while they
// hold all of it, one more delivery waits a moment without holding
// anything and is refused (503 with Retry-After), and an agent's heartbeat, its gate
// call and a CI token's submission are served without waiting at all.
// Once the senders' deadline passes they are cut off (408) and the
// budget is free again.
func TestSlowWebhookSendersDoNotDelayAuthenticatedCalls(t *testing.T) {
	s, clock, tok := admissionServer(t)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, call("POST", "/api/v1/sessions", tok[auth.Agent], `{"role":"author","name":"honest"}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	var session map[string]any
	json.Unmarshal(rec.Body.Bytes(), &session)
	id := session["id"].(string)

	senders := WebhookBytesInFlight / forge.MaxBodyBytes
	var held []*heldBody
	var answers []<-chan *httptest.ResponseRecorder
	for i := range senders {
		b := newHeldBody()
		length := int64(-1) // chunked
		if i%2 == 0 {
			length = 1 << 40 // a declared terabyte
		}
		held, answers = append(held, b), append(answers, inBackground(s, delivery(b, length)))
		<-b.started
	}
	t.Cleanup(func() {
		for _, b := range held {
			b.let()
		}
	})
	clock.BlockUntilContext(context.Background(), senders) // each sender's deadline

	// One more delivery waits a moment for room, holding nothing, and is
	// refused when none comes.
	waited := inBackground(s, delivery(strings.NewReader("{}"), 2))
	clock.BlockUntilContext(context.Background(), senders+1)
	clock.Advance(PublicBodyWait)
	one := <-waited
	if one.Code != http.StatusServiceUnavailable || one.Header().Get("Retry-After") == "" || reason(one) != "busy" {
		t.Errorf("one more delivery while %d slow ones hold the forge's budget: %d %q %s, want 503 busy with Retry-After",
			senders, one.Code, one.Header().Get("Retry-After"), one.Body)
	}
	for _, tc := range []struct {
		req  *http.Request
		want int
	}{
		{call("POST", "/api/v1/sessions/"+id+"/heartbeat", tok[auth.Agent], ""), http.StatusOK},
		{call("POST", "/api/v1/gate", tok[auth.Agent], `{"session_id":"`+id+`","assignment_id":"none","action":"push"}`), http.StatusOK},
		{call("POST", "/api/v1/items", tok[auth.Submit], `{"item_type":"mr","forge":"gitea","project":"team/app","source_branch":"workqueue/honest",`+
			`"target_branch":"main","title":"T","file_actions":[{"action":"create","file_path":"a.txt","content":"a\n"}]}`), http.StatusCreated},
	} {
		if rec := servedWithoutWaiting(t, s, clock, senders, tc.req); rec.Code != tc.want {
			t.Errorf("%s %s while slow senders hold the webhooks' budget: %d %s, want %d", tc.req.Method, tc.req.URL.Path, rec.Code, rec.Body, tc.want)
		}
	}

	clock.Advance(PublicBodyTimeout)
	for i, answered := range answers {
		if rec := <-answered; rec.Code != http.StatusRequestTimeout || reason(rec) != "body_too_slow" {
			t.Errorf("slow sender %d past the deadline: %d %s, want 408 body_too_slow", i, rec.Code, rec.Body)
		}
	}
	for _, b := range held {
		b.let() // the connection's read ends, as SetReadDeadline makes it on a real one
	}
	eventually.True(t, ioWait, "the cut-off senders' budget to be free", func() (bool, any) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, delivery(strings.NewReader("{}"), 2))
		return rec.Code == http.StatusUnauthorized, rec.Code // read, and refused for its signature
	})
}

// ioWait bounds waiting for goroutines the test released to finish.
const ioWait = 10 * time.Second

// A GitLab delivery carries its secret in X-Gitlab-Token: with a wrong
// one, or none, it is refused 401 before one byte of its body is read,
// so a sender without the secret holds none of the deliveries' budget.
// With the right token its body is read.
func TestAGitLabDeliveryWithABadTokenIsRefusedWithoutReadingItsBody(t *testing.T) {
	s, clock, _ := admissionServer(t)
	for _, token := range []string{"wrong", ""} {
		b := newHeldBody()
		req := httptest.NewRequest("POST", "/webhooks/lab", b)
		req.ContentLength = 1 << 40
		req.Header.Set("X-Gitlab-Event", "Merge Request Hook")
		if token != "" {
			req.Header.Set("X-Gitlab-Token", token)
		}
		rec := servedWithoutWaiting(t, s, clock, 0, req)
		if rec.Code != http.StatusUnauthorized || b.reads.Load() != 0 {
			t.Errorf("token %q: %d %s after %d reads of the body, want 401 before any", token, rec.Code, rec.Body, b.reads.Load())
		}
	}
	b := newHeldBody()
	req := httptest.NewRequest("POST", "/webhooks/lab", b)
	req.ContentLength = -1
	req.Header.Set("X-Gitlab-Event", "Merge Request Hook")
	req.Header.Set("X-Gitlab-Token", "hook-secret")
	answered := inBackground(s, req)
	<-b.started // the right token: its body is read
	b.let()
	if rec := <-answered; rec.Code == http.StatusUnauthorized {
		t.Errorf("the right token: %d %s", rec.Code, rec.Body)
	}
}

// A Gitea delivery without a signature of the right form is refused
// before its body is read too: only a real signature is worth reading
// the body under the forge's budget to check.
func TestAGiteaDeliveryWithoutASignatureIsRefusedWithoutReadingItsBody(t *testing.T) {
	s, clock, _ := admissionServer(t)
	for _, sig := range []string{"", "not-hex", "abcd"} {
		b := newHeldBody()
		req := delivery(b, -1)
		req.Header.Set("X-Gitea-Signature", sig)
		if rec := servedWithoutWaiting(t, s, clock, 0, req); rec.Code != http.StatusUnauthorized || b.reads.Load() != 0 {
			t.Errorf("signature %q: %d %s after %d reads, want 401 before any", sig, rec.Code, rec.Body, b.reads.Load())
		}
	}
}

// A chunked delivery that never ends is read no further than the
// route's cap and answered 413; its budget is free again at once.
func TestAChunkedDeliveryIsReadNoFurtherThanItsCap(t *testing.T) {
	s, _, _ := admissionServer(t)
	for range WebhookBytesInFlight/forge.MaxBodyBytes + 1 { // more than the budget holds at once: each gave it back
		body := &endless{}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, delivery(body, -1))
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("an endless chunked delivery: %d %s, want 413", rec.Code, rec.Body)
		}
		if got := body.read.Load(); got > forge.MaxBodyBytes+64<<10 {
			t.Errorf("read %d bytes of it, want at most the cap of %d and a buffer", got, forge.MaxBodyBytes)
		}
	}
}

// A dashboard login form that dribbles is cut off at the deadline (408)
// like a delivery: no session vouches for it.
func TestADribbledLoginFormIsCutOffAtTheDeadline(t *testing.T) {
	s, clock, _ := admissionServer(t)
	s.mountDashboard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	b := newHeldBody()
	t.Cleanup(b.let)
	req := httptest.NewRequest("POST", "/ui/login", b)
	req.ContentLength = -1
	answered := inBackground(s, req)
	<-b.started
	clock.BlockUntilContext(context.Background(), 1)
	clock.Advance(PublicBodyTimeout)
	if rec := <-answered; rec.Code != http.StatusRequestTimeout {
		t.Errorf("a dribbled login: %d %s, want 408", rec.Code, rec.Body)
	}
	ok := httptest.NewRecorder()
	s.ServeHTTP(ok, httptest.NewRequest("POST", "/ui/login", strings.NewReader("token=x")))
	if ok.Code != http.StatusOK {
		t.Errorf("a login sent at once: %d %s", ok.Code, ok.Body)
	}
}

// One identity with as many requests in flight as it may have (each
// still sending its body) does not hold up another identity, which is
// served without waiting; its own next request waits in its own line
// and, when none of its requests ends in time, is answered 429
// identity_busy with Retry-After.
func TestOneIdentitySaturatingItsLineDoesNotBlockAnother(t *testing.T) {
	s, clock, tok := admissionServer(t)
	var held []*heldBody
	var answers []<-chan *httptest.ResponseRecorder
	for range MaxRequestsPerIdentity {
		b := newHeldBody()
		req := call("POST", "/api/v1/items", tok[auth.Submit], "{}")
		req.Body, req.ContentLength = b, 2<<20 // declares 2 MiB, sends them slowly
		held, answers = append(held, b), append(answers, inBackground(s, req))
		<-b.started
	}
	t.Cleanup(func() {
		for _, b := range held {
			b.let()
		}
	})
	next := inBackground(s, call("GET", "/api/v1/items", tok[auth.Submit], ""))
	clock.BlockUntilContext(context.Background(), 1) // it waits in its line

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, call("POST", "/api/v1/sessions", tok[auth.Agent], `{"role":"author","name":"other"}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("another identity registers: %d %s", rec.Code, rec.Body)
	}
	if rec := servedWithoutWaiting(t, s, clock, 1, call("GET", "/api/v1/sessions", tok[auth.Agent], "")); rec.Code != http.StatusOK {
		t.Errorf("another identity while one fills its line: %d %s", rec.Code, rec.Body)
	}
	clock.Advance(BodyWait)
	if rec := <-next; rec.Code != http.StatusTooManyRequests || reason(rec) != "identity_busy" || rec.Header().Get("Retry-After") == "" {
		t.Errorf("the saturating identity's next request: %d %q %s, want 429 identity_busy with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	for _, b := range held {
		b.let()
	}
	for _, answered := range answers {
		<-answered
	}
	if rec := servedWithoutWaiting(t, s, clock, 0, call("GET", "/api/v1/items", tok[auth.Submit], "")); rec.Code != http.StatusOK {
		t.Errorf("once its requests ended: %d %s", rec.Code, rec.Body)
	}
}

// One identity's large bodies hold at most its share of the large-body
// budget: while it holds its share, its next large body waits, and
// another identity's large body, and any small body, are taken at once.
// Small bodies never wait for large ones.
func TestOneIdentitysLargeBodiesLeaveRoomForOthers(t *testing.T) {
	s, clock, tok := admissionServer(t)
	hold := func(token string, length int64) (*heldBody, <-chan *httptest.ResponseRecorder) {
		b := newHeldBody()
		req := call("POST", "/api/v1/items", token, "{}")
		req.Body, req.ContentLength = b, length
		t.Cleanup(b.let)
		return b, inBackground(s, req)
	}
	first, _ := hold(tok[auth.Submit], -1) // chunked: the largest a route reads
	<-first.started
	second, secondAnswer := hold(tok[auth.Submit], -1)
	clock.BlockUntilContext(context.Background(), 1) // waits for its identity's share
	other, _ := hold(tok[auth.Agent], MaxBodyBytesInFlight-MaxBodyBytesPerIdentity)
	<-other.started // another identity's large body is read at once
	if second.reads.Load() != 0 {
		t.Errorf("the second large body of one identity was read beside its first")
	}
	// The large-body budget is now full; a small body still goes through.
	rec := servedWithoutWaiting(t, s, clock, 1, call("POST", "/api/v1/sessions", tok[auth.Agent], `{"role":"author","name":"small"}`))
	if rec.Code != http.StatusCreated {
		t.Errorf("a small body while large ones fill their budget: %d %s", rec.Code, rec.Body)
	}
	first.let()
	<-second.started // its identity's first ended: now it is read
	second.let()
	<-secondAnswer
}

// A GlitchTip delivery carries its secret in a header or its address:
// a wrong one is refused 401 before its body is read.
func TestAGlitchTipDeliveryWithAWrongSecretIsRefusedWithoutReadingItsBody(t *testing.T) {
	s, clock, _ := admissionServer(t)
	for _, where := range []string{"header", "query", "none"} {
		b := newHeldBody()
		req := httptest.NewRequest("POST", "/webhooks/incidents/glitchtip", b)
		req.ContentLength = 1 << 40
		switch where {
		case "header":
			req.Header.Set("X-Workqueue-Secret", "wrong")
		case "query":
			req.URL.RawQuery = "secret=wrong"
		}
		if rec := servedWithoutWaiting(t, s, clock, 0, req); rec.Code != http.StatusUnauthorized || b.reads.Load() != 0 {
			t.Errorf("a wrong secret in the %s: %d %s after %d reads, want 401 before any", where, rec.Code, rec.Body, b.reads.Load())
		}
	}
	b := newHeldBody()
	req := httptest.NewRequest("POST", "/webhooks/incidents/glitchtip", b)
	req.ContentLength = -1
	req.Header.Set("X-Workqueue-Secret", "glitchtip-secret")
	answered := inBackground(s, req)
	<-b.started // the right secret: its body is read
	b.let()
	if rec := <-answered; rec.Code == http.StatusUnauthorized {
		t.Errorf("the right secret: %d %s", rec.Code, rec.Body)
	}
}
