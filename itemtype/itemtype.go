// Package itemtype is the registry of item types: one Plugin per type
// carries everything a process needs of it (its store and migrations, its
// engine type and face to callers, work it does beside the engine, and
// what its configuration section warns of), registered once
// (itemtype/types registers the types shipped). serve, the test helpers
// and config check loop over the registered types; no generic layer names
// one (DESIGN section 3: adding a type touches no generic code).
package itemtype

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/controlplane"
)

// Plugin is one item type.
type Plugin struct {
	// Name is the type's name: items' item_type, handled_types' entry.
	Name string

	// OpenStore returns the type's own store on db, an open driver, and
	// registers its migrations with it: it is called for every type
	// before db.Migrate. Nil for a type that keeps nothing beside the
	// queue's tables; Build then gets nil.
	OpenStore func(db wq.Store) (any, error)

	// Enabled says whether a process configured by c takes the type at
	// all (nil: always). A type not enabled is neither registered with
	// the engine nor offered to callers.
	Enabled func(c config.Config) bool

	// Build makes the type for a process, on the store OpenStore returned.
	Build func(env Env, store any) (Built, error)

	// Warnings says what the type's configuration section makes a trap on
	// an instance configured by c (config check and serve's start print
	// them): items taken that this instance will not process, say.
	Warnings func(c config.Config) []config.Warning
}

// Env is what a type is built from: the process's configuration, its
// queue store, forges and control plane.
type Env struct {
	Config config.Config
	Queue  wq.Store
	Forges map[string]wq.Forge // by configured forge name
	// ControlPlane is the control plane's service, whose gate checks
	// submissions made for an assignment.
	ControlPlane *controlplane.Service
	// Notify wakes the engine for an item (nil: no wake-up).
	Notify func(itemType string, id wq.ItemID)
	Clock  clockwork.Clock
	Log    *slog.Logger
}

// Built is a type made for a process.
type Built struct {
	Type wq.ItemType
	API  wq.ItemAPI
	// Run, when set, is work the type does beside the engine on an
	// instance that handles it, until ctx ends (a periodic
	// reconciliation, say). serve runs it in its own goroutine.
	Run func(ctx context.Context)
}

var registry struct {
	sync.RWMutex
	plugins []Plugin
}

// Register adds an item type, and tells config the type's name (its
// handled_types check) and warnings. It panics on a plugin without a name
// or Build, and on a name registered twice: registration happens once,
// at start.
func Register(p Plugin) {
	registry.Lock()
	defer registry.Unlock()
	if p.Name == "" || p.Build == nil {
		panic(fmt.Sprintf("itemtype: plugin %q lacks a name or Build", p.Name))
	}
	if slices.ContainsFunc(registry.plugins, func(q Plugin) bool { return q.Name == p.Name }) {
		panic(fmt.Sprintf("itemtype: %q registered twice", p.Name))
	}
	registry.plugins = append(registry.plugins, p)
	slices.SortFunc(registry.plugins, func(a, b Plugin) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	config.RegisterItemType(p.Name, p.Warnings)
}

// All returns the registered types, by name.
func All() []Plugin {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Clone(registry.plugins)
}

// Stores opens every registered type's store on db (see
// Plugin.OpenStore), by type name: call it before db.Migrate.
func Stores(db wq.Store) (map[string]any, error) {
	out := map[string]any{}
	for _, p := range All() {
		if p.OpenStore == nil {
			continue
		}
		s, err := p.OpenStore(db)
		if err != nil {
			return nil, fmt.Errorf("%s store: %w", p.Name, err)
		}
		out[p.Name] = s
	}
	return out, nil
}

// BuildAll builds every registered type that env's configuration enables,
// on its store of stores.
func BuildAll(env Env, stores map[string]any) ([]Built, error) {
	var out []Built
	for _, p := range All() {
		if p.Enabled != nil && !p.Enabled(env.Config) {
			continue
		}
		b, err := p.Build(env, stores[p.Name])
		if err != nil {
			return nil, fmt.Errorf("item type %s: %w", p.Name, err)
		}
		out = append(out, b)
	}
	return out, nil
}
