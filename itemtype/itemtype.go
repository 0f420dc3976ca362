// Package itemtype is the registry of item types: one Plugin per type
// carries everything a process needs of it (its store and migrations, its
// engine type and face to callers, work it does beside the engine, and
// what its configuration section warns of). A Registry is a value, built
// by the program's composition root (cmd/workqueue/registry.go registers
// the types shipped, one line each). serve, the test helpers
// and config check loop over the registered types; no generic layer names
// one (DESIGN section 3: adding a type touches no generic code).
package itemtype

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
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
// queue store, forges, the control plane's gate and audit sink.
type Env struct {
	Config config.Config
	Queue  wq.Store
	Forges map[string]wq.Forge // by configured forge name
	// Assignments is the control plane's gate, which checks submissions
	// made for an assignment; nil where no control plane runs.
	Assignments wq.AssignmentGate
	// Audit is the process's audit sink (nil: the type writes none of
	// its own).
	Audit wq.AuditSink
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

// Registry is the item types a program links: built once by the
// program's composition root (cmd/workqueue/registry.go), one Register
// line per type, and passed to serve, config check and the test helpers.
// No package registers a type by being imported.
type Registry struct {
	plugins []Plugin
}

// NewRegistry returns a registry of the given types (Register each).
func NewRegistry(types ...Plugin) *Registry {
	r := &Registry{}
	for _, p := range types {
		r.Register(p)
	}
	return r
}

// Register adds an item type. It panics on a plugin without a name or
// Build, and on a name registered twice: registration happens once, at
// start. It is not safe to call while the registry is in use.
func (r *Registry) Register(p Plugin) {
	if p.Name == "" || p.Build == nil {
		panic(fmt.Sprintf("itemtype: plugin %q lacks a name or Build", p.Name))
	}
	if slices.ContainsFunc(r.plugins, func(q Plugin) bool { return q.Name == p.Name }) {
		panic(fmt.Sprintf("itemtype: %q registered twice", p.Name))
	}
	r.plugins = append(r.plugins, p)
	slices.SortFunc(r.plugins, func(a, b Plugin) int { return strings.Compare(a.Name, b.Name) })
}

// All returns the registered types, by name.
func (r *Registry) All() []Plugin { return slices.Clone(r.plugins) }

// Known returns what the configuration needs to know of the registered
// types (their names, and the warnings their sections give).
func (r *Registry) Known() []config.KnownType {
	out := make([]config.KnownType, 0, len(r.plugins))
	for _, p := range r.plugins {
		out = append(out, config.KnownType{Name: p.Name, Warnings: p.Warnings})
	}
	return out
}

// Stores opens every registered type's store on db (see
// Plugin.OpenStore), by type name: call it before db.Migrate.
func (r *Registry) Stores(db wq.Store) (map[string]any, error) {
	out := map[string]any{}
	for _, p := range r.plugins {
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
func (r *Registry) BuildAll(env Env, stores map[string]any) ([]Built, error) {
	var out []Built
	for _, p := range r.plugins {
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
