package mrstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store/postgres"
)

// postgresStore is the mr store on the PostgreSQL driver.
type postgresStore struct {
	db *postgres.Store
}

var _ mr.Store = postgresStore{}

// postgresColumns read a detail joined with its item (alias w), so that the
// content hash comes from the same snapshot as the file actions.
const postgresColumns = `m.forge, m.project, m.source_branch, m.target_branch, m.title, m.description, m.commit_message, m.labels::text,
	m.file_actions::text, m.auto_merge, coalesce(m.mr_iid, 0), m.mr_url, m.head_sha, m.pushed_hash, coalesce(m.head_pipeline_id, 0),
	coalesce(m.note_id, 0), m.pushing_hash, m.assignment_id, m.ci_retried, w.content_hash`

func scanPostgresDetail(row pgx.Row) (*mr.Detail, error) {
	var d mr.Detail
	var labels, actions string
	if err := row.Scan(&d.Forge, &d.Project, &d.SourceBranch, &d.TargetBranch, &d.Title, &d.Description, &d.CommitMessage,
		&labels, &actions, &d.AutoMerge, &d.MRNumber, &d.MRURL, &d.HeadSHA, &d.PushedHash, &d.HeadPipelineID, &d.NoteID,
		&d.PushingHash, &d.AssignmentID, &d.CIRetried, &d.ContentHash); err != nil {
		return nil, postgres.Translate(err)
	}
	if err := d.DecodeColumns(labels, actions); err != nil {
		return nil, err
	}
	return &d, nil
}

// CreateMR inserts the item and its detail in one transaction.
func (s postgresStore) CreateMR(ctx context.Context, n wq.NewItem, d mr.Detail, now time.Time) (*wq.Item, error) {
	labels, actions, err := d.EncodeColumns()
	if err != nil {
		return nil, err
	}
	n.Scope = wq.Scope{Forge: d.Forge, Project: d.Project}
	err = s.db.Write(ctx, func(tx pgx.Tx) error {
		if err := postgres.InsertItem(ctx, tx, &n, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO mr_details (work_item_id, forge, project, source_branch, target_branch, title,
			description, commit_message, labels, file_actions, auto_merge, assignment_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10::jsonb, $11, $12)`,
			n.ID, d.Forge, d.Project, d.SourceBranch, d.TargetBranch, d.Title, d.Description, d.CommitMessage, labels, actions, d.AutoMerge, d.AssignmentID)
		return postgres.Translate(err)
	})
	if err != nil {
		return nil, fmt.Errorf("create mr item: %w", err)
	}
	return s.db.GetItem(ctx, n.ID)
}

// GetMRDetail returns an item's detail.
func (s postgresStore) GetMRDetail(ctx context.Context, id wq.ItemID) (*mr.Detail, error) {
	d, err := scanPostgresDetail(s.db.Pool().QueryRow(ctx, `SELECT `+postgresColumns+` FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.work_item_id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("get mr detail of %s: %w", id, err)
	}
	return d, nil
}

// MRSummaries returns the title and merge request of the mr items of ids.
func (s postgresStore) MRSummaries(ctx context.Context, ids []wq.ItemID) (map[wq.ItemID]mr.Summary, error) {
	arr := make([][16]byte, len(ids))
	for i, id := range ids {
		arr[i] = id
	}
	rows, err := s.db.Pool().Query(ctx, `SELECT work_item_id, title, coalesce(mr_iid, 0), mr_url FROM mr_details
		WHERE work_item_id = ANY($1)`, arr)
	if err != nil {
		return nil, fmt.Errorf("mr summaries: %w", postgres.Translate(err))
	}
	defer rows.Close()
	out := map[wq.ItemID]mr.Summary{}
	for rows.Next() {
		var (
			id wq.ItemID
			m  mr.Summary
		)
		if err := rows.Scan(&id, &m.Title, &m.MRNumber, &m.MRURL); err != nil {
			return nil, fmt.Errorf("mr summaries: %w", postgres.Translate(err))
		}
		out[id] = m
	}
	return out, postgres.Translate(rows.Err())
}

// FindMRItem returns the active or failed item for the natural key.
func (s postgresStore) FindMRItem(ctx context.Context, forge, project, source string) (*wq.Item, *mr.Detail, error) {
	var id uuid.UUID
	err := s.db.Pool().QueryRow(ctx, `SELECT w.id FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = $1 AND m.project = $2 AND m.source_branch = $3 AND w.phase IN ('active', 'failed')
		ORDER BY w.generation DESC LIMIT 1`, forge, project, source).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("find mr item: %w", postgres.Translate(err))
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
func (s postgresStore) LatestMRGeneration(ctx context.Context, forge, project, source string) (int, error) {
	var g int
	err := s.db.Pool().QueryRow(ctx, `SELECT coalesce(max(w.generation), 0) FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = $1 AND m.project = $2 AND m.source_branch = $3`, forge, project, source).Scan(&g)
	if err != nil {
		return 0, fmt.Errorf("latest mr generation: %w", postgres.Translate(err))
	}
	return g, nil
}

// ResubmitMR replaces an active or failed item's desired state.
func (s postgresStore) ResubmitMR(ctx context.Context, id wq.ItemID, seen int64, d mr.Detail, hash, caller string, now time.Time) (*wq.Item, error) {
	labels, actions, err := d.EncodeColumns()
	if err != nil {
		return nil, err
	}
	err = s.db.Write(ctx, func(tx pgx.Tx) error {
		if err := postgres.ReplaceDesired(ctx, tx, id, seen, hash, needsMR, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE mr_details SET target_branch = $2, title = $3, description = $4, commit_message = $5,
			labels = $6::jsonb, file_actions = $7::jsonb, auto_merge = $8, assignment_id = $9 WHERE work_item_id = $1`,
			id, d.TargetBranch, d.Title, d.Description, d.CommitMessage, labels, actions, d.AutoMerge, d.AssignmentID)
		if err != nil {
			return postgres.Translate(err)
		}
		// The caller whose desired state it now is (a takeover the type
		// allowed; the same caller otherwise).
		_, err = tx.Exec(ctx, `UPDATE work_items SET caller_identity = $2 WHERE id = $1 AND caller_identity <> $2`, id, caller)
		return postgres.Translate(err)
	})
	if err != nil {
		return nil, fmt.Errorf("resubmit mr item %s: %w", id, err)
	}
	return s.db.GetItem(ctx, id)
}

// RecordForgeState writes the forge state under the lease.
func (s postgresStore) RecordForgeState(ctx context.Context, l wq.Lease, st mr.ForgeState, now time.Time) error {
	return s.db.Fenced(ctx, l, "record forge state of", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE mr_details SET mr_iid = $2, mr_url = $3, head_sha = $4, pushed_hash = $5,
			head_pipeline_id = $6, note_id = $7, pushing_hash = $8, ci_retried = $9 WHERE work_item_id = $1`, l.ItemID, nonZero(st.MRNumber), st.MRURL,
			st.HeadSHA, st.PushedHash, nonZero(st.HeadPipelineID), nonZero(st.NoteID), st.PushingHash, st.CIRetried)
		if err != nil {
			return postgres.Translate(err)
		}
		if st.HeadSHA != "" {
			if _, err := tx.Exec(ctx, `INSERT INTO mr_pushed_heads (forge, project, source_branch, head_sha, caller_identity)
				SELECT d.forge, d.project, d.source_branch, $2, w.caller_identity FROM mr_details d JOIN work_items w ON w.id = d.work_item_id
				WHERE d.work_item_id = $1 ON CONFLICT DO NOTHING`, l.ItemID, st.HeadSHA); err != nil {
				return postgres.Translate(err)
			}
		}
		_, err = tx.Exec(ctx, `UPDATE work_items SET updated_at = $2 WHERE id = $1`, l.ItemID, now.UTC())
		return postgres.Translate(err)
	})
}

// FindActiveMR resolves a forge event to its active item. Zero parts of
// ref are NULL, which equals nothing.
func (s postgresStore) FindActiveMR(ctx context.Context, forge, project string, ref mr.EventRef) (wq.ItemID, bool, error) {
	if ref.IsZero() {
		return uuid.Nil, false, nil
	}
	var id uuid.UUID
	var err error
	if ref.Number != 0 {
		// An event of a merge request: that merge request's item, or an item
		// whose merge request is not recorded yet, from that branch into
		// that target.
		err = s.db.Pool().QueryRow(ctx, `SELECT w.id FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
			WHERE m.forge = $1 AND m.project = $2 AND w.phase = 'active'
			  AND (m.mr_iid = $3 OR (m.mr_iid IS NULL AND m.source_branch = $4 AND ($5::text IS NULL OR m.target_branch = $5)))
			ORDER BY coalesce(m.mr_iid = $3, false) DESC LIMIT 1`,
			forge, project, nonZero(ref.Number), nonEmpty(ref.SourceBranch), nonEmpty(ref.TargetBranch)).Scan(&id)
	} else {
		// A CI event: the item whose pushed head or head pipeline it names,
		// or one whose merge request is not recorded yet, by branch.
		err = s.db.Pool().QueryRow(ctx, `SELECT w.id FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
			WHERE m.forge = $1 AND m.project = $2 AND w.phase = 'active'
			  AND (m.head_pipeline_id = $3 OR (m.head_sha = $4 AND m.head_sha <> '') OR (m.mr_iid IS NULL AND m.source_branch = $5))
			ORDER BY coalesce(m.head_pipeline_id = $3, false) DESC, coalesce(m.head_sha = $4, false) DESC
			LIMIT 1`, forge, project, nonZero(ref.PipelineID), nonEmpty(ref.HeadSHA), nonEmpty(ref.SourceBranch)).Scan(&id)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("find active mr: %w", postgres.Translate(err))
	}
	return id, true, nil
}

// OwnsBranchHead reports whether an mr item of ours for this branch
// recorded sha as the head it pushed.
func (s postgresStore) OwnsBranchHead(ctx context.Context, forge, project, branch, sha, caller string) (bool, error) {
	var owned bool
	err := s.db.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mr_details d JOIN work_items w ON w.id = d.work_item_id
		WHERE d.forge = $1 AND d.project = $2 AND d.source_branch = $3 AND d.head_sha = $4 AND d.head_sha <> ''
		AND ($5 = '' OR w.caller_identity = $5)) OR EXISTS (SELECT 1 FROM mr_pushed_heads WHERE forge = $1
		AND project = $2 AND source_branch = $3 AND head_sha = $4 AND ($5 = '' OR caller_identity = $5))`, forge, project, branch, sha, caller).Scan(&owned)
	if err != nil {
		return false, fmt.Errorf("owns branch head: %w", postgres.Translate(err))
	}
	return owned, nil
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

// LatestMROwner returns the latest generation's caller and phase.
func (s postgresStore) LatestMROwner(ctx context.Context, forge, project, source string) (string, wq.Phase, error) {
	var caller, phase string
	err := s.db.Pool().QueryRow(ctx, `SELECT w.caller_identity, w.phase FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = $1 AND m.project = $2 AND m.source_branch = $3 ORDER BY w.generation DESC LIMIT 1`, forge, project, source).Scan(&caller, &phase)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("latest mr owner: %w", postgres.Translate(err))
	}
	return caller, wq.Phase(phase), nil
}

// OpenMRs lists the active items of forge with a recorded merge request.
func (s postgresStore) OpenMRs(ctx context.Context, forge string) ([]mr.OpenMR, error) {
	rows, err := s.db.Pool().Query(ctx, `SELECT w.id, m.project, m.mr_iid, coalesce(m.head_sha, '') FROM mr_details m JOIN work_items w ON w.id = m.work_item_id
		WHERE m.forge = $1 AND w.phase = 'active' AND m.mr_iid IS NOT NULL ORDER BY m.project, m.mr_iid`, forge)
	if err != nil {
		return nil, fmt.Errorf("open mrs: %w", postgres.Translate(err))
	}
	defer rows.Close()
	var out []mr.OpenMR
	for rows.Next() {
		var o mr.OpenMR
		var id uuid.UUID
		if err := rows.Scan(&id, &o.Project, &o.Number, &o.HeadSHA); err != nil {
			return nil, fmt.Errorf("open mrs: %w", postgres.Translate(err))
		}
		o.ItemID = id
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("open mrs: %w", postgres.Translate(err))
	}
	return out, nil
}
