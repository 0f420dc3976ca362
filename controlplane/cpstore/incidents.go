package cpstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

// NewIncidents returns the incident bridge's store (incident.Store) on
// the database of cp, a store New returned: the links' table is in the
// control plane's migration chain, which New registered. It shares cp's
// connections.
func NewIncidents(cp controlplane.Store) (incident.Store, error) {
	s, ok := cp.(*store)
	if !ok {
		return nil, fmt.Errorf("incident store: %T is not a control plane store of cpstore.New", cp)
	}
	return incidents{s}, nil
}

// incidents is the incident bridge's store, on the control plane's.
type incidents struct{ s *store }

var _ incident.Store = incidents{}

const linkCols = `id, provider, organization, project, environment, fingerprint, forge, repo, issue_number, issue_url,
	status, event_count, permalink, first_seen, last_seen, linked_prs, state, claim_token, claimed_at, revision,
	created_at, updated_at`

// byKey selects the link of a key: the unique key's columns.
const byKey = ` WHERE provider = ? AND organization = ? AND project = ? AND environment = ? AND fingerprint = ?`

func keyArgs(k incident.Key, more ...any) []any {
	return append([]any{k.Provider, k.Organization, k.Project, k.Environment, k.Fingerprint}, more...)
}

func scanLink(r row) (incident.Link, error) {
	var l incident.Link
	var state string
	var prs jsonCol
	err := r.Scan(&l.ID, &l.Provider, &l.Organization, &l.Project, &l.Environment, &l.Fingerprint, &l.Forge, &l.Repo,
		&l.IssueNumber, &l.IssueURL, &l.Status, &l.EventCount, &l.Permalink, (*timeCol)(&l.FirstSeen), (*timeCol)(&l.LastSeen),
		&prs, &state, &l.ClaimToken, (*timeCol)(&l.ClaimedAt), &l.Revision, (*timeCol)(&l.CreatedAt), (*timeCol)(&l.UpdatedAt))
	if err != nil {
		return l, err
	}
	l.State = incident.LinkState(state)
	l.LinkedPRs, err = decodeInts(prs)
	return l, err
}

// GetLink returns the link of key.
func (in incidents) GetLink(ctx context.Context, key incident.Key) (*incident.Link, error) {
	l, err := scanLink(in.s.reader().queryRow(ctx, `SELECT `+linkCols+` FROM cp_incident_links`+byKey, keyArgs(key)...))
	if err != nil {
		return nil, notFound(err, "incident link", key.String())
	}
	return &l, nil
}

// ClaimLink inserts l in state creating unless its key has a link. The
// insert does nothing on the unique key: on PostgreSQL it waits for a
// concurrent insert of the key to commit or roll back, and the SELECT
// after it (a statement of its own in READ COMMITTED) then reads that
// row; SQLite's one writer serialises the claims.
func (in incidents) ClaimLink(ctx context.Context, l incident.Link) (*incident.Link, bool, error) {
	if l.ClaimToken == "" {
		return nil, false, wq.Errorf(wq.EINVALID, "claim incident link %s: no claim token", l.Key)
	}
	l.ID = cmp.Or(l.ID, uuid.NewString())
	prs, err := encodeList(l.LinkedPRs)
	if err != nil {
		return nil, false, err
	}
	var got incident.Link
	var claimed bool
	err = in.s.write(ctx, func(c conn) error {
		n, err := c.exec(ctx, `INSERT INTO cp_incident_links (`+linkCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, '', ?, ?, ?, ?, ?, ?, 'creating', ?, ?, 1, ?, ?)
			ON CONFLICT (provider, organization, project, environment, fingerprint) DO NOTHING`,
			l.ID, l.Provider, l.Organization, l.Project, l.Environment, l.Fingerprint, l.Forge, l.Repo,
			l.Status, l.EventCount, l.Permalink, l.FirstSeen, l.LastSeen, prs, l.ClaimToken, l.ClaimedAt, l.CreatedAt, l.UpdatedAt)
		if err != nil {
			return err
		}
		claimed = n == 1
		got, err = scanLink(c.queryRow(ctx, `SELECT `+linkCols+` FROM cp_incident_links`+byKey, keyArgs(l.Key)...))
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("claim incident link %s: %w", l.Key, err)
	}
	return &got, claimed, nil
}

// FinishClaim links the creating link of key to its issue if token
// still holds its claim.
func (in incidents) FinishClaim(ctx context.Context, key incident.Key, token string, issue incident.IssueRef, now time.Time) (*incident.Link, error) {
	if issue.Number <= 0 {
		return nil, wq.Errorf(wq.EINVALID, "finish the claim of incident link %s: issue number %d", key, issue.Number)
	}
	return in.compareAndSet(ctx, "finish the claim of", key, `issue_number = ?, issue_url = ?, state = 'linked', claim_token = ''`,
		[]any{issue.Number, issue.URL}, `state = 'creating' AND claim_token = ?`, []any{token}, now)
}

// UpdateLink writes the observation fields of to over the linked row of
// from's key if its revision is still from's.
func (in incidents) UpdateLink(ctx context.Context, from, to incident.Link, now time.Time) (*incident.Link, error) {
	prs, err := encodeList(to.LinkedPRs)
	if err != nil {
		return nil, err
	}
	return in.compareAndSet(ctx, "update", from.Key,
		`status = ?, event_count = ?, permalink = ?, first_seen = ?, last_seen = ?, linked_prs = ?`,
		[]any{to.Status, to.EventCount, to.Permalink, to.FirstSeen, to.LastSeen, prs},
		`state = 'linked' AND revision = ?`, []any{from.Revision}, now)
}

// TakeOverClaim gives the creating link of key to token if staleToken
// still holds its claim.
func (in incidents) TakeOverClaim(ctx context.Context, key incident.Key, staleToken, token string, now time.Time) (*incident.Link, error) {
	if token == "" || staleToken == "" {
		return nil, wq.Errorf(wq.EINVALID, "take over the claim of incident link %s: no claim token", key)
	}
	return in.compareAndSet(ctx, "take over the claim of", key, `claim_token = ?, claimed_at = ?`, []any{token, now},
		`state = 'creating' AND claim_token = ?`, []any{staleToken}, now)
}

// compareAndSet sets the columns of set (with setArgs) on the link of
// key if it still is as cond (with condArgs) says, bumping its revision
// and updated_at, and returns the row as stored: ECONFLICT naming how the
// row stands when it is not as said, ENOTFOUND when there is none. op
// names the write in errors.
func (in incidents) compareAndSet(ctx context.Context, op string, key incident.Key, set string, setArgs []any, cond string, condArgs []any, now time.Time) (*incident.Link, error) {
	var got incident.Link
	err := in.s.write(ctx, func(c conn) error {
		args := append(append(setArgs, now), keyArgs(key, condArgs...)...)
		var err error
		got, err = scanLink(c.queryRow(ctx, `UPDATE cp_incident_links SET `+set+`, revision = revision + 1, updated_at = ?`+
			byKey+` AND `+cond+` RETURNING `+linkCols, args...))
		if wq.ErrorCode(err) != wq.ENOTFOUND {
			return err
		}
		cur, err := scanLink(c.queryRow(ctx, `SELECT `+linkCols+` FROM cp_incident_links`+byKey, keyArgs(key)...))
		if err != nil {
			return notFound(err, "incident link", key.String())
		}
		return wq.Errorf(wq.ECONFLICT, "incident link %s changed: it is %s at revision %d", key, cur.State, cur.Revision)
	})
	if err != nil {
		return nil, fmt.Errorf("%s incident link %s: %w", op, key, err)
	}
	return &got, nil
}

// ListLinks returns links newest first.
func (in incidents) ListLinks(ctx context.Context, f incident.LinkFilter) ([]incident.Link, error) {
	var w filter
	w.eq("provider", f.Provider)
	w.eq("organization", f.Organization)
	w.eq("project", f.Project)
	w.eq("forge", f.Forge)
	w.eq("repo", f.Repo)
	w.eq("state", string(f.State))
	out, err := queryAll(ctx, in.s.reader(), scanLink, `SELECT `+linkCols+` FROM cp_incident_links`+w.where()+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(w.args, limit(f.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("list incident links: %w", err)
	}
	return out, nil
}

// legacyTable is the old tool's table of links. ImportLegacy reads its
// columns id, provider, organization, project, environment, fingerprint,
// forge, repo, issue_number, issue_url, status, event_count, permalink,
// first_seen, last_seen (times as text or timestamps), linked_prs (a
// JSON array) and created_at; NULL reads as empty everywhere, and the
// scope keys' NULLs are what CollapseLegacy folds.
const legacyTable = "incident_links"

// ImportLegacy imports the legacy links, collapsed, in one transaction.
func (in incidents) ImportLegacy(ctx context.Context, now time.Time) (incident.ImportReport, error) {
	var r incident.ImportReport
	err := in.s.write(ctx, func(c conn) error {
		r = incident.ImportReport{}
		var err error
		if r.Found, err = in.hasTable(ctx, c, legacyTable); err != nil || !r.Found {
			return err
		}
		rows, err := queryAll(ctx, c, scanLegacy, `SELECT CAST(id AS TEXT), COALESCE(provider, ''),
				CAST(organization AS TEXT), CAST(project AS TEXT), CAST(environment AS TEXT),
				COALESCE(fingerprint, ''), COALESCE(forge, ''), COALESCE(repo, ''), COALESCE(CAST(issue_number AS BIGINT), 0),
				COALESCE(issue_url, ''), COALESCE(status, ''), COALESCE(CAST(event_count AS BIGINT), 0), COALESCE(permalink, ''),
				COALESCE(CAST(first_seen AS TEXT), ''), COALESCE(CAST(last_seen AS TEXT), ''),
				COALESCE(CAST(linked_prs AS TEXT), ''), COALESCE(CAST(created_at AS TEXT), '')
			FROM `+legacyTable+` ORDER BY id`)
		if err != nil {
			return wq.Errorf(wq.EINVALID, "read the legacy table %s (want the columns of cpstore's legacyTable): %v", legacyTable, err)
		}
		r.Rows = len(rows)
		keep, drop, err := incident.CollapseLegacy(rows)
		if err != nil {
			return err
		}
		r.Collapsed = len(drop)
		for _, k := range keep {
			l, err := k.Link(now)
			if err != nil {
				return err
			}
			prs, err := encodeList(l.LinkedPRs)
			if err != nil {
				return err
			}
			n, err := c.exec(ctx, `INSERT INTO cp_incident_links (`+linkCols+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'linked', '', NULL, 1, ?, ?)
				ON CONFLICT (provider, organization, project, environment, fingerprint) DO NOTHING`,
				uuid.NewString(), l.Provider, l.Organization, l.Project, l.Environment, l.Fingerprint, l.Forge, l.Repo,
				l.IssueNumber, l.IssueURL, l.Status, l.EventCount, l.Permalink, l.FirstSeen, l.LastSeen, prs, l.CreatedAt, l.UpdatedAt)
			if err != nil {
				return fmt.Errorf("legacy incident link %s: %w", k.ID, err)
			}
			if n == 1 {
				r.Imported++
			} else {
				r.Existing++
			}
		}
		return nil
	})
	if err != nil {
		return incident.ImportReport{}, fmt.Errorf("import legacy incident links: %w", err)
	}
	return r, nil
}

// hasTable says whether the database has a table of that name: on
// PostgreSQL, on the connection's search path.
func (in incidents) hasTable(ctx context.Context, c conn, name string) (bool, error) {
	var n int
	if err := c.queryRow(ctx, c.d.TableExists, name).Scan(&n); err != nil {
		return false, fmt.Errorf("look for the table %s: %w", name, err)
	}
	return n > 0, nil
}

// scanLegacy reads one legacy row (see ImportLegacy's SELECT): EINVALID
// naming the row and column for a time or list it cannot read.
func scanLegacy(r row) (incident.LegacyLink, error) {
	var l incident.LegacyLink
	var first, last, prs, created string
	if err := r.Scan(&l.ID, &l.Provider, &l.Organization, &l.Project, &l.Environment, &l.Fingerprint, &l.Forge, &l.Repo,
		&l.IssueNumber, &l.IssueURL, &l.Status, &l.EventCount, &l.Permalink, &first, &last, &prs, &created); err != nil {
		return l, err
	}
	var err error
	for _, t := range []struct {
		column string
		text   string
		into   *time.Time
	}{{"first_seen", first, &l.FirstSeen}, {"last_seen", last, &l.LastSeen}, {"created_at", created, &l.CreatedAt}} {
		if *t.into, err = legacyTime(t.text); err != nil {
			return l, wq.Errorf(wq.EINVALID, "legacy incident link %s: %s %q is not a time", l.ID, t.column, t.text)
		}
	}
	if strings.TrimSpace(prs) != "" {
		if err := json.Unmarshal([]byte(prs), &l.LinkedPRs); err != nil {
			return l, wq.Errorf(wq.EINVALID, "legacy incident link %s: linked_prs %q is not a JSON list of numbers", l.ID, prs)
		}
	}
	return l, nil
}

// legacyLayouts are the shapes a legacy time comes in: RFC 3339 (Python's
// isoformat, with or without a zone), SQLite's datetime(), PostgreSQL's
// timestamptz as text. A time without a zone is UTC.
var legacyLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999",
}

func legacyTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range legacyLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %q", s)
}
