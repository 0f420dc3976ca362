// Package migration reads the embedded, numbered SQL migrations that both
// drivers ship. Files are named NNNN_description.sql; both dialects use the
// same numbers so that a version means the same schema everywhere.
package migration

import (
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
)

// VersionTable is the table that records applied migrations. It carries the
// service's name so that the database can be shared (DDR-19).
const VersionTable = "workqueue_schema_migrations"

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
