package incident_test

import (
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
