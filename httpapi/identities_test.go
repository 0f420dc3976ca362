package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// identityAuth authenticates three tokens: "root" an admin, "bot" and
// "peer" agents that may submit, each its own identity.
type identityAuth struct{}

func (identityAuth) Authenticate(_ context.Context, token string) (*auth.Caller, error) {
	perms := []auth.Permission{auth.Agent, auth.Submit, auth.Read}
	switch token {
	case "root":
		perms = []auth.Permission{auth.Admin}
	case "bot", "peer":
	default:
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token")
	}
	return &auth.Caller{Identity: token, Kind: auth.KindToken, Grants: []auth.Grant{{Rule: token, Permissions: perms}}}, nil
}

// instance is one serve process on a shared database.
type instance struct {
	srv   *httpapi.Server
	cps   cp.Store
	audit *audit.Memory
}

// newInstances starts n servers on one database of kind, as n serve
// processes share it, with the given budgets.
func newInstances(t *testing.T, kind string, n int, limits identity.Limits, clock clockwork.Clock) []instance {
	t.Helper()
	url := testdb.URL(t, kind)
	var out []instance
	for range n {
		st := testdb.OpenURL(t, url)
		cps := testdb.ControlPlaneURL(t, url)
		control := &cp.Service{Store: cps, Clock: clock}
		log := testkit.CheckedAudit(t)
		guard := &identity.Guard{Store: testdb.IdentitiesURL(t, url), Limits: limits, Clock: clock, Audit: log,
			OnFreeze: func(ctx context.Context, id, by string) (int, error) {
				ended, err := control.EndLeasesOf(ctx, cp.Caller{Identity: by, Admin: true}, id)
				return len(ended), err
			}}
		items := testapi.Items(st, config.Default())
		items.Clock, items.Identities = clock, guard
		out = append(out, instance{cps: cps, audit: log, srv: httpapi.NewServer(httpapi.Options{Store: st, Items: items,
			Auth: identityAuth{}, Log: testkit.Quiet(), Audit: log, Clock: clock, ControlPlane: control, Identities: guard})})
	}
	return out
}

// do sends a request as token and returns the recorded answer.
func (in instance) do(t *testing.T, token, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	in.srv.ServeHTTP(rec, req)
	return rec
}

// must is do that fails the test unless the answer is want, decoding it
// into v.
func (in instance) must(t *testing.T, token, method, path, body string, want int, v any) {
	t.Helper()
	rec := in.do(t, token, method, path, body)
	if rec.Code != want {
		t.Fatalf("%s %s as %s: %d %s, want %d", method, path, token, rec.Code, rec.Body, want)
	}
	if v != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatal(err)
		}
	}
}

func problemOf(t *testing.T, rec *httptest.ResponseRecorder) api.Problem {
	t.Helper()
	var p api.Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("decode problem %s: %v", rec.Body, err)
	}
	return p
}

const exampleSubmission = `{"item_type":"example","steps":1}`

func TestWritesBeyondAnIdentitysBudgetAre429WithRetryAfterAndAuditedOnEveryInstance(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 1, 10, 40, 0, 0, time.UTC))
		in := newInstances(t, kind, 2, identity.Limits{SubmissionsPerHour: 2, ActionsPerHour: 1}, clock)

		in[0].must(t, "bot", "POST", "/api/v1/items", exampleSubmission, http.StatusCreated, nil)
		in[1].must(t, "bot", "POST", "/api/v1/items", exampleSubmission, http.StatusCreated, nil)
		rec := in[0].do(t, "bot", "POST", "/api/v1/items", exampleSubmission)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1200" {
			t.Fatalf("third submission in the hour: %d Retry-After %q %s; want 429 Retry-After 1200 (the rest of the hour)",
				rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
		if p := problemOf(t, rec); p.Reason != identity.ReasonSubmissionsBudget || p.Code != wq.EUNAVAILABLE {
			t.Errorf("problem %+v: want code unavailable, reason %s", p, identity.ReasonSubmissionsBudget)
		}
		if got := in[0].audit.Entries(identity.AuditBudgetExceeded); len(got) != 1 || got[0].Actor != "bot" || got[0].Metadata["budget"] != "submissions" {
			t.Errorf("audit of the refusal: %+v, want one budget_exceeded entry of bot's submissions", got)
		}
		in[1].must(t, "peer", "POST", "/api/v1/items", exampleSubmission, http.StatusCreated, nil) // another identity's budget

		// A gated action spends the actions budget whatever its outcome.
		var sess cptype.SessionView
		in[1].must(t, "bot", "POST", "/api/v1/sessions", `{"role":"author"}`, http.StatusCreated, &sess)
		action := `{"session_id":"` + sess.ID + `","assignment_id":"none","action":"close"}`
		in[0].must(t, "bot", "POST", "/api/v1/actions", action, http.StatusConflict, nil)
		rec = in[1].do(t, "bot", "POST", "/api/v1/actions", action)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || problemOf(t, rec).Reason != identity.ReasonActionsBudget {
			t.Fatalf("second action in the hour: %d Retry-After %q %s; want 429 %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body, identity.ReasonActionsBudget)
		}

		clock.Advance(20 * time.Minute)
		in[1].must(t, "bot", "POST", "/api/v1/items", exampleSubmission, http.StatusCreated, nil)
	})
}

func TestAFrozenIdentityLosesItsLeasesAndIsRefusedUntilUnfrozen(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		in := newInstances(t, kind, 2, identity.Limits{}, clock)
		ctx := t.Context()
		if err := in[0].cps.UpsertWork(ctx, []cp.Work{{ID: uuid.NewString(), State: cp.StateOpen, Title: "work", Labels: []string{},
			WorkKey: cp.WorkKey{Forge: "gitea", Repo: "team/app", Kind: cp.KindIssue, Number: 1}, UpdatedAt: clock.Now()}}, clock.Now()); err != nil {
			t.Fatal(err)
		}
		var sess cptype.SessionView
		in[0].must(t, "bot", "POST", "/api/v1/sessions", `{"role":"author"}`, http.StatusCreated, &sess)
		var alloc cptype.Allocation
		in[0].must(t, "bot", "POST", "/api/v1/allocations", `{"session_id":"`+sess.ID+`","apply":true}`, http.StatusOK, &alloc)
		if alloc.Lease == nil {
			t.Fatalf("allocation %+v: want a lease", alloc)
		}

		var st api.IdentityState
		in[1].must(t, "root", "POST", "/api/v1/identities/bot/freeze", `{"reason":"comments in a loop"}`, http.StatusOK, &st)
		if !st.Frozen || st.LeasesEnded != 1 || st.Freeze == nil || st.Freeze.By != "root" {
			t.Errorf("freeze answered %+v: want frozen by root with its 1 lease ended", st)
		}
		l, err := in[0].cps.GetLease(ctx, alloc.Lease.ID)
		if err != nil {
			t.Fatal(err)
		}
		if l.State != cp.LeaseReleased {
			t.Errorf("the frozen identity's lease is %s, want released", l.State)
		}
		events, err := in[0].cps.ListEvents(ctx, cp.EventFilter{LeaseID: l.ID})
		if err != nil || len(events) == 0 || events[0].Reason != cp.ReasonIdentityFrozen {
			t.Errorf("the lease's last event: %+v %v, want released for %s", events, err, cp.ReasonIdentityFrozen)
		}

		for _, probe := range []struct{ method, path, body string }{
			{"POST", "/api/v1/items", exampleSubmission},
			{"GET", "/api/v1/items", ""},
			{"POST", "/api/v1/sessions/" + sess.ID + "/heartbeat", ""},
			{"POST", "/api/v1/leases/" + alloc.Lease.ID + "/adopt", `{"session_id":"` + sess.ID + `"}`},
			{"POST", "/api/v1/actions", `{"session_id":"` + sess.ID + `","assignment_id":"` + alloc.Assignment.ID + `","action":"comment","body":"x"}`},
		} {
			for i, srv := range in {
				rec := srv.do(t, "bot", probe.method, probe.path, probe.body)
				if rec.Code != http.StatusForbidden || problemOf(t, rec).Reason != identity.ReasonFrozen {
					t.Errorf("instance %d: %s %s as the frozen identity: %d %s, want 403 %s", i, probe.method, probe.path, rec.Code, rec.Body, identity.ReasonFrozen)
				}
			}
		}
		in[0].must(t, "bot", "GET", "/me", "", http.StatusOK, nil)
		in[0].must(t, "peer", "POST", "/api/v1/items", exampleSubmission, http.StatusCreated, nil)
		var frozen api.FrozenIdentities
		in[0].must(t, "root", "GET", "/api/v1/identities/frozen", "", http.StatusOK, &frozen)
		if len(frozen.Identities) != 1 || frozen.Identities[0].Identity != "bot" || frozen.Identities[0].Reason != "comments in a loop" {
			t.Errorf("frozen identities: %+v, want bot", frozen)
		}
		in[1].must(t, "peer", "POST", "/api/v1/identities/bot/unfreeze", "", http.StatusForbidden, nil)

		in[0].must(t, "root", "POST", "/api/v1/identities/bot/unfreeze", "", http.StatusOK, &st)
		if st.Frozen {
			t.Errorf("unfreeze answered %+v, want not frozen", st)
		}
		in[1].must(t, "bot", "POST", "/api/v1/items", exampleSubmission, http.StatusCreated, nil)
		in[1].must(t, "bot", "POST", "/api/v1/sessions/"+sess.ID+"/heartbeat", "", http.StatusOK, nil)
		if l, err := in[1].cps.GetLease(ctx, alloc.Lease.ID); err != nil || l.State != cp.LeaseReleased {
			t.Errorf("after the unfreeze the lease is %+v (%v): want it still released", l, err)
		}

		// Frozen on the second instance, unfrozen on the first.
		entries := append(in[1].audit.Entries(identity.AuditFrozen, identity.AuditUnfrozen), in[0].audit.Entries(identity.AuditFrozen, identity.AuditUnfrozen)...)
		if len(entries) != 2 || entries[0].NewState["frozen"] != true || entries[0].OldState["frozen"] != false ||
			entries[1].EventType != identity.AuditUnfrozen || entries[1].OldState["frozen"] != true || entries[1].NewState["frozen"] != false {
			t.Errorf("audit of the freeze and unfreeze: %+v, want each with its old and new state", entries)
		}
	})
}
