package testdb

import (
	"context"
	"testing"

	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/identity/idstore"
)

// IdentitiesURL returns the identities' store (budgets and freezes) on
// the database at url, migrated with every other chain, on a pool of its
// own closed when the test ends: two calls on one url are two serve
// processes on one database.
func IdentitiesURL(t testing.TB, url string) identity.Store {
	t.Helper()
	db := OpenURL(t, url).Queue
	ids, err := idstore.New(db)
	if err != nil {
		t.Fatalf("open identity store: %v", err)
	}
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate the identities: %v", err)
	}
	return ids
}
