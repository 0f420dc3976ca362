package httpapi

import (
	"net/http"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
)

// metricsRoutes is GET /metrics when metrics are served here
// (Options.Metrics), behind the "metrics" permission.
func (s *Server) metricsRoutes() []route {
	if s.metrics == nil {
		return nil
	}
	return []route{{"GET", "/metrics", s.authenticated(auth.ScrapeMetrics, s.scrape)}}
}

// scrape serves the exposition to a caller holding metrics on every
// project: its counts (items by type and phase, leases, allocations) are
// over every project, so a scraper narrowed to some would count others'
// (issue 48).
func (s *Server) scrape(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r.Context())
	if !c.CanEverywhere(auth.ScrapeMetrics) {
		s.decision(r, c, auth.ScrapeMetrics, false, "metrics count every project; the grant is narrowed to some")
		s.Error(w, r, wq.Errorf(wq.EFORBIDDEN, "%s may not read /metrics: its counts cover every project, and the %q permission is granted on some only",
			c.Identity, auth.ScrapeMetrics))
		return
	}
	s.metrics.ServeHTTP(w, r)
}
