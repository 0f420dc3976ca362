package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/service"
)

// Without a history in the database (audit.history_retention: 0, or a
// store that keeps none), the dashboard's in-memory audit trail keeps
// this many entries of each of this many items (about 10 MB at worst).
const (
	trailItems   = 5000
	trailPerItem = 100
)

// withDashboardTrail returns sink with the dashboard's trail beside it,
// so that an item's page shows its history: kept in the database, for
// every instance and across restarts (issue 29), unless retention is 0.
func (m *Main) withDashboardTrail(sink wq.AuditSink) wq.AuditSink {
	hs, ok := m.Store.(wq.HistoryStore)
	if retention := time.Duration(m.Config.Audit.HistoryRetention); ok && retention > 0 {
		h := &audit.History{Store: hs, Retention: retention, Clock: m.Clock, Log: m.Log.With("component", "history")}
		var ctx context.Context
		ctx, m.stopHistory = context.WithCancel(context.Background())
		m.historyDone = make(chan struct{})
		go func() { defer close(m.historyDone); h.Run(ctx) }()
		m.dashboardTrail = h
		return audit.Multi{sink, h}
	}
	recent := audit.NewRecent(trailItems, trailPerItem)
	m.dashboardTrail = recent
	return audit.Multi{sink, recent}
}

// serveDashboard makes the web dashboard the API's options mount at
// /ui/, with the API's authenticator, failure limiter and services.
func (m *Main) serveDashboard(ctx context.Context, api *httpapi.Options, items *service.Items, cps *controlplane.Service,
	authn auth.Authenticator, limiter *auth.FailureLimiter, sink wq.AuditSink) error {
	key, err := m.cookieKey(ctx)
	if err != nil {
		return err
	}
	opts := dashboard.Options{Items: items, ControlPlane: cps, Auth: authn, Audit: audit.Safe(sink, m.Log),
		PublicURL: m.Config.PublicURL, ProxyAccessTokenHeader: m.Config.Auth.ProxyAccessTokenHeader,
		CookieKey: key, Limiter: limiter, Identities: api.Identities, Log: m.Log, Clock: m.Clock,
		WorkURL: m.workURL, Forges: m.checks}
	if m.dashboardTrail != nil {
		opts.Trail = m.dashboardTrail
	}
	// Logouts are kept in the database every instance shares, so that a
	// logged-out cookie opens nothing anywhere (both drivers keep them).
	if sessions, ok := m.Store.(wq.SessionRevocations); ok {
		opts.Sessions = sessions
	}
	d, err := dashboard.New(opts)
	if err != nil {
		return err
	}
	api.Dashboard = d
	return nil
}

// workURL is the web page of a work item on its configured forge, as the
// forge's kind lays its pages out; "" for a forge not configured or a
// kind that does not say.
func (m *Main) workURL(forgeName, repo, kind string, number int64) string {
	for _, f := range m.Config.Forges {
		if f.Name != forgeName {
			continue
		}
		if p, ok := m.world.kinds.Lookup(f.Kind); ok && p.WorkPage != nil {
			return strings.TrimRight(f.URL, "/") + p.WorkPage(repo, kind, number)
		}
	}
	return ""
}

// cookieKey is the secret the dashboard seals its session cookies under:
// the configured one (dashboard.cookie_key_env or _file), else the one
// kept in the database, made by the first instance that starts, so that
// every instance on the database accepts the others' cookies.
func (m *Main) cookieKey(ctx context.Context) ([]byte, error) {
	key, err := m.Config.Dashboard.CookieKey()
	if err != nil || key != nil {
		if err != nil {
			err = fmt.Errorf("config: %w", err)
		}
		return key, err
	}
	secrets, ok := m.Store.(wq.SecretStore)
	if !ok {
		return nil, fmt.Errorf("dashboard: the %T store keeps no secrets: configure dashboard.cookie_key_env or cookie_key_file", m.Store)
	}
	return dashboard.StoredCookieKey(ctx, secrets, m.Clock.Now())
}
