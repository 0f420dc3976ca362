package cpstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore/cpstoretest"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

func incidents(t *testing.T, cp controlplane.Store) incident.Store {
	t.Helper()
	s, err := cpstore.NewIncidents(cp)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestIncidentConformance runs the incident store's conformance suite on
// both drivers.
func TestIncidentConformance(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		cpstoretest.RunIncidents(t, func(t *testing.T) incident.Store { return incidents(t, testdb.ControlPlane(t, kind)) })
	})
}

// TestNewIncidentsRefusesAnotherStore: the incident store is made of the
// control plane store of this package, whose chain holds its table.
func TestNewIncidentsRefusesAnotherStore(t *testing.T) {
	if _, err := cpstore.NewIncidents(nil); err == nil {
		t.Error("NewIncidents(nil) succeeded")
	}
}

// TestClaimRaceTwoProcesses: ten claims of one provider issue at once,
// from two serve processes on one PostgreSQL database (two pools), 20
// rounds: exactly one claims, and all read its row.
func TestClaimRaceTwoProcesses(t *testing.T) {
	url := testdb.URL(t, store.KindPostgres)
	stores := []incident.Store{incidents(t, testdb.ControlPlaneURL(t, url)), incidents(t, testdb.ControlPlaneURL(t, url))}
	ctx := context.Background()
	for round := range 20 {
		key := cpstoretest.IncidentKey(fmt.Sprintf("race-%d", round))
		claimed := make([]bool, 10)
		ids := make([]string, 10)
		errs := make([]error, 10)
		testkit.AtOnce(10, func(i int) {
			l, ok, err := stores[i%2].ClaimLink(ctx, cpstoretest.Claim(key, fmt.Sprintf("tok-%d-%d", round, i), cpstoretest.T0))
			claimed[i], errs[i] = ok, err
			if l != nil {
				ids[i] = l.ID
			}
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if n := len(slices.DeleteFunc(slices.Clone(claimed), func(c bool) bool { return !c })); n != 1 {
			t.Fatalf("round %d: %d claims won, want 1", round, n)
		}
		if len(slices.Compact(slices.Clone(ids))) != 1 {
			t.Fatalf("round %d: the claims read links %v", round, ids)
		}
		links, err := stores[1].ListLinks(ctx, incident.LinkFilter{})
		if err != nil || len(links) != round+1 {
			t.Fatalf("round %d: %d links, %v", round, len(links), err)
		}
	}
}

// legacyDDL is the old tool's table: nullable scope keys, no canonical
// key, times as text (SQLite) or timestamps (PostgreSQL).
var legacyDDL = map[string]string{
	store.KindSQLite: `CREATE TABLE incident_links (id INTEGER PRIMARY KEY, provider TEXT NOT NULL, organization TEXT, project TEXT,
		environment TEXT, fingerprint TEXT NOT NULL, forge TEXT, repo TEXT, issue_number INTEGER, issue_url TEXT, status TEXT,
		event_count INTEGER, permalink TEXT, first_seen TEXT, last_seen TEXT, linked_prs TEXT, created_at TEXT)`,
	store.KindPostgres: `CREATE TABLE incident_links (id integer PRIMARY KEY, provider text NOT NULL, organization text, project text,
		environment text, fingerprint text NOT NULL, forge text, repo text, issue_number integer, issue_url text, status text,
		event_count integer, permalink text, first_seen timestamptz, last_seen timestamptz, linked_prs text, created_at timestamptz)`,
}

// legacyRow inserts a legacy row: nil scope keys are NULL.
func legacyRow(t *testing.T, cp controlplane.Store, id int, org, env *string, fingerprint string, count int64, permalink string) {
	t.Helper()
	err := cpstore.Exec(cp, `INSERT INTO incident_links (id, provider, organization, project, environment, fingerprint, forge, repo,
			issue_number, issue_url, status, event_count, permalink, first_seen, last_seen, linked_prs, created_at)
		VALUES (?, 'sentry', ?, 'web', ?, ?, 'gitea', 'o/r', 17, 'https://forge.example/o/r/issues/17', 'unresolved', ?, ?,
			'2026-03-01 10:00:00', '2026-03-02T11:00:00Z', '[9, 4]', ?)`,
		id, org, env, fingerprint, count, permalink, fmt.Sprintf("2026-03-0%dT00:00:00Z", id))
	if err != nil {
		t.Fatal(err)
	}
}

func legacyCount(t *testing.T, cp controlplane.Store) int {
	t.Helper()
	n, err := cpstore.QueryInt(cp, `SELECT count(*) FROM incident_links`)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ptr(s string) *string { return &s }

// TestImportLegacy is hard rule 7 through the store on both databases:
// rows that differ only in a NULL or empty scope key collapse into one
// link, the others import as they are, the legacy table is only read,
// and importing again changes nothing.
func TestImportLegacy(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		cp := testdb.ControlPlane(t, kind)
		s := incidents(t, cp)
		if r, err := s.ImportLegacy(ctx, cpstoretest.T0); err != nil || r.Found {
			t.Fatalf("without a legacy table: %+v, %v", r, err)
		}
		if err := cpstore.Exec(cp, legacyDDL[kind]); err != nil {
			t.Fatal(err)
		}
		const permalink = "https://sentry.example/organizations/acme/issues/1/?token=sntrys_secret"
		legacyRow(t, cp, 1, ptr("acme"), nil, "1", 5, permalink)
		legacyRow(t, cp, 2, ptr("acme"), ptr(""), "1", 5, permalink) // the same issue, environment '' instead of NULL
		legacyRow(t, cp, 3, nil, ptr("prod"), "2", 8, "")

		r, err := s.ImportLegacy(ctx, cpstoretest.T0)
		if err != nil {
			t.Fatal(err)
		}
		if want := (incident.ImportReport{Found: true, Rows: 3, Imported: 2, Collapsed: 1}); r != want {
			t.Errorf("report %+v, want %+v", r, want)
		}
		links, err := s.ListLinks(ctx, incident.LinkFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var keys []incident.Key
		for _, l := range links {
			keys = append(keys, l.Key)
			if l.State != incident.LinkLinked || l.IssueNumber != 17 || l.Forge != "gitea" || l.Repo != "o/r" {
				t.Errorf("imported link %+v", l)
			}
		}
		wantKeys := []incident.Key{ // newest first: row 3 was created after row 1
			{Provider: "sentry", Project: "web", Environment: "prod", Fingerprint: "2"},
			{Provider: "sentry", Organization: "acme", Project: "web", Fingerprint: "1"},
		}
		if d := cpstoretest.Diff(wantKeys, keys); d != "" {
			t.Errorf("imported keys (-want +got):\n%s", d)
		}
		one, err := s.GetLink(ctx, wantKeys[1])
		if err != nil {
			t.Fatal(err)
		}
		want := incident.Link{ID: one.ID, Key: wantKeys[1], Forge: "gitea", Repo: "o/r", IssueNumber: 17,
			IssueURL: "https://forge.example/o/r/issues/17", Status: "unresolved", EventCount: 5,
			Permalink: "https://sentry.example/organizations/acme/issues/1/", // the query and its token are gone
			FirstSeen: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), LastSeen: time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC),
			LinkedPRs: []int64{4, 9}, State: incident.LinkLinked, Revision: 1,
			CreatedAt: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: cpstoretest.T0}
		if d := cpstoretest.Diff(want, *one); d != "" {
			t.Errorf("collapsed link (-want +got):\n%s", d)
		}

		r, err = s.ImportLegacy(ctx, cpstoretest.T0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if want := (incident.ImportReport{Found: true, Rows: 3, Collapsed: 1, Existing: 2}); r != want {
			t.Errorf("second import: %+v, want %+v", r, want)
		}
		if n := legacyCount(t, cp); n != 3 {
			t.Errorf("the legacy table holds %d rows, want its 3", n)
		}
	})
}

// TestImportLegacyConflict: duplicates that disagree fail the import,
// naming the rows and fields; nothing is written, nothing deleted.
func TestImportLegacyConflict(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		cp := testdb.ControlPlane(t, kind)
		s := incidents(t, cp)
		if err := cpstore.Exec(cp, legacyDDL[kind]); err != nil {
			t.Fatal(err)
		}
		legacyRow(t, cp, 1, nil, nil, "1", 5, "")
		legacyRow(t, cp, 2, ptr(""), nil, "1", 6, "") // one more event: which count is right?
		legacyRow(t, cp, 3, ptr("acme"), nil, "3", 1, "")

		_, err := s.ImportLegacy(ctx, cpstoretest.T0)
		cpstoretest.WantCode(t, err, wq.ECONFLICT)
		var conflict *incident.LegacyConflictError
		if !errors.As(err, &conflict) {
			t.Fatalf("error %v is not a LegacyConflictError", err)
		}
		want := []incident.LegacyConflict{{Key: incident.Key{Provider: "sentry", Project: "web", Fingerprint: "1"},
			IDs: []string{"1", "2"}, Fields: []string{"event_count"}}}
		if d := cpstoretest.Diff(want, conflict.Conflicts); d != "" {
			t.Errorf("conflicts (-want +got):\n%s", d)
		}
		if links, err := s.ListLinks(ctx, incident.LinkFilter{}); err != nil || len(links) != 0 {
			t.Errorf("a failed import wrote %+v (%v)", links, err)
		}
		if n := legacyCount(t, cp); n != 3 {
			t.Errorf("the legacy table holds %d rows, want its 3", n)
		}
	})
}

// TestImportLegacyUnreadable: a legacy row the import cannot read fails
// it, naming the row.
func TestImportLegacyUnreadable(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		cp := testdb.ControlPlane(t, kind)
		if err := cpstore.Exec(cp, legacyDDL[store.KindSQLite]); err != nil { // times as text on both
			t.Fatal(err)
		}
		legacyRow(t, cp, 1, ptr("acme"), nil, "1", 5, "")
		if err := cpstore.Exec(cp, `UPDATE incident_links SET last_seen = 'last tuesday'`); err != nil {
			t.Fatal(err)
		}
		_, err := incidents(t, cp).ImportLegacy(context.Background(), cpstoretest.T0)
		cpstoretest.WantCode(t, err, wq.EINVALID)
		if err == nil || !strings.Contains(err.Error(), "legacy incident link 1: last_seen") {
			t.Errorf("error %v does not name the row and column", err)
		}
	})
}
