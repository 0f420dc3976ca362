package dburl_test

import (
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/dburl"
)

func TestParseNamesTheDriverAndTheFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, kind, path string
	}{
		{"sqlite:///var/lib/wq.db", dburl.KindSQLite, "/var/lib/wq.db"},
		{"sqlite:workqueue.db", dburl.KindSQLite, "workqueue.db"},
		{"postgres://u:p@h/db", dburl.KindPostgres, ""},
		{"postgresql://h/db", dburl.KindPostgres, ""},
	} {
		kind, path, err := dburl.Parse(tc.url)
		if err != nil || kind != tc.kind || path != tc.path {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q", tc.url, kind, path, err, tc.kind, tc.path)
		}
	}
}

func TestParseRefusesWhatNoDriverOpensWithoutShowingAPassword(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"sqlite://host/x.db", "sqlite:", "sqlite:x.db?mode=memory", "mysql://u:secret@h/db", ""} {
		kind, path, err := dburl.Parse(url)
		if err == nil || kind != "" || path != "" {
			t.Errorf("Parse(%q) = %q, %q, %v; want an error", url, kind, path, err)
			continue
		}
		if code := wq.ErrorCode(err); code != wq.EINVALID {
			t.Errorf("Parse(%q): code %s, want %s", url, code, wq.EINVALID)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Parse(%q): %v shows the password", url, err)
		}
	}
}
