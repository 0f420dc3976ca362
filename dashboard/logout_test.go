package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/service"
)

// dashboardOn is one serve process's dashboard on the database at dbURL,
// as serve wires it: the stored cookie key, logouts kept in the store.
// It returns the process's address.
func dashboardOn(t *testing.T, dbURL string, authn auth.Authenticator) string {
	t.Helper()
	st := testdb.OpenURL(t, dbURL).Queue
	key, err := dashboard.StoredCookieKey(t.Context(), st.(wq.SecretStore), start)
	if err != nil {
		t.Fatal(err)
	}
	items := &service.Items{Store: st}
	d, err := dashboard.New(dashboard.Options{Items: items, Auth: authn, CookieKey: key, Log: testkit.Quiet(),
		Sessions: st.(wq.SessionRevocations)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Options{Store: st, Items: items, Auth: authn, Log: testkit.Quiet(), Dashboard: d}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// logOut posts the logout form of c's session at base.
func logOut(t *testing.T, c *http.Client, base string) {
	t.Helper()
	_, page := get(t, c, base+"/ui/items")
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the items page has no form with a CSRF token:\n%s", page)
	}
	resp, err := c.PostForm(base+"/ui/logout", map[string][]string{"csrf": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout answered %d, want 303", resp.StatusCode)
	}
}

func readerToken(t *testing.T) (string, *auth.StaticTokens) {
	t.Helper()
	token, hash, _ := auth.NewToken()
	static, err := auth.NewStaticTokens([]auth.Token{{Name: "reader", SHA256: hash, Permissions: []auth.Permission{auth.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	return token, static
}

func TestALoggedOutCookieIsRefusedOnEveryInstance(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		dbURL := testdb.URL(t, kind)
		token, static := readerToken(t)
		a, b := dashboardOn(t, dbURL, static), dashboardOn(t, dbURL, static)
		c := browserClient(t)
		cookie := sessionCookie(t, c, a, token)
		if got := itemsWith(t, b, cookie.Value); got != http.StatusOK {
			t.Fatalf("the session at the other instance before the logout: %d, want 200", got)
		}
		other := sessionCookie(t, browserClient(t), b, token) // another login of the same token

		logOut(t, c, a)
		if got := itemsWith(t, b, cookie.Value); got != http.StatusSeeOther {
			t.Errorf("the logged-out cookie replayed at the other instance: %d, want 303 to the login", got)
		}
		if got := itemsWith(t, a, cookie.Value); got != http.StatusSeeOther {
			t.Errorf("the logged-out cookie replayed where it logged out: %d, want 303 to the login", got)
		}
		if got := itemsWith(t, a, other.Value); got != http.StatusOK {
			t.Errorf("another login of the same token: %d, want 200 (a logout ends its own login)", got)
		}
		if got := itemsWith(t, b, sessionCookie(t, browserClient(t), b, token).Value); got != http.StatusOK {
			t.Errorf("a new login after the logout: %d, want 200", got)
		}
	})
}

func TestRemovingATokenEndsItsDashboardSessions(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		dbURL := testdb.URL(t, kind)
		token, static := readerToken(t)
		a := dashboardOn(t, dbURL, static)
		cookie := sessionCookie(t, browserClient(t), a, token)
		// The token is removed from the configuration, and an instance
		// restarted with it (or another on the database) reads the cookie.
		_, withoutIt := readerToken(t)
		restarted := dashboardOn(t, dbURL, withoutIt)
		if got := itemsWith(t, restarted, cookie.Value); got != http.StatusSeeOther {
			t.Errorf("a session of a removed token: %d, want 303 to the login", got)
		}
	})
}
