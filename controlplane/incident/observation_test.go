package incident_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore/cpstoretest"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

func TestObservationValidate(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*incident.Observation)
		field string // "" when it validates
	}{
		{"a full observation validates", func(*incident.Observation) {}, ""},
		{"absent scope keys are empty and valid", func(o *incident.Observation) { o.Organization, o.Project, o.Environment = "", "", "" }, ""},
		{"a multi-byte title at its bound validates", func(o *incident.Observation) { o.Title = strings.Repeat("é", incident.MaxTitle/2) }, ""},
		{"no provider", func(o *incident.Observation) { o.Provider = "" }, "provider"},
		{"another provider", func(o *incident.Observation) { o.Provider = "datadog" }, "provider"},
		{"no fingerprint", func(o *incident.Observation) { o.Fingerprint = "" }, "fingerprint"},
		{"a fingerprint with blanks around", func(o *incident.Observation) { o.Fingerprint = " 42" }, "fingerprint"},
		{"a project with blanks around", func(o *incident.Observation) { o.Project = "web " }, "project"},
		{"a title over its bound", func(o *incident.Observation) { o.Title = strings.Repeat("x", incident.MaxTitle+1) }, "title"},
		{"a culprit over its bound", func(o *incident.Observation) { o.Culprit = strings.Repeat("x", incident.MaxField+1) }, "culprit"},
		{"a newline in the title", func(o *incident.Observation) { o.Title = "two\nlines" }, "title"},
		{"a NUL in the environment", func(o *incident.Observation) { o.Environment = "prod\x00" }, "environment"},
		{"a right-to-left override in the culprit", func(o *incident.Observation) { o.Culprit = "main\u202egnp.exe" }, "culprit"},
		{"an escape in the level", func(o *incident.Observation) { o.Level = "\x1b[31merror" }, "level"},
		{"a title that is not UTF-8", func(o *incident.Observation) { o.Title = "bad \xff byte" }, "title"},
		{"a relative permalink", func(o *incident.Observation) { o.Permalink = "/issues/1" }, "permalink"},
		{"a permalink of another scheme", func(o *incident.Observation) { o.Permalink = "javascript:alert(1)" }, "permalink"},
		{"a negative count", func(o *incident.Observation) { o.EventCount = -1 }, "event_count"},
		{"a pull request that is not a number", func(o *incident.Observation) { o.LinkedPRs = []int64{3, 0} }, "linked_prs[1]"},
		{"too many pull requests", func(o *incident.Observation) { o.LinkedPRs = make([]int64, incident.MaxLinkedPRs+1) }, "linked_prs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := sentryObs()
			o.LinkedPRs = []int64{5}
			c.edit(&o)
			err := o.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			cpstoretest.WantCode(t, err, wq.EINVALID)
			if !strings.Contains(err.Error(), "observation "+c.field+" ") {
				t.Errorf("error %q does not name %s", err, c.field)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	t1, t2, t3 := T0.Add(-3*time.Hour), T0.Add(-2*time.Hour), T0.Add(-time.Hour)
	link := incident.Link{Status: "unresolved", EventCount: 10, Permalink: "https://s/issues/1/", FirstSeen: t2, LastSeen: t2, LinkedPRs: []int64{4}}
	for _, c := range []struct {
		name    string
		obs     incident.Observation
		want    incident.Link
		changed bool
	}{
		{"the same observation changes nothing",
			incident.Observation{Status: "unresolved", EventCount: 10, Permalink: "https://s/issues/1/", FirstSeen: t2, LastSeen: t2, LinkedPRs: []int64{4}},
			link, false},
		{"a newer one moves status, count, last seen and permalink",
			incident.Observation{Status: "resolved", EventCount: 12, Permalink: "https://s/issues/1/x/", LastSeen: t3},
			incident.Link{Status: "resolved", EventCount: 12, Permalink: "https://s/issues/1/x/", FirstSeen: t2, LastSeen: t3, LinkedPRs: []int64{4}}, true},
		{"an older one only widens first seen",
			incident.Observation{Status: "ignored", EventCount: 2, Permalink: "https://s/old/", FirstSeen: t1, LastSeen: t1},
			incident.Link{Status: "unresolved", EventCount: 10, Permalink: "https://s/issues/1/", FirstSeen: t1, LastSeen: t2, LinkedPRs: []int64{4}}, true},
		{"one that does not say keeps what the link says",
			incident.Observation{},
			link, false},
		{"pull requests accumulate, sorted",
			incident.Observation{LinkedPRs: []int64{9, 2, 4}},
			incident.Link{Status: "unresolved", EventCount: 10, Permalink: "https://s/issues/1/", FirstSeen: t2, LastSeen: t2, LinkedPRs: []int64{2, 4, 9}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, changed := incident.Merge(link, c.obs)
			if d := cmp.Diff(c.want, got); d != "" || changed != c.changed {
				t.Errorf("changed %v, want %v; (-want +got):\n%s", changed, c.changed, d)
			}
		})
	}
}

func TestMarkerIsStable(t *testing.T) {
	got := incident.Marker(incident.Key{Provider: "glitchtip", Organization: "shop co", Project: "Orders API", Fingerprint: "8812"})
	want := "<!-- workqueue-incident provider=glitchtip organization=shop+co project=Orders+API environment= fingerprint=8812 -->"
	if got != want {
		t.Errorf("marker\n%s\nwant\n%s", got, want)
	}
	// Nothing a provider sends closes the comment early.
	if m := incident.Marker(incident.Key{Provider: "sentry", Fingerprint: "--> <b>x</b>"}); strings.Count(m, "-->") != 1 {
		t.Errorf("marker %s", m)
	}
}

// TestIssueBodyRendersNothingOfTheProvider: every text of an observation
// is a code span, so it cannot mention, link or inject HTML.
func TestIssueBodyRendersNothingOfTheProvider(t *testing.T) {
	w := newWorld(t, newMemStore())
	obs := sentryObs()
	obs.Title = "ping @admins <img src=x> [click](https://evil.example) `code`"
	obs.Culprit = "``x``"
	obs.LinkedPRs = []int64{7}
	res := w.reconcile(obs, false)
	for _, want := range []string{
		"- Title: `` ping @admins <img src=x> [click](https://evil.example) `code` ``",
		"- Culprit: ``` ``x`` ```",
		"- Level: `error`",
		"- Events: 3",
		"- First seen: 2026-03-04T04:06:07Z",
		"- Permalink: <https://sentry.example/organizations/acme/issues/1170820242/>",
		"- Linked pull request: #7",
		incident.Marker(obs.Key),
	} {
		if !strings.Contains(res.Issue.Body, want+"\n") {
			t.Errorf("body lacks %q:\n%s", want, res.Issue.Body)
		}
	}
	if strings.Contains(res.Issue.Body, "Environment") {
		t.Errorf("an absent environment is shown:\n%s", res.Issue.Body)
	}
	obs.Title = strings.Repeat("ü", 200)
	if title := w.reconcile(obs, false).Issue.Title; len(title) > incident.MaxIssueTitle || !strings.HasPrefix(title, "[Sentry] üü") {
		t.Errorf("title of %d bytes: %q", len(title), title)
	}
}

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

const clientSecret = "3f6b0c9e2d1a4b7c8e5f0a1b2c3d4e5f"

func sign(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func payload(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerifySentry(t *testing.T) {
	body := payload(t, "sentry_issue_created.json")
	good := sign(body, clientSecret)
	tampered := append([]byte(nil), body...)
	tampered[len(tampered)/2] ^= 1
	for _, c := range []struct {
		name              string
		body              []byte
		signature, secret string
		want              bool
	}{
		{"the signature of the body under the secret verifies", body, good, clientSecret, true},
		{"in upper case too", body, strings.ToUpper(good), clientSecret, true},
		{"a signature made with another secret does not", body, sign(body, "another secret"), clientSecret, false},
		{"a changed body does not", tampered, good, clientSecret, false},
		{"an empty secret never verifies, even signed with it", body, sign(body, ""), "", false},
		{"no signature does not", body, "", clientSecret, false},
		{"a signature that is not hex does not", body, "not-hex-" + good, clientSecret, false},
		{"a truncated signature does not", body, good[:32], clientSecret, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := incident.VerifySentry(c.body, c.signature, c.secret); got != c.want {
				t.Errorf("VerifySentry = %v, want %v", got, c.want)
			}
		})
	}
}

func TestVerifySecret(t *testing.T) {
	for _, c := range []struct {
		name, presented, secret string
		want                    bool
	}{
		{"the configured secret verifies", "s3cret-value", "s3cret-value", true},
		{"another does not", "s3cret-valuf", "s3cret-value", false},
		{"a prefix does not", "s3cret", "s3cret-value", false},
		{"an empty secret never verifies", "", "", false},
		{"nothing presented does not", "", "s3cret-value", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := incident.VerifySecret(c.presented, c.secret); got != c.want {
				t.Errorf("VerifySecret = %v, want %v", got, c.want)
			}
		})
	}
}

func parseSentry(t *testing.T, name, resource string) incident.Delivery {
	t.Helper()
	body := payload(t, name)
	d, err := incident.ParseSentry(body, resource, sign(body, clientSecret), clientSecret)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParseSentryIssue(t *testing.T) {
	got := parseSentry(t, "sentry_issue_created.json", incident.SentryResourceIssue)
	want := incident.Delivery{Observations: []incident.Observation{{
		Key:        incident.Key{Provider: "sentry", Organization: "shopco", Project: "checkout", Fingerprint: "4431907265"},
		Title:      "TypeError: Cannot read properties of undefined (reading 'total')",
		Culprit:    "app/cart/summary.tsx in renderTotals",
		Level:      "error",
		Status:     "unresolved",
		EventCount: 17,
		Permalink:  "https://sentry.example.com/organizations/shopco/issues/4431907265/",
		FirstSeen:  time.Date(2026, 2, 27, 8, 14, 3, 512000000, time.UTC),
		LastSeen:   time.Date(2026, 2, 27, 9, 2, 41, 90000000, time.UTC),
	}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("delivery (-want +got):\n%s", d)
	}
}

// TestParseSentryEventAlert: the alert's event names the issue, and the
// same link as the issue delivery: same key, the issue's page.
func TestParseSentryEventAlert(t *testing.T) {
	got := parseSentry(t, "sentry_event_alert.json", incident.SentryResourceEventAlert)
	want := incident.Delivery{Observations: []incident.Observation{{
		Key:       incident.Key{Provider: "sentry", Organization: "shopco", Project: "checkout", Fingerprint: "4431907265"},
		Title:     "TypeError: Cannot read properties of undefined (reading 'total')",
		Culprit:   "app/cart/summary.tsx in renderTotals",
		Level:     "error",
		Permalink: "https://sentry.example.com/organizations/shopco/issues/4431907265/",
		LastSeen:  time.Date(2026, 2, 27, 9, 5, 12, 331000000, time.UTC),
	}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("delivery (-want +got):\n%s", d)
	}
	issue := parseSentry(t, "sentry_issue_created.json", incident.SentryResourceIssue)
	if got.Observations[0].Key != issue.Observations[0].Key {
		t.Errorf("alert key %v, issue key %v: one Sentry issue would have two links", got.Observations[0].Key, issue.Observations[0].Key)
	}
}

// TestSentryOrganizationFromTheURLs: the organization is read from the
// signed payload's URLs, whichever of them names it.
func TestSentryOrganizationFromTheURLs(t *testing.T) {
	for _, c := range []struct {
		name, issue string
		org         string
	}{
		{"an API project URL", `"project_url":"https://sentry.example.com/api/0/projects/shopco/checkout/"`, "shopco"},
		{"a web URL", `"web_url":"https://sentry.example.com/organizations/shopco/issues/1/"`, "shopco"},
		{"an organization's own host", `"web_url":"https://shopco.sentry.io/issues/1/"`, "shopco"},
		{"a region's host names none", `"url":"https://us.sentry.io/api/0/issues/1/"`, ""},
		{"no URL names none", `"permalink":null`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(`{"action":"created","data":{"issue":{"id":"1","project":{"slug":"checkout"},` + c.issue + `}}}`)
			d, err := incident.ParseSentry(body, incident.SentryResourceIssue, sign(body, clientSecret), clientSecret)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Observations[0].Organization; got != c.org {
				t.Errorf("organization %q, want %q", got, c.org)
			}
		})
	}
}

func TestParseSentryIgnoresOtherResources(t *testing.T) {
	for _, resource := range []string{"installation", "metric_alert", "comment", "error", ""} {
		got := parseSentry(t, "sentry_installation.json", resource)
		if len(got.Observations) != 0 || got.Ignored == "" {
			t.Errorf("resource %q: %+v", resource, got)
		}
	}
}

func TestParseSentryRefuses(t *testing.T) {
	body := payload(t, "sentry_issue_created.json")
	_, err := incident.ParseSentry(body, incident.SentryResourceIssue, sign(body, "wrong"), clientSecret)
	cpstoretest.WantCode(t, err, wq.EUNAUTHORIZED)
	_, err = incident.ParseSentry(body, incident.SentryResourceIssue, sign(body, ""), "")
	cpstoretest.WantCode(t, err, wq.EUNAUTHORIZED)

	for _, c := range []struct{ name, resource, body, field string }{
		{"an issue delivery without an issue", "issue", `{"action":"created","data":{}}`, "data.issue"},
		{"an alert without an event", "event_alert", `{"action":"triggered","data":{"triggered_rule":"x"}}`, "data.event"},
		{"an issue without an id", "issue", `{"data":{"issue":{"title":"x","project":{"slug":"web"}}}}`, "fingerprint"},
		{"not JSON", "issue", `<html>`, "data.issue"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := []byte(c.body)
			_, err := incident.ParseSentry(b, c.resource, sign(b, clientSecret), clientSecret)
			cpstoretest.WantCode(t, err, wq.EINVALID)
			if !strings.Contains(err.Error(), c.field) {
				t.Errorf("error %v does not name %s", err, c.field)
			}
		})
	}
}

func TestParseGlitchTip(t *testing.T) {
	const secret = "glitchtip-shared-secret"
	got, err := incident.ParseGlitchTip(payload(t, "glitchtip_alert.json"), secret, secret)
	if err != nil {
		t.Fatal(err)
	}
	want := incident.Delivery{Observations: []incident.Observation{
		{
			Key:       incident.Key{Provider: "glitchtip", Organization: "shopco", Project: "Orders API", Fingerprint: "8812"},
			Title:     "ValueError: invalid literal for int() with base 10: 'abc'",
			Culprit:   "orders.views.create_order",
			Permalink: "https://glitchtip.example.com/shopco/issues/8812",
		},
		{
			Key:       incident.Key{Provider: "glitchtip", Organization: "shopco", Project: "Orders API", Fingerprint: "8813"},
			Title:     `OperationalError: connection to server at "db" failed`, // one line
			Culprit:   "orders.db.connect",
			Permalink: "https://glitchtip.example.com/shopco/issues/8813",
		},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("delivery (-want +got):\n%s", d)
	}

	got, err = incident.ParseGlitchTip(payload(t, "glitchtip_uptime.json"), secret, secret)
	if err != nil || len(got.Observations) != 0 || !strings.Contains(got.Ignored, "GlitchTip Uptime Alert") {
		t.Errorf("an uptime alert: %+v, %v", got, err)
	}

	for _, c := range []struct{ name, presented, secret string }{
		{"a wrong secret", "guess", secret},
		{"no secret configured", "", ""},
	} {
		_, err := incident.ParseGlitchTip(payload(t, "glitchtip_alert.json"), c.presented, c.secret)
		cpstoretest.WantCode(t, err, wq.EUNAUTHORIZED)
	}
	_, err = incident.ParseGlitchTip([]byte(`{"attachments": "no"}`), secret, secret)
	cpstoretest.WantCode(t, err, wq.EINVALID)
	_, err = incident.ParseGlitchTip([]byte(`{"attachments":[{"title":"x","title_link":"https://g.example/o/issues/1","fields":[{"title":"Project","value":"a\u0000b"}]}]}`), secret, secret)
	cpstoretest.WantCode(t, err, wq.EINVALID)
}

// A parsed observation goes through the bridge as it is: the deliveries
// of one provider issue meet on one link.
func TestParsedDeliveriesMeetOnOneLink(t *testing.T) {
	s := newMemStore()
	w := newWorld(t, s)
	w.bridge = w.newBridgeWith(s, []incident.Project{{Provider: "sentry", Organization: "shopco", Project: "checkout", Forge: "gitea", Repo: "shop/checkout"}})
	for _, d := range []incident.Delivery{
		parseSentry(t, "sentry_issue_created.json", incident.SentryResourceIssue),
		parseSentry(t, "sentry_event_alert.json", incident.SentryResourceEventAlert),
	} {
		w.reconcile(d.Observations[0], true)
	}
	links := w.links()
	if len(links) != 1 || len(w.forge.calls()) != 1 {
		t.Fatalf("%d links and %d issues, want 1 and 1", len(links), len(w.forge.calls()))
	}
	if l := links[0]; l.EventCount != 17 || !l.LastSeen.Equal(time.Date(2026, 2, 27, 9, 5, 12, 331000000, time.UTC)) || l.Status != "unresolved" {
		t.Errorf("link %+v", l)
	}
}

func FuzzParseSentry(f *testing.F) {
	f.Add(payload(f, "sentry_issue_created.json"), incident.SentryResourceIssue)
	f.Add(payload(f, "sentry_event_alert.json"), incident.SentryResourceEventAlert)
	f.Add(payload(f, "sentry_installation.json"), "installation")
	f.Add([]byte(`{"data":{"event":{"issue_id":12,"project":"7","url":"https://s/api/0/projects/o/p/"}}}`), incident.SentryResourceEventAlert)
	f.Fuzz(func(t *testing.T, body []byte, resource string) {
		d, err := incident.ParseSentry(body, resource, sign(body, clientSecret), clientSecret)
		checkDelivery(t, d, err, incident.ProviderSentry)
		if _, err := incident.ParseSentry(body, resource, sign(body, clientSecret+"x"), clientSecret); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
			t.Fatalf("a forged signature: %v", err)
		}
	})
}

func FuzzParseGlitchTip(f *testing.F) {
	f.Add(payload(f, "glitchtip_alert.json"))
	f.Add(payload(f, "glitchtip_uptime.json"))
	f.Add([]byte(`{"attachments":[{"title_link":"https://g/issues/1/"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := incident.ParseGlitchTip(body, "secret", "secret")
		checkDelivery(t, d, err, incident.ProviderGlitchTip)
	})
}

// checkDelivery holds a parser to its promise: an error with a code, or
// observations that validate, or an Ignored reason.
func checkDelivery(t *testing.T, d incident.Delivery, err error, provider string) {
	t.Helper()
	if err != nil {
		if code := wq.ErrorCode(err); code != wq.EINVALID {
			t.Fatalf("error %v: code %q, want invalid", err, code)
		}
		return
	}
	if (len(d.Observations) == 0) == (d.Ignored == "") {
		t.Fatalf("delivery %+v: want observations or a reason to ignore it", d)
	}
	for _, o := range d.Observations {
		if err := o.Validate(); err != nil || o.Provider != provider {
			t.Fatalf("observation %+v: %v", o, err)
		}
	}
}
