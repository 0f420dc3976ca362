// Package store opens the store driver a database URL names, from the
// drivers a program links: a Registry is a value, built by the program's
// composition root (cmd/workqueue/registry.go registers store/sqlite and
// store/postgres, one line each). Item types and the control plane keep
// stores of their own, built on the driver it returns through the
// extension seam every driver implements (store/seam.Driver), so that
// they never name a driver.
package store

import (
	"context"
	"fmt"
	"slices"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/dburl"
)

// Kinds of database (dburl's, named here too for the callers that open
// what they name).
const (
	KindSQLite   = dburl.KindSQLite
	KindPostgres = dburl.KindPostgres
)

// ParseURL checks a database URL and returns its kind and, for SQLite, the
// file path (dburl.Parse, which the configuration checks URLs with
// without linking the drivers).
func ParseURL(url string) (kind, path string, err error) { return dburl.Parse(url) }

// Driver is one kind of database a store runs on.
type Driver struct {
	// Kind is the database URL's kind it opens (dburl.KindSQLite,
	// dburl.KindPostgres).
	Kind string
	// Open opens the store on the database url names; path is the file
	// dburl read from a SQLite URL ("" for others). The store is a
	// seam.Driver, not migrated.
	Open func(ctx context.Context, url, path string) (wq.Store, error)
}

// Registry is the drivers a program links.
type Registry struct {
	drivers map[string]Driver
}

// NewRegistry returns a registry of the given drivers (Register each).
func NewRegistry(drivers ...Driver) *Registry {
	r := &Registry{drivers: map[string]Driver{}}
	for _, d := range drivers {
		r.Register(d)
	}
	return r
}

// Register adds a driver. It panics on a driver without a kind or Open,
// and on a kind registered twice: registration happens once, at start.
func (r *Registry) Register(d Driver) {
	if d.Kind == "" || d.Open == nil {
		panic(fmt.Sprintf("store: driver %q lacks a kind or Open", d.Kind))
	}
	if _, dup := r.drivers[d.Kind]; dup {
		panic(fmt.Sprintf("store: driver %q registered twice", d.Kind))
	}
	r.drivers[d.Kind] = d
}

// Kinds returns the kinds of database the registered drivers open, sorted.
func (r *Registry) Kinds() []string {
	kinds := make([]string, 0, len(r.drivers))
	for k := range r.drivers {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// Open opens the store the URL names, by the driver of its kind. It does
// not migrate; item types register their migrations with it first.
func (r *Registry) Open(ctx context.Context, url string) (wq.Store, error) {
	kind, path, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	d, ok := r.drivers[kind]
	if !ok {
		return nil, fmt.Errorf("no driver for %s databases in this program (it has %v)", kind, r.Kinds())
	}
	return d.Open(ctx, url, path)
}
