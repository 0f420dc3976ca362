package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/forge/budget"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/metrics"
)

// newMetrics returns the process's metrics reading the queue's and the
// control plane's sizes at scrape time, or nil when metrics are off.
func (m *Main) newMetrics(queue wq.Store, cp controlplane.Store) *metrics.Metrics {
	if !m.Config.Metrics.Enabled {
		return nil
	}
	mx := metrics.New()
	// What the process knows at start is on the first scrape: its
	// forges' webhook deliveries and the control plane's closed sets (the
	// item types follow as they are built, the budgets as the forges are
	// opened, the hook checks as they start).
	names := make([]string, len(m.Config.Forges))
	for i, f := range m.Config.Forges {
		names[i] = f.Name
	}
	mx.Forges(names...)
	mx.ControlPlane(words(cptype.Outcomes), controlplane.GateReasons, words(cptype.LeaseStates))
	log := m.Log.With("component", "metrics")
	if counter, ok := queue.(wq.ItemCounter); ok {
		mx.WatchItems(counter, m.Clock.Now, log)
	}
	if counter, ok := cp.(controlplane.Counter); ok {
		mx.WatchControlPlane(func(ctx context.Context) (metrics.ControlPlaneCounts, error) {
			c, err := counter.Count(ctx, m.Clock.Now())
			return metrics.ControlPlaneCounts{ActiveSessions: c.ActiveSessions, LeasesByState: c.LeasesByState}, err
		}, log)
	}
	return mx
}

// words are the string values of a closed set's typed constants.
func words[S ~string](values []S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// forgeHTTPClient is the one HTTP client of a configured forge's adapter,
// which every caller of the forge shares: each request passes the forge's
// budget (forge/budget: the forge's rate limit pauses every caller, and
// requests_per_minute is a ceiling over all of them) on clock, and then,
// with mx, is counted and timed. The budget's state and waits are in mx.
func forgeHTTPClient(mx *metrics.Metrics, f config.Forge, clock clockwork.Clock, log *slog.Logger) *http.Client {
	b := budget.New(budget.Options{Forge: f.Name, PerMinute: f.RequestsPerMinute, Clock: clock, Metrics: mx, Log: log})
	mx.WatchForgeBudget(f.Name, b)
	return &http.Client{Transport: b.Transport(mx.ForgeTransport(f.Name, f.Kind, http.DefaultTransport.(*http.Transport).Clone()))}
}

// serveMetrics serves /metrics on the main listener (the "metrics"
// permission, through the API's options) and, with metrics.listen, on a
// listener of its own without authentication.
func (m *Main) serveMetrics(api *httpapi.Options) error {
	if m.Metrics == nil {
		return nil
	}
	api.Metrics = m.Metrics.Handler()
	if m.Config.Metrics.Listen == "" {
		return nil
	}
	l, err := net.Listen("tcp", m.Config.Metrics.Listen)
	if err != nil {
		return fmt.Errorf("metrics listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Metrics.Handler())
	srv := &metricsServer{listener: l, served: make(chan error, 1), http: &http.Server{Handler: mux,
		ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(m.Log.Handler(), slog.LevelWarn)}}
	go func() { srv.served <- srv.http.Serve(l) }()
	m.metricsServer = srv
	m.Log.Info("serving metrics without authentication", "addr", l.Addr().String())
	return nil
}

// MetricsAddr is the address of the metrics.listen listener ("" without
// one; useful with port 0).
func (m *Main) MetricsAddr() string {
	if m.metricsServer == nil {
		return ""
	}
	return m.metricsServer.listener.Addr().String()
}

// metricsServer is the metrics.listen listener.
type metricsServer struct {
	listener net.Listener
	http     *http.Server
	served   chan error
}

// close stops the listener; a nil server is nothing to stop.
func (s *metricsServer) close() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if served := <-s.served; served != nil && !errors.Is(served, http.ErrServerClosed) {
		err = errors.Join(err, served)
	}
	if err != nil {
		return fmt.Errorf("metrics shutdown: %w", err)
	}
	return nil
}
