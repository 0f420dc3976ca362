package mrstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// store is the mr store on a driver.
type store struct {
	db      seam.Driver
	dialect seam.Dialect
}

var _ mr.Store = store{}

// reader runs reads on the driver's read pool.
func (s store) reader() conn { return conn{s.db.Reader(), s} }

// in runs statements in a write transaction of the driver.
func (s store) in(tx seam.Tx) conn { return conn{tx, s} }

// detailColumns read a detail joined with its item (alias w), so that the
// content hash comes from the same snapshot as the file actions. The JSON
// columns (jsonb on PostgreSQL) are read as their text.
const detailColumns = `m.forge, m.project, m.source_branch, m.target_branch, m.title, m.description, m.commit_message, CAST(m.labels AS TEXT),
	CAST(m.file_actions AS TEXT), m.auto_merge, coalesce(m.mr_iid, 0), m.mr_url, m.head_sha, m.pushed_hash, coalesce(m.head_pipeline_id, 0),
	coalesce(m.note_id, 0), m.pushing_hash, m.assignment_id, m.ci_retried, m.tracked, w.content_hash`

func scanDetail(row seam.Row) (*mr.Detail, error) {
	var d mr.Detail
	var labels, actions string
	if err := row.Scan(&d.Forge, &d.Project, &d.SourceBranch, &d.TargetBranch, &d.Title, &d.Description, &d.CommitMessage,
		&labels, &actions, &d.AutoMerge, &d.MRNumber, &d.MRURL, &d.HeadSHA, &d.PushedHash, &d.HeadPipelineID, &d.NoteID,
		&d.PushingHash, &d.AssignmentID, &d.CIRetried, &d.Tracked, &d.ContentHash); err != nil {
		return nil, err
	}
	if err := d.DecodeColumns(labels, actions); err != nil {
		return nil, err
	}
	return &d, nil
}

// notFound says whether err is a read that found no row.
func notFound(err error) bool { return wq.ErrorCode(err) == wq.ENOTFOUND }

// CreateMR inserts the item and its detail in one transaction.
func (s store) CreateMR(ctx context.Context, n wq.NewItem, d mr.Detail, now time.Time) (*wq.Item, error) {
	q, args, err := s.createStmt(&n, d)
	if err != nil {
		return nil, err
	}
	// The item, its detail and the read back in one round trip where the
	// driver can (seam.Driver.Insert).
	it, err := s.db.Insert(ctx, &n, now, seam.Stmt{SQL: q, Args: args})
	if err != nil {
		return nil, fmt.Errorf("create mr item: %w", err)
	}
	return it, nil
}

// createStmt fills in n's scope and id and returns the insert of d.
func (s store) createStmt(n *wq.NewItem, d mr.Detail) (string, []any, error) {
	labels, actions, err := d.EncodeColumns()
	if err != nil {
		return "", nil, err
	}
	n.Scope = wq.Scope{Forge: d.Forge, Project: d.Project}
	if n.ID == (wq.ItemID{}) {
		n.ID = wq.NewItemID()
	}
	q, args := s.dialect.Bind(`INSERT INTO mr_details (work_item_id, forge, project, source_branch, target_branch, title,
		description, commit_message, labels, file_actions, auto_merge, assignment_id, tracked, mr_iid, mr_url, head_sha)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		[]any{n.ID, d.Forge, d.Project, d.SourceBranch, d.TargetBranch, d.Title, d.Description, d.CommitMessage, labels, actions, d.AutoMerge,
			d.AssignmentID, d.Tracked, nonZero(d.MRNumber), d.MRURL, d.HeadSHA})
	return q, args, nil
}

// CreateFirstMR is CreateMR of generation 1 unless an item of any
// generation has d's natural key, tested in the insert's own round trip
// (seam.GuardedInserter); on a driver without it, it creates nothing and
// the submission reads first.
func (s store) CreateFirstMR(ctx context.Context, n wq.NewItem, d mr.Detail, now time.Time) (*wq.Item, bool, error) {
	g, ok := s.db.(seam.GuardedInserter)
	if !ok {
		return nil, false, nil
	}
	n.Generation = 1
	q, args, err := s.createStmt(&n, d)
	if err != nil {
		return nil, false, err
	}
	uq, uargs := s.dialect.Bind(`SELECT 1 FROM mr_details WHERE forge = ? AND project = ? AND source_branch = ?`,
		[]any{d.Forge, d.Project, d.SourceBranch})
	it, err := g.InsertUnless(ctx, seam.Stmt{SQL: uq, Args: uargs}, &n, now, seam.Stmt{SQL: q, Args: args})
	switch {
	case errors.Is(err, seam.ErrGuarded):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("create mr item: %w", err)
	}
	return it, true, nil
}

// GetMRDetail returns an item's detail.
func (s store) GetMRDetail(ctx context.Context, id wq.ItemID) (*mr.Detail, error) {
	d, err := scanDetail(s.reader().queryRow(ctx, `SELECT `+detailColumns+` FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.work_item_id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("get mr detail of %s: %w", id, err)
	}
	return d, nil
}

// MRSummaries returns the title and merge request of the mr items of ids.
func (s store) MRSummaries(ctx context.Context, ids []wq.ItemID) (map[wq.ItemID]mr.Summary, error) {
	out := map[wq.ItemID]mr.Summary{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.reader().query(ctx, `SELECT work_item_id, title, coalesce(mr_iid, 0), mr_url FROM mr_details
		WHERE work_item_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("mr summaries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id wq.ItemID
			m  mr.Summary
		)
		if err := rows.Scan(&id, &m.Title, &m.MRNumber, &m.MRURL); err != nil {
			return nil, fmt.Errorf("mr summaries: %w", err)
		}
		out[id] = m
	}
	return out, rows.Err()
}

// FindMRItem returns the active or failed item for the natural key.
func (s store) FindMRItem(ctx context.Context, forge, project, source string) (*wq.Item, *mr.Detail, error) {
	var id wq.ItemID
	err := s.reader().queryRow(ctx, `SELECT w.id FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = ? AND m.project = ? AND m.source_branch = ? AND w.phase IN ('active', 'failed')
		ORDER BY w.generation DESC LIMIT 1`, forge, project, source).Scan(&id)
	if notFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("find mr item: %w", err)
	}
	it, err := s.db.GetItem(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	d, err := s.GetMRDetail(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return it, d, nil
}

// LatestMRGeneration returns the highest generation for the natural key.
func (s store) LatestMRGeneration(ctx context.Context, forge, project, source string) (int, error) {
	var g int
	err := s.reader().queryRow(ctx, `SELECT coalesce(max(w.generation), 0) FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = ? AND m.project = ? AND m.source_branch = ?`, forge, project, source).Scan(&g)
	if err != nil {
		return 0, fmt.Errorf("latest mr generation: %w", err)
	}
	return g, nil
}

// CurrentMR reads, in one statement, the active or failed item of the
// natural key if there is one (the latest generation: a new one starts
// only when none is active or failed), else the latest generation; then,
// for an active or failed item only, the item and its detail.
func (s store) CurrentMR(ctx context.Context, forge, project, source string) (mr.Current, error) {
	var (
		c            mr.Current
		id           wq.ItemID
		owner, phase string
	)
	err := s.reader().queryRow(ctx, `SELECT w.id, w.caller_identity, w.phase, w.generation FROM mr_details m
		JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = ? AND m.project = ? AND m.source_branch = ?
		ORDER BY CASE WHEN w.phase IN ('active', 'failed') THEN 0 ELSE 1 END, w.generation DESC LIMIT 1`,
		forge, project, source).Scan(&id, &owner, &phase, &c.Generation)
	if notFound(err) {
		return mr.Current{}, nil
	}
	if err != nil {
		return mr.Current{}, fmt.Errorf("current mr item: %w", err)
	}
	c.Owner, c.Phase = owner, wq.Phase(phase)
	if c.Phase != wq.PhaseActive && c.Phase != wq.PhaseFailed {
		return c, nil
	}
	if c.Item, err = s.db.GetItem(ctx, id); err != nil {
		return mr.Current{}, err
	}
	if c.Detail, err = s.GetMRDetail(ctx, id); err != nil {
		return mr.Current{}, err
	}
	return c, nil
}

// ResubmitMR replaces an active or failed item's desired state, under
// the revision fence of the driver's ReplaceDesired.
func (s store) ResubmitMR(ctx context.Context, id wq.ItemID, seen int64, d mr.Detail, hash, caller string, now time.Time) (*wq.Item, error) {
	labels, actions, err := d.EncodeColumns()
	if err != nil {
		return nil, err
	}
	err = s.db.Write(ctx, func(tx seam.Tx) error {
		if err := tx.ReplaceDesired(ctx, id, seen, hash, needsMR, now); err != nil {
			return err
		}
		c := s.in(tx)
		if _, err := c.exec(ctx, `UPDATE mr_details SET target_branch = ?, title = ?, description = ?, commit_message = ?,
			labels = ?, file_actions = ?, auto_merge = ?, assignment_id = ? WHERE work_item_id = ?`,
			d.TargetBranch, d.Title, d.Description, d.CommitMessage, labels, actions, d.AutoMerge, d.AssignmentID, id); err != nil {
			return err
		}
		// The caller whose desired state it now is (a takeover the type
		// allowed; the same caller otherwise).
		_, err := c.exec(ctx, `UPDATE work_items SET caller_identity = ? WHERE id = ? AND caller_identity <> ?`, caller, id, caller)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("resubmit mr item %s: %w", id, err)
	}
	return s.db.GetItem(ctx, id)
}

// RecordForgeState writes the forge state under the lease.
func (s store) RecordForgeState(ctx context.Context, l wq.Lease, st mr.ForgeState, now time.Time) error {
	return s.db.Fenced(ctx, l, "record forge state of", func(tx seam.Tx) error {
		c := s.in(tx)
		if _, err := c.exec(ctx, `UPDATE mr_details SET mr_iid = ?, mr_url = ?, head_sha = ?, pushed_hash = ?,
			head_pipeline_id = ?, note_id = ?, pushing_hash = ?, ci_retried = ? WHERE work_item_id = ?`, nonZero(st.MRNumber), st.MRURL, st.HeadSHA,
			st.PushedHash, nonZero(st.HeadPipelineID), nonZero(st.NoteID), st.PushingHash, st.CIRetried, l.ItemID); err != nil {
			return err
		}
		if st.HeadSHA != "" {
			// A tracked merge request's head is a person's, never pushed.
			if _, err := c.exec(ctx, `INSERT INTO mr_pushed_heads (forge, project, source_branch, head_sha, caller_identity)
				SELECT d.forge, d.project, d.source_branch, ?, w.caller_identity FROM mr_details d JOIN work_items w ON w.id = d.work_item_id
				WHERE d.work_item_id = ? AND d.tracked = FALSE ON CONFLICT DO NOTHING`, st.HeadSHA, l.ItemID); err != nil {
				return err
			}
		}
		_, err := c.exec(ctx, `UPDATE work_items SET updated_at = ? WHERE id = ?`, now, l.ItemID)
		return err
	})
}

// FindActiveMR resolves a forge event to its active item (see the
// interface for the rules). Zero parts of ref are NULL, which equals
// nothing.
func (s store) FindActiveMR(ctx context.Context, forge, project string, ref mr.EventRef) (wq.ItemID, bool, error) {
	if ref.IsZero() {
		return uuid.Nil, false, nil
	}
	number, pipeline, branch, head, target := nonZero(ref.Number), nonZero(ref.PipelineID), nonEmpty(ref.SourceBranch),
		nonEmpty(ref.HeadSHA), nonEmpty(ref.TargetBranch)
	var id wq.ItemID
	var err error
	if ref.Number != 0 {
		// An event of a merge request: that merge request's item, or an item
		// whose merge request is not recorded yet, from that branch into
		// that target.
		err = s.reader().queryRow(ctx, `SELECT w.id FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
			WHERE m.forge = ? AND m.project = ? AND w.phase = 'active'
			  AND (m.mr_iid = ? OR (m.mr_iid IS NULL AND m.source_branch = ? AND (CAST(? AS TEXT) IS NULL OR m.target_branch = ?)))
			ORDER BY CASE WHEN m.mr_iid = ? THEN 1 ELSE 0 END DESC LIMIT 1`, forge, project, number, branch, target, target, number).Scan(&id)
	} else {
		// A CI event: the item whose pushed head or head pipeline it names,
		// or one whose merge request is not recorded yet, by branch.
		err = s.reader().queryRow(ctx, `SELECT w.id FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
			WHERE m.forge = ? AND m.project = ? AND w.phase = 'active'
			  AND (m.head_pipeline_id = ? OR (m.head_sha = ? AND m.head_sha <> '') OR (m.mr_iid IS NULL AND m.source_branch = ?))
			ORDER BY CASE WHEN m.head_pipeline_id = ? THEN 1 ELSE 0 END DESC, CASE WHEN m.head_sha = ? THEN 1 ELSE 0 END DESC
			LIMIT 1`, forge, project, pipeline, head, branch, pipeline, head).Scan(&id)
	}
	if notFound(err) {
		return uuid.Nil, false, nil
	}
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("find active mr: %w", err)
	}
	return id, true, nil
}

// OwnsBranchHead reports whether an mr item of ours for this branch
// recorded sha as the head it pushed.
func (s store) OwnsBranchHead(ctx context.Context, forge, project, branch, sha, caller string) (bool, error) {
	var owned bool
	err := s.reader().queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mr_details d JOIN work_items w ON w.id = d.work_item_id
		WHERE d.forge = ? AND d.project = ? AND d.source_branch = ? AND d.head_sha = ? AND d.head_sha <> '' AND d.tracked = FALSE
		AND (CAST(? AS TEXT) = '' OR w.caller_identity = ?)) OR EXISTS (SELECT 1 FROM mr_pushed_heads WHERE forge = ?
		AND project = ? AND source_branch = ? AND head_sha = ? AND (CAST(? AS TEXT) = '' OR caller_identity = ?))`,
		forge, project, branch, sha, caller, caller, forge, project, branch, sha, caller, caller).Scan(&owned)
	if err != nil {
		return false, fmt.Errorf("owns branch head: %w", err)
	}
	return owned, nil
}

// LatestMROwner returns the latest generation's caller and phase.
func (s store) LatestMROwner(ctx context.Context, forge, project, source string) (string, wq.Phase, error) {
	var caller, phase string
	err := s.reader().queryRow(ctx, `SELECT w.caller_identity, w.phase FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = ? AND m.project = ? AND m.source_branch = ? ORDER BY w.generation DESC LIMIT 1`, forge, project, source).Scan(&caller, &phase)
	if notFound(err) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("latest mr owner: %w", err)
	}
	return caller, wq.Phase(phase), nil
}

// OpenMRs lists the active items of forge with a recorded merge request.
func (s store) OpenMRs(ctx context.Context, forge string) ([]mr.OpenMR, error) {
	rows, err := s.reader().query(ctx, `SELECT w.id, m.project, m.mr_iid, coalesce(m.head_sha, '') FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = ? AND w.phase = 'active' AND m.mr_iid IS NOT NULL ORDER BY m.project, m.mr_iid`, forge)
	if err != nil {
		return nil, fmt.Errorf("open mrs: %w", err)
	}
	defer rows.Close()
	var out []mr.OpenMR
	for rows.Next() {
		var o mr.OpenMR
		if err := rows.Scan(&o.ItemID, &o.Project, &o.Number, &o.HeadSHA); err != nil {
			return nil, fmt.Errorf("open mrs: %w", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("open mrs: %w", err)
	}
	return out, nil
}

// TrainCars lists the active cars of a merge train.
func (s store) TrainCars(ctx context.Context, forge, project, target string) ([]mr.TrainCar, error) {
	rows, err := s.reader().query(ctx, `SELECT w.id, m.source_branch, coalesce(m.mr_iid, 0), coalesce(m.head_sha, ''), CAST(m.labels AS TEXT), coalesce(CAST(st.detail AS TEXT), '')
		FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		JOIN work_item_statuses st ON st.work_item_id = w.id AND st.dimension = 'needs_train' AND st.variant = ''
		WHERE m.forge = ? AND m.project = ? AND m.target_branch = ? AND w.phase = 'active' AND st.status = 'true'`, forge, project, target)
	if err != nil {
		return nil, fmt.Errorf("train cars: %w", err)
	}
	defer rows.Close()
	var out []mr.TrainCar
	for rows.Next() {
		var c mr.TrainCar
		var labels, detail string
		if err := rows.Scan(&c.ItemID, &c.SourceBranch, &c.MRNumber, &c.HeadSHA, &labels, &detail); err != nil {
			return nil, fmt.Errorf("train cars: %w", err)
		}
		c.Detail = []byte(detail)
		_ = json.Unmarshal([]byte(labels), &c.Labels) // labels that do not read give no priority
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("train cars: %w", err)
	}
	return out, nil
}

// AllTrainCars lists the active cars of every merge train.
func (s store) AllTrainCars(ctx context.Context) ([]mr.TrainCar, error) {
	rows, err := s.reader().query(ctx, `SELECT w.id, m.forge, m.project, m.target_branch, m.title, m.mr_url, m.source_branch,
		coalesce(m.mr_iid, 0), coalesce(m.head_sha, ''), coalesce(CAST(st.detail AS TEXT), '')
		FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		JOIN work_item_statuses st ON st.work_item_id = w.id AND st.dimension = 'needs_train' AND st.variant = ''
		WHERE w.phase = 'active' AND st.status = 'true' LIMIT 10000`)
	if err != nil {
		return nil, fmt.Errorf("all train cars: %w", err)
	}
	defer rows.Close()
	var out []mr.TrainCar
	for rows.Next() {
		var c mr.TrainCar
		var detail string
		if err := rows.Scan(&c.ItemID, &c.Forge, &c.Project, &c.TargetBranch, &c.Title, &c.MRURL, &c.SourceBranch, &c.MRNumber,
			&c.HeadSHA, &detail); err != nil {
			return nil, fmt.Errorf("all train cars: %w", err)
		}
		c.Detail = []byte(detail)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("all train cars: %w", err)
	}
	return out, nil
}

// nonZero is v, or NULL for 0.
func nonZero(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

// nonEmpty is v, or NULL for "".
func nonEmpty(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}
