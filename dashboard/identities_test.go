package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// An admin freezes an agent's identity from the sessions page: its
// leases end and its pages are refused until the admin unfreezes it.
// Nobody else may.
func TestAnAdminFreezesAndUnfreezesAnIdentityFromTheSessionsPage(t *testing.T) {
	guard := &identity.Guard{Store: testdb.IdentitiesURL(t, testdb.URL(t, "sqlite"))}
	w := newWorldWith(t, func(o *dashboard.Options) { o.Identities = guard })
	guard.Clock = w.clock
	guard.OnFreeze = func(ctx context.Context, id, by string) (int, error) {
		ended, err := w.cps.EndLeasesOf(ctx, cp.Caller{Identity: by, Admin: true}, id)
		return len(ended), err
	}
	w.controlPlane()
	admin := browserClient(t)
	login(t, admin, w.base, w.tokens["admin"])
	status, page := get(t, admin, w.base+"/ui/sessions")
	m := csrfInput.FindStringSubmatch(page)
	if status != http.StatusOK || m == nil || !strings.Contains(page, `action="/ui/identities/freeze"`) || !strings.Contains(page, "No identity is frozen") {
		t.Fatalf("the admin's sessions page: %d, want a Freeze button per identity and no frozen identity:\n%s", status, page)
	}
	post := func(c *http.Client, action, identity, csrf string) int {
		t.Helper()
		resp, err := c.PostForm(w.base+"/ui/identities/"+action, url.Values{"csrf": {csrf}, "identity": {identity}, "reason": {"runaway"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if got := post(admin, "freeze", "token:agent", m[1]); got != http.StatusSeeOther {
		t.Fatalf("the admin's freeze answered %d, want 303", got)
	}
	leases, err := w.cps.Store.ListLeases(w.ctx, cp.LeaseFilter{})
	if err != nil || len(leases) != 0 {
		t.Errorf("the frozen identity still holds %d active leases (%v), want none", len(leases), err)
	}
	_, page = get(t, admin, w.base+"/ui/sessions?done=frozen&identity=token:agent")
	if !strings.Contains(page, `action="/ui/identities/unfreeze"`) || !strings.Contains(page, "runaway") {
		t.Errorf("after the freeze the sessions page does not offer to unfreeze token:agent:\n%s", page)
	}

	agent := browserClient(t)
	login(t, agent, w.base, w.tokens["agent"])
	if status, page := get(t, agent, w.base+"/ui/sessions"); status != http.StatusForbidden || !strings.Contains(page, identity.ReasonFrozen) {
		t.Errorf("the frozen identity's sessions page: %d, want 403 %s:\n%s", status, identity.ReasonFrozen, page)
	}
	operator := browserClient(t)
	login(t, operator, w.base, w.tokens["operator"])
	_, opPage := get(t, operator, w.base+"/ui/items")
	if om := csrfInput.FindStringSubmatch(opPage); om == nil || post(operator, "unfreeze", "token:agent", om[1]) != http.StatusForbidden {
		t.Errorf("an operator could unfreeze an identity")
	}

	if got := post(admin, "unfreeze", "token:agent", m[1]); got != http.StatusSeeOther {
		t.Fatalf("the admin's unfreeze answered %d, want 303", got)
	}
	if status, _ := get(t, agent, w.base+"/ui/sessions"); status != http.StatusOK {
		t.Errorf("the unfrozen identity's sessions page: %d, want 200", status)
	}
}
