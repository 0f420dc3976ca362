package httpapi

import (
	"net/http"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/cptype/incidenttype"
)

// IncidentSecrets are the webhook secrets of the incident providers; an
// empty one leaves that provider's receiver off.
type IncidentSecrets struct {
	Sentry    string // the Sentry integration's client secret
	GlitchTip string // the shared secret GlitchTip's webhook URL or header carries
}

// incidentRoutes are the incident bridge's routes. POST
// /api/v1/incidents/reconcile is served whether or not the bridge is on,
// answering 503 (code unavailable) while it is off, a status its
// description declares, rather than the catch-all's undeclared 404.
func (s *Server) incidentRoutes() []route {
	return append([]route{{"POST", "/api/v1/incidents/reconcile", s.authenticated(auth.Incidents, jsonAction(s, http.StatusOK,
		func(r *http.Request, _ cp.Caller, body *api.IncidentReconcileRequest) (any, error) {
			if s.incidents == nil {
				return nil, wq.Errorf(wq.EUNAVAILABLE, "the incident bridge is off: configure incidents to reconcile observations")
			}
			// Only into the repositories where the caller holds
			// incidents: another project's mapping is, to it, none.
			res, err := s.incidents.ReconcileWithin(r.Context(), observation(&body.Observation), body.Apply,
				callerOf(r.Context()).Scope(auth.Incidents))
			return res, err
		}))}}, s.incidentWebhookRoutes()...)
}

// incidentWebhookRoutes are the providers' webhook receivers: with the
// bridge, for each provider with a secret.
func (s *Server) incidentWebhookRoutes() []route {
	if s.incidents == nil {
		return nil
	}
	var rs []route
	if secret := s.incidentSecrets.Sentry; secret != "" {
		rs = append(rs, route{"POST", "/webhooks/incidents/sentry", s.incidentWebhook(nil, func(r *http.Request, body []byte) (incident.Delivery, error) {
			return incident.ParseSentry(body, r.Header.Get("Sentry-Hook-Resource"), r.Header.Get("Sentry-Hook-Signature"), secret)
		})})
	}
	if secret := s.incidentSecrets.GlitchTip; secret != "" {
		presented := func(r *http.Request) string {
			if p := r.Header.Get("X-Workqueue-Secret"); p != "" {
				return p
			}
			return r.URL.Query().Get("secret")
		}
		// GlitchTip's secret is in the request's header or address, so a
		// wrong one is refused before the body is read.
		early := func(r *http.Request) error {
			if !incident.VerifySecret(presented(r), secret) {
				return wq.Errorf(wq.EUNAUTHORIZED, "glitchtip delivery: the secret does not match")
			}
			return nil
		}
		rs = append(rs, route{"POST", "/webhooks/incidents/glitchtip", s.incidentWebhook(early, func(r *http.Request, body []byte) (incident.Delivery, error) {
			return incident.ParseGlitchTip(body, presented(r), secret)
		})})
	}
	return rs
}

// MaxObservationsPerDelivery bounds the observations one provider
// delivery may carry: each may file a forge issue, so a delivery of more
// is refused whole (422, naming the bound) before any is reconciled,
// rather than fanning out into any number of forge writes (issue 49). A
// provider's alert names one issue, or a few.
const MaxObservationsPerDelivery = 20

// incidentWebhook reads a provider's delivery, authenticates and parses
// it with parse, and reconciles every observation it carries, applied.
// The answer lists each result, so that a provider's delivery log shows
// what became of it. early, when set, refuses what the request's headers
// or address already show is not the provider's, before the body is
// read under the provider's own budget.
func (s *Server) incidentWebhook(early func(r *http.Request) error, parse func(r *http.Request, body []byte) (incident.Delivery, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if early != nil {
			if err := early(r); err != nil {
				s.log.Warn("incident webhook refused", "path", r.URL.Path, "remote", r.RemoteAddr, "reason", wq.ErrorMessage(err))
				s.Error(w, r, err)
				return
			}
		}
		body, release, ok := s.readPublicBody(w, r, "webhooks "+r.URL.Path, IncidentBytesInFlight, incident.MaxDeliveryBytes, http.StatusBadRequest)
		if !ok {
			return
		}
		defer release()
		d, err := parse(r, body)
		if err != nil {
			if wq.ErrorCode(err) == wq.EUNAUTHORIZED {
				s.log.Warn("incident webhook refused", "path", r.URL.Path, "remote", r.RemoteAddr, "reason", wq.ErrorMessage(err))
			}
			s.Error(w, r, err)
			return
		}
		if n := len(d.Observations); n > MaxObservationsPerDelivery {
			s.Error(w, r, wq.Errorf(wq.EINVALID, "a delivery carries at most %d observations, got %d", MaxObservationsPerDelivery, n))
			return
		}
		answer := api.IncidentDelivery{Ignored: d.Ignored, Results: []*incidenttype.Result{}}
		for _, obs := range d.Observations {
			res, err := s.incidents.Reconcile(r.Context(), obs, true)
			if err != nil {
				s.Error(w, r, err)
				return
			}
			answer.Results = append(answer.Results, res)
		}
		writeJSON(w, http.StatusOK, answer)
	}
}
