package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/internal/strictjson"
)

// maxControlBody bounds a control-plane request body.
const maxControlBody = 64 << 10

// controlRoutes are the control plane's routes (Options.ControlPlane).
func (s *Server) controlRoutes() []route {
	if s.cp == nil {
		return nil
	}
	agent := func(h http.HandlerFunc) http.HandlerFunc { return s.authenticated(auth.Agent, h) }
	return []route{
		{"POST", "/api/v1/sessions", agent(jsonAction(s, http.StatusCreated, func(r *http.Request, c cp.Caller, b *api.SessionRequest) (any, error) {
			v, err := s.cp.RegisterSession(r.Context(), c, b.Role, b.Name, b.Capabilities)
			return v, err
		}))},
		{"GET", "/api/v1/sessions", agent(s.listSessions)},
		{"GET", "/api/v1/sessions/{id}", agent(s.sessionAction(s.cp.Session))},
		{"POST", "/api/v1/sessions/{id}/heartbeat", agent(s.sessionAction(s.cp.HeartbeatSession))},
		{"POST", "/api/v1/sessions/{id}/end", agent(s.sessionAction(s.cp.EndSession))},
		{"POST", "/api/v1/allocations", agent(jsonAction(s, http.StatusOK, func(r *http.Request, c cp.Caller, b *api.AllocationRequest) (any, error) {
			if err := requireSession(b.SessionID); err != nil {
				return nil, err
			}
			v, err := s.cp.Allocate(r.Context(), c, b.SessionID, b.Repo, b.Apply)
			return v, err
		}))},
		{"POST", "/api/v1/gate", agent(s.gate)},
		{"GET", "/api/v1/leases", agent(s.listLeases)},
		{"POST", "/api/v1/leases/expire", agent(s.expireLeases)},
		{"GET", "/api/v1/leases/{id}", agent(s.inspectLease)},
		{"POST", "/api/v1/leases/{id}/heartbeat", agent(s.leaseAction(func(r *http.Request, c cp.Caller, b *api.LeaseRequest) (any, error) {
			v, err := s.cp.HeartbeatLease(r.Context(), c, r.PathValue("id"), b.SessionID, b.HeadSHA)
			return v, err
		}))},
		{"POST", "/api/v1/leases/{id}/adopt", agent(s.leaseAction(func(r *http.Request, c cp.Caller, b *api.LeaseRequest) (any, error) {
			v, err := s.cp.AdoptLease(r.Context(), c, r.PathValue("id"), b.SessionID, b.WorktreePath, b.HeadSHA)
			return v, err
		}))},
		{"POST", "/api/v1/leases/{id}/release", agent(s.leaseAction(func(r *http.Request, c cp.Caller, b *api.LeaseRequest) (any, error) {
			v, err := s.cp.ReleaseLease(r.Context(), c, r.PathValue("id"), b.SessionID)
			return v, err
		}))},
		{"POST", "/api/v1/leases/{id}/abandon", agent(s.leaseAction(func(r *http.Request, c cp.Caller, b *api.LeaseRequest) (any, error) {
			v, err := s.cp.AbandonLease(r.Context(), c, r.PathValue("id"), b.SessionID, abandonProof(b.Proof))
			return v, err
		}))},
		{"POST", "/api/v1/leases/{id}/reclaim", agent(s.leaseAction(func(r *http.Request, c cp.Caller, b *api.LeaseRequest) (any, error) {
			v, err := s.cp.ReclaimLease(r.Context(), c, r.PathValue("id"), b.SessionID)
			return v, err
		}))},
		{"POST", "/api/v1/actions", agent(jsonAction(s, http.StatusOK, func(r *http.Request, c cp.Caller, b *cptype.ActionRequest) (any, error) {
			// A gated forge write: it spends the caller's actions budget,
			// refused or not, so that a loop of refused writes is bounded too.
			if err := s.ids.Spend(r.Context(), c.Identity, identity.Actions, apiTrigger(r)); err != nil {
				return nil, err
			}
			v, err := s.cp.Act(r.Context(), c, *b)
			return v, err
		}))},
		{"PUT", "/api/v1/checkpoints", agent(s.putCheckpoint)},
		{"GET", "/api/v1/checkpoints", agent(s.listCheckpoints)},
		{"POST", "/api/v1/checkpoints/reconcile", agent(jsonAction(s, http.StatusOK, func(r *http.Request, c cp.Caller, b *api.CheckpointReconcileRequest) (any, error) {
			if err := requireSession(b.SessionID); err != nil {
				return nil, err
			}
			v, err := s.cp.ReconcileCheckpoint(r.Context(), c, b.CheckpointKey, b.HeadSHA)
			return v, err
		}))},
		{"GET", "/api/v1/work", agent(s.listWork)},
		{"POST", "/api/v1/work/sync", s.authenticated(auth.Admin, func(w http.ResponseWriter, r *http.Request) {
			rep, err := s.cp.Sync(r.Context(), controlCaller(r))
			s.answer(w, r, http.StatusOK, rep, err)
		})},
	}
}

// controlCaller is the control plane's view of the request's caller.
func controlCaller(r *http.Request) cp.Caller { return ControlCaller(callerOf(r.Context())) }

// ControlCaller is the control plane's view of an authenticated caller:
// an admin of every project acts on any session; the projects it sees
// and acts on are those where it holds agent (which admin holds). An
// admin narrowed to projects is, to the control plane, an agent of
// those projects: acting on others' sessions would reach past them.
func ControlCaller(c *auth.Caller) cp.Caller {
	return cp.Caller{Identity: c.Identity, Admin: c.CanEverywhere(auth.Admin), Projects: c.Scope(auth.Agent),
		MaySubmit: func(repo string) bool { return c.CanOn(auth.Submit, repo) }}
}

// decodeBody reads a JSON body strictly into v: unknown members, member
// names in another case and text that would not survive decoding are
// refused naming the member.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	return s.decodeBodyUpTo(w, r, v, maxControlBody)
}

// decodeBodyUpTo is decodeBody for a body of at most max bytes.
func (s *Server) decodeBodyUpTo(w http.ResponseWriter, r *http.Request, v any, max int64) bool {
	body, ok := s.readJSON(w, r, max)
	if !ok {
		return false
	}
	if err := strictjson.Decode(body, v, ""); err != nil {
		s.Error(w, r, err)
		return false
	}
	return true
}

// answer writes v, or err as a problem.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, status, v)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, ok := s.limitParam(w, r)
	if !ok {
		return
	}
	list, err := s.cp.Sessions(r.Context(), controlCaller(r), limit)
	s.answer(w, r, http.StatusOK, api.SessionList{Sessions: list}, err)
}

func (s *Server) sessionAction(act func(ctx context.Context, c cp.Caller, id string) (*cp.SessionView, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := act(r.Context(), controlCaller(r), r.PathValue("id"))
		s.answer(w, r, http.StatusOK, v, err)
	}
}

// requireSession refuses a body that acts for a session without naming
// it.
func requireSession(sessionID string) error {
	if sessionID == "" {
		return wq.Errorf(wq.EINVALID, "session_id: required")
	}
	return nil
}

func (s *Server) gate(w http.ResponseWriter, r *http.Request) {
	var b api.GateRequest
	if !s.decodeBody(w, r, &b) {
		return
	}
	for field, v := range map[string]string{"session_id": b.SessionID, "assignment_id": b.AssignmentID, "action": string(b.Action)} {
		if v == "" {
			s.Error(w, r, wq.Errorf(wq.EINVALID, "%s: required", field))
			return
		}
	}
	d, err := s.cp.Gate(r.Context(), controlCaller(r), b.SessionID, b.AssignmentID, b.Action, b.LiveHeadSHA)
	s.answer(w, r, http.StatusOK, d, err)
}

func (s *Server) listLeases(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !s.knownParams(w, r, "session_id", "work_id", "all", "limit") {
		return
	}
	limit, ok := s.limitParam(w, r)
	if !ok {
		return
	}
	all, ok := s.boolParam(w, r, "all")
	if !ok {
		return
	}
	f := cp.LeaseFilter{SessionID: q.Get("session_id"), WorkID: q.Get("work_id"), All: all, Limit: limit}
	list, err := s.cp.Leases(r.Context(), controlCaller(r), f)
	s.answer(w, r, http.StatusOK, api.LeaseList{Leases: list}, err)
}

func (s *Server) inspectLease(w http.ResponseWriter, r *http.Request) {
	if !s.knownParams(w, r, "session_id") {
		return
	}
	v, err := s.cp.InspectLease(r.Context(), controlCaller(r), r.PathValue("id"), r.URL.Query().Get("session_id"))
	s.answer(w, r, http.StatusOK, v, err)
}

func (s *Server) expireLeases(w http.ResponseWriter, r *http.Request) {
	expired, err := s.cp.ExpireLeases(r.Context(), controlCaller(r))
	if expired == nil {
		expired = []cp.Lease{}
	}
	s.answer(w, r, http.StatusOK, api.ExpiredLeases{Expired: expired}, err)
}

// jsonAction decodes a body of type T strictly and answers what act
// returns with status; act refuses a body without the session_id it
// needs (requireSession) before it acts.
func jsonAction[T any](s *Server, status int, act func(r *http.Request, c cp.Caller, b *T) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b T
		if !s.decodeBody(w, r, &b) {
			return
		}
		v, err := act(r, controlCaller(r), &b)
		s.answer(w, r, status, v, err)
	}
}

// leaseAction is a POST /api/v1/leases/{id}/… handler: a body naming
// the session acting.
func (s *Server) leaseAction(act func(r *http.Request, c cp.Caller, b *api.LeaseRequest) (any, error)) http.HandlerFunc {
	return jsonAction(s, http.StatusOK, func(r *http.Request, c cp.Caller, b *api.LeaseRequest) (any, error) {
		if err := requireSession(b.SessionID); err != nil {
			return nil, err
		}
		return act(r, c, b)
	})
}

func (s *Server) listWork(w http.ResponseWriter, r *http.Request) {
	if !s.knownParams(w, r, "forge", "repo", "kind", "state", "limit") {
		return
	}
	limit, ok := s.limitParam(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := cp.WorkFilter{Forge: q.Get("forge"), Repo: q.Get("repo"), Kind: cp.Kind(q.Get("kind")), State: cp.State(q.Get("state")), Limit: limit}
	if f.Kind != "" && !f.Kind.Valid() {
		s.Error(w, r, wq.Errorf(wq.EINVALID, "kind: want issue or pr, got %q", f.Kind))
		return
	}
	if f.State != "" && f.State != cp.StateOpen && !f.State.Terminal() {
		s.Error(w, r, wq.Errorf(wq.EINVALID, "state: want open, merged or closed, got %q", f.State))
		return
	}
	list, err := s.cp.Work(r.Context(), controlCaller(r), f)
	if list == nil {
		list = []cp.Work{}
	}
	s.answer(w, r, http.StatusOK, api.WorkList{Work: list}, err)
}

// knownParams refuses a query parameter not in names.
func (s *Server) knownParams(w http.ResponseWriter, r *http.Request, names ...string) bool {
	for key := range r.URL.Query() {
		if !slices.Contains(names, key) {
			s.Error(w, r, wq.Errorf(wq.EINVALID, "%s: unknown query parameter", key))
			return false
		}
	}
	return true
}

// limitParam reads ?limit= (1 to 500), 0 when absent.
func (s *Server) limitParam(w http.ResponseWriter, r *http.Request) (int, bool) {
	l := r.URL.Query().Get("limit")
	if l == "" {
		return 0, true
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > wq.MaxListLimit {
		s.Error(w, r, wq.Errorf(wq.EINVALID, "limit: want 1 to %d, got %q", wq.MaxListLimit, l))
		return 0, false
	}
	return n, true
}

// apiTrigger is an audit entry's trigger for a request of the API.
func apiTrigger(r *http.Request) map[string]any {
	return map[string]any{"source": "api", "method": r.Method, "path": r.URL.Path}
}
