package main

import (
	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/service"
)

// The dashboard's in-memory audit trail keeps this many entries of each
// of this many items (about 10 MB at worst); the archive is the record.
const (
	trailItems   = 5000
	trailPerItem = 100
)

// withDashboardTrail returns sink with the dashboard's trail beside it,
// so that an item's page shows what this instance audited for it.
func (m *Main) withDashboardTrail(sink wq.AuditSink) wq.AuditSink {
	m.dashboardTrail = audit.NewRecent(trailItems, trailPerItem)
	return audit.Multi{sink, m.dashboardTrail}
}

// serveDashboard mounts the web dashboard at /ui/ on api, with the API's
// authenticator and services.
func (m *Main) serveDashboard(api *httpapi.Server, items *service.Items, cps *controlplane.Service, authn auth.Authenticator, sink wq.AuditSink) error {
	opts := dashboard.Options{Items: items, ControlPlane: cps, Auth: authn, Audit: audit.Safe(sink, m.Log),
		PublicURL: m.Config.PublicURL, ProxyAccessTokenHeader: m.Config.Auth.ProxyAccessTokenHeader,
		Log: m.Log, Clock: m.Clock}
	if m.dashboardTrail != nil {
		opts.Trail = m.dashboardTrail
	}
	d, err := dashboard.New(opts)
	if err != nil {
		return err
	}
	api.SetDashboard(d)
	return nil
}
