// Package dburl reads workqueue's database URLs: which driver a URL
// names and, for SQLite, the file. It is a leaf, so that the
// configuration checks a URL without linking either database driver;
// store opens what it names.
package dburl

import (
	"strings"

	wq "github.com/workqueue-dev/workqueue"
)

// Kinds of database, as Parse answers them.
const (
	KindSQLite   = "sqlite"
	KindPostgres = "postgres"
)

// Parse checks a database URL and returns its kind and, for SQLite, the
// file path. Accepted forms: sqlite:///absolute/path.db, sqlite:relative.db,
// postgres://… and postgresql://…. Its errors are wq.EINVALID; a URL of
// no known form is shown only up to its scheme (the rest may hold a
// password).
func Parse(url string) (kind, path string, err error) {
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
