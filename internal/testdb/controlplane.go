package testdb

import (
	"context"
	"testing"

	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/store"
)

// ControlPlane returns the control plane's store on a new migrated
// database of the given kind, closed when the test ends.
func ControlPlane(t testing.TB, kind string) controlplane.Store {
	t.Helper()
	return ControlPlaneURL(t, URL(t, kind))
}

// ControlPlaneURL returns the control plane's store on the database at
// url, migrated, on a pool of its own that is closed when the test ends:
// two calls on one url are two serve processes on one database.
func ControlPlaneURL(t testing.TB, url string) controlplane.Store {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	cp, err := cpstore.New(db)
	if err != nil {
		t.Fatalf("open control plane store: %v", err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return cp
}
