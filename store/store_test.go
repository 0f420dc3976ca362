package store_test

import (
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/storetest"
)

func TestConformance(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		storetest.Run(t, func(t *testing.T) wq.Store { return testdb.Open(t, kind).Queue })
	})
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url, kind, path string
		ok              bool
	}{
		{"sqlite:///var/lib/wq.db", store.KindSQLite, "/var/lib/wq.db", true},
		{"sqlite:workqueue.db", store.KindSQLite, "workqueue.db", true},
		{"postgres://u:p@h/db", store.KindPostgres, "", true},
		{"postgresql://h/db", store.KindPostgres, "", true},
		{"sqlite://host/x.db", "", "", false},
		{"sqlite:", "", "", false},
		{"sqlite:x.db?mode=memory", "", "", false},
		{"mysql://h/db", "", "", false},
		{"", "", "", false},
	} {
		kind, path, err := store.ParseURL(tc.url)
		if (err == nil) != tc.ok || kind != tc.kind || path != tc.path {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q, ok=%v", tc.url, kind, path, err, tc.kind, tc.path, tc.ok)
		}
	}
}
