package dashboard_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/service"
)

// sessionCookie logs c in with token and returns the session cookie the
// login set.
func sessionCookie(t *testing.T, c *http.Client, base, token string) *http.Cookie {
	t.Helper()
	resp := login(t, c, base, token)
	for _, ck := range resp.Cookies() {
		if ck.Name == "wq_session" {
			return ck
		}
	}
	t.Fatalf("login answered %d and set no session cookie", resp.StatusCode)
	return nil
}

// itemsWith asks for the items page with only the given session cookie:
// 200 when it is a session, 303 to the login page when not.
func itemsWith(t *testing.T, base, value string) int {
	t.Helper()
	c := browserClient(t)
	u, _ := url.Parse(base + "/ui/")
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "wq_session", Value: value, Path: "/ui/"}})
	status, _ := get(t, c, base+"/ui/items")
	return status
}

func TestTheSessionCookieSealsTheTokenWithAnExpiry(t *testing.T) {
	w := newWorld(t, "")
	token := w.tokens["reader"]
	cookie := sessionCookie(t, browserClient(t), w.base, token)

	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if strings.Contains(cookie.Value, enc.EncodeToString([]byte(token))) {
			t.Errorf("the cookie carries the token in base64: %s", cookie.Value)
		}
	}
	if strings.Contains(cookie.Value, token) || strings.Contains(cookie.Value, strings.TrimPrefix(token, "wq_")) {
		t.Errorf("the cookie carries the token: %s", cookie.Value)
	}
	if got := itemsWith(t, w.base, cookie.Value); got != http.StatusOK {
		t.Fatalf("the cookie itself: %d, want 200", got)
	}

	t.Run("it is not a bearer token for the API", func(t *testing.T) {
		req, _ := http.NewRequest("GET", w.base+"/api/v1/items", nil)
		req.Header.Set("Authorization", "Bearer "+cookie.Value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the cookie's value as a bearer token: %d, want 401", resp.StatusCode)
		}
	})
	t.Run("a tampered cookie is refused", func(t *testing.T) {
		raw, err := base64.RawURLEncoding.DecodeString(cookie.Value)
		if err != nil {
			t.Fatalf("the cookie is not base64url: %v", err)
		}
		for _, i := range []int{0, 13, len(raw) / 2, len(raw) - 1} {
			tampered := append([]byte(nil), raw...)
			tampered[i] ^= 0x01
			if got := itemsWith(t, w.base, base64.RawURLEncoding.EncodeToString(tampered)); got != http.StatusSeeOther {
				t.Errorf("byte %d flipped: %d, want 303 to the login page", i, got)
			}
		}
		if got := itemsWith(t, w.base, base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1])); got != http.StatusSeeOther {
			t.Errorf("cut short: %d, want 303", got)
		}
	})
	t.Run("the old cookie of a nonce and the token in base64 is no session", func(t *testing.T) {
		old := "nonce." + base64.RawURLEncoding.EncodeToString([]byte(token))
		if got := itemsWith(t, w.base, old); got != http.StatusSeeOther {
			t.Errorf("a cookie carrying a valid token in clear: %d, want 303", got)
		}
	})
	t.Run("a cookie sealed under another key does not open", func(t *testing.T) {
		other := newWorldWith(t, func(o *dashboard.Options) { o.CookieKey = []byte(strings.Repeat("another key ", 3)) })
		foreign := sessionCookie(t, browserClient(t), other.base, other.tokens["reader"])
		if got := itemsWith(t, w.base, foreign.Value); got != http.StatusSeeOther {
			t.Errorf("another dashboard's cookie: %d, want 303", got)
		}
		if got := itemsWith(t, other.base, cookie.Value); got != http.StatusSeeOther {
			t.Errorf("this dashboard's cookie at another: %d, want 303", got)
		}
	})
	t.Run("it ends at its expiry whatever the browser keeps", func(t *testing.T) {
		w.clock.Advance(12*time.Hour - time.Minute)
		if got := itemsWith(t, w.base, cookie.Value); got != http.StatusOK {
			t.Errorf("a minute before its expiry: %d, want 200", got)
		}
		w.clock.Advance(time.Minute)
		if got := itemsWith(t, w.base, cookie.Value); got != http.StatusSeeOther {
			t.Errorf("at its expiry: %d, want 303", got)
		}
	})
}

func TestAShortCookieKeyIsRefused(t *testing.T) {
	st := testdb.Open(t, "sqlite").Queue
	static, _ := auth.NewStaticTokens(nil)
	if _, err := dashboard.New(dashboard.Options{Items: &service.Items{Store: st}, Auth: static, CookieKey: []byte("short")}); err == nil {
		t.Error("a 5-byte cookie key was taken")
	}
}

// Two serve processes on one database: each opens its own pool and asks
// for the stored key; a login at one is a session at the other.
func TestDashboardsOnOneDatabaseAcceptEachOthersCookies(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		dbURL := testdb.URL(t, kind)
		token, hash, _ := auth.NewToken()
		static, err := auth.NewStaticTokens([]auth.Token{{Name: "reader", SHA256: hash, Permissions: []auth.Permission{auth.Read}}})
		if err != nil {
			t.Fatal(err)
		}
		instance := func() string {
			t.Helper()
			st := testdb.OpenURL(t, dbURL).Queue
			key, err := dashboard.StoredCookieKey(t.Context(), st.(wq.SecretStore), start)
			if err != nil {
				t.Fatal(err)
			}
			items := &service.Items{Store: st}
			d, err := dashboard.New(dashboard.Options{Items: items, Auth: static, CookieKey: key, Log: testkit.Quiet()})
			if err != nil {
				t.Fatal(err)
			}
			api := httpapi.NewServer(httpapi.Options{Store: st, Items: items, Auth: static, Log: testkit.Quiet(), Dashboard: d})
			srv := httptest.NewServer(api)
			t.Cleanup(srv.Close)
			return srv.URL
		}
		a, b := instance(), instance()
		cookie := sessionCookie(t, browserClient(t), a, token)
		if got := itemsWith(t, b, cookie.Value); got != http.StatusOK {
			t.Errorf("a login at one instance, at the other: %d, want 200", got)
		}
		back := sessionCookie(t, browserClient(t), b, token)
		if got := itemsWith(t, a, back.Value); got != http.StatusOK {
			t.Errorf("and back: %d, want 200", got)
		}
	})
}
