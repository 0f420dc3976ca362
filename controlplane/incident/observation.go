package incident

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/cptype/incidenttype"
	"github.com/workqueue-dev/workqueue/secrets"
)

// Providers the bridge reads.
const (
	ProviderSentry    = "sentry"
	ProviderGlitchTip = "glitchtip"
)

// Bounds of an observation's fields, in bytes.
const (
	MaxTitle     = 512
	MaxField     = 2048 // every other string
	MaxLinkedPRs = 100
)

// Key names one provider issue: the link's unique key (declared once, for
// the bridge and the wire, in package incidenttype).
type Key = incidenttype.Key

// Observation is what a provider says of one of its issues, as the bridge
// takes it (from a webhook parser or the API).
type Observation struct {
	Key
	Title      string    `json:"title,omitempty"`
	Culprit    string    `json:"culprit,omitempty"`
	Level      string    `json:"level,omitempty"`
	Status     string    `json:"status,omitempty"` // the provider's: unresolved, resolved, ignored…; "" when it did not say
	EventCount int64     `json:"event_count,omitempty"`
	Permalink  string    `json:"permalink,omitempty"`
	FirstSeen  time.Time `json:"first_seen,omitzero"`
	LastSeen   time.Time `json:"last_seen,omitzero"`
	// LinkedPRs are pull requests of the forge repository said to
	// address the issue.
	LinkedPRs []int64 `json:"linked_prs,omitempty"`
}

// Validate refuses an observation the bridge cannot take, with an
// EINVALID error naming the field: an unknown provider, no fingerprint,
// a string over its bound or holding a control character, a scope key
// or fingerprint with surrounding blanks (it would not be canonical), a
// permalink that is not an absolute http(s) URL, a negative count.
func (o Observation) Validate() error {
	switch o.Provider {
	case ProviderSentry, ProviderGlitchTip:
	case "":
		return invalid("provider", "is required (sentry or glitchtip)")
	default:
		return invalid("provider", "is %q, want sentry or glitchtip", o.Provider)
	}
	if o.Fingerprint == "" {
		return invalid("fingerprint", "is required: the provider's issue id")
	}
	for _, f := range []struct {
		name, value string
		max         int
		key         bool
	}{
		{"organization", o.Organization, MaxField, true},
		{"project", o.Project, MaxField, true},
		{"environment", o.Environment, MaxField, true},
		{"fingerprint", o.Fingerprint, MaxField, true},
		{"title", o.Title, MaxTitle, false},
		{"culprit", o.Culprit, MaxField, false},
		{"level", o.Level, MaxField, false},
		{"status", o.Status, MaxField, false},
		{"permalink", o.Permalink, MaxField, false},
	} {
		if err := checkText(f.name, f.value, f.max); err != nil {
			return err
		}
		if f.key && strings.TrimSpace(f.value) != f.value {
			return invalid(f.name, "has leading or trailing blanks")
		}
	}
	if o.Permalink != "" {
		if _, err := cleanPermalink(o.Permalink); err != nil {
			return invalid("permalink", "%v", err)
		}
	}
	if o.EventCount < 0 {
		return invalid("event_count", "is negative")
	}
	if len(o.LinkedPRs) > MaxLinkedPRs {
		return invalid("linked_prs", "has %d entries, at most %d", len(o.LinkedPRs), MaxLinkedPRs)
	}
	for i, n := range o.LinkedPRs {
		if n <= 0 {
			return invalid(fmt.Sprintf("linked_prs[%d]", i), "is %d, want a pull request number", n)
		}
	}
	return nil
}

func invalid(field, format string, args ...any) error {
	return wq.Errorf(wq.EINVALID, "observation %s %s", field, fmt.Sprintf(format, args...))
}

// checkText refuses s over max bytes, not UTF-8, or holding a control
// or bidirectional formatting character (none belongs in a one-line
// field, and the latter can make a title read otherwise than it is).
func checkText(field, s string, max int) error {
	if len(s) > max {
		return invalid(field, "is %d bytes long, at most %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return invalid(field, "is not UTF-8")
	}
	if i := strings.IndexFunc(s, forbidden); i >= 0 {
		return invalid(field, "holds the control character %U at byte %d", []rune(s[i:])[0], i)
	}
	return nil
}

func forbidden(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// flatten makes provider text a valid one-line field: control
// characters become spaces, blanks are trimmed, and it is cut to max
// bytes on a rune boundary. Parsers use it on titles and culprits, which
// providers may send multi-line.
func flatten(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if forbidden(r) {
			return ' '
		}
		return r
	}, s)
	return truncate(strings.TrimSpace(s), max)
}

// truncate cuts s to at most max bytes without splitting a rune.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// redacted is o as the bridge keeps and shows it: secrets masked in its
// texts, its permalink reduced to scheme, host and path, its times
// truncated to what the store keeps, its pull requests sorted and
// deduplicated. A key field that would change under redaction is refused
// (EINVALID): it looks like a secret, and a key must stay as the provider
// gave it. o must be valid.
func (o Observation) redacted() (Observation, error) {
	for _, f := range []struct{ name, value string }{
		{"organization", o.Organization}, {"project", o.Project}, {"environment", o.Environment}, {"fingerprint", o.Fingerprint},
	} {
		if secrets.Text(f.value) != f.value {
			return Observation{}, invalid(f.name, "looks like it holds a secret")
		}
	}
	o.Title = truncate(secrets.Text(o.Title), MaxTitle)
	o.Culprit = truncate(secrets.Text(o.Culprit), MaxField)
	o.Level = truncate(secrets.Text(o.Level), MaxField)
	o.Status = truncate(secrets.Text(o.Status), MaxField)
	o.Permalink = safePermalink(o.Permalink)
	o.FirstSeen, o.LastSeen = storedTime(o.FirstSeen), storedTime(o.LastSeen)
	o.LinkedPRs = sortedPRs(o.LinkedPRs)
	return o, nil
}

// storedTime is t as the store keeps it: UTC, to the microsecond.
func storedTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

func sortedPRs(prs []int64) []int64 {
	if len(prs) == 0 {
		return nil
	}
	out := slices.Clone(prs)
	slices.Sort(out)
	return slices.Compact(out)
}

// cleanPermalink is raw reduced to its scheme, host and path: user
// information (a DSN's key), the query (tokens) and the fragment go. It
// refuses what is not an absolute http or https URL.
func cleanPermalink(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("is not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("is not an absolute http or https URL")
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String(), nil
}

// safePermalink is raw cleaned and redacted; "" when it is not a URL.
func safePermalink(raw string) string {
	clean, err := cleanPermalink(raw)
	if err != nil {
		return ""
	}
	return truncate(secrets.Text(clean), MaxField)
}

// resolved says whether a provider status means the issue needs no
// work: the bridge files no issue for it (it may still update a link).
func resolved(status string) bool {
	switch strings.ToLower(status) {
	case "resolved", "ignored", "archived", "muted":
		return true
	}
	return false
}
