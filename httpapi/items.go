package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/service"
)

// MaxSubmitBytes bounds a submission's body; a project's own limits on
// file sizes apply on top.
const MaxSubmitBytes = 32 << 20

type callerKey struct{}

// callerOf returns the authenticated caller of a request.
func callerOf(ctx context.Context) *auth.Caller {
	c, _ := ctx.Value(callerKey{}).(*auth.Caller)
	return c
}

// authenticated wraps an API handler: a bearer token is required, and the
// caller must hold perm.
func (s *Server) authenticated(perm auth.Permission, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || s.auth == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="workqueue"`)
			s.Error(w, r, wq.Errorf(wq.EUNAUTHORIZED, "a bearer token is required"))
			return
		}
		caller, err := s.auth.Authenticate(r.Context(), strings.TrimSpace(token))
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="workqueue", error="invalid_token"`)
			s.Error(w, r, err)
			return
		}
		if !caller.Can(perm) {
			s.Error(w, r, wq.Errorf(wq.EFORBIDDEN, "%s may not %s: the %q permission is required", caller.Identity, r.Method+" "+r.URL.Path, perm))
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
	}
}

// submitResponse is an item with the upsert's result.
type submitResponse struct {
	Result string `json:"result"`
	*service.Item
}

func (s *Server) submitItem(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSubmitBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.problem(w, r, http.StatusRequestEntityTooLarge, wq.EINVALID, "body is larger than "+strconv.Itoa(MaxSubmitBytes)+" bytes", nil)
			return
		}
		s.Error(w, r, wq.Errorf(wq.EINVALID, "body: %v", err))
		return
	}
	it, result, err := s.items.Submit(r.Context(), callerOf(r.Context()), body)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	status := http.StatusOK
	if result == mr.ResultCreated {
		status = http.StatusCreated
	}
	writeJSON(w, status, submitResponse{Result: result, Item: it})
}

func (s *Server) getItem(w http.ResponseWriter, r *http.Request) {
	id, err := service.ParseID("id", r.PathValue("id"))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	it, err := s.items.Get(r.Context(), id)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, it)
}

func (s *Server) listItems(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for key := range q {
		switch key {
		case "item_type", "phase", "forge", "project", "cursor", "limit":
		default:
			s.Error(w, r, wq.Errorf(wq.EINVALID, "%s: unknown query parameter", key))
			return
		}
	}
	f := wq.ItemFilter{ItemType: q.Get("item_type"), Phase: wq.Phase(q.Get("phase")), Forge: q.Get("forge"), Project: q.Get("project")}
	if f.Phase != "" && !f.Phase.Valid() {
		s.Error(w, r, wq.Errorf(wq.EINVALID, "phase: want active, completed, failed or cancelled, got %q", f.Phase))
		return
	}
	if c := q.Get("cursor"); c != "" {
		id, err := service.ParseID("cursor", c)
		if err != nil {
			s.Error(w, r, err)
			return
		}
		f.Before = id
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > wq.MaxListLimit {
			s.Error(w, r, wq.Errorf(wq.EINVALID, "limit: want 1 to %d, got %q", wq.MaxListLimit, l))
			return
		}
		f.Limit = n
	}
	items, next, err := s.items.List(r.Context(), f)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": next})
}

func (s *Server) itemAction(act func(context.Context, *auth.Caller, wq.ItemID) (*service.Item, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := service.ParseID("id", r.PathValue("id"))
		if err != nil {
			s.Error(w, r, err)
			return
		}
		it, err := act(r.Context(), callerOf(r.Context()), id)
		if err != nil {
			s.Error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, it)
	}
}
