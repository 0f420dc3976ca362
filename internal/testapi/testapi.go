// Package testapi wires the item service for tests as serve does: every
// registered item type (itemtype/types registers the shipped ones), its
// projects from a configuration, with its face to callers.
package testapi

import (
	"slices"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/itemtype"
	_ "github.com/workqueue-dev/workqueue/itemtype/types" // the item types shipped
	"github.com/workqueue-dev/workqueue/service"
)

// Items is the item service on st with every registered item type, built as serve builds them for cfg with every
// type handled, on no forge and no control plane.
func Items(st *testdb.Store, cfg config.Config) *service.Items {
	cfg.HandledTypes = slices.Clone(config.ItemTypes) // no item is flagged unhandled
	items := &service.Items{Store: st, HandledHere: cfg.HandledTypes}
	built, err := itemtype.BuildAll(itemtype.Env{Config: cfg, Queue: st, Forges: map[string]wq.Forge{}}, st.Types)
	if err != nil {
		panic(err) // a registered type that cannot be built from a configuration that config accepts
	}
	for _, b := range built {
		items.Register(b.Type, b.API)
	}
	return items
}

// Webhooks is the webhook receiver on st for the forges of cfg, each with
// the given secret, resolving events through items' types.
func Webhooks(st *testdb.Store, cfg config.Config, items *service.Items, secret string) *service.Webhooks {
	forges := map[string]service.WebhookForge{}
	for _, f := range cfg.Forges {
		forges[f.Name] = service.WebhookForge{Kind: f.Kind, Secret: secret}
	}
	return &service.Webhooks{Store: st, Forges: forges, Types: items.Types()}
}

// Incidents is the incident bridge on cps for one project: Sentry's
// shop/web, filed on the gitea forge's team/app. Every forge name is
// known and none has an issue forge, so nothing is filed.
func Incidents(t testing.TB, cps controlplane.Store) *incident.Bridge {
	t.Helper()
	links, err := cpstore.NewIncidents(cps)
	if err != nil {
		t.Fatal(err)
	}
	bridge, err := incident.New(links, func(string) (incident.IssueForge, bool) { return nil, true },
		[]incident.Project{{Provider: "sentry", Organization: "shop", Project: "web", Forge: "gitea", Repo: "team/app"}}, nil, testkit.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	return bridge
}
