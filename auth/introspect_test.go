package auth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
)

// usersAPI is an OpenShift-shaped users/~ endpoint: it answers a token it
// knows with its user and groups, and 401 otherwise.
type usersAPI struct {
	*httptest.Server
	mu    sync.Mutex
	users map[string]string // token → user
	calls atomic.Int32
}

func newUsersAPI(t *testing.T) *usersAPI {
	u := &usersAPI{users: map[string]string{"sha256~alice": "alice"}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		u.mu.Lock()
		user, ok := u.users[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		u.mu.Unlock()
		if r.URL.Path != "/apis/user.openshift.io/v1/users/~" || !ok {
			http.Error(w, `{"kind":"Status","code":401}`, http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": "User", "metadata": map[string]any{"name": user}, "groups": []string{"dev", "wq-admins"}})
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *usersAPI) revoke(token string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.users, token)
}

func newIntrospection(u *usersAPI, c *clockwork.FakeClock) *auth.Introspection {
	return &auth.Introspection{URL: u.URL + "/apis/user.openshift.io/v1/users/~", TTL: 5 * time.Minute, Clock: c,
		Rules: []auth.Rule{
			{Name: "admins", Groups: []string{"wq-admins"}, Permissions: []auth.Permission{auth.Admin}},
			{Name: "ops", Groups: []string{"ops"}, Permissions: []auth.Permission{auth.Retry}},
			{Name: "ci", Issuer: "https://i", Claims: map[string][]string{"aud": {"x"}}, Permissions: []auth.Permission{auth.Submit}},
		}}
}

func TestIntrospectedTokenGivesTheUserAndTheirGroupRules(t *testing.T) {
	u := newUsersAPI(t)
	in := newIntrospection(u, clockwork.NewFakeClockAt(time.Now()))
	c, err := in.Authenticate(context.Background(), "sha256~alice")
	if err != nil {
		t.Fatal(err)
	}
	if c.Identity != "alice" || c.Kind != auth.KindIntrospection || len(c.Groups) != 2 || len(c.Rules()) != 1 || c.Rules()[0] != "admins" || !c.Can(auth.Admin) {
		t.Errorf("caller %+v", c)
	}
	if _, err := in.Authenticate(context.Background(), "sha256~mallory"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
		t.Errorf("unknown token: %v", err)
	}
}

func TestRevokedTokenIsRefusedWithinTheTTL(t *testing.T) {
	u := newUsersAPI(t)
	clk := clockwork.NewFakeClockAt(time.Now())
	in := newIntrospection(u, clk)
	ctx := context.Background()
	for range 3 {
		if _, err := in.Authenticate(ctx, "sha256~alice"); err != nil {
			t.Fatal(err)
		}
	}
	if got := u.calls.Load(); got != 1 {
		t.Errorf("%d introspection calls for three uses within the TTL, want 1 (cached)", got)
	}
	u.revoke("sha256~alice")
	clk.Advance(5*time.Minute + time.Second)
	if _, err := in.Authenticate(ctx, "sha256~alice"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
		t.Errorf("revoked, TTL passed: %v, want unauthorized", err)
	}
}

func TestIntrospectionEndpointDownRefusesAndIsNotCached(t *testing.T) {
	u := newUsersAPI(t)
	clk := clockwork.NewFakeClockAt(time.Now())
	in := newIntrospection(u, clk)
	url := in.URL
	in.URL = "http://127.0.0.1:1/users/~" // nothing listens
	if c, err := in.Authenticate(context.Background(), "sha256~alice"); err == nil || c != nil {
		t.Fatalf("endpoint down: %+v %v, want refused", c, err)
	}
	in.URL = url // back up: the failure was not remembered
	if _, err := in.Authenticate(context.Background(), "sha256~alice"); err != nil {
		t.Errorf("endpoint back: %v", err)
	}
	in2 := newIntrospection(u, clk)
	u.mu.Lock()
	u.users["sha256~bob"] = "bob"
	u.mu.Unlock()
	u.revoke("sha256~bob")
	if _, err := in2.Authenticate(context.Background(), "sha256~bob"); err == nil {
		t.Error("refused token accepted")
	}
	u.mu.Lock()
	u.users["sha256~bob"] = "bob"
	u.mu.Unlock()
	if _, err := in2.Authenticate(context.Background(), "sha256~bob"); err != nil {
		t.Errorf("a refusal was cached: %v", err)
	}
}

func TestChainPicksTheTokenKind(t *testing.T) {
	u := newUsersAPI(t)
	tok, hash, _ := auth.NewToken()
	static, _ := auth.NewStaticTokens([]auth.Token{{Name: "ci", SHA256: hash, Permissions: []auth.Permission{auth.Read}}})
	chain := &auth.Chain{Static: static, Introspection: newIntrospection(u, clockwork.NewFakeClockAt(time.Now()))}
	ctx := context.Background()
	if c, err := chain.Authenticate(ctx, tok); err != nil || c.Kind != auth.KindToken {
		t.Errorf("static: %+v %v", c, err)
	}
	if c, err := chain.Authenticate(ctx, "sha256~alice"); err != nil || c.Kind != auth.KindIntrospection {
		t.Errorf("opaque: %+v %v", c, err)
	}
	if _, err := chain.Authenticate(ctx, "a.b.c"); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
		t.Errorf("a JWT with no trusted issuer: %v", err)
	}
	calls := u.calls.Load()
	if _, err := chain.Authenticate(ctx, strings.Repeat("x", auth.MaxTokenBytes+1)); wq.ErrorCode(err) != wq.EUNAUTHORIZED || u.calls.Load() != calls {
		t.Errorf("over-size token: %v, or it was sent to introspection", err)
	}
}
