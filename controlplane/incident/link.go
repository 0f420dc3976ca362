package incident

import (
	"context"
	"slices"
	"time"

	"github.com/workqueue-dev/workqueue/cptype/incidenttype"
)

// The link and its states are declared once, for the bridge and the
// wire, in package incidenttype: a Link is the row that ties a provider
// issue to the forge issue filed for it (seed 003's incident_links).
type (
	LinkState = incidenttype.LinkState
	Link      = incidenttype.Link
)

// Link states.
const (
	LinkCreating = incidenttype.LinkCreating
	LinkLinked   = incidenttype.LinkLinked
)

// IssueRef names a forge issue filed for a link.
type IssueRef struct {
	Number int64
	URL    string
}

// LinkFilter selects links for ListLinks; zero fields do not filter.
type LinkFilter struct {
	Provider     string
	Organization string
	Project      string
	Forge        string
	Repo         string
	State        LinkState
	Limit        int // at most this many (the store caps it at 500)
}

// Store is the bridge's persistence: controlplane/cpstore implements it
// on SQLite and PostgreSQL (cpstore.NewIncidents), and both pass the
// conformance suite cpstoretest.RunIncidents. Times come from the caller.
type Store interface {
	// GetLink returns the link of key. ENOTFOUND.
	GetLink(ctx context.Context, key Key) (*Link, error)
	// ClaimLink inserts l in state creating under l.ClaimToken (l.ID is
	// made when empty), unless a link of its key exists: then it returns
	// that link, as stored, and claimed false. However many callers
	// claim one key at once, on however many pools, one inserts.
	// EINVALID for a link without a claim token.
	ClaimLink(ctx context.Context, l Link) (got *Link, claimed bool, err error)
	// FinishClaim sets the issue of the creating link of key, and makes
	// it linked, if its claim token is still token. ENOTFOUND; ECONFLICT
	// when the claim was taken over or the link is linked already.
	FinishClaim(ctx context.Context, key Key, token string, issue IssueRef, now time.Time) (*Link, error)
	// UpdateLink writes the observation fields of to (Status,
	// EventCount, Permalink, FirstSeen, LastSeen, LinkedPRs) over the
	// linked row of from's key if its revision is still from.Revision,
	// and returns the row as stored. ENOTFOUND; ECONFLICT when the row
	// changed meanwhile or is not linked.
	UpdateLink(ctx context.Context, from, to Link, now time.Time) (*Link, error)
	// TakeOverClaim gives the creating link of key to a new claim
	// (token, claimed at now) if its claim token is still staleToken: a
	// compare-and-set, so that of the callers taking over one stale
	// claim one wins. ENOTFOUND; ECONFLICT when the claim changed or
	// the link is linked.
	TakeOverClaim(ctx context.Context, key Key, staleToken, token string, now time.Time) (*Link, error)
	// ListLinks returns links newest first.
	ListLinks(ctx context.Context, f LinkFilter) ([]Link, error)
	// ImportLegacy imports the old tool's links, if its table
	// incident_links exists in the database, collapsed by
	// CollapseLegacy, in one transaction: a link whose key is linked
	// already is left as it is, so importing again changes nothing. The
	// legacy table is only read. A conflict fails it with a
	// *LegacyConflictError (ECONFLICT) and nothing written; a row it
	// cannot read with EINVALID naming the row.
	ImportLegacy(ctx context.Context, now time.Time) (ImportReport, error)
}

// Merge is l with an observation taken in: the count and the seen times
// only grow (the highest count, the earliest first seen, the latest last
// seen), status and permalink follow the observation unless it is older
// than what l holds or does not say, and linked pull requests
// accumulate. changed says whether anything moved, so that a repeated
// delivery writes nothing. obs must be redacted.
func Merge(l Link, obs Observation) (merged Link, changed bool) {
	merged = l
	newer := obs.LastSeen.IsZero() || !obs.LastSeen.Before(l.LastSeen)
	if newer && obs.Status != "" {
		merged.Status = obs.Status
	}
	if newer && obs.Permalink != "" {
		merged.Permalink = obs.Permalink
	}
	merged.EventCount = max(l.EventCount, obs.EventCount)
	if !obs.FirstSeen.IsZero() && (l.FirstSeen.IsZero() || obs.FirstSeen.Before(l.FirstSeen)) {
		merged.FirstSeen = obs.FirstSeen
	}
	if obs.LastSeen.After(l.LastSeen) {
		merged.LastSeen = obs.LastSeen
	}
	merged.LinkedPRs = sortedPRs(append(slices.Clone(l.LinkedPRs), obs.LinkedPRs...))
	changed = merged.Status != l.Status || merged.Permalink != l.Permalink || merged.EventCount != l.EventCount ||
		!merged.FirstSeen.Equal(l.FirstSeen) || !merged.LastSeen.Equal(l.LastSeen) || !slices.Equal(merged.LinkedPRs, l.LinkedPRs)
	return merged, changed
}
