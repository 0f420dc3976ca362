// Package migration reads the embedded, numbered SQL migrations of the
// store. The generic queue ships one chain in each driver; an item type
// that keeps tables of its own (DDR-7) ships its own chain, registered
// with the driver beside the queue's, so that no generic package names a
// type's tables. Files are named NNNN_description.sql; both dialects use
// the same numbers so that a version means the same schema everywhere.
package migration

import (
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
