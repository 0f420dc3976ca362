package testdb

import (
	"context"
	"testing"

	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
)

// ControlPlane returns the control plane's store on a new migrated
// database of the given kind, closed when the test ends.
func ControlPlane(t testing.TB, kind string) controlplane.Store {
	t.Helper()
	return ControlPlaneURL(t, URL(t, kind))
}

// ControlPlaneURL returns the control plane's store on the database at
// url, migrated with every other chain as serve migrates it, on a pool of
// its own that is closed when the test ends: two calls on one url are two
// serve processes on one database.
func ControlPlaneURL(t testing.TB, url string) controlplane.Store {
	t.Helper()
	db := OpenURL(t, url).Queue
	cp, err := cpstore.New(db)
	if err != nil {
		t.Fatalf("open control plane store: %v", err)
	}
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate the control plane: %v", err)
	}
	return cp
}
