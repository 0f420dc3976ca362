package httpapi

import (
	"github.com/workqueue-dev/workqueue/auth"
)

// metricsRoutes is GET /metrics when metrics are served here
// (Options.Metrics), behind the "metrics" permission.
func (s *Server) metricsRoutes() []route {
	if s.metrics == nil {
		return nil
	}
	return []route{{"GET", "/metrics", s.authenticated(auth.ScrapeMetrics, s.metrics.ServeHTTP)}}
}
