package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// claimColumns are itemColumns qualified by the table's name, as the
// claim's RETURNING needs them: its FROM list has an id column of its own.
var claimColumns = "work_items." + strings.Join(strings.Split(strings.Join(strings.Fields(itemColumns), " "), ", "), ", work_items.")

const itemColumns = `id, item_type, phase, reason, actionable, revision, leased_until, lease_owner,
	attempts, retry_after, error, idempotency_key, generation, caller_identity, content_hash,
	last_event_at, created_at, updated_at, finished_at, failing_since, forge, project`

type scanner interface{ Scan(dest ...any) error }

// prefixed scans leading columns into lead and the rest with row: the
// claim returns whether events are pending before the item's columns.
type prefixed struct {
	row  scanner
	lead []any
}

func (p prefixed) Scan(dest ...any) error { return p.row.Scan(append(p.lead, dest...)...) }

func scanItem(row scanner) (*wq.Item, error) {
	var (
		it                                                            wq.Item
		id, phase                                                     string
		leasedUntil, leaseOwner, retryAfter, key, lastEvent, finished sql.NullString
		failingSince                                                  sql.NullString
		created, updated                                              sql.NullString
	)
	if err := row.Scan(&id, &it.ItemType, &phase, &it.Reason, &it.Actionable, &it.Revision, &leasedUntil, &leaseOwner,
		&it.Attempts, &retryAfter, &it.Error, &key, &it.Generation, &it.CallerIdentity, &it.ContentHash,
		&lastEvent, &created, &updated, &finished, &failingSince, &it.Forge, &it.Project); err != nil {
		return nil, translate(err)
	}
	var err error
	if it.ID, err = uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("item id %q: %w", id, err)
	}
	it.Phase = wq.Phase(phase)
	it.LeaseOwner = leaseOwner.String
	it.IdempotencyKey = key.String
	for _, f := range []struct {
		dst *time.Time
		src sql.NullString
	}{{&it.LeasedUntil, leasedUntil}, {&it.RetryAfter, retryAfter}, {&it.LastEventAt, lastEvent},
		{&it.CreatedAt, created}, {&it.UpdatedAt, updated}, {&it.FinishedAt, finished}, {&it.FailingSince, failingSince}} {
		if *f.dst, err = parseTS(f.src); err != nil {
			return nil, err
		}
	}
	return &it, nil
}

// CreateItem inserts an active, actionable item and its initial dimensions.
func (s *Store) CreateItem(ctx context.Context, n wq.NewItem, now time.Time) (*wq.Item, error) {
	if err := s.write(ctx, func(tx *sql.Tx) error { return insertItem(ctx, tx, &n, now) }); err != nil {
		return nil, err
	}
	return s.GetItem(ctx, n.ID)
}

func upsertDimensions(ctx context.Context, tx *sql.Tx, id wq.ItemID, dims []wq.DimensionUpdate, now time.Time) error {
	for _, d := range dims {
		var detail any
		if len(d.Detail) > 0 {
			detail = string(d.Detail)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO work_item_statuses
			(work_item_id, dimension, variant, status, detail, pending_until, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (work_item_id, dimension, variant) DO UPDATE SET status = excluded.status,
			detail = excluded.detail, pending_until = excluded.pending_until, updated_at = excluded.updated_at`,
			id.String(), d.Dimension, d.Variant, d.Status, detail, ts(d.PendingUntil), ts(now)); err != nil {
			return fmt.Errorf("upsert dimension %s/%s of %s: %w", d.Dimension, d.Variant, id, translate(err))
		}
	}
	return nil
}

// GetItem returns the item with its dimensions.
func (s *Store) GetItem(ctx context.Context, id wq.ItemID) (*wq.Item, error) {
	return getItem(ctx, s.read, id)
}

// itemReader is what getItem reads with: the read pool, or a write's
// transaction.
type itemReader interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// getItem reads an item and its dimensions.
func getItem(ctx context.Context, q itemReader, id wq.ItemID) (*wq.Item, error) {
	it, err := scanItem(q.QueryRowContext(ctx, `SELECT `+itemColumns+` FROM work_items WHERE id = ?`, id.String()))
	if err != nil {
		return nil, fmt.Errorf("get item %s: %w", id, err)
	}
	rows, err := q.QueryContext(ctx, `SELECT dimension, variant, status, detail, pending_until, updated_at
		FROM work_item_statuses WHERE work_item_id = ?`, id.String())
	if err != nil {
		return nil, fmt.Errorf("get dimensions of %s: %w", id, translate(err))
	}
	defer rows.Close()
	it.Dimensions = wq.Dimensions{}
	for rows.Next() {
		k, d, err := scanDimension(rows)
		if err != nil {
			return nil, err
		}
		it.Dimensions[k] = d
	}
	return it, translate(rows.Err())
}

// ClaimItem leases an active, unleased item.
func (s *Store) ClaimItem(ctx context.Context, id wq.ItemID, owner string, now time.Time, d time.Duration) (wq.Lease, error) {
	l := wq.Lease{ItemID: id, Token: uuid.NewString(), Owner: owner, Until: now.Add(d)}
	n, err := s.exec(ctx, `UPDATE work_items SET leased_until = ?, lease_token = ?, lease_owner = ?
		WHERE id = ? AND phase = 'active' AND (leased_until IS NULL OR leased_until < ?)`,
		ts(l.Until), l.Token, owner, id.String(), ts(now))
	if err != nil {
		return wq.Lease{}, fmt.Errorf("claim item %s: %w", id, err)
	}
	if n == 1 {
		return l, nil
	}
	var exists int
	if err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM work_items WHERE id = ?`, id.String()).Scan(&exists); err != nil {
		return wq.Lease{}, fmt.Errorf("claim item %s: %w", id, translate(err))
	}
	if exists == 0 {
		return wq.Lease{}, fmt.Errorf("claim item %s: %w", id, wq.Errorf(wq.ENOTFOUND, "item %s not found", id))
	}
	return wq.Lease{}, fmt.Errorf("claim item %s: %w", id, wq.ErrNotClaimable)
}

// ClaimItems leases the claimable ones of ids in one immediate
// transaction, each under its own token, and reads the claimed items and
// their dimensions in it: one commit (one fsync) for the batch instead of
// one per item. The writer connection serialises claimers, so two never
// get the same item.
func (s *Store) ClaimItems(ctx context.Context, ids []wq.ItemID, types []string, owner string, now time.Time, d time.Duration) ([]wq.Claim, error) {
	if len(ids) == 0 || len(types) == 0 {
		return nil, nil
	}
	until := now.Add(d)
	in := "(" + strings.TrimSuffix(strings.Repeat("?,", len(types)), ",") + ")"
	// The ids and their leases' tokens, as one JSON object: a repeated id
	// is claimed once. The tokens are drawn here, from crypto/rand.
	leases := make(map[wq.ItemID]string, len(ids))
	var js strings.Builder
	js.Grow(len(ids) * 80)
	js.WriteByte('{')
	for _, id := range ids {
		if _, ok := leases[id]; ok {
			continue
		}
		token := uuid.NewString()
		leases[id] = token
		if len(leases) > 1 {
			js.WriteByte(',')
		}
		js.WriteString(`"` + id.String() + `":"` + token + `"`)
	}
	js.WriteByte('}')
	args := []any{ts(until), owner, js.String()}
	for _, t := range types {
		args = append(args, t)
	}
	args = append(args, ts(now))
	var out []wq.Claim
	err := s.write(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, `UPDATE work_items SET leased_until = ?, lease_token = t.value, lease_owner = ?
			FROM json_each(?) AS t
			WHERE work_items.id = t.key AND work_items.item_type IN `+in+` AND work_items.phase = 'active'
			AND (work_items.leased_until IS NULL OR work_items.leased_until < ?)
			RETURNING NOT EXISTS (SELECT 1 FROM pending_events WHERE work_item_id = work_items.id), `+claimColumns, args...)
		if err != nil {
			return translate(err)
		}
		byID := make(map[string]*wq.Item, len(leases))
		for rows.Next() {
			var noEvents bool
			it, err := scanItem(prefixed{rows, []any{&noEvents}})
			if err != nil {
				rows.Close()
				return err
			}
			it.Dimensions = wq.Dimensions{}
			byID[it.ID.String()] = it
			out = append(out, wq.Claim{Lease: wq.Lease{ItemID: it.ID, Token: leases[it.ID], Owner: owner, Until: until}, Item: it, NoEvents: noEvents})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return translate(err)
		}
		if len(out) == 0 {
			return nil
		}
		args := make([]any, 0, len(out))
		for _, c := range out {
			args = append(args, c.Lease.ItemID.String())
		}
		rows, err = tx.QueryContext(ctx, `SELECT work_item_id, dimension, variant, status, detail, pending_until, updated_at
			FROM work_item_statuses WHERE work_item_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(args)), ",")+`)`, args...)
		if err != nil {
			return translate(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			k, dim, err := scanDimension(rows, &id)
			if err != nil {
				return err
			}
			byID[id].Dimensions[k] = dim
		}
		return translate(rows.Err())
	})
	if err != nil {
		return nil, fmt.Errorf("claim %d items: %w", len(ids), err)
	}
	// RETURNING comes in the update's order.
	seam.SortClaims(out, ids)
	return out, nil
}

// scanDimension scans a work_item_statuses row: the leading columns into
// lead, then dimension, variant, status, detail, pending_until, updated_at.
func scanDimension(row scanner, lead ...any) (wq.DimensionKey, wq.Dimension, error) {
	var (
		k                    wq.DimensionKey
		d                    wq.Dimension
		detail, pending, upd sql.NullString
	)
	if err := row.Scan(append(lead, &k.Dimension, &k.Variant, &d.Status, &detail, &pending, &upd)...); err != nil {
		return k, d, translate(err)
	}
	if detail.Valid {
		d.Detail = json.RawMessage(detail.String)
	}
	var err error
	if d.PendingUntil, err = parseTS(pending); err != nil {
		return k, d, err
	}
	d.UpdatedAt, err = parseTS(upd)
	return k, d, err
}

// fenced runs fn in a write transaction after checking the lease token.
func (s *Store) fenced(ctx context.Context, l wq.Lease, op string, fn func(tx *sql.Tx, phase wq.Phase) error) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		var phase string
		err := tx.QueryRowContext(ctx, `SELECT phase FROM work_items WHERE id = ? AND lease_token = ?`,
			l.ItemID.String(), l.Token).Scan(&phase)
		if errors.Is(err, sql.ErrNoRows) {
			return wq.ErrLeaseLost
		}
		if err != nil {
			return translate(err)
		}
		return fn(tx, wq.Phase(phase))
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, l.ItemID, err)
	}
	return nil
}

// exec runs one statement as a write of its own and returns the rows it
// changed.
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return translate(err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// ExtendLease moves the lease's end.
func (s *Store) ExtendLease(ctx context.Context, l *wq.Lease, now time.Time, d time.Duration) error {
	until := now.Add(d)
	n, err := s.exec(ctx, `UPDATE work_items SET leased_until = ? WHERE id = ? AND lease_token = ?`,
		ts(until), l.ItemID.String(), l.Token)
	if err != nil {
		return fmt.Errorf("extend lease on %s: %w", l.ItemID, err)
	}
	if n != 1 {
		return fmt.Errorf("extend lease on %s: %w", l.ItemID, wq.ErrLeaseLost)
	}
	l.Until = until
	return nil
}

// ReleaseLease clears the lease if it still holds.
func (s *Store) ReleaseLease(ctx context.Context, l wq.Lease) error {
	_, err := s.exec(ctx, `UPDATE work_items SET leased_until = NULL, lease_token = NULL, lease_owner = NULL
		WHERE id = ? AND lease_token = ?`, l.ItemID.String(), l.Token)
	if err != nil {
		return fmt.Errorf("release lease on %s: %w", l.ItemID, err)
	}
	return nil
}

// setPhase moves the item to phase, finishing it and clearing deferred
// dimensions when the phase is terminal (they would otherwise stay in the
// sweep's pending_until index forever).
func setPhase(ctx context.Context, tx *sql.Tx, id wq.ItemID, phase wq.Phase, reason, errText string, now time.Time) error {
	var finished any
	if phase.Terminal() {
		finished = ts(now)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE work_items SET phase = ?, reason = ?, error = CASE WHEN ? = '' THEN error ELSE ? END,
		finished_at = ?, updated_at = ? WHERE id = ?`,
		string(phase), reason, errText, errText, finished, ts(now), id.String()); err != nil {
		return translate(err)
	}
	if phase.Terminal() {
		// A terminal item is never processed again: it is not actionable and
		// holds no lease, even if the worker dies before its exit decision.
		// The worker drops its pending events (DropEvents).
		if _, err := tx.ExecContext(ctx, `UPDATE work_items SET actionable = 0, leased_until = NULL, lease_token = NULL,
			lease_owner = NULL WHERE id = ?`, id.String()); err != nil {
			return translate(err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE work_item_statuses SET pending_until = NULL
			WHERE work_item_id = ? AND pending_until IS NOT NULL`, id.String()); err != nil {
			return translate(err)
		}
	}
	return nil
}

// ApplyChange applies an executor's change under the lease.
func (s *Store) ApplyChange(ctx context.Context, l wq.Lease, c wq.Change, now time.Time) (wq.Phase, error) {
	var old wq.Phase
	err := s.fenced(ctx, l, "apply change to", func(tx *sql.Tx, phase wq.Phase) error {
		old = phase
		if c.SeenRevision != 0 {
			var revision int64
			if err := tx.QueryRowContext(ctx, `SELECT revision FROM work_items WHERE id = ?`, l.ItemID.String()).Scan(&revision); err != nil {
				return translate(err)
			}
			if revision != c.SeenRevision {
				return wq.ErrSuperseded
			}
		}
		if c.Phase != "" {
			if err := setPhase(ctx, tx, l.ItemID, c.Phase, c.Reason, c.Error, now); err != nil {
				return err
			}
		} else if c.Error != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE work_items SET error = ?, updated_at = ? WHERE id = ?`,
				c.Error, ts(now), l.ItemID.String()); err != nil {
				return translate(err)
			}
		}
		return upsertDimensions(ctx, tx, l.ItemID, c.Dimensions, now)
	})
	return old, err
}

// RecordSuccess resets the failure counters.
func (s *Store) RecordSuccess(ctx context.Context, l wq.Lease, now time.Time) error {
	n, err := s.exec(ctx, `UPDATE work_items SET attempts = 0, failing_since = NULL, retry_after = NULL, error = '',
		updated_at = ? WHERE id = ? AND lease_token = ?`, ts(now), l.ItemID.String(), l.Token)
	if err != nil {
		return fmt.Errorf("record success of %s: %w", l.ItemID, err)
	}
	if n != 1 {
		return fmt.Errorf("record success of %s: %w", l.ItemID, wq.ErrLeaseLost)
	}
	return nil
}

// RecordFailure counts a failure and, with f.Fail, fails the item.
func (s *Store) RecordFailure(ctx context.Context, l wq.Lease, f wq.Failure, now time.Time) (int, error) {
	var attempts int
	err := s.fenced(ctx, l, "record failure of", func(tx *sql.Tx, phase wq.Phase) error {
		counted, since := 1, now
		if f.Transient || f.Held {
			counted = 0
		}
		if f.Held {
			since = time.Time{} // NULL: failing_since stays as it is
		}
		if err := tx.QueryRowContext(ctx, `UPDATE work_items SET attempts = attempts + ?, failing_since = coalesce(failing_since, ?),
			retry_after = ?, error = ?, updated_at = ? WHERE id = ? RETURNING attempts`,
			counted, ts(since), ts(f.RetryAfter), f.Error, ts(now), l.ItemID.String()).Scan(&attempts); err != nil {
			return translate(err)
		}
		if f.Fail {
			return setPhase(ctx, tx, l.ItemID, wq.PhaseFailed, "", f.Error, now)
		}
		return nil
	})
	return attempts, err
}

const eventColumns = `id, work_item_id, source, event_type, delivery_id, body, event_ts, received_at`

// DropEvents deletes a terminal item's pending events and returns them.
func (s *Store) DropEvents(ctx context.Context, id wq.ItemID) ([]wq.Event, error) {
	var out []wq.Event
	err := s.write(ctx, func(tx *sql.Tx) error {
		out = nil
		rows, err := tx.QueryContext(ctx, `DELETE FROM pending_events WHERE work_item_id = ?
			AND EXISTS (SELECT 1 FROM work_items WHERE id = ? AND phase <> 'active')
			RETURNING id, source, event_type, delivery_id, event_ts, received_at`, id.String(), id.String())
		if err != nil {
			return translate(err)
		}
		defer rows.Close()
		for rows.Next() {
			ev := wq.Event{ItemID: id}
			var eventTS, receivedAt sql.NullString
			if err := rows.Scan(&ev.ID, &ev.Source, &ev.EventType, &ev.DeliveryID, &eventTS, &receivedAt); err != nil {
				return translate(err)
			}
			if ev.EventTS, err = parseTS(eventTS); err != nil {
				return err
			}
			if ev.ReceivedAt, err = parseTS(receivedAt); err != nil {
				return err
			}
			out = append(out, ev)
		}
		return translate(rows.Err())
	})
	if err != nil {
		return nil, fmt.Errorf("drop events of %s: %w", id, err)
	}
	slices.SortFunc(out, func(a, b wq.Event) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// NextEvent returns the item's oldest pending event, or nil.
func (s *Store) NextEvent(ctx context.Context, id wq.ItemID) (*wq.Event, error) {
	var (
		ev                  wq.Event
		itemID, body        string
		eventTS, receivedAt sql.NullString
	)
	err := s.read.QueryRowContext(ctx, `SELECT `+eventColumns+` FROM pending_events WHERE work_item_id = ? ORDER BY id LIMIT 1`,
		id.String()).Scan(&ev.ID, &itemID, &ev.Source, &ev.EventType, &ev.DeliveryID, &body, &eventTS, &receivedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("next event of %s: %w", id, translate(err))
	}
	ev.ItemID = id
	ev.Body = json.RawMessage(body)
	if ev.EventTS, err = parseTS(eventTS); err != nil {
		return nil, err
	}
	if ev.ReceivedAt, err = parseTS(receivedAt); err != nil {
		return nil, err
	}
	return &ev, nil
}

// ApplyEvent applies a handler's result and deletes the event.
func (s *Store) ApplyEvent(ctx context.Context, l wq.Lease, ev *wq.Event, r wq.EventResult, now time.Time) (wq.AppliedEvent, error) {
	var out wq.AppliedEvent
	err := s.fenced(ctx, l, "apply event to", func(tx *sql.Tx, phase wq.Phase) error {
		out.OldPhase, out.NewPhase = phase, phase
		if _, err := tx.ExecContext(ctx, `DELETE FROM pending_events WHERE id = ?`, ev.ID); err != nil {
			return translate(err)
		}
		if phase != wq.PhaseActive {
			return nil // DDR-37: only active items accept events
		}
		var last sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT last_event_at FROM work_items WHERE id = ?`, l.ItemID.String()).Scan(&last); err != nil {
			return translate(err)
		}
		lastAt, err := parseTS(last)
		if err != nil {
			return err
		}
		out.Stale = !ev.EventTS.IsZero() && ev.EventTS.Before(lastAt)
		if !ev.EventTS.IsZero() && !out.Stale {
			if _, err := tx.ExecContext(ctx, `UPDATE work_items SET last_event_at = ? WHERE id = ?`, ts(ev.EventTS), l.ItemID.String()); err != nil {
				return translate(err)
			}
		}
		if r.Phase != "" && r.Phase != phase && !out.Stale {
			if err := setPhase(ctx, tx, l.ItemID, r.Phase, r.Reason, "", now); err != nil {
				return err
			}
			out.NewPhase, out.PhaseApplied = r.Phase, true
		}
		return upsertDimensions(ctx, tx, l.ItemID, r.Dimensions, now) // DDR-38: even when stale
	})
	return out, err
}

// FinishProcessing is the loop's exit decision.
func (s *Store) FinishProcessing(ctx context.Context, l wq.Lease, seen int64, now time.Time) (bool, error) {
	exited := false
	err := s.fenced(ctx, l, "finish processing", func(tx *sql.Tx, _ wq.Phase) error {
		var pending int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pending_events WHERE work_item_id = ?`, l.ItemID.String()).Scan(&pending); err != nil {
			return translate(err)
		}
		if pending > 0 {
			return nil
		}
		res, err := tx.ExecContext(ctx, `UPDATE work_items SET actionable = 0, leased_until = NULL, lease_token = NULL, lease_owner = NULL
			WHERE id = ? AND revision = ?`, l.ItemID.String(), seen)
		if err != nil {
			return translate(err)
		}
		n, _ := res.RowsAffected()
		exited = n == 1
		return nil
	})
	return exited, err
}

// ApplyAndFinish writes an action's last dimensions and takes the exit
// decision on them in one transaction (the writer's lock stands for the
// per-item lock).
func (s *Store) ApplyAndFinish(ctx context.Context, l wq.Lease, c wq.Change, now time.Time) (bool, error) {
	if !c.FoldsExit() {
		return false, wq.ErrNotFoldable
	}
	exited := false
	err := s.fenced(ctx, l, "apply the last change to", func(tx *sql.Tx, _ wq.Phase) error {
		var revision int64
		var pending bool
		if err := tx.QueryRowContext(ctx, `SELECT revision, EXISTS (SELECT 1 FROM pending_events WHERE work_item_id = ?)
			FROM work_items WHERE id = ?`, l.ItemID.String(), l.ItemID.String()).Scan(&revision, &pending); err != nil {
			return translate(err)
		}
		if revision != c.SeenRevision {
			return wq.ErrSuperseded
		}
		if err := upsertDimensions(ctx, tx, l.ItemID, c.Dimensions, now); err != nil {
			return err
		}
		if pending {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE work_items SET actionable = 0, leased_until = NULL, lease_token = NULL, lease_owner = NULL
			WHERE id = ?`, l.ItemID.String()); err != nil {
			return translate(err)
		}
		exited = true
		return nil
	})
	return exited, err
}

// DueItems finds the items the sweep should process, through three indexed
// discovery paths. CROSS JOIN pins SQLite's join order: each path starts
// from its small set of due rows and looks items up by primary key, instead
// of walking every active item (the planner's choice otherwise).
func (s *Store) DueItems(ctx context.Context, types []string, now time.Time, limit int) ([]wq.ItemID, error) {
	if len(types) == 0 || limit <= 0 {
		return nil, nil
	}
	q, args := dueItemsQuery(types, now, limit)
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("find due items: %w", translate(err))
	}
	defer rows.Close()
	var ids []wq.ItemID
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, translate(err)
		}
		u, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("item id %q: %w", id, err)
		}
		ids = append(ids, u)
	}
	return ids, translate(rows.Err())
}

// dueItemsQuery is the sweep's query (its plan is tested in plan_test.go).
func dueItemsQuery(types []string, now time.Time, limit int) (string, []any) {
	in := "(" + strings.TrimSuffix(strings.Repeat("?,", len(types)), ",") + ")"
	var args []any
	addTypes := func() {
		for _, t := range types {
			args = append(args, t)
		}
	}
	n := ts(now)
	// The path of actionable items stops at the limit on its own, as on
	// PostgreSQL: a backlog of due items must not make every sweep read
	// all of it.
	q := `SELECT id FROM (SELECT id FROM work_items INDEXED BY work_items_sweep_actionable
		WHERE actionable = 1 AND phase = 'active' AND item_type IN ` + in + `
		AND (retry_after IS NULL OR retry_after <= ?) AND (leased_until IS NULL OR leased_until < ?)
		LIMIT ?)
	UNION
	SELECT w.id FROM (SELECT DISTINCT work_item_id FROM pending_events) e CROSS JOIN work_items w ON w.id = e.work_item_id
		WHERE w.phase = 'active' AND w.item_type IN ` + in + ` AND (w.leased_until IS NULL OR w.leased_until < ?)
	UNION
	SELECT w.id FROM work_item_statuses s INDEXED BY work_item_statuses_sweep_pending CROSS JOIN work_items w ON w.id = s.work_item_id
		WHERE s.pending_until IS NOT NULL AND s.status = 'true' AND s.pending_until <= ?
		AND w.phase = 'active' AND w.item_type IN ` + in + `
		AND (w.retry_after IS NULL OR w.retry_after <= ?) AND (w.leased_until IS NULL OR w.leased_until < ?)
	LIMIT ?`
	addTypes()
	args = append(args, n, n, limit)
	addTypes()
	args = append(args, n, n)
	addTypes()
	args = append(args, n, n, limit)
	return q, args
}

// PruneDeliveries forgets deliveries received before before.
func (s *Store) PruneDeliveries(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.exec(ctx, `DELETE FROM webhook_deliveries WHERE received_at < ?`, ts(before))
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return n, nil
}

// InsertDelivery stores a webhook delivery's events once.
func (s *Store) InsertDelivery(ctx context.Context, source, deliveryID string, events []wq.Event, now time.Time) (wq.Delivery, error) {
	var out wq.Delivery
	// IMMEDIATE: serialised with FinishProcessing and terminal writes (DDR-34).
	err := s.write(ctx, func(tx *sql.Tx) error {
		out = wq.Delivery{}
		res, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (source, delivery_id, received_at) VALUES (?, ?, ?)
			ON CONFLICT DO NOTHING`, source, deliveryID, ts(now))
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			out.Duplicate = true
			return nil
		}
		for _, ev := range events {
			res, err := tx.ExecContext(ctx, `UPDATE work_items SET actionable = 1, revision = revision + 1 WHERE id = ? AND phase = 'active'`, ev.ItemID.String())
			if err != nil {
				return translate(err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				var phase string
				err := tx.QueryRowContext(ctx, `SELECT phase FROM work_items WHERE id = ?`, ev.ItemID.String()).Scan(&phase)
				if errors.Is(err, sql.ErrNoRows) {
					return wq.Errorf(wq.ENOTFOUND, "item %s not found", ev.ItemID)
				} else if err != nil {
					return translate(err)
				}
				out.Ended++
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO pending_events (work_item_id, source, event_type, delivery_id, body, event_ts, received_at)
				VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (work_item_id, source, delivery_id) DO NOTHING`,
				ev.ItemID.String(), source, ev.EventType, deliveryID, string(ev.Body), ts(ev.EventTS), ts(now)); err != nil {
				return translate(err)
			}
			out.Stored++
		}
		return nil
	})
	if err != nil {
		return wq.Delivery{}, fmt.Errorf("insert delivery %s/%s: %w", source, deliveryID, err)
	}
	return out, nil
}
