// Package testapi wires the item service for tests as serve does: the mr
// type (its projects from a configuration) and the example type
// registered with their faces to callers.
package testapi

import (
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/service"
)

// Items is the item service on st with the mr and example types.
func Items(st *testdb.Store, cfg config.Config) *service.Items {
	// As serve with both types in handled_types: no item is flagged unhandled.
	items := &service.Items{Store: st, HandledHere: []string{mr.ItemType, example.Name}}
	items.Register(mr.Type(mr.Options{Store: st, Forges: map[string]wq.Forge{}}), mr.API(mr.APIOptions{Store: st, Project: cfg.MRProject}))
	items.Register(example.Type(example.Options{}), example.API(st))
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
