// Package store opens the store driver a database URL names. It is the one
// place above the drivers that knows them. Item types and the control
// plane keep stores of their own, built on the driver it returns through
// the extension seam every driver implements (store/seam.Driver), so that
// they never name a driver.
package store

import (
	"context"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/dburl"
	"github.com/workqueue-dev/workqueue/store/postgres"
	"github.com/workqueue-dev/workqueue/store/sqlite"
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

// Open opens the store the URL names, the SQLite or the PostgreSQL
// driver; either is a seam.Driver. It does not migrate; item types
// register their migrations with it first.
func Open(ctx context.Context, url string) (wq.Store, error) {
	kind, path, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	if kind == KindPostgres {
		return postgres.Open(ctx, url)
	}
	return sqlite.Open(ctx, path)
}
