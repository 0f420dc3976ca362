package incident

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// MaxDeliveryBytes bounds a webhook body the parsers read.
const MaxDeliveryBytes = 4 << 20

// Sentry integration-platform resources (the Sentry-Hook-Resource
// header) the bridge reads; every other one is ignored.
const (
	SentryResourceIssue      = "issue"
	SentryResourceEventAlert = "event_alert"
)

// Delivery is what one authenticated webhook delivery observed. A
// delivery about something the bridge does not read (another resource,
// an alert about no issue) is not an error: Ignored says what it was.
type Delivery struct {
	Observations []Observation `json:"observations,omitempty"`
	Ignored      string        `json:"ignored,omitempty"`
}

// VerifySentry reports whether signature (the Sentry-Hook-Signature
// header) is the hex HMAC-SHA256 of the raw body under the integration's
// client secret, compared in constant time. An empty secret never
// verifies.
func VerifySentry(body []byte, signature, secret string) bool {
	return secret != "" && forge.VerifyHMAC(body, signature, secret)
}

// VerifySecret reports whether the secret a GlitchTip delivery presented
// (in its URL or a header, as the receiver takes it) is the configured
// one, in constant time whatever their lengths. An empty secret never
// verifies.
func VerifySecret(presented, secret string) bool {
	if secret == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(presented)), sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// ParseSentry authenticates and reads one Sentry integration-platform
// delivery: resource and signature are its Sentry-Hook-Resource and
// Sentry-Hook-Signature headers, secret the integration's client secret.
//
// The issue resource (any action: created, resolved, unresolved,
// assigned, archived) observes data.issue; event_alert (an alert rule's
// action) observes the issue of data.event. The fingerprint is Sentry's
// issue id (not its short id, which changes when an issue moves).
//
// The organization is read from the payload's own URLs
// (/api/0/projects/{org}/{project}/, /organizations/{org}/), else from
// the installation when it names it; Sentry's documented issue example
// has neither (the installation names only its uuid), and the bridge then
// files it under the one project configured for its slug. The receiver's
// URL is one for the integration; the body is signed, so its URLs are the integration's
// word. The environment is left "" (the scope is the Sentry project):
// a Sentry issue spans environments and the issue resource names none,
// so scoping alerts by their event's environment would split one Sentry
// issue over several links and forge issues.
//
// EUNAUTHORIZED when the signature does not verify; EINVALID for a body
// that is not such a delivery.
func ParseSentry(body []byte, resource, signature, secret string) (Delivery, error) {
	if !VerifySentry(body, signature, secret) {
		return Delivery{}, wq.Errorf(wq.EUNAUTHORIZED, "sentry delivery: the signature does not verify")
	}
	if len(body) > MaxDeliveryBytes {
		return Delivery{}, wq.Errorf(wq.EINVALID, "sentry delivery: %d bytes, at most %d", len(body), MaxDeliveryBytes)
	}
	var d struct {
		Action string `json:"action"`
		Data   struct {
			Issue *sentryIssue `json:"issue"`
			Event *sentryEvent `json:"event"`
		} `json:"data"`
		// Installation names the organization when Sentry says so (an
		// installation's own webhooks do); else only its uuid.
		Installation struct {
			Organization struct {
				Slug string `json:"slug"`
			} `json:"organization"`
		} `json:"installation"`
	}
	var obs Observation
	switch resource {
	case SentryResourceIssue:
		if err := json.Unmarshal(body, &d); err != nil || d.Data.Issue == nil {
			return Delivery{}, wq.Errorf(wq.EINVALID, "sentry issue delivery: want data.issue (%v)", err)
		}
		obs = d.Data.Issue.observation()
	case SentryResourceEventAlert:
		if err := json.Unmarshal(body, &d); err != nil || d.Data.Event == nil {
			return Delivery{}, wq.Errorf(wq.EINVALID, "sentry event_alert delivery: want data.event (%v)", err)
		}
		obs = d.Data.Event.observation()
	default:
		return Delivery{Ignored: fmt.Sprintf("sentry resource %q is not read", truncate(resource, 64))}, nil
	}
	if obs.Organization == "" {
		// No URL named it: the installation may; else the bridge files it
		// under the one project configured for its slug (route).
		obs.Organization = strings.TrimSpace(d.Installation.Organization.Slug)
	}
	if err := obs.Validate(); err != nil {
		return Delivery{}, fmt.Errorf("sentry %s delivery: %w", resource, err)
	}
	return Delivery{Observations: []Observation{obs}}, nil
}

// sentryIssue is data.issue of an issue delivery.
type sentryIssue struct {
	ID         flexString `json:"id"`
	Title      string     `json:"title"`
	Culprit    string     `json:"culprit"`
	Level      string     `json:"level"`
	Status     string     `json:"status"`
	Count      flexString `json:"count"`
	FirstSeen  string     `json:"firstSeen"`
	LastSeen   string     `json:"lastSeen"`
	Permalink  string     `json:"permalink"`
	WebURL     string     `json:"web_url"`
	URL        string     `json:"url"`
	ProjectURL string     `json:"project_url"`
	Project    struct {
		Slug string `json:"slug"`
	} `json:"project"`
}

func (i *sentryIssue) observation() Observation {
	org, _ := sentryScope(i.ProjectURL, i.WebURL, i.Permalink, i.URL)
	count, _ := strconv.ParseInt(string(i.Count), 10, 64)
	return Observation{
		Key:        Key{Provider: ProviderSentry, Organization: org, Project: strings.TrimSpace(i.Project.Slug), Fingerprint: strings.TrimSpace(string(i.ID))},
		Title:      flatten(i.Title, MaxTitle),
		Culprit:    flatten(i.Culprit, MaxField),
		Level:      flatten(i.Level, MaxField),
		Status:     flatten(i.Status, MaxField),
		EventCount: max(count, 0),
		Permalink:  permalinkOf(i.Permalink, i.WebURL),
		FirstSeen:  parseTime(i.FirstSeen),
		LastSeen:   parseTime(i.LastSeen),
	}
}

// sentryEvent is data.event of an event_alert delivery.
type sentryEvent struct {
	IssueID  flexString `json:"issue_id"`
	Title    string     `json:"title"`
	Culprit  string     `json:"culprit"`
	Level    string     `json:"level"`
	URL      string     `json:"url"`
	WebURL   string     `json:"web_url"`
	IssueURL string     `json:"issue_url"`
	Project  flexString `json:"project"` // the project's numeric id
	Datetime string     `json:"datetime"`
}

func (e *sentryEvent) observation() Observation {
	org, project := sentryScope(e.URL, e.WebURL, e.IssueURL)
	if project == "" {
		// No URL names the project's slug: its id is the best there
		// is, and names the project in a refusal.
		project = strings.TrimSpace(string(e.Project))
	}
	// The event's web page is one of many: link the issue's.
	web := e.WebURL
	if i := strings.Index(web, "/events/"); i >= 0 {
		web = web[:i+1]
	}
	return Observation{
		Key:       Key{Provider: ProviderSentry, Organization: org, Project: project, Fingerprint: strings.TrimSpace(string(e.IssueID))},
		Title:     flatten(e.Title, MaxTitle),
		Culprit:   flatten(e.Culprit, MaxField),
		Level:     flatten(e.Level, MaxField),
		Permalink: permalinkOf(web),
		LastSeen:  parseTime(e.Datetime),
	}
}

// sentryScope reads the organization (and the project, where it is
// named) from Sentry URLs: /api/0/projects/{org}/{project}/… names both,
// /organizations/{org}/… the organization, and so does a sentry.io host
// of the organization's own ({org}.sentry.io, not a region's). The first
// URL that names it wins.
func sentryScope(urls ...string) (org, project string) {
	var host string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		seg := strings.Split(strings.Trim(u.Path, "/"), "/")
		for i := 0; i+1 < len(seg); i++ {
			switch seg[i] {
			case "projects":
				if org == "" {
					org = seg[i+1]
				}
				if project == "" && i+2 < len(seg) {
					project = seg[i+2]
				}
			case "organizations":
				if org == "" {
					org = seg[i+1]
				}
			}
		}
		if label, ok := strings.CutSuffix(u.Hostname(), ".sentry.io"); ok && host == "" && !strings.Contains(label, ".") {
			switch label {
			case "us", "de", "www":
			default:
				host = label
			}
		}
	}
	return cmp.Or(org, host), project
}

// ParseGlitchTip authenticates and reads one GlitchTip alert delivery (a
// webhook recipient of an alert: Slack-compatible JSON, one attachment
// per issue): presented is the secret the delivery carried, secret the
// configured one.
//
// Each attachment whose title_link is an issue page
// ({GLITCHTIP_URL}/{org}/issues/{id}) observes that issue: the
// fingerprint is its id, the organization the slug before /issues/, the
// project the attachment's Project field (GlitchTip sends the project's
// name, not its slug: map projects by that name), the title and culprit
// the attachment's title and text. Other attachments (uptime monitors)
// are skipped; a delivery without any issue is Ignored. The environment
// is left "" for the reason ParseSentry gives; GlitchTip's Environment
// field is moreover one of the issue's environments, not always the same.
//
// EUNAUTHORIZED when the secret does not match; EINVALID for a body that
// is not such a delivery, or an issue attachment that does not validate.
func ParseGlitchTip(body []byte, presented, secret string) (Delivery, error) {
	if !VerifySecret(presented, secret) {
		return Delivery{}, wq.Errorf(wq.EUNAUTHORIZED, "glitchtip delivery: the secret does not match")
	}
	if len(body) > MaxDeliveryBytes {
		return Delivery{}, wq.Errorf(wq.EINVALID, "glitchtip delivery: %d bytes, at most %d", len(body), MaxDeliveryBytes)
	}
	var d struct {
		Text        string `json:"text"`
		Attachments []struct {
			Title     string `json:"title"`
			TitleLink string `json:"title_link"`
			Text      string `json:"text"`
			Fields    []struct {
				Title string `json:"title"`
				Value string `json:"value"`
			} `json:"fields"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return Delivery{}, wq.Errorf(wq.EINVALID, "glitchtip delivery: want an alert with attachments (%v)", err)
	}
	var out Delivery
	for i, a := range d.Attachments {
		org, id, ok := glitchTipIssue(a.TitleLink)
		if !ok {
			continue
		}
		obs := Observation{
			Key:       Key{Provider: ProviderGlitchTip, Organization: org, Fingerprint: id},
			Title:     flatten(a.Title, MaxTitle),
			Culprit:   flatten(a.Text, MaxField),
			Permalink: permalinkOf(a.TitleLink),
		}
		for _, f := range a.Fields {
			if strings.EqualFold(strings.TrimSpace(f.Title), "project") {
				obs.Project = strings.TrimSpace(f.Value)
			}
		}
		if err := obs.Validate(); err != nil {
			return Delivery{}, fmt.Errorf("glitchtip delivery, attachments[%d]: %w", i, err)
		}
		out.Observations = append(out.Observations, obs)
	}
	if len(out.Observations) == 0 {
		out.Ignored = fmt.Sprintf("glitchtip alert %q names no issue", truncate(flatten(d.Text, 128), 128))
	}
	return out, nil
}

// glitchTipIssue reads the organization and issue id of an issue page
// URL: the segments around the last "issues".
func glitchTipIssue(link string) (org, id string, ok bool) {
	u, err := url.Parse(link)
	if err != nil {
		return "", "", false
	}
	seg := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := len(seg) - 2; i >= 0; i-- {
		if seg[i] == "issues" && seg[i+1] != "" {
			if i > 0 {
				org = seg[i-1]
			}
			return org, seg[i+1], true
		}
	}
	return "", "", false
}

// permalinkOf is the first of candidates that is an absolute http(s)
// URL, as given (Observation.Validate takes it; the bridge cleans it).
func permalinkOf(candidates ...string) string {
	for _, c := range candidates {
		if c = strings.TrimSpace(c); checkText("permalink", c, MaxField) == nil {
			if _, err := cleanPermalink(c); err == nil {
				return c
			}
		}
	}
	return ""
}

// parseTime reads a provider's time; zero when it is absent or odd (a
// time is not worth refusing an observation over).
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// flexString is a JSON string or number as text: providers send ids and
// counts either way.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		err := json.Unmarshal(b, &s)
		*f = flexString(s)
		return err
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*f = flexString(n)
	return nil
}
