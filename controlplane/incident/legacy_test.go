package incident_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore/cpstoretest"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

func str(s string) *string { return &s }

// legacy is a legacy row of Sentry issue 7 in acme/web (no environment),
// linked to gitea o/r#3, created days after T0's month began; edit
// changes it.
func legacy(id string, day int, edit ...func(*incident.LegacyLink)) incident.LegacyLink {
	l := incident.LegacyLink{ID: id, Provider: "sentry", Organization: str("acme"), Project: str("web"), Fingerprint: "7",
		Forge: "gitea", Repo: "o/r", IssueNumber: 3, IssueURL: "https://forge/o/r/issues/3", Status: "unresolved", EventCount: 4,
		Permalink: "https://sentry.example/organizations/acme/issues/7/", FirstSeen: T0.Add(-time.Hour), LastSeen: T0,
		LinkedPRs: []int64{8, 5}, CreatedAt: time.Date(2026, 3, day, 0, 0, 0, 0, time.UTC)}
	for _, e := range edit {
		e(&l)
	}
	return l
}

func ids(rows []incident.LegacyLink) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

func TestCollapseLegacyFoldsAgreeingDuplicates(t *testing.T) {
	for _, c := range []struct {
		name       string
		rows       []incident.LegacyLink
		keep, drop []string
	}{
		{"distinct links are kept as they are",
			[]incident.LegacyLink{legacy("1", 1), legacy("2", 1, func(l *incident.LegacyLink) { l.Fingerprint = "8" })},
			[]string{"1", "2"}, nil},
		{"a NULL and an empty environment are one key; the earliest row stays",
			[]incident.LegacyLink{legacy("1", 2), legacy("2", 1, func(l *incident.LegacyLink) { l.Environment = str("") })},
			[]string{"2"}, []string{"1"}},
		{"NULL organization and project fold with empty ones",
			[]incident.LegacyLink{
				legacy("1", 1, func(l *incident.LegacyLink) { l.Organization, l.Project = nil, nil }),
				legacy("2", 2, func(l *incident.LegacyLink) { l.Organization, l.Project = str(""), str("") }),
				legacy("3", 3, func(l *incident.LegacyLink) { l.Organization, l.Project = nil, str("") }),
			},
			[]string{"1"}, []string{"2", "3"}},
		{"pull requests agree as sets, times as instants",
			[]incident.LegacyLink{legacy("1", 1), legacy("2", 2, func(l *incident.LegacyLink) {
				l.LinkedPRs = []int64{5, 8, 5}
				l.LastSeen = T0.In(time.FixedZone("CET", 3600))
			})},
			[]string{"1"}, []string{"2"}},
		{"an unknown creation time sorts last",
			[]incident.LegacyLink{legacy("1", 1, func(l *incident.LegacyLink) { l.CreatedAt = time.Time{} }), legacy("2", 5)},
			[]string{"2"}, []string{"1"}},
		{"another environment is another key",
			[]incident.LegacyLink{legacy("1", 1), legacy("2", 1, func(l *incident.LegacyLink) { l.Environment = str("prod"); l.IssueNumber = 4 })},
			[]string{"1", "2"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			keep, drop, err := incident.CollapseLegacy(c.rows)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.keep, ids(keep)); d != "" {
				t.Errorf("kept (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.drop, drop); d != "" {
				t.Errorf("dropped (-want +got):\n%s", d)
			}
		})
	}
}

func TestCollapseLegacyFailsClosedOnConflicts(t *testing.T) {
	rows := []incident.LegacyLink{
		legacy("1", 1),
		legacy("2", 2, func(l *incident.LegacyLink) { l.Environment = str(""); l.IssueNumber = 9; l.Status = "resolved" }),
		legacy("3", 3, func(l *incident.LegacyLink) { l.Organization = nil; l.Fingerprint = "other" }),
		legacy("4", 4, func(l *incident.LegacyLink) {
			l.Organization = str("")
			l.Fingerprint = "other"
			l.LinkedPRs = []int64{5}
		}),
		legacy("5", 5, func(l *incident.LegacyLink) { l.Fingerprint = "fine" }),
		legacy("6", 6, func(l *incident.LegacyLink) { l.Fingerprint = "fine"; l.Environment = str("") }),
	}
	keep, drop, err := incident.CollapseLegacy(rows)
	if keep != nil || drop != nil {
		t.Errorf("a failed collapse kept %v and dropped %v", ids(keep), drop)
	}
	cpstoretest.WantCode(t, err, wq.ECONFLICT)
	var conflict *incident.LegacyConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("error %v is not a LegacyConflictError", err)
	}
	want := []incident.LegacyConflict{
		{Key: incident.Key{Provider: "sentry", Organization: "acme", Project: "web", Fingerprint: "7"}, IDs: []string{"1", "2"},
			Fields: []string{"issue_number", "status"}},
		{Key: incident.Key{Provider: "sentry", Project: "web", Fingerprint: "other"}, IDs: []string{"3", "4"},
			Fields: []string{"linked_prs"}},
	}
	if d := cmp.Diff(want, conflict.Conflicts); d != "" {
		t.Errorf("conflicts (-want +got):\n%s", d)
	}
	for _, s := range []string{"rows 1, 2 differ in issue_number, status", "rows 3, 4 differ in linked_prs"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

// TestCollapseLegacyComparesEveryMeaningfulField: a difference in any
// one field the rule names keeps the rows apart.
func TestCollapseLegacyComparesEveryMeaningfulField(t *testing.T) {
	for field, edit := range map[string]func(*incident.LegacyLink){
		"forge":        func(l *incident.LegacyLink) { l.Forge = "gitlab" },
		"repo":         func(l *incident.LegacyLink) { l.Repo = "o/other" },
		"issue_number": func(l *incident.LegacyLink) { l.IssueNumber = 30 },
		"issue_url":    func(l *incident.LegacyLink) { l.IssueURL = "https://forge/o/r/issues/30" },
		"status":       func(l *incident.LegacyLink) { l.Status = "ignored" },
		"event_count":  func(l *incident.LegacyLink) { l.EventCount = 5 },
		"permalink":    func(l *incident.LegacyLink) { l.Permalink = "" },
		"first_seen":   func(l *incident.LegacyLink) { l.FirstSeen = time.Time{} },
		"last_seen":    func(l *incident.LegacyLink) { l.LastSeen = T0.Add(time.Microsecond) },
		"linked_prs":   func(l *incident.LegacyLink) { l.LinkedPRs = nil },
	} {
		t.Run(field, func(t *testing.T) {
			other := legacy("2", 2, edit)
			other.Environment = str("")
			_, _, err := incident.CollapseLegacy([]incident.LegacyLink{legacy("1", 1), other})
			var conflict *incident.LegacyConflictError
			if !errors.As(err, &conflict) || !cmp.Equal(conflict.Conflicts[0].Fields, []string{field}) {
				t.Errorf("error %v, want a conflict in %s", err, field)
			}
		})
	}
}

func TestLegacyLinkImportsRedactedAndCanonical(t *testing.T) {
	row := legacy("1", 1, func(l *incident.LegacyLink) {
		l.Environment = nil
		l.Permalink = "https://agent:hunter2pass@sentry.example/organizations/acme/issues/7/?token=x"
	})
	got, err := row.Link(T0)
	if err != nil {
		t.Fatal(err)
	}
	want := incident.Link{Key: incident.Key{Provider: "sentry", Organization: "acme", Project: "web", Fingerprint: "7"},
		Forge: "gitea", Repo: "o/r", IssueNumber: 3, IssueURL: "https://forge/o/r/issues/3", Status: "unresolved", EventCount: 4,
		Permalink: "https://sentry.example/organizations/acme/issues/7/", FirstSeen: T0.Add(-time.Hour), LastSeen: T0,
		LinkedPRs: []int64{5, 8}, State: incident.LinkLinked, CreatedAt: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: T0}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("link (-want +got):\n%s", d)
	}
	for name, edit := range map[string]func(*incident.LegacyLink){
		"fingerprint": func(l *incident.LegacyLink) { l.Fingerprint = "" },
		"provider":    func(l *incident.LegacyLink) { l.Provider = "pagerduty" },
		"forge issue": func(l *incident.LegacyLink) { l.IssueNumber = 0 },
	} {
		_, err := legacy("9", 1, edit).Link(T0)
		cpstoretest.WantCode(t, err, wq.EINVALID)
		if !strings.Contains(err.Error(), "legacy incident link 9") {
			t.Errorf("%s: error %v does not name the row", name, err)
		}
	}
}
