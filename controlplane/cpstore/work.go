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

// ReviseWork changes the stored work of key as change says, reading and
// writing the row in one transaction; see controlplane.Store.
func (s *store) ReviseWork(ctx context.Context, key controlplane.WorkKey, change func(*controlplane.Work) bool, now time.Time) (*controlplane.Work, error) {
	var out *controlplane.Work
	err := s.write(ctx, func(c conn) error {
		w, err := newWorkRow().scan(c.queryRow(ctx, `SELECT `+workCols+` FROM cp_work w
			WHERE w.forge = ? AND w.repo = ? AND w.kind = ? AND w.number = ?`+c.d.LockRow, key.Forge, key.Repo, string(key.Kind), key.Number))
		if err != nil {
			return notFound(err, "work", fmt.Sprintf("%s %s#%d of %s", key.Kind, key.Repo, key.Number, key.Forge))
		}
		was := w
		if !change(&w) {
			out = &was
			return nil
		}
		w.ID, w.WorkKey, w.SyncedAt = was.ID, was.WorkKey, now
		if least := was.UpdatedAt.Add(time.Microsecond); w.UpdatedAt.Before(least) {
			w.UpdatedAt = least
		}
		if err := checkWork(w); err != nil {
			return err
		}
		labels, err := encodeList(w.Labels)
		if err != nil {
			return err
		}
		linked, err := encodeList(w.LinkedIssues)
		if err != nil {
			return err
		}
		if _, err := c.exec(ctx, `UPDATE cp_work SET state = ?, title = ?, labels = ?, author = ?, head_sha = ?, review_state = ?,
				mergeable = ?, linked_issues = ?, author_session = ?, updated_at = ?, synced_at = ? WHERE id = ?`,
			string(w.State), w.Title, labels, w.Author, w.HeadSHA, string(w.ReviewState), w.Mergeable, linked, w.AuthorSession,
			w.UpdatedAt, now, w.ID); err != nil {
			return err
		}
		out = &w
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("revise work: %w", err)
	}
	return out, nil
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
// A merged pull request stays as it is: merged is for good, and what a
// forge said of it before (a late delivery) must not open it again.
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
		WHERE cp_work.updated_at <= excluded.updated_at AND cp_work.state <> 'merged'`
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
	// The inventory's version first: the open work read after it is at
	// least that new, so a copy kept under it is never older than it says.
	var version int64
	if err := s.reader().queryRow(ctx, `SELECT version FROM cp_work_version WHERE id = 1`).Scan(&version); err != nil {
		return nil, fmt.Errorf("candidates: inventory version: %w", err)
	}
	// Then what holds work, a few rows (a lease or a lock per session at
	// most), and the open work (from memory while the version holds),
	// joined to them here. Joined in SQL, a
	// planner without statistics (a new inventory, or one just filled)
	// chose a nested loop over every lease for every work row: 160 ms a
	// call at 5,000 open items and 200 leases. Assign re-checks what it
	// takes under its locks, so a lease taken between these reads loses
	// nothing: it is a race lost, as one after the read would be.
	type held struct {
		id, session string
		expires     time.Time
	}
	leases := map[string]held{}
	if _, err := queryAll(ctx, s.reader(), func(src row) (struct{}, error) {
		var work string
		var l held
		err := src.Scan(&work, &l.id, &l.session, (*timeCol)(&l.expires))
		leases[work] = l
		return struct{}{}, err
	}, `SELECT work_id, id, session_id, expires_at FROM cp_leases WHERE state = 'active'`); err != nil {
		return nil, fmt.Errorf("candidates: leases: %w", err)
	}
	type lock struct{ lease, session string }
	locks := map[string]lock{}
	if _, err := queryAll(ctx, s.reader(), func(src row) (struct{}, error) {
		var work string
		var k lock
		err := src.Scan(&work, &k.lease, &k.session)
		locks[work] = k
		return struct{}{}, err
	}, `SELECT work_id, lease_id, session_id FROM cp_terminal_locks`); err != nil {
		return nil, fmt.Errorf("candidates: terminal locks: %w", err)
	}
	work, err := s.openWork(ctx, version)
	if err != nil {
		return nil, err
	}
	out := make([]controlplane.Candidate, len(work))
	for i := range work {
		w := &work[i] // the cached copy, shared: Candidate says read only
		c := controlplane.Candidate{Work: w}
		l, leased := leases[w.ID]
		live := leased && l.expires.After(now)
		if live {
			c.LeaseID, c.LeaseSession = l.id, l.session
		}
		// A lock whose own lease has expired holds nothing.
		if k, ok := locks[w.ID]; ok && !(leased && !live && k.lease == l.id) {
			c.LockSession = k.session
		}
		out[i] = c
	}
	return out, nil
}

// SessionIdentities reads the identities of the sessions ids names, in
// a few statements (the allocator's identify made one per session); a
// session not found is left out.
func (s *store) SessionIdentities(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	for chunk := range slices.Chunk(ids, maxList) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		if _, err := queryAll(ctx, s.reader(), func(src row) (struct{}, error) {
			var id, identity string
			err := src.Scan(&id, &identity)
			out[id] = identity
			return struct{}{}, err
		}, `SELECT id, identity FROM cp_sessions WHERE id IN (?`+strings.Repeat(", ?", len(chunk)-1)+`)`, args...); err != nil {
			return nil, fmt.Errorf("session identities: %w", err)
		}
	}
	return out, nil
}

// openWork returns the open work at version, sorted by key: the copy in
// memory if it is of that version, else read and kept.
func (s *store) openWork(ctx context.Context, version int64) ([]controlplane.Work, error) {
	s.open.mu.Lock()
	cached, at := s.open.work, s.open.version
	s.open.mu.Unlock()
	if at == version && cached != nil {
		return cached, nil
	}
	r := newWorkRow()
	work, err := queryAppend(ctx, s.reader(), make([]controlplane.Work, 0, len(cached)+64), func(src row) (controlplane.Work, error) {
		return r.scan(src)
	}, `SELECT `+workCols+` FROM cp_work w WHERE w.state = 'open'`)
	if err != nil {
		return nil, fmt.Errorf("candidates: %w", err)
	}
	slices.SortFunc(work, func(a, b controlplane.Work) int { return compareKeys(a.WorkKey, b.WorkKey) })
	s.open.mu.Lock()
	if version >= s.open.version {
		s.open.work, s.open.version = work, version
	}
	s.open.mu.Unlock()
	return work, nil
}

func compareKeys(a, b controlplane.WorkKey) int {
	return cmp.Or(strings.Compare(a.Forge, b.Forge), strings.Compare(a.Repo, b.Repo), strings.Compare(string(a.Kind), string(b.Kind)),
		cmp.Compare(a.Number, b.Number))
}

const (
	leaseCols = `id, work_id, session_id, assignment_id, state, created_at, heartbeat_at, expires_at, ended_at, worktree_path,
	head_sha, adopted_from_session_id, adopted_by_session_id`
	assignmentCols = `id, session_id, work_id, lease_id, allowed_actions, expected_head_sha, terminal, created_at`
)

// leaseColsL read a lease row aliased l.
var leaseColsL = qualify("l", leaseCols)

func scanLease(r row) (controlplane.Lease, error) {
	var l controlplane.Lease
	var state string
	err := r.Scan(&l.ID, &l.WorkID, &l.SessionID, &l.AssignmentID, &state, (*timeCol)(&l.CreatedAt), (*timeCol)(&l.HeartbeatAt),
		(*timeCol)(&l.ExpiresAt), (*timeCol)(&l.EndedAt), &l.WorktreePath, &l.HeadSHA, &l.AdoptedFromSessionID, &l.AdoptedBySessionID)
	l.State = controlplane.LeaseState(state)
	return l, err
}

func scanAssignment(r row) (controlplane.Assignment, error) {
	var a controlplane.Assignment
	var actions jsonCol
	err := r.Scan(&a.ID, &a.SessionID, &a.WorkID, &a.LeaseID, &actions, &a.ExpectedHeadSHA, &a.Terminal, (*timeCol)(&a.CreatedAt))
	if err != nil {
		return a, err
	}
	a.AllowedActions, err = decodeStrings[controlplane.Action](actions)
	return a, err
}

// GetAssignment returns one assignment.
func (s *store) GetAssignment(ctx context.Context, id string) (*controlplane.Assignment, error) {
	a, err := scanAssignment(s.reader().queryRow(ctx, `SELECT `+assignmentCols+` FROM cp_assignments WHERE id = ?`, id))
	if err != nil {
		return nil, notFound(err, "assignment", id)
	}
	return &a, nil
}

// GetLease returns one lease.
func (s *store) GetLease(ctx context.Context, id string) (*controlplane.Lease, error) {
	l, err := scanLease(s.reader().queryRow(ctx, `SELECT `+leaseCols+` FROM cp_leases WHERE id = ?`, id))
	if err != nil {
		return nil, notFound(err, "lease", id)
	}
	return &l, nil
}

// ListLeases returns leases newest first.
func (s *store) ListLeases(ctx context.Context, f controlplane.LeaseFilter) ([]controlplane.Lease, error) {
	var w filter
	w.eq("l.session_id", f.SessionID)
	w.eq("l.work_id", f.WorkID)
	join := ""
	if f.Repo != "" {
		join = ` JOIN cp_work w ON w.id = l.work_id`
		w.eq("w.repo", f.Repo)
	}
	if !f.All {
		w.add(`l.state = 'active'`)
	}
	out, err := queryAll(ctx, s.reader(), scanLease, `SELECT `+leaseColsL+` FROM cp_leases l`+join+w.where()+
		` ORDER BY l.created_at DESC, l.id DESC LIMIT ?`, append(w.args, limit(f.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	return out, nil
}

// Assign creates an assignment and its lease if the work is open and free.
func (s *store) Assign(ctx context.Context, a controlplane.Assignment, l controlplane.Lease, ev controlplane.Event, now time.Time) error {
	a, l, err := newLease(a, l, now)
	if err != nil {
		return fmt.Errorf("assign work %s: %w", a.WorkID, err)
	}
	ev = ofLease(defaults(ev, controlplane.EventAssigned, now), l)
	err = s.write(ctx, func(c conn) error {
		state, err := c.lockFor(ctx, a)
		switch {
		case err != nil:
			return err
		case state.Terminal():
			return controlplane.ErrWorkTerminal
		}
		return c.assign(ctx, a, l, ev, now)
	})
	if err != nil {
		return fmt.Errorf("assign work %s to session %s: %w", a.WorkID, a.SessionID, err)
	}
	return nil
}

// newLease completes a and l from each other (the ids they share, the
// times they start at) and checks that they agree.
func newLease(a controlplane.Assignment, l controlplane.Lease, now time.Time) (controlplane.Assignment, controlplane.Lease, error) {
	a.LeaseID, l.AssignmentID = cmp.Or(a.LeaseID, l.ID), cmp.Or(l.AssignmentID, a.ID)
	l.WorkID, l.SessionID = cmp.Or(l.WorkID, a.WorkID), cmp.Or(l.SessionID, a.SessionID)
	l.State = cmp.Or(l.State, controlplane.LeaseActive)
	for _, t := range []*time.Time{&a.CreatedAt, &l.CreatedAt, &l.HeartbeatAt} {
		if t.IsZero() {
			*t = now
		}
	}
	switch {
	case a.ID == "" || l.ID == "":
		return a, l, wq.Errorf(wq.EINVALID, "an assignment and its lease need ids")
	case a.LeaseID != l.ID || l.AssignmentID != a.ID || a.WorkID != l.WorkID || a.SessionID != l.SessionID:
		return a, l, wq.Errorf(wq.EINVALID, "assignment %s and lease %s are not of one another", a.ID, l.ID)
	case l.State != controlplane.LeaseActive:
		return a, l, wq.Errorf(wq.EINVALID, "a new lease is active, not %s", l.State)
	case !l.ExpiresAt.After(now):
		return a, l, wq.Errorf(wq.EINVALID, "lease %s would expire at %s, not after now", l.ID, l.ExpiresAt.Format(time.RFC3339Nano))
	}
	return a, l, nil
}

// lockFor takes the rows assignment a decides on, where the dialect needs
// to, in the order every writer takes them: the work row (every
// assignment of one work item queues there), then the session's (an
// EndSession meanwhile waits, and then releases what a gives), and only
// then leases. It returns the work's state; ENOTFOUND for missing work
// or session, ECONFLICT for an ended session.
func (c conn) lockFor(ctx context.Context, a controlplane.Assignment) (controlplane.State, error) {
	var state string
	if err := c.queryRow(ctx, `SELECT state FROM cp_work WHERE id = ?`+c.d.LockRow, a.WorkID).Scan(&state); err != nil {
		return "", notFound(err, "work", a.WorkID)
	}
	return controlplane.State(state), c.liveSession(ctx, a.SessionID, c.d.ShareRow)
}

// assign is Assign after the work was locked and found open: expire the
// work's leases past their expiry, refuse if a live lease or another
// session's terminal lock still holds it, and write a, l, the lock and ev.
func (c conn) assign(ctx context.Context, a controlplane.Assignment, l controlplane.Lease, ev controlplane.Event, now time.Time) error {
	if _, err := c.expireLeases(ctx, now, `work_id = ? AND expires_at <= ?`, a.WorkID, now); err != nil {
		return err
	}
	var live, locked int
	if err := c.queryRow(ctx, `SELECT (SELECT count(*) FROM cp_leases WHERE work_id = ? AND state = 'active'),
		(SELECT count(*) FROM cp_terminal_locks WHERE work_id = ? AND session_id <> ?)`,
		a.WorkID, a.WorkID, a.SessionID).Scan(&live, &locked); err != nil {
		return err
	}
	if live > 0 || locked > 0 {
		return controlplane.ErrWorkHeld
	}
	// What lock is left is this session's own, without a live lease: it
	// holds nothing, and the new assignment decides whether there is one.
	if _, err := c.exec(ctx, `DELETE FROM cp_terminal_locks WHERE work_id = ?`, a.WorkID); err != nil {
		return err
	}
	actions, err := encodeList(a.AllowedActions)
	if err != nil {
		return err
	}
	if _, err := c.exec(ctx, `INSERT INTO cp_assignments (`+assignmentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.SessionID, a.WorkID, a.LeaseID, actions, a.ExpectedHeadSHA, a.Terminal, a.CreatedAt); err != nil {
		return err
	}
	if _, err := c.exec(ctx, `INSERT INTO cp_leases (`+leaseCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		l.ID, l.WorkID, l.SessionID, l.AssignmentID, string(l.State), l.CreatedAt, l.HeartbeatAt, l.ExpiresAt, l.EndedAt,
		l.WorktreePath, l.HeadSHA, l.AdoptedFromSessionID, l.AdoptedBySessionID); err != nil {
		return err
	}
	if a.Terminal {
		if _, err := c.exec(ctx, `INSERT INTO cp_terminal_locks (work_id, session_id, lease_id, created_at) VALUES (?, ?, ?, ?)`,
			a.WorkID, a.SessionID, l.ID, now); err != nil {
			return err
		}
	}
	return c.appendEvent(ctx, ev)
}

// UpdateLease writes l over the stored lease if it is still as from says.
func (s *store) UpdateLease(ctx context.Context, from, l controlplane.Lease, ev controlplane.Event) error {
	l.ID, l.WorkID = cmp.Or(l.ID, from.ID), cmp.Or(l.WorkID, from.WorkID)
	l.SessionID, l.AssignmentID = cmp.Or(l.SessionID, from.SessionID), cmp.Or(l.AssignmentID, from.AssignmentID)
	if l.ID != from.ID || l.WorkID != from.WorkID {
		return wq.Errorf(wq.EINVALID, "update lease %s: a lease keeps its id and its work", from.ID)
	}
	ev = ofLease(defaults(ev, "", time.Now()), l)
	err := s.write(ctx, func(c conn) error {
		n, err := c.exec(ctx, `UPDATE cp_leases SET session_id = ?, assignment_id = ?, state = ?, heartbeat_at = ?, expires_at = ?,
				ended_at = ?, worktree_path = ?, head_sha = ?, adopted_from_session_id = ?, adopted_by_session_id = ?
			WHERE id = ? AND state = ? AND session_id = ?`,
			l.SessionID, l.AssignmentID, string(l.State), l.HeartbeatAt, l.ExpiresAt, l.EndedAt, l.WorktreePath, l.HeadSHA,
			l.AdoptedFromSessionID, l.AdoptedBySessionID, from.ID, string(from.State), from.SessionID)
		if err == nil && n == 0 {
			err = c.leaseChanged(ctx, from)
		}
		if err != nil {
			return err
		}
		// The terminal lock goes with the lease: to the session that holds
		// it now, or away when it ends.
		if l.State == controlplane.LeaseActive {
			_, err = c.exec(ctx, `UPDATE cp_terminal_locks SET session_id = ? WHERE lease_id = ?`, l.SessionID, l.ID)
		} else {
			_, err = c.exec(ctx, `DELETE FROM cp_terminal_locks WHERE lease_id = ?`, l.ID)
		}
		if err != nil {
			return err
		}
		return c.appendEvent(ctx, ev)
	})
	if err != nil {
		return fmt.Errorf("update lease %s: %w", from.ID, err)
	}
	return nil
}

// leaseChanged says why a compare-and-set on lease from found nothing:
// ENOTFOUND, or ECONFLICT with how it stands now.
func (c conn) leaseChanged(ctx context.Context, from controlplane.Lease) error {
	cur, err := scanLease(c.queryRow(ctx, `SELECT `+leaseCols+` FROM cp_leases WHERE id = ?`, from.ID))
	if err != nil {
		return notFound(err, "lease", from.ID)
	}
	return wq.Errorf(wq.ECONFLICT, "lease %s changed: it is %s, held by session %s (expected %s, held by %s)",
		from.ID, cur.State, cur.SessionID, from.State, from.SessionID)
}

// Reclaim ends old as reclaimed and assigns a and l in its place. A lease
// that is still live is not reclaimed (ErrWorkHeld): a live foreign lease
// cannot be stolen.
func (s *store) Reclaim(ctx context.Context, old controlplane.Lease, a controlplane.Assignment, l controlplane.Lease, ev controlplane.Event, now time.Time) error {
	a, l, err := newLease(a, l, now)
	if err == nil && old.WorkID != "" && old.WorkID != a.WorkID {
		err = wq.Errorf(wq.EINVALID, "lease %s is of work %s, not %s", old.ID, old.WorkID, a.WorkID)
	}
	if err != nil {
		return fmt.Errorf("reclaim lease %s: %w", old.ID, err)
	}
	ev = ofLease(defaults(ev, controlplane.EventReclaimed, now), l)
	err = s.write(ctx, func(c conn) error {
		state, err := c.lockFor(ctx, a)
		if err != nil {
			return err
		}
		cur, err := scanLease(c.queryRow(ctx, `SELECT `+leaseCols+` FROM cp_leases WHERE id = ?`, old.ID))
		switch {
		case err != nil:
			return notFound(err, "lease", old.ID)
		case cur.WorkID != a.WorkID:
			return wq.Errorf(wq.EINVALID, "lease %s is of work %s, not %s", old.ID, cur.WorkID, a.WorkID)
		case cur.State != old.State || cur.SessionID != old.SessionID:
			return c.leaseChanged(ctx, old)
		case cur.Live(now):
			return controlplane.ErrWorkHeld
		}
		n, err := c.exec(ctx, `UPDATE cp_leases SET state = 'reclaimed', ended_at = coalesce(ended_at, ?)
			WHERE id = ? AND state = ? AND session_id = ?`, now, old.ID, string(old.State), old.SessionID)
		if err == nil && n == 0 {
			err = c.leaseChanged(ctx, old)
		}
		if err != nil {
			return err
		}
		if _, err := c.exec(ctx, `DELETE FROM cp_terminal_locks WHERE lease_id = ?`, old.ID); err != nil {
			return err
		}
		if state.Terminal() {
			return controlplane.ErrWorkTerminal
		}
		return c.assign(ctx, a, l, ev, now)
	})
	if err != nil {
		return fmt.Errorf("reclaim lease %s for session %s: %w", old.ID, a.SessionID, err)
	}
	return nil
}

// ExpireLeases marks expired the active leases whose expiry is at or
// before now.
func (s *store) ExpireLeases(ctx context.Context, now time.Time) ([]controlplane.Lease, error) {
	var expired []controlplane.Lease
	err := s.write(ctx, func(c conn) error {
		var err error
		expired, err = c.expireLeases(ctx, now, `expires_at <= ?`, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("expire leases: %w", err)
	}
	return expired, nil
}

// expireLeases marks expired the active leases that also match where.
func (c conn) expireLeases(ctx context.Context, now time.Time, where string, args ...any) ([]controlplane.Lease, error) {
	return c.endLeases(ctx, controlplane.LeaseExpired, now, func(l controlplane.Lease) controlplane.Event {
		return leaseEvent(controlplane.EventExpired, "system", "the lease passed its expiry", l, now)
	}, where, args...)
}

// endLeases ends the active leases that match where in state at now,
// removes their terminal locks and appends event for each. It returns
// them as they are now, by expiry.
func (c conn) endLeases(ctx context.Context, state controlplane.LeaseState, now time.Time, event func(controlplane.Lease) controlplane.Event,
	where string, args ...any) ([]controlplane.Lease, error) {
	ended, err := queryAll(ctx, c, scanLease, `UPDATE cp_leases SET state = ?, ended_at = ? WHERE state = 'active' AND `+where+
		` RETURNING `+leaseCols, append([]any{string(state), now}, args...)...)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ended, func(a, b controlplane.Lease) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), strings.Compare(a.ID, b.ID))
	})
	for _, l := range ended {
		if _, err := c.exec(ctx, `DELETE FROM cp_terminal_locks WHERE lease_id = ?`, l.ID); err != nil {
			return nil, err
		}
		if err := c.appendEvent(ctx, event(l)); err != nil {
			return nil, err
		}
	}
	return ended, nil
}
