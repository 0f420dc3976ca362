// Package mrstore keeps the mr item type's detail table (DDR-7) beside the
// queue's tables, on either driver: the type's own migration chain, and
// the mr.Store methods, written in the same transactions as the item under
// the driver's per-item lock and lease fence. The drivers never name the
// type; this package builds on what they export for item types.
package mrstore

import (
	"embed"
	"fmt"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store/postgres"
	"github.com/workqueue-dev/workqueue/store/sqlite"
)

//go:embed migrations
var migrations embed.FS

// needsMR is what a resubmission asks for: push the new content.
var needsMR = []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: mr.DimMR}, Status: wq.StatusTrue}}

// New returns the mr store on db, an open driver, and registers the type's
// migrations with it: call it before db.Migrate.
func New(db wq.Store) (mr.Store, error) {
	switch db := db.(type) {
	case *sqlite.Store:
		if err := db.AddMigrations(mr.ItemType, migrations, "migrations/sqlite"); err != nil {
			return nil, err
		}
		return sqliteStore{db: db}, nil
	case *postgres.Store:
		if err := db.AddMigrations(mr.ItemType, migrations, "migrations/postgres"); err != nil {
			return nil, err
		}
		return postgresStore{db: db}, nil
	}
	return nil, fmt.Errorf("mr store: no support for the %T driver", db)
}
