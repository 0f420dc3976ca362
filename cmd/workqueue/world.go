package main

import (
	"slices"
	"time"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/internal/compose"
	"github.com/workqueue-dev/workqueue/itemtype"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/postgres"
	"github.com/workqueue-dev/workqueue/store/sqlite"
)

// world is what this program links: the kinds of forge, the item types
// and the store drivers, each a registry value that serve, config check,
// migrate, hooks, the herder and bench receive. This file is the one
// place that names them: a new kind, type or driver is its package and
// one line below (docs/layout.md). No library package registers anything
// by being imported.
type world struct {
	kinds   *forge.Registry
	types   *itemtype.Registry
	drivers *store.Registry
}

// assemble builds the world this program ships.
func assemble() *world {
	return &world{
		kinds: forge.NewRegistry(
			gitea.Plugin,
			gitlab.Plugin,
		),
		types: itemtype.NewRegistry(
			mrtype.Plugin,
			example.Plugin,
		),
		drivers: store.NewRegistry(
			sqlite.Driver,
			postgres.Driver,
		),
	}
}

// known is what a configuration may name of w: its kinds of forge and its
// item types, with their sections and the warnings they give.
func (w *world) known() config.Known { return compose.Known(w.kinds, w.types) }

// sectionOf is p's section in c, resolved; nil for a type without one.
func sectionOf(c config.Config, p itemtype.Plugin) any { return compose.Section(c, p) }

// serviceLabels are the labels w's item types put on merge requests
// themselves, by c: the outbound policy's own labels.
func (w *world) serviceLabels(c config.Config) []string { return compose.ServiceLabels(c, w.types) }

// reviewLabel is the label that marks a merge request only a person may
// approve, by c ("" if no type has one).
func (w *world) reviewLabel(c config.Config) string { return compose.ReviewLabel(c, w.types) }

// engineConfig is the engine's configuration from c's processing section
// and handled_types (the engine owns its type; config links no engine).
func engineConfig(c config.Config) engine.Config {
	e := engine.DefaultConfig()
	p := c.Processing
	e.Workers = p.Workers
	e.Lease = time.Duration(p.Lease)
	e.Heartbeat = time.Duration(p.Heartbeat)
	if e.Heartbeat == 0 {
		e.Heartbeat = e.Lease / 3
	}
	e.SweepInterval = time.Duration(p.SweepInterval)
	e.SweepBatch = p.SweepBatch
	e.ClaimBatch = p.ClaimBatch
	e.ItemDeadline = time.Duration(p.ItemDeadline)
	e.MaxAttempts = p.MaxAttempts
	e.GiveUpAfter = time.Duration(p.GiveUpAfter)
	e.BackoffBase = time.Duration(p.BackoffBase)
	e.BackoffMax = time.Duration(p.BackoffMax)
	e.ShutdownGrace = time.Duration(p.ShutdownGrace)
	e.DeliveryRetention = time.Duration(p.DeliveryRetention)
	e.HandledTypes = slices.Clone(c.HandledTypes)
	return e
}
