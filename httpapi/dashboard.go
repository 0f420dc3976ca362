package httpapi

import (
	"net/http"
	"strings"
)

// mountDashboard serves the web dashboard h under /ui/ (Options.Dashboard).
func (s *Server) mountDashboard(h http.Handler) {
	s.mux.Handle("/ui/", s.formBodies(h)) // a form's body is unauthenticated until the dashboard reads it
	s.mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	// A person who opens the service's address gets the dashboard, not
	// a JSON 404 (issue 29); a client asking for JSON still gets that.
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, "/ui/", http.StatusFound)
			return
		}
		s.noRoute(w, r)
	})
}
