package postgres_test

import (
	"errors"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/store/postgres"
)

// TestMigrateRefusesAServerOlderThan13ByName: the claim draws its tokens
// with gen_random_uuid(), in PostgreSQL's core from version 13, so an
// older server is refused before any migration, naming its version and
// the one needed, instead of every claim failing later.
func TestMigrateRefusesAServerOlderThan13ByName(t *testing.T) {
	for _, tc := range []struct {
		num, name string
		ok        bool
	}{
		{"120017", "12.17", false},
		{"90624", "9.6.24", false},
		{"130000", "13.0", true},
		{"150018", "15.18 (Debian 15.18-0+deb12u1)", true},
		{"", "", true}, // not reported (a proxy): let through
	} {
		err := postgres.CheckServerVersion(tc.num, tc.name)
		if tc.ok {
			if err != nil {
				t.Errorf("%s (%s): %v, want accepted", tc.name, tc.num, err)
			}
			continue
		}
		var werr *wq.Error
		if !errors.As(err, &werr) || werr.Code != wq.EINVALID || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), "PostgreSQL 13 or newer") {
			t.Errorf("%s (%s): %v, want EINVALID naming %s and PostgreSQL 13 or newer", tc.name, tc.num, err, tc.name)
		}
	}
}
