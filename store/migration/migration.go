// Package migration reads the embedded, numbered SQL migrations of the
// store. The generic queue ships one chain in each driver; an item type
// that keeps tables of its own (DDR-7) ships its own chain, registered
// with the driver beside the queue's, so that no generic package names a
// type's tables. Files are named NNNN_description.sql; both dialects use
// the same numbers so that a version means the same schema everywhere.
package migration

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
)

// VersionTable is the table that records the queue's applied migrations.
// It carries the service's name so that the database can be shared
// (DDR-19).
const VersionTable = "workqueue_schema_migrations"

// Chain is one component's migrations: the queue's ("" component) or an
// item type's. Each chain records its versions in a table of its own
// (Table), so that chains are numbered independently.
type Chain struct {
	Component  string
	Migrations []Migration
}

// Table is the table that records the chain's applied versions.
func (c Chain) Table() string {
	if c.Component == "" {
		return VersionTable
	}
	return "workqueue_" + c.Component + "_schema_migrations"
}

var componentName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}$`)

// LoadChain loads component's migrations from dir of fsys (see Load).
func LoadChain(component string, fsys fs.FS, dir string) (Chain, error) {
	if component != "" && !componentName.MatchString(component) {
		return Chain{}, fmt.Errorf("migration component %q: want lowercase letters, digits and _", component)
	}
	ms, err := Load(fsys, dir)
	if err != nil {
		return Chain{}, fmt.Errorf("%s migrations: %w", component, err)
	}
	return Chain{Component: component, Migrations: ms}, nil
}

// Migration is one numbered SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

var fileName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// Load returns the migrations in dir of fsys, ordered by version. Versions
// must start at 1 and have no gaps.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q: name must be NNNN_description.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		ms = append(ms, Migration{Version: v, Name: m[2], SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: expected version %d", m.Version, m.Name, i+1)
		}
	}
	return ms, nil
}

// Target is a database the runner migrates: each driver implements it in
// its own dialect.
type Target interface {
	// CreateTable makes a chain's version table if it is missing.
	CreateTable(ctx context.Context, table string) error
	// Apply runs m and records it in table, in one transaction, unless
	// table already records it; ran says whether it did.
	Apply(ctx context.Context, table string, m Migration) (ran bool, err error)
	// Count returns how many versions table records; 0 when it does not
	// exist yet.
	Count(ctx context.Context, table string) (int, error)
}

// Registry holds the item types' chains a driver was given.
type Registry struct {
	chains []Chain
}

// Add loads and registers component's chain from dir of fsys.
func (r *Registry) Add(component string, fsys fs.FS, dir string) error {
	c, err := LoadChain(component, fsys, dir)
	if err != nil {
		return err
	}
	for _, have := range r.chains {
		if have.Component == component {
			return fmt.Errorf("migrations of %q registered twice", component)
		}
	}
	r.chains = append(r.chains, c)
	return nil
}

// All is the queue's chain, from dir of fsys, then the registered ones.
func (r *Registry) All(fsys fs.FS, dir string) ([]Chain, error) {
	queue, err := LoadChain("", fsys, dir)
	if err != nil {
		return nil, err
	}
	return append([]Chain{queue}, r.chains...), nil
}

// Run applies the pending migrations of every chain in order, each in its
// own transaction, and returns the versions applied (of any chain).
func Run(ctx context.Context, t Target, chains []Chain) ([]int, error) {
	var applied []int
	for _, c := range chains {
		if err := t.CreateTable(ctx, c.Table()); err != nil {
			return nil, fmt.Errorf("create version table %s: %w", c.Table(), err)
		}
		for _, m := range c.Migrations {
			ran, err := t.Apply(ctx, c.Table(), m)
			if err != nil {
				return applied, fmt.Errorf("migration %s %04d_%s: %w", c.Table(), m.Version, m.Name, err)
			}
			if ran {
				applied = append(applied, m.Version)
			}
		}
	}
	return applied, nil
}

// Status counts the applied and the embedded migrations of every chain;
// they are equal when the schema is current.
func Status(ctx context.Context, t Target, chains []Chain) (applied, latest int, err error) {
	for _, c := range chains {
		latest += len(c.Migrations)
		n, err := t.Count(ctx, c.Table())
		if err != nil {
			return 0, 0, err
		}
		applied += n
	}
	return applied, latest, nil
}
