package httpapi

import (
	"net/http"

	"github.com/workqueue-dev/workqueue/auth"
)

// SetMetrics serves h, the Prometheus exposition (metrics.Handler), at
// GET /metrics behind the "metrics" permission. A deployment that would
// rather scrape without a token serves it on metrics.listen instead
// (cmd/workqueue), and leaves it off this listener.
func (s *Server) SetMetrics(h http.Handler) {
	s.metrics = h
	s.handle(s.metricsRoutes())
}

// metricsRoutes is GET /metrics when metrics are served here.
func (s *Server) metricsRoutes() []route {
	if s.metrics == nil {
		return nil
	}
	return []route{{"GET", "/metrics", s.authenticated(auth.ScrapeMetrics, s.metrics.ServeHTTP)}}
}
