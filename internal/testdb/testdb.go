// Package testdb gives tests real databases: a SQLite file in a temp dir,
// or a fresh schema in the PostgreSQL that TEST_DATABASE_URL names.
//
// Without TEST_DATABASE_URL a PostgreSQL test skips, except when CI is set:
// then it fails, because a PostgreSQL half that silently skips is a failed
// run.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/mr/mrstore"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/postgres"
	"github.com/workqueue-dev/workqueue/store/seam"
	"github.com/workqueue-dev/workqueue/store/sqlite"
)

// Drivers are the store drivers tests open, as the program's composition
// root registers them (cmd/workqueue/world.go).
var Drivers = store.NewRegistry(sqlite.Driver, postgres.Driver)

// Kinds lists the databases every store-backed test runs on.
var Kinds = []string{store.KindSQLite, store.KindPostgres}

// URL returns the URL of a new, empty database of the given kind, removed
// when the test ends.
func URL(t testing.TB, kind string) string {
	t.Helper()
	switch kind {
	case store.KindSQLite:
		return "sqlite://" + filepath.Join(t.TempDir(), "workqueue.db")
	case store.KindPostgres:
		return postgresURL(t)
	}
	t.Fatalf("unknown database kind %q", kind)
	return ""
}

func postgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("TEST_DATABASE_URL is not set in CI: the PostgreSQL half must run (use scripts/test)")
		}
		t.Skip("TEST_DATABASE_URL not set; run scripts/test for the PostgreSQL half")
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to TEST_DATABASE_URL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Store is a migrated database with the generic store and the stores of
// the item types shipped that keep one (the mr type's), as serve opens
// them. Queue is the driver itself: pass it where optional
// interfaces matter (an engine listens for wake-ups only on a store that
// can send them). Types holds each type's store by type name; MR is the
// shipped mr type's, embedded because most tests of the queue's types
// drive it.
type Store struct {
	Queue
	MR
	Types map[string]any
}

// CurrentMR and CreateFirstMR pass on the mr store's one-step reads and
// creations (mr.CurrentReader, mr.FirstCreator), which the embedded
// interface hides: the mr type's tests submit through the paths serve
// takes.
func (s *Store) CurrentMR(ctx context.Context, forge, project, branch string) (mr.Current, error) {
	return s.MR.(mr.CurrentReader).CurrentMR(ctx, forge, project, branch)
}

func (s *Store) CreateFirstMR(ctx context.Context, n wq.NewItem, d mr.Detail, now time.Time) (*wq.Item, bool, error) {
	return s.MR.(mr.FirstCreator).CreateFirstMR(ctx, n, d, now)
}

// Queue and MR name Store's parts.
type (
	Queue = wq.Store
	MR    = mr.Store
)

// Open returns a migrated store of the given kind, closed when the test
// ends.
func Open(t testing.TB, kind string) *Store {
	t.Helper()
	return OpenURL(t, URL(t, kind))
}

// OpenURL returns a migrated store on url, closed when the test ends.
func OpenURL(t testing.TB, url string) *Store {
	t.Helper()
	ctx := context.Background()
	db, err := Drivers.Open(ctx, url)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		checkReadySet(t, db)
		db.Close()
	})
	mrs, err := mrstore.New(db) // the one shipped type with a store of its own
	if err != nil {
		t.Fatalf("open the mr type's store: %v", err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return &Store{Queue: db, MR: mrs, Types: map[string]any{mr.ItemType: mrs}}
}

// EachKind runs f as a subtest on each database kind, in parallel with
// the others (each subtest owns its database).
func EachKind(t *testing.T, f func(t *testing.T, kind string)) {
	t.Helper()
	eachKind(t, true, f)
}

// EachKindInTurn is EachKind one kind after the other, for tests whose
// timing against a shared server matters more than their speed.
func EachKindInTurn(t *testing.T, f func(t *testing.T, kind string)) {
	t.Helper()
	eachKind(t, false, f)
}

func eachKind(t *testing.T, parallel bool, f func(t *testing.T, kind string)) {
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			f(t, kind)
		})
	}
}

// checkReadySet fails the test if, at its end, the driver's ready set
// (PostgreSQL's work_item_ready, the sweep's set, kept by triggers)
// differs from the items that are actionable and active, or holds another
// type or retry time than its item: every test on PostgreSQL checks the
// triggers for the writes it made.
func checkReadySet(t testing.TB, db wq.Store) {
	c, ok := db.(seam.ReadySetChecker)
	if !ok {
		return
	}
	bad, err := c.ReadySetDrift(context.Background())
	if err != nil {
		t.Errorf("check work_item_ready: %v", err)
		return
	}
	if len(bad) > 0 {
		t.Errorf("work_item_ready disagrees with work_items for %d items: %v", len(bad), bad)
	}
}
