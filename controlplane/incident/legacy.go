package incident

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// LegacyLink is one row of the old tool's incident_links table as the
// store reads it. Its scope keys may be NULL (nil): the old tool stored
// an absent key as NULL, so its unique key never met, and one provider
// issue could be linked more than once. Every other column reads NULL as
// its zero value.
type LegacyLink struct {
	ID           string
	Provider     string
	Organization *string
	Project      *string
	Environment  *string
	Fingerprint  string
	Forge        string
	Repo         string
	IssueNumber  int64
	IssueURL     string
	Status       string
	EventCount   int64
	Permalink    string
	FirstSeen    time.Time
	LastSeen     time.Time
	LinkedPRs    []int64
	CreatedAt    time.Time
}

// Key is the row's canonical key: a NULL scope key is "" (hard rule 6).
func (l LegacyLink) Key() Key {
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return Key{Provider: l.Provider, Organization: deref(l.Organization), Project: deref(l.Project),
		Environment: deref(l.Environment), Fingerprint: l.Fingerprint}
}

// legacyFields are what the rows of one key must agree on to collapse:
// their forge target and every observation field (the key is theirs in
// common), in the order a conflict names them.
var legacyFields = []struct {
	name  string
	equal func(a, b LegacyLink) bool
}{
	{"forge", func(a, b LegacyLink) bool { return a.Forge == b.Forge }},
	{"repo", func(a, b LegacyLink) bool { return a.Repo == b.Repo }},
	{"issue_number", func(a, b LegacyLink) bool { return a.IssueNumber == b.IssueNumber }},
	{"issue_url", func(a, b LegacyLink) bool { return a.IssueURL == b.IssueURL }},
	{"status", func(a, b LegacyLink) bool { return a.Status == b.Status }},
	{"event_count", func(a, b LegacyLink) bool { return a.EventCount == b.EventCount }},
	{"permalink", func(a, b LegacyLink) bool { return a.Permalink == b.Permalink }},
	{"first_seen", func(a, b LegacyLink) bool { return a.FirstSeen.Equal(b.FirstSeen) }},
	{"last_seen", func(a, b LegacyLink) bool { return a.LastSeen.Equal(b.LastSeen) }},
	{"linked_prs", func(a, b LegacyLink) bool { return slices.Equal(sortedPRs(a.LinkedPRs), sortedPRs(b.LinkedPRs)) }},
}

// LegacyConflict is one provider issue the old tool linked more than once
// in ways that disagree.
type LegacyConflict struct {
	Key    Key
	IDs    []string // every legacy row of the key
	Fields []string // the fields in which some of them disagree
}

// LegacyConflictError fails an import whose legacy links conflict. It
// reads as ECONFLICT.
type LegacyConflictError struct {
	Conflicts []LegacyConflict
}

func (e *LegacyConflictError) Error() string {
	var b strings.Builder
	b.WriteString("legacy incident links disagree, nothing imported:")
	for _, c := range e.Conflicts {
		fmt.Fprintf(&b, " %s: rows %s differ in %s;", c.Key, strings.Join(c.IDs, ", "), strings.Join(c.Fields, ", "))
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Unwrap gives the error its application code.
func (e *LegacyConflictError) Unwrap() error {
	return &wq.Error{Code: wq.ECONFLICT, Message: e.Error()}
}

// CollapseLegacy folds the old tool's duplicate links (hard rule 7). Rows
// are grouped by their canonical key (provider, scope keys with NULL as
// "", fingerprint). A group whose rows agree on their forge target
// (forge, repo, issue number, issue URL) and on every observation field
// (status, event count, permalink, first and last seen, linked pull
// requests, compared as sets) keeps one row, the earliest created (the
// first given on a tie), and drops the others' ids. If any group
// disagrees, it fails closed: a *LegacyConflictError lists every such
// group's rows and fields, and nothing is kept or dropped. Keep is in
// the order of the groups' first rows.
func CollapseLegacy(rows []LegacyLink) (keep []LegacyLink, drop []string, err error) {
	var order []Key
	groups := map[Key][]LegacyLink{}
	for _, r := range rows {
		k := r.Key()
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var conflicts []LegacyConflict
	for _, k := range order {
		g := groups[k]
		var fields []string
		for _, f := range legacyFields {
			if slices.ContainsFunc(g[1:], func(r LegacyLink) bool { return !f.equal(g[0], r) }) {
				fields = append(fields, f.name)
			}
		}
		if len(fields) > 0 {
			ids := make([]string, len(g))
			for i, r := range g {
				ids[i] = r.ID
			}
			conflicts = append(conflicts, LegacyConflict{Key: k, IDs: ids, Fields: fields})
			continue
		}
		kept := slices.MinFunc(g, func(a, b LegacyLink) int { return compareCreated(a.CreatedAt, b.CreatedAt) })
		keep = append(keep, kept)
		for _, r := range g {
			if r.ID != kept.ID {
				drop = append(drop, r.ID)
			}
		}
	}
	if len(conflicts) > 0 {
		return nil, nil, &LegacyConflictError{Conflicts: conflicts}
	}
	return keep, drop, nil
}

// compareCreated orders creation times, an unknown (zero) one last.
func compareCreated(a, b time.Time) int {
	switch {
	case a.IsZero() && b.IsZero():
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	}
	return a.Compare(b)
}

// Link is the row l imports as: linked to its forge issue, its key
// canonical, its texts redacted and its permalink cleaned as an
// observation's. It refuses a row the bridge could not have written
// (EINVALID naming the row): an unknown provider, no fingerprint, no
// forge issue.
func (l LegacyLink) Link(now time.Time) (Link, error) {
	bad := func(err error) error { return fmt.Errorf("legacy incident link %s: %w", l.ID, err) }
	obs := Observation{Key: l.Key(), Status: l.Status, EventCount: l.EventCount, Permalink: l.Permalink,
		FirstSeen: l.FirstSeen, LastSeen: l.LastSeen, LinkedPRs: l.LinkedPRs}
	if err := obs.Validate(); err != nil {
		return Link{}, bad(err)
	}
	obs, err := obs.redacted()
	if err != nil {
		return Link{}, bad(err)
	}
	if l.Forge == "" || l.Repo == "" || l.IssueNumber <= 0 {
		return Link{}, bad(wq.Errorf(wq.EINVALID, "names no forge issue (forge %q, repo %q, issue %d)", l.Forge, l.Repo, l.IssueNumber))
	}
	for _, f := range []struct{ name, value string }{{"forge", l.Forge}, {"repo", l.Repo}, {"issue_url", l.IssueURL}} {
		if err := checkText(f.name, f.value, MaxField); err != nil {
			return Link{}, bad(err)
		}
	}
	created := cmp.Or(storedTime(l.CreatedAt), now)
	return Link{Key: obs.Key, Forge: l.Forge, Repo: l.Repo, IssueNumber: l.IssueNumber, IssueURL: safePermalink(l.IssueURL),
		Status: obs.Status, EventCount: obs.EventCount, Permalink: obs.Permalink, FirstSeen: obs.FirstSeen,
		LastSeen: obs.LastSeen, LinkedPRs: obs.LinkedPRs, State: LinkLinked, CreatedAt: created, UpdatedAt: now}, nil
}

// ImportReport says what Store.ImportLegacy found and did.
type ImportReport struct {
	Found     bool `json:"found"`     // the legacy table exists
	Rows      int  `json:"rows"`      // its rows
	Imported  int  `json:"imported"`  // links written
	Collapsed int  `json:"collapsed"` // duplicates folded into another row
	Existing  int  `json:"existing"`  // links whose key was linked already, left as they were
}
