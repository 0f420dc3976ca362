package incident_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore/cpstoretest"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

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
