package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
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
// caller must hold perm (on some project: handlers check the project the
// request concerns). perm "" admits any authenticated caller. Every
// decision is audited: allowed or refused, the rules that matched, why.
func (s *Server) authenticated(perm auth.Permission, h http.HandlerFunc) http.HandlerFunc {
	return s.authenticatedEither(perm, "", h)
}

// authenticatedEither is authenticated admitting a caller that holds perm
// or alt.
func (s *Server) authenticatedEither(perm, alt auth.Permission, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok, duplicate := bearerToken(r.Header)
		if duplicate {
			s.decision(r, nil, perm, false, "more than one Authorization header")
			s.problem(w, r, http.StatusBadRequest, wq.EINVALID, "more than one Authorization header: send exactly one")
			return
		}
		if s.proxyHeader != "" && r.URL.Path == "/me" && r.Header.Get(s.proxyHeader) != "" {
			token, ok = r.Header.Get(s.proxyHeader), true // DDR-27: the proxy's session token
		}
		if !ok || s.auth == nil {
			w.Header().Set("WWW-Authenticate", s.bearerChallenge(r, ""))
			s.decision(r, nil, perm, false, "no bearer token")
			s.Error(w, r, wq.Errorf(wq.EUNAUTHORIZED, "a bearer token is required (Authorization: Bearer <token>)"))
			return
		}
		caller, err := s.authenticate(r, token)
		if err != nil {
			s.refuseToken(w, r, perm, err)
			return
		}
		if perm != "" && !caller.Can(perm) && (alt == "" || !caller.Can(alt)) {
			required := fmt.Sprintf("the %q permission is required", perm)
			if alt != "" {
				required = fmt.Sprintf("the %q or %q permission is required", perm, alt)
			}
			s.decision(r, caller, perm, false, "no matched rule grants "+string(perm))
			s.Error(w, r, wq.Errorf(wq.EFORBIDDEN, "%s may not %s: %s", caller.Identity, r.Method+" "+r.URL.Path, required))
			return
		}
		if s.refuseFrozen(w, r, caller, perm) {
			return
		}
		s.decision(r, caller, perm, true, "")
		// Admitted only now, its token checked: one identity waits in its
		// own line and cannot take the bytes every other caller needs.
		ctx, release, ok := s.admit(w, r, caller.Identity)
		if !ok {
			return
		}
		defer release()
		ctx = context.WithValue(ctx, callerKey{}, caller)
		if s.proxyHeader != "" && r.URL.Path == "/me" {
			ctx = context.WithValue(ctx, proxyTokenKey{}, r.Header.Get(s.proxyHeader))
		}
		h(w, r.WithContext(ctx))
	}
}

type proxyTokenKey struct{}

// decision audits one authentication/authorisation answer.
func (s *Server) decision(r *http.Request, c *auth.Caller, perm auth.Permission, allowed bool, why string) {
	if s.audit == nil {
		return
	}
	e := wq.AuditEntry{Time: s.clock.Now(), EventType: wq.AuditAuthRefused, Actor: "anonymous",
		Trigger:  map[string]any{"source": "api", "method": r.Method, "path": r.URL.Path},
		Metadata: map[string]any{"permission": string(perm)}}
	if allowed {
		e.EventType = wq.AuditAuthAllowed
	}
	if why != "" {
		e.Metadata["reason"] = why
	}
	if c != nil {
		e.Actor = c.Identity
		e.Metadata["kind"], e.Metadata["rules"] = c.Kind, c.Rules()
	}
	s.audit.WriteAudit(r.Context(), e)
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r.Context())
	token, _ := r.Context().Value(proxyTokenKey{}).(string)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, api.Me{Identity: c.Identity, Kind: c.Kind, Issuer: c.Issuer, Groups: c.Groups,
		Rules: c.Rules(), Permissions: permissionWords(c.Permissions(), []string{}), AccessToken: token,
		Grants: mapSlice(c.Grants, func(g *auth.Grant) api.Grant {
			return api.Grant{Rule: g.Rule, Permissions: permissionWords(g.Permissions, nil), Projects: g.Projects}
		})})
}

// permissionWords are permissions as the API's words; none is none (nil
// or the empty list as the caller gives it).
func permissionWords(perms []auth.Permission, none []string) []string {
	if perms == nil {
		return none
	}
	out := make([]string, len(perms))
	for i, p := range perms {
		out[i] = string(p)
	}
	return out
}

func (s *Server) submitItem(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readJSON(w, r, MaxSubmitBytes)
	if !ok {
		return
	}
	it, result, err := s.items.Submit(r.Context(), callerOf(r.Context()), body)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	status := http.StatusOK
	if result == wq.SubmitCreated {
		status = http.StatusCreated
	}
	writeJSON(w, status, api.Submitted{Result: result, Item: it})
}

func (s *Server) getItem(w http.ResponseWriter, r *http.Request) {
	id, err := s.items.ResolveID(r.Context(), callerOf(r.Context()), "id", r.PathValue("id")) // a full id or a unique prefix
	if err != nil {
		s.Error(w, r, err)
		return
	}
	it, err := s.items.Get(r.Context(), callerOf(r.Context()), id)
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
	items, next, err := s.items.List(r.Context(), callerOf(r.Context()), f)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ItemPage{Items: items, NextCursor: next})
}

func (s *Server) itemAction(act func(context.Context, *auth.Caller, wq.ItemID) (*api.Item, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := s.items.ResolveID(r.Context(), callerOf(r.Context()), "id", r.PathValue("id"))
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
