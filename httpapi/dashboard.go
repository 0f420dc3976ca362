package httpapi

import (
	"net/http"
	"strings"
)

// SetDashboard serves the web dashboard (package dashboard) under /ui/.
// It authenticates people itself, with the same tokens and authorizer as
// the API, carried by a cookie instead of a header.
func (s *Server) SetDashboard(h http.Handler) {
	s.mux.Handle("/ui/", h)
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

// StatusOf is the HTTP status of an application error code, from the
// one table the API answers with (500 for a code it does not know), so
// that the dashboard's pages answer as the API would.
func StatusOf(code string) int { return statusOf(code) }
