// Package itemtype is the registry of item types: one Plugin per type
// carries everything a process needs of it (its store and migrations, its
// own configuration section, its engine type and face to callers, work it
// does beside the engine, and what its section warns of). A Registry is a
// value, built by the program's composition root (cmd/workqueue/world.go
// registers the types shipped, one line each). serve, the test helpers
// and config check loop over the registered types; no generic layer names
// one (DESIGN section 3: adding a type touches no generic code).
//
// A type sees the domain only: what it is built from (Env) is root-level
// interfaces and its own decoded section, never the configuration or the
// control plane.
package itemtype

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
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

	// Section is the type's own section of the configuration file (nil:
	// none). The configuration decodes it strictly and checks it; Build,
	// Enabled and Warnings get the decoded value.
	Section *Section

	// Enabled says whether a process takes the type at all, given its
	// decoded section and whether handled_types names it (nil: always).
	// A type not enabled is neither registered with the engine nor
	// offered to callers.
	Enabled func(section any, handled bool) bool

	// Build makes the type for a process, on the store OpenStore returned.
	Build func(env Env, store any) (Built, error)

	// Warnings says what the type's section makes a trap on an instance
	// (config check and serve's start print them): items taken that this
	// instance will not process, say. handled says whether handled_types
	// names the type.
	Warnings func(section any, handled bool) []Warning

	// Labels are the labels the type puts on merge requests itself, by
	// its section: the outbound policy lets the service put them and
	// refuses them to callers (nil: none).
	Labels func(section any) []string
	// ReviewLabel is the label that marks a merge request only a person
	// may approve ("" or nil: none): the control plane leaves such a
	// merge request to people.
	ReviewLabel func(section any) string

	// Face is what the API's document, the MCP server and the CLI show of
	// the type (nil: nothing beyond the generic item).
	Face *wq.ItemFace
}

// Section is an item type's own section of the configuration file.
type Section struct {
	// Key is its top-level key (the type's name, say).
	Key string
	// Default returns a new value of the section with every default set:
	// a pointer to a struct whose yaml tags name the keys. The
	// configuration decodes the file's section over it, unknown keys
	// being errors, and documents it in the schema.
	Default func() any
	// Validate returns the decoded section's problems, each an error
	// "key.field: what is wrong" (nil: nothing to check).
	Validate func(v any) []error
}

// Warning is what a type's section makes a trap: Field names the key
// (its key and a field of it), Message says why.
type Warning struct {
	Field, Message string
}

// Env is what a type is built from: its own section and the process's
// queue store, forges, the control plane's gate, audit sink, clock and
// logger.
type Env struct {
	// Section is the type's decoded section (Section.Default's type,
	// with what the configuration sets); nil for a type without one.
	Section any
	// Handled says whether this instance processes the type
	// (handled_types names it).
	Handled bool
	Queue   wq.Store
	Forges  map[string]wq.Forge // by configured forge name
	// Assignments is the control plane's gate, which checks submissions
	// made for an assignment; nil where no control plane runs.
	Assignments wq.AssignmentGate
	// Audit is the process's audit sink (nil: the type writes none of
	// its own).
	Audit wq.AuditSink
	// Notify wakes the engine for an item (nil: no wake-up).
	Notify func(itemType string, id wq.ItemID)
	// Metrics is where the type registers metrics of its own (nil:
	// none): the process's registry, served at /metrics.
	Metrics prometheus.Registerer
	Clock   clockwork.Clock
	Log     *slog.Logger
}

// Built is a type made for a process.
type Built struct {
	Type wq.ItemType
	API  wq.ItemAPI
	// Face is the plugin's (nil: none), for the API's document.
	Face *wq.ItemFace
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

// Faces are the registered types' faces, by type name, for a client of
// the API (the MCP server, the CLI).
func (r *Registry) Faces() []wq.ItemFace {
	var out []wq.ItemFace
	for _, p := range r.plugins {
		if p.Face != nil {
			out = append(out, *p.Face)
		}
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

// BuildAll builds every registered type that its section and
// handled_types enable, on its store of stores: env is each type's, with
// its section (section(p), nil for a type without one) and whether
// handled names it.
func (r *Registry) BuildAll(env Env, stores map[string]any, section func(Plugin) any, handled []string) ([]Built, error) {
	var out []Built
	for _, p := range r.plugins {
		e := env
		e.Section, e.Handled = section(p), slices.Contains(handled, p.Name)
		if p.Enabled != nil && !p.Enabled(e.Section, e.Handled) {
			continue
		}
		b, err := p.Build(e, stores[p.Name])
		if err != nil {
			return nil, fmt.Errorf("item type %s: %w", p.Name, err)
		}
		b.Face = p.Face
		out = append(out, b)
	}
	return out, nil
}

// ToolInput returns T's JSON Schema, for an ItemTool's Input: inferred
// once, when first asked (a CLI call that serves no MCP infers nothing).
// T's jsonschema tags describe each member for a model. It panics on a
// type the inference refuses: a declaration error, found by any test.
func ToolInput[T any]() func() json.RawMessage {
	return sync.OnceValue(func() json.RawMessage {
		s, err := jsonschema.For[T](nil)
		if err != nil {
			panic(fmt.Sprintf("itemtype: the tool input schema of %T: %v", *new(T), err))
		}
		out, err := json.Marshal(s)
		if err != nil {
			panic(fmt.Sprintf("itemtype: the tool input schema of %T: %v", *new(T), err))
		}
		return out
	})
}

// Schemas reads a type's OpenAPI schemas by component name from a JSON
// object (its embedded openapi.json). It panics on one that is not such
// an object: a declaration error, found by any test.
func Schemas(doc []byte) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	if err := json.Unmarshal(doc, &out); err != nil || len(out) == 0 {
		panic(fmt.Sprintf("itemtype: OpenAPI schemas: %v", err))
	}
	return out
}
