// Package store opens the store driver a database URL names. It is the one
// place above the drivers that knows both. Item types keep stores of their
// own, built on the driver it returns (its exported pieces for item types).
package store

import (
	"context"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/store/postgres"
	"github.com/workqueue-dev/workqueue/store/sqlite"
)

// Kinds of database.
const (
	KindSQLite   = "sqlite"
	KindPostgres = "postgres"
)

// ParseURL checks a database URL and returns its kind and, for SQLite, the
// file path. Accepted forms: sqlite:///absolute/path.db, sqlite:relative.db,
// postgres://… and postgresql://….
func ParseURL(url string) (kind, path string, err error) {
	switch {
	case strings.HasPrefix(url, "sqlite:///"):
		path = strings.TrimPrefix(url, "sqlite://")
	case strings.HasPrefix(url, "sqlite://"):
		return "", "", wq.Errorf(wq.EINVALID, "database %q: use sqlite:///absolute/path.db or sqlite:relative.db", url)
	case strings.HasPrefix(url, "sqlite:"):
		path = strings.TrimPrefix(url, "sqlite:")
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return KindPostgres, "", nil
	default:
		return "", "", wq.Errorf(wq.EINVALID, "database: want sqlite:///path, sqlite:path or postgres://…, got %q", redact(url))
	}
	if path == "" || strings.ContainsAny(path, "?#") {
		return "", "", wq.Errorf(wq.EINVALID, "database %q: want a file path without query or fragment", url)
	}
	return KindSQLite, path, nil
}

// redact hides everything after the scheme, which may hold a password.
func redact(url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		return url[:i+3] + "…"
	}
	if len(url) > 16 {
		return url[:16] + "…"
	}
	return url
}

// Open opens the store the URL names: a *sqlite.Store or a
// *postgres.Store. It does not migrate; item types register their
// migrations with it first.
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
