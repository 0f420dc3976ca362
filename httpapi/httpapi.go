// Package httpapi is workqueue's HTTP interface. Today it serves the
// health and readiness probes; errors are RFC 9457 problem documents with
// the application error code as a stable "code" member.
package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Server holds the handlers' dependencies.
type Server struct {
	store wq.Store
	log   *slog.Logger
	mux   *http.ServeMux
}

// NewServer returns the HTTP interface over store.
func NewServer(store wq.Store, log *slog.Logger) *Server {
	s := &Server{store: store, log: log.With("component", "http"), mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.Error(w, r, wq.Errorf(wq.ENOTFOUND, "no route for %s %s", r.Method, r.URL.Path))
	})
	return s
}

// ServeHTTP serves the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// healthz answers while the process is up.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when the database answers and its schema is
// current.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.Error(w, r, wq.Errorf(wq.EUNAVAILABLE, "database unreachable"))
		return
	}
	applied, latest, err := s.store.SchemaVersion(ctx)
	if err != nil {
		s.Error(w, r, wq.Errorf(wq.EUNAVAILABLE, "cannot read schema version"))
		return
	}
	if applied != latest {
		s.Error(w, r, wq.Errorf(wq.EUNAVAILABLE, "schema at version %d, want %d: run workqueue migrate", applied, latest))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "schema_version": applied})
}

// statusByCode maps application error codes to HTTP statuses.
var statusByCode = map[string]int{
	wq.EINVALID:      http.StatusUnprocessableEntity,
	wq.ENOTFOUND:     http.StatusNotFound,
	wq.ECONFLICT:     http.StatusConflict,
	wq.EUNAUTHORIZED: http.StatusUnauthorized,
	wq.EFORBIDDEN:    http.StatusForbidden,
	wq.EUNAVAILABLE:  http.StatusServiceUnavailable,
	wq.EINTERNAL:     http.StatusInternalServerError,
}

// Problem is an RFC 9457 problem document.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

// Error writes err as a problem document. Internal errors are logged with
// their detail and shown to the caller only as "internal error".
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	code := wq.ErrorCode(err)
	if code == wq.EINTERNAL {
		s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	status := statusByCode[code]
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: wq.ErrorMessage(err), Code: code}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode response: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
