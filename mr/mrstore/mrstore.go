// Package mrstore keeps the mr item type's detail table (DDR-7) beside the
// queue's tables, on any driver: the type's own migration chain, and the
// mr.Store methods, written in the same transactions as the item under
// the driver's per-item lock and lease fence. The drivers never name the
// type, and this package names no driver: it builds on the extension seam
// (store/seam.Driver) and writes its SQL once, with ? placeholders, bound
// for the driver's dialect (conn in sql.go); the few places where the
// dialects differ are written in SQL both read alike (CAST(labels AS
// TEXT) for PostgreSQL's jsonb, CASE for a boolean ordering). Its
// migrations are one folder per dialect under migrations/.
package mrstore

import (
	"embed"
	"fmt"
	"path"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// migrations holds one folder per dialect (seam.Dialect.Name).
//
//go:embed migrations
var migrations embed.FS

// needsMR is what a resubmission asks for: push the new content.
var needsMR = []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: mr.DimMR}, Status: wq.StatusTrue}}

// New returns the mr store on db, an open driver, and registers the type's
// migrations with it: call it before db.Migrate.
func New(db wq.Store) (mr.Store, error) {
	d, ok := db.(seam.Driver)
	if !ok {
		return nil, fmt.Errorf("mr store: the %T driver does not implement the store seam", db)
	}
	if err := d.AddMigrations(mr.ItemType, migrations, path.Join("migrations", d.Dialect().Name)); err != nil {
		return nil, err
	}
	return store{db: d, dialect: d.Dialect()}, nil
}
