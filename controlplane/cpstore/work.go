package cpstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
)

// workCols read a work row aliased w.
const workCols = `w.id, w.forge, w.repo, w.kind, w.number, w.state, w.title, w.labels, w.author, w.head_sha, w.review_state,
	w.mergeable, w.linked_issues, w.author_session, w.updated_at, w.synced_at`

// workRow scans work rows (workCols, then extra) into one scratch space,
// so that a read of the whole inventory allocates only what it returns.
type workRow struct {
	w                   controlplane.Work
	kind, state, review string
	labels, linked      jsonCol
	dest                []any
}

func newWorkRow(extra ...any) *workRow {
	r := &workRow{}
	w := &r.w
	r.dest = append([]any{&w.ID, &w.Forge, &w.Repo, &r.kind, &w.Number, &r.state, &w.Title, &r.labels, &w.Author, &w.HeadSHA, &r.review,
		&w.Mergeable, &r.linked, &w.AuthorSession, (*timeCol)(&w.UpdatedAt), (*timeCol)(&w.SyncedAt)}, extra...)
	return r
}

func (r *workRow) scan(src row) (controlplane.Work, error) {
	if err := src.Scan(r.dest...); err != nil {
		return controlplane.Work{}, err
	}
	w := r.w
	w.Kind, w.State, w.ReviewState = controlplane.Kind(r.kind), controlplane.State(r.state), controlplane.ReviewState(r.review)
	var err error
	if w.Labels, err = decodeStrings[string](r.labels); err != nil {
		return w, err
	}
	w.LinkedIssues, err = decodeInts(r.linked)
	return w, err
}

// upsertChunk is how many work items one statement writes: 16 arguments
// each keeps well under either database's limit on arguments.
const upsertChunk = 500

// UpsertWork inserts or updates work by its key; an older forge update
// time leaves the stored row as it is. It writes a batch in a few
// multi-row statements, so that a full sync holds its rows briefly.
func (s *store) UpsertWork(ctx context.Context, ws []controlplane.Work, now time.Time) error {
	rows, err := workArgs(ws, now)
	if err == nil {
		err = s.write(ctx, func(c conn) error {
			for chunk := range slices.Chunk(rows, upsertChunk) {
				if _, err := c.exec(ctx, upsertSQL(len(chunk)), slices.Concat(chunk...)...); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("upsert work: %w", err)
	}
	return nil
}

// workArgs checks ws and returns the arguments of each work item, one
// item a key, in key order: every writer locks rows in the same order.
// Items of one key fold as writing them one after the other would.
func workArgs(ws []controlplane.Work, now time.Time) ([][]any, error) {
	ws = slices.Clone(ws)
	slices.SortStableFunc(ws, func(a, b controlplane.Work) int { return compareKeys(a.WorkKey, b.WorkKey) })
	folded := ws[:0]
	for _, w := range ws {
		if err := checkWork(w); err != nil {
			return nil, fmt.Errorf("%s %s#%d of %s: %w", w.Kind, w.Repo, w.Number, w.Forge, err)
		}
		if n := len(folded); n > 0 && folded[n-1].WorkKey == w.WorkKey {
			if prev := &folded[n-1]; !w.UpdatedAt.Before(prev.UpdatedAt) {
				id, author := prev.ID, prev.AuthorSession
				*prev = w
				prev.ID, prev.AuthorSession = id, cmp.Or(w.AuthorSession, author)
			}
			continue
		}
		folded = append(folded, w)
	}
	rows := make([][]any, 0, len(folded))
	for _, w := range folded {
		labels, err := encodeList(w.Labels)
		if err != nil {
			return nil, err
		}
		linked, err := encodeList(w.LinkedIssues)
		if err != nil {
			return nil, err
		}
		rows = append(rows, []any{cmp.Or(w.ID, uuid.NewString()), w.Forge, w.Repo, string(w.Kind), w.Number, string(w.State), w.Title,
			labels, w.Author, w.HeadSHA, string(w.ReviewState), w.Mergeable, linked, w.AuthorSession, w.UpdatedAt, now})
	}
	return rows, nil
}

func checkWork(w controlplane.Work) error {
	switch {
	case !w.Kind.Valid():
		return wq.Errorf(wq.EINVALID, "kind %q is not assignable work: only issues and pull requests are", w.Kind)
	case w.State != controlplane.StateOpen && !w.State.Terminal():
		return wq.Errorf(wq.EINVALID, "unknown work state %q", w.State)
	case w.UpdatedAt.IsZero():
		return wq.Errorf(wq.EINVALID, "work without the forge's updated time")
	}
	return nil
}

// upsertSQL writes n work items. A sync does not know which session
// wrote a pull request: an empty author session keeps the one recorded.
func upsertSQL(n int) string {
	values := strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", n)[2:]
	return `INSERT INTO cp_work (id, forge, repo, kind, number, state, title, labels, author, head_sha, review_state,
			mergeable, linked_issues, author_session, updated_at, synced_at)
		VALUES ` + values + `
		ON CONFLICT (forge, repo, kind, number) DO UPDATE SET state = excluded.state, title = excluded.title,
			labels = excluded.labels, author = excluded.author, head_sha = excluded.head_sha, review_state = excluded.review_state,
			mergeable = excluded.mergeable, linked_issues = excluded.linked_issues,
			author_session = CASE WHEN excluded.author_session <> '' THEN excluded.author_session ELSE cp_work.author_session END,
			updated_at = excluded.updated_at, synced_at = excluded.synced_at
		WHERE cp_work.updated_at <= excluded.updated_at`
}

// GetWork returns one work item by ID.
func (s *store) GetWork(ctx context.Context, id string) (*controlplane.Work, error) {
	w, err := newWorkRow().scan(s.reader().queryRow(ctx, `SELECT `+workCols+` FROM cp_work w WHERE w.id = ?`, id))
	if err != nil {
		return nil, notFound(err, "work", id)
	}
	return &w, nil
}

// FindWork returns the work item with the key.
func (s *store) FindWork(ctx context.Context, k controlplane.WorkKey) (*controlplane.Work, error) {
	w, err := newWorkRow().scan(s.reader().queryRow(ctx, `SELECT `+workCols+` FROM cp_work w
		WHERE w.forge = ? AND w.repo = ? AND w.kind = ? AND w.number = ?`, k.Forge, k.Repo, string(k.Kind), k.Number))
	if err != nil {
		return nil, notFound(err, "work", fmt.Sprintf("%s %s#%d of %s", k.Kind, k.Repo, k.Number, k.Forge))
	}
	return &w, nil
}

// ListWork returns work in key order. After is a cursor: the ID of the
// last work item of the previous page; the page goes on after it.
func (s *store) ListWork(ctx context.Context, f controlplane.WorkFilter) ([]controlplane.Work, error) {
	var w filter
	w.eq("w.forge", f.Forge)
	w.eq("w.repo", f.Repo)
	w.eq("w.kind", string(f.Kind))
	w.eq("w.state", string(f.State))
	if f.After != "" {
		w.add(`(w.forge, w.repo, w.kind, w.number) > (SELECT forge, repo, kind, number FROM cp_work WHERE id = ?)`, f.After)
	}
	out, err := queryAll(ctx, s.reader(), newWorkRow().scan,
		`SELECT `+workCols+` FROM cp_work w`+w.where()+` ORDER BY w.forge, w.repo, w.kind, w.number LIMIT ?`,
		append(w.args, limit(f.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("list work: %w", err)
	}
	return out, nil
}

// Candidates returns the open work with who holds it at now, in one
// query, in key order (bytewise: the allocator orders its picks itself,
// and sorting here costs less than sorting text under the database's
// collation). The join finds a work item's one active lease by the
// partial unique index, and liveness is decided on the row found: a
// condition on expires_at in the join would let SQLite range over the
// expiry index for every work item. A terminal lock whose lease is
// active but past its expiry is not reported: Assign would expire that
// lease and drop the lock with it.
func (s *store) Candidates(ctx context.Context, now time.Time) ([]controlplane.Candidate, error) {
	var c controlplane.Candidate
	r := newWorkRow(&c.LeaseID, &c.LeaseSession, &c.LockSession)
	// Room for as many as last time: growing a slice of thousands of
	// candidates costs more than scanning them.
	out := make([]controlplane.Candidate, 0, s.candidates.Load()+64)
	out, err := queryAppend(ctx, s.reader(), out, func(src row) (controlplane.Candidate, error) {
		w, err := r.scan(src)
		return controlplane.Candidate{Work: w, LeaseID: c.LeaseID, LeaseSession: c.LeaseSession, LockSession: c.LockSession}, err
	}, `SELECT `+workCols+`, CASE WHEN l.expires_at > ? THEN l.id ELSE '' END, CASE WHEN l.expires_at > ? THEN l.session_id ELSE '' END,
			CASE WHEN k.lease_id = l.id AND l.expires_at <= ? THEN '' ELSE coalesce(k.session_id, '') END
		FROM cp_work w
		LEFT JOIN cp_leases l ON l.work_id = w.id AND l.state = 'active'
		LEFT JOIN cp_terminal_locks k ON k.work_id = w.id
		WHERE w.state = 'open'`, now, now, now)
	if err != nil {
		return nil, fmt.Errorf("candidates: %w", err)
	}
	s.candidates.Store(int64(len(out)))
	slices.SortFunc(out, func(a, b controlplane.Candidate) int { return compareKeys(a.WorkKey, b.WorkKey) })
	return out, nil
}

func compareKeys(a, b controlplane.WorkKey) int {
	return cmp.Or(strings.Compare(a.Forge, b.Forge), strings.Compare(a.Repo, b.Repo), strings.Compare(string(a.Kind), string(b.Kind)),
		cmp.Compare(a.Number, b.Number))
}
