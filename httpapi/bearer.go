package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
)

// bearerToken reads the caller's token from the Authorization header:
// "Bearer" in any case (RFC 9110 makes auth schemes case-insensitive),
// one or more spaces, and one token without whitespace. ok is false when
// there is no such header or it holds anything else. duplicate reports two
// or more Authorization headers, which are refused outright rather than
// picking one: a proxy and the service could each read a different one.
func bearerToken(h http.Header) (token string, ok, duplicate bool) {
	values := h.Values("Authorization")
	if len(values) > 1 {
		return "", false, true
	}
	if len(values) == 0 {
		return "", false, false
	}
	scheme, rest, found := strings.Cut(values[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false, false
	}
	token = strings.TrimLeft(rest, " ")
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false, false
	}
	return token, true, false
}

// authenticate validates the token r presents, through the failure
// limiter when there is one. The client address is r.RemoteAddr's host:
// no configuration names a proxy whose X-Forwarded-For could be
// trusted, and any caller could write one.
func (s *Server) authenticate(r *http.Request, token string) (*auth.Caller, error) {
	if s.limiter == nil {
		return s.auth.Authenticate(r.Context(), token)
	}
	return s.limiter.Authenticate(r.Context(), s.auth, r.RemoteAddr, token)
}

// refuseToken answers a token that did not authenticate, and audits the
// refusal: 429 with Retry-After when the limiter refused to look at it,
// else the error's status (401 with WWW-Authenticate for a token not
// accepted).
func (s *Server) refuseToken(w http.ResponseWriter, r *http.Request, perm auth.Permission, err error) {
	var throttled *auth.ThrottledError
	if errors.As(err, &throttled) {
		s.auditThrottled(r, perm, throttled)
		w.Header().Set("Retry-After", strconv.Itoa(throttled.RetryAfterSeconds()))
		s.writeProblem(w, api.Problem{Status: http.StatusTooManyRequests, Code: wq.EUNAVAILABLE,
			Reason: auth.ReasonThrottled, Detail: wq.ErrorMessage(err)})
		return
	}
	if wq.ErrorCode(err) == wq.EUNAUTHORIZED {
		w.Header().Set("WWW-Authenticate", s.bearerChallenge(r, "invalid_token"))
	}
	s.decision(r, nil, perm, false, wq.ErrorMessage(err))
	s.Error(w, r, err)
}

// auditThrottled records an attempt refused by the failure limiter, with
// the client address it counted (never the token).
func (s *Server) auditThrottled(r *http.Request, perm auth.Permission, th *auth.ThrottledError) {
	if s.audit == nil {
		return
	}
	s.audit.WriteAudit(r.Context(), wq.AuditEntry{Time: s.clock.Now(), EventType: wq.AuditAuthRefused, Actor: "anonymous",
		Trigger: map[string]any{"source": "api", "method": r.Method, "path": r.URL.Path},
		Metadata: map[string]any{"permission": string(perm), "reason": auth.ReasonThrottled + ": too many failed authentications from this address",
			"client": th.Client, "retry_after_seconds": th.RetryAfterSeconds()}})
}
