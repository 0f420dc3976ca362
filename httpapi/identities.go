package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/identity"
)

// identityRoutes are the admin's freeze and unfreeze of an identity, and
// the list of frozen ones (Options.Identities).
func (s *Server) identityRoutes() []route {
	if s.ids == nil {
		return nil
	}
	return []route{
		{"GET", "/api/v1/identities/frozen", s.authenticated(auth.Admin, s.listFrozen)},
		{"POST", "/api/v1/identities/{identity}/freeze", s.authenticated(auth.Admin, s.freezeIdentity)},
		{"POST", "/api/v1/identities/{identity}/unfreeze", s.authenticated(auth.Admin, s.unfreezeIdentity)},
	}
}

// adminEverywhere refuses an admin narrowed to projects: a freeze reaches
// every project the identity writes to.
func (s *Server) adminEverywhere(w http.ResponseWriter, r *http.Request) (*auth.Caller, bool) {
	c := callerOf(r.Context())
	if !c.CanEverywhere(auth.Admin) {
		s.Error(w, r, wq.Errorf(wq.EFORBIDDEN, "%s may not freeze or unfreeze identities: permission admin on every project is required", c.Identity))
		return nil, false
	}
	return c, true
}

func (s *Server) freezeIdentity(w http.ResponseWriter, r *http.Request) {
	c, ok := s.adminEverywhere(w, r)
	if !ok {
		return
	}
	var b api.FreezeRequest
	if r.ContentLength != 0 && !s.decodeBody(w, r, &b) {
		return
	}
	st, err := s.ids.Freeze(r.Context(), c.Identity, r.PathValue("identity"), b.Reason)
	s.answer(w, r, http.StatusOK, identityStateOf(st), err)
}

func (s *Server) unfreezeIdentity(w http.ResponseWriter, r *http.Request) {
	c, ok := s.adminEverywhere(w, r)
	if !ok {
		return
	}
	st, err := s.ids.Unfreeze(r.Context(), c.Identity, r.PathValue("identity"))
	s.answer(w, r, http.StatusOK, identityStateOf(st), err)
}

func (s *Server) listFrozen(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.adminEverywhere(w, r); !ok {
		return
	}
	list, err := s.ids.Frozen(r.Context())
	out := api.FrozenIdentities{Identities: make([]api.IdentityFreeze, len(list))}
	for i, f := range list {
		out.Identities[i] = freezeValue(f)
	}
	s.answer(w, r, http.StatusOK, out, err)
}

func freezeValue(f identity.Freeze) api.IdentityFreeze {
	return api.IdentityFreeze{Identity: f.Identity, By: f.By, Reason: f.Reason, At: f.At}
}

func identityStateOf(st *identity.State) *api.IdentityState {
	if st == nil {
		return nil
	}
	out := &api.IdentityState{Identity: st.Identity, Frozen: st.Frozen, LeasesEnded: st.LeasesEnded}
	if st.Freeze != nil {
		f := freezeValue(*st.Freeze)
		out.Freeze = &f
	}
	return out
}

// refuseFrozen answers a frozen identity's request 403 (identity_frozen)
// and audits the refusal. GET /me stays open, so that the identity can
// see who it is; so does the MCP transport, whose every tool call is its
// REST route's, refused here: an agent then reads identity_frozen in the
// tool's error rather than a bare 403 of its transport. It reports
// whether it answered.
func (s *Server) refuseFrozen(w http.ResponseWriter, r *http.Request, c *auth.Caller, perm auth.Permission) bool {
	if s.ids == nil || r.URL.Path == "/me" || r.URL.Path == "/mcp" {
		return false
	}
	err := s.ids.Check(r.Context(), c.Identity)
	if err == nil {
		return false
	}
	if wq.ErrorReason(err) == identity.ReasonFrozen {
		s.decision(r, c, perm, false, wq.ErrorMessage(err))
	}
	s.Error(w, r, err)
	return true
}

// budgetRefused answers a write beyond an identity's budget: 429 with
// Retry-After, the budget's reason in the problem document. It reports
// whether err was one.
func (s *Server) budgetRefused(w http.ResponseWriter, err error) bool {
	var refused *identity.BudgetError
	if !errors.As(err, &refused) {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(refused.RetryAfterSeconds()))
	s.writeProblem(w, api.Problem{Status: http.StatusTooManyRequests, Code: wq.ErrorCode(err),
		Reason: wq.ErrorReason(err), Detail: wq.ErrorMessage(err)})
	return true
}
