package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

var _ mr.Store = (*Store)(nil)

// mrColumns read a detail joined with its item (alias w), so that the
// content hash comes from the same snapshot as the file actions.
const mrColumns = `m.forge, m.project, m.source_branch, m.target_branch, m.title, m.description, m.commit_message, m.labels,
	m.file_actions, m.auto_merge, coalesce(m.mr_iid, 0), m.mr_url, m.head_sha, m.pushed_hash, coalesce(m.head_pipeline_id, 0),
	coalesce(m.note_id, 0), m.pushing_hash, w.content_hash`

func scanMRDetail(row scanner) (*mr.Detail, error) {
	var d mr.Detail
	var labels, actions string
	if err := row.Scan(&d.Forge, &d.Project, &d.SourceBranch, &d.TargetBranch, &d.Title, &d.Description, &d.CommitMessage,
		&labels, &actions, &d.AutoMerge, &d.MRNumber, &d.MRURL, &d.HeadSHA, &d.PushedHash, &d.HeadPipelineID, &d.NoteID,
		&d.PushingHash, &d.ContentHash); err != nil {
		return nil, translate(err)
	}
	if err := d.DecodeColumns(labels, actions); err != nil {
		return nil, err
	}
	return &d, nil
}

// CreateMR inserts the item and its detail in one transaction.
func (s *Store) CreateMR(ctx context.Context, n wq.NewItem, d mr.Detail, now time.Time) (*wq.Item, error) {
	if n.ID == uuid.Nil {
		n.ID = wq.NewItemID()
	}
	if n.Generation == 0 {
		n.Generation = 1
	}
	labels, actions, err := d.EncodeColumns()
	if err != nil {
		return nil, err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, translate(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO work_items (id, item_type, idempotency_key, generation,
		caller_identity, content_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		n.ID.String(), n.ItemType, nullString(n.IdempotencyKey), n.Generation, n.CallerIdentity, n.ContentHash, ts(now), ts(now)); err != nil {
		return nil, fmt.Errorf("create mr item: %w", translate(err))
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO mr_details (work_item_id, forge, project, source_branch, target_branch, title,
		description, commit_message, labels, file_actions, auto_merge) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.ID.String(), d.Forge, d.Project, d.SourceBranch, d.TargetBranch, d.Title, d.Description, d.CommitMessage, labels, actions, d.AutoMerge); err != nil {
		return nil, fmt.Errorf("create mr item: %w", translate(err))
	}
	if err := upsertDimensions(ctx, tx, n.ID, n.Dimensions, now); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, translate(err)
	}
	return s.GetItem(ctx, n.ID)
}

// GetMRDetail returns an item's detail.
func (s *Store) GetMRDetail(ctx context.Context, id wq.ItemID) (*mr.Detail, error) {
	d, err := scanMRDetail(s.read.QueryRowContext(ctx, `SELECT `+mrColumns+` FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.work_item_id = ?`, id.String()))
	if err != nil {
		return nil, fmt.Errorf("get mr detail of %s: %w", id, err)
	}
	return d, nil
}

// FindMRItem returns the active or failed item for the natural key.
func (s *Store) FindMRItem(ctx context.Context, forge, project, source string) (*wq.Item, *mr.Detail, error) {
	var id string
	err := s.read.QueryRowContext(ctx, `SELECT w.id FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = ? AND m.project = ? AND m.source_branch = ? AND w.phase IN ('active', 'failed')
		ORDER BY w.generation DESC LIMIT 1`, forge, project, source).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("find mr item: %w", translate(err))
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return nil, nil, err
	}
	it, err := s.GetItem(ctx, u)
	if err != nil {
		return nil, nil, err
	}
	d, err := s.GetMRDetail(ctx, u)
	if err != nil {
		return nil, nil, err
	}
	return it, d, nil
}

// LatestMRGeneration returns the highest generation for the natural key.
func (s *Store) LatestMRGeneration(ctx context.Context, forge, project, source string) (int, error) {
	var g int
	err := s.read.QueryRowContext(ctx, `SELECT coalesce(max(w.generation), 0) FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = ? AND m.project = ? AND m.source_branch = ?`, forge, project, source).Scan(&g)
	if err != nil {
		return 0, fmt.Errorf("latest mr generation: %w", translate(err))
	}
	return g, nil
}

// ResubmitMR replaces an active or failed item's desired state.
func (s *Store) ResubmitMR(ctx context.Context, id wq.ItemID, seen int64, d mr.Detail, hash string, now time.Time) (*wq.Item, error) {
	labels, actions, err := d.EncodeColumns()
	if err != nil {
		return nil, err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, translate(err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE work_items SET phase = 'active', reason = '', actionable = 1, revision = revision + 1,
		attempts = 0, failing_since = NULL, retry_after = NULL, error = '', finished_at = NULL, content_hash = ?, updated_at = ?
		WHERE id = ? AND revision = ? AND phase IN ('active', 'failed')`, hash, ts(now), id.String(), seen)
	if err != nil {
		return nil, fmt.Errorf("resubmit mr item %s: %w", id, translate(err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return nil, fmt.Errorf("resubmit mr item %s: %w", id, wq.Errorf(wq.ECONFLICT, "item %s changed since it was read", id))
	}
	if _, err := tx.ExecContext(ctx, `UPDATE mr_details SET target_branch = ?, title = ?, description = ?, commit_message = ?,
		labels = ?, file_actions = ?, auto_merge = ? WHERE work_item_id = ?`,
		d.TargetBranch, d.Title, d.Description, d.CommitMessage, labels, actions, d.AutoMerge, id.String()); err != nil {
		return nil, fmt.Errorf("resubmit mr item %s: %w", id, translate(err))
	}
	if err := upsertDimensions(ctx, tx, id, []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: mr.DimMR}, Status: wq.StatusTrue}}, now); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, translate(err)
	}
	return s.GetItem(ctx, id)
}

// RecordForgeState writes the forge state under the lease.
func (s *Store) RecordForgeState(ctx context.Context, l wq.Lease, st mr.ForgeState, now time.Time) error {
	return s.fenced(ctx, l, "record forge state of", func(tx *sql.Tx, _ wq.Phase) error {
		if _, err := tx.ExecContext(ctx, `UPDATE mr_details SET mr_iid = ?, mr_url = ?, head_sha = ?, pushed_hash = ?,
			head_pipeline_id = ?, note_id = ?, pushing_hash = ? WHERE work_item_id = ?`, nonZero(st.MRNumber), st.MRURL, st.HeadSHA,
			st.PushedHash, nonZero(st.HeadPipelineID), nonZero(st.NoteID), st.PushingHash, l.ItemID.String()); err != nil {
			return translate(err)
		}
		_, err := tx.ExecContext(ctx, `UPDATE work_items SET updated_at = ? WHERE id = ?`, ts(now), l.ItemID.String())
		return translate(err)
	})
}

// FindActiveMR resolves a forge event to its active item (see the
// interface for the rules). Zero parts of ref are NULL, which equals
// nothing.
func (s *Store) FindActiveMR(ctx context.Context, forge, project string, ref mr.EventRef) (wq.ItemID, bool, error) {
	if ref.IsZero() {
		return uuid.Nil, false, nil
	}
	number, pipeline, branch, head, target := nonZero(ref.Number), nonZero(ref.PipelineID), nonEmpty(ref.SourceBranch),
		nonEmpty(ref.HeadSHA), nonEmpty(ref.TargetBranch)
	var id string
	var err error
	if ref.Number != 0 {
		// An event of a merge request: that merge request's item, or an item
		// whose merge request is not recorded yet, from that branch into
		// that target.
		err = s.read.QueryRowContext(ctx, `SELECT w.id FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
			WHERE m.forge = ? AND m.project = ? AND w.phase = 'active'
			  AND (m.mr_iid = ? OR (m.mr_iid IS NULL AND m.source_branch = ? AND (? IS NULL OR m.target_branch = ?)))
			ORDER BY coalesce(m.mr_iid = ?, 0) DESC LIMIT 1`, forge, project, number, branch, target, target, number).Scan(&id)
	} else {
		// A CI event: the item whose pushed head or head pipeline it names,
		// or one whose merge request is not recorded yet, by branch.
		err = s.read.QueryRowContext(ctx, `SELECT w.id FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
			WHERE m.forge = ? AND m.project = ? AND w.phase = 'active'
			  AND (m.head_pipeline_id = ? OR (m.head_sha = ? AND m.head_sha <> '') OR (m.mr_iid IS NULL AND m.source_branch = ?))
			ORDER BY coalesce(m.head_pipeline_id = ?, 0) DESC, coalesce(m.head_sha = ?, 0) DESC
			LIMIT 1`, forge, project, pipeline, head, branch, pipeline, head).Scan(&id)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("find active mr: %w", translate(err))
	}
	u, err := uuid.Parse(id)
	return u, err == nil, err
}

// OwnsBranchHead reports whether an mr item of ours for this branch
// recorded sha as the head it pushed.
func (s *Store) OwnsBranchHead(ctx context.Context, forge, project, branch, sha string) (bool, error) {
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM mr_details WHERE forge = ? AND project = ? AND source_branch = ?
		AND head_sha = ? AND head_sha <> ''`, forge, project, branch, sha).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("owns branch head: %w", translate(err))
	}
	return n > 0, nil
}

// nonZero is v, or NULL for 0.
func nonZero(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// nonEmpty is v, or NULL for "".
func nonEmpty(v string) any {
	if v == "" {
		return nil
	}
	return v
}
