// Package testapi wires the item service for tests as serve does: the
// item types shipped (Types, as cmd/workqueue/world.go registers them),
// their projects from a configuration, with their faces to callers.
package testapi

import (
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/internal/compose"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/itemtype"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
	"github.com/workqueue-dev/workqueue/service"
)

// Types are the item types shipped, and Kinds the kinds of forge, as the
// program's composition root registers them (cmd/workqueue/world.go).
var (
	Types = itemtype.NewRegistry(mrtype.Plugin, example.Plugin)
	Kinds = forge.NewRegistry(gitea.Plugin, gitlab.Plugin)
)

// Known is what a configuration may name in the program the tests wire.
func Known() config.Known { return compose.Known(Kinds, Types) }

// Items is the item service on st with every shipped item type, built as serve builds them for cfg with every
// type handled, on no forge and no control plane.
func Items(st *testdb.Store, cfg config.Config) *service.Items {
	cfg.HandledTypes = nil // every type, so that no item is flagged unhandled
	for _, p := range Types.All() {
		cfg.HandledTypes = append(cfg.HandledTypes, p.Name)
	}
	items := &service.Items{Store: st, HandledHere: cfg.HandledTypes}
	built, err := Types.BuildAll(itemtype.Env{Queue: st, Forges: map[string]wq.Forge{}}, st.Types,
		func(p itemtype.Plugin) any { return compose.Section(cfg, p) }, cfg.HandledTypes)
	if err != nil {
		panic(err) // a registered type that cannot be built from a configuration that config accepts
	}
	for _, b := range built {
		items.Register(b.Type, b.API)
		if b.Face != nil {
			items.Describe(*b.Face)
		}
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
	return &service.Webhooks{Store: st, Forges: forges, Kinds: Kinds, Types: items.Types()}
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
