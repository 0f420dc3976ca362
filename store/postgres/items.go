package postgres

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/store/seam"
)

const itemColumns = `id, item_type, phase, reason, actionable, revision, leased_until, lease_owner,
	attempts, retry_after, error, idempotency_key, generation, caller_identity, content_hash,
	last_event_at, created_at, updated_at, finished_at, failing_since, forge, project`

// itemScanner scans rows of itemColumns (after the leading columns a
// caller passes: the claim's token and whether events are pending) one
// after another into new items, reusing its destinations: the nullable columns' values and the
// list of destinations, one allocation each a row otherwise, and a claim
// or a load scans a row for every item a burn-down works.
type itemScanner struct {
	it                                           wq.Item
	phase                                        string
	leasedUntil, retryAfter, lastEvent, finished pgtype.Timestamptz
	failingSince                                 pgtype.Timestamptz
	leaseOwner, key                              pgtype.Text
	dest                                         []any
}

func (sc *itemScanner) scan(row pgx.Row, lead ...any) (*wq.Item, error) {
	sc.it = wq.Item{}
	sc.dest = append(append(sc.dest[:0], lead...), &sc.it.ID, &sc.it.ItemType, &sc.phase, &sc.it.Reason, &sc.it.Actionable,
		&sc.it.Revision, &sc.leasedUntil, &sc.leaseOwner, &sc.it.Attempts, &sc.retryAfter, &sc.it.Error, &sc.key,
		&sc.it.Generation, &sc.it.CallerIdentity, &sc.it.ContentHash, &sc.lastEvent, &sc.it.CreatedAt, &sc.it.UpdatedAt,
		&sc.finished, &sc.failingSince, &sc.it.Forge, &sc.it.Project)
	err := row.Scan(sc.dest...)
	clear(sc.dest) // keep no caller's destination past the row
	if err != nil {
		return nil, translate(err)
	}
	it := new(wq.Item)
	*it = sc.it
	it.Phase = wq.Phase(sc.phase)
	it.LeaseOwner, it.IdempotencyKey = sc.leaseOwner.String, sc.key.String
	it.LeasedUntil, it.RetryAfter, it.LastEventAt, it.FinishedAt = tsValue(sc.leasedUntil), tsValue(sc.retryAfter), tsValue(sc.lastEvent), tsValue(sc.finished)
	it.FailingSince = tsValue(sc.failingSince)
	it.CreatedAt, it.UpdatedAt = it.CreatedAt.UTC(), it.UpdatedAt.UTC()
	return it, nil
}

// CreateItem inserts an active, actionable item and its initial
// dimensions, and reads it back, in one round trip (Insert).
func (s *Store) CreateItem(ctx context.Context, n wq.NewItem, now time.Time) (*wq.Item, error) {
	it, err := s.Insert(ctx, &n, now)
	if err != nil {
		return nil, fmt.Errorf("create %s item: %w", n.ItemType, err)
	}
	return it, nil
}

func upsertDimensions(ctx context.Context, tx pgx.Tx, id wq.ItemID, dims []wq.DimensionUpdate, now time.Time) error {
	for _, d := range dims {
		st := dimensionStmt(id, d, now)
		if _, err := tx.Exec(ctx, st.SQL, st.Args...); err != nil {
			return fmt.Errorf("upsert dimension %s/%s of %s: %w", d.Dimension, d.Variant, id, translate(err))
		}
	}
	return nil
}

// dimensionStmt upserts one dimension row of item id.
func dimensionStmt(id wq.ItemID, d wq.DimensionUpdate, now time.Time) seam.Stmt {
	var detail *string
	if len(d.Detail) > 0 {
		s := string(d.Detail)
		detail = &s
	}
	return seam.Stmt{SQL: `INSERT INTO work_item_statuses
		(work_item_id, dimension, variant, status, detail, pending_until, updated_at) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)
		ON CONFLICT (work_item_id, dimension, variant) DO UPDATE SET status = excluded.status,
		detail = excluded.detail, pending_until = excluded.pending_until, updated_at = excluded.updated_at`,
		Args: []any{id, d.Dimension, d.Variant, d.Status, detail, tsArg(d.PendingUntil), now.UTC()}}
}

// GetItem returns the item with its dimensions: both queries in one
// batch, one round trip, coalesced with other loads made at the same
// moment (coalesced.go).
func (s *Store) GetItem(ctx context.Context, id wq.ItemID) (*wq.Item, error) {
	r, err := s.co.load.do(ctx, id)
	if err == nil {
		err = r.err
	}
	if err != nil {
		return nil, fmt.Errorf("get item %s: %w", id, err)
	}
	return r.item, nil
}

// ClaimItem leases an active, unleased item.
func (s *Store) ClaimItem(ctx context.Context, id wq.ItemID, owner string, now time.Time, d time.Duration) (wq.Lease, error) {
	l := wq.Lease{ItemID: id, Token: uuid.NewString(), Owner: owner, Until: now.Add(d).UTC()}
	tag, err := s.pool.Exec(ctx, `UPDATE work_items SET leased_until = $2, lease_token = $3, lease_owner = $4
		WHERE id = $1 AND phase = 'active' AND (leased_until IS NULL OR leased_until < $5)`,
		id, l.Until, l.Token, owner, now.UTC())
	if err != nil {
		return wq.Lease{}, fmt.Errorf("claim item %s: %w", id, translate(err))
	}
	if tag.RowsAffected() == 1 {
		return l, nil
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM work_items WHERE id = $1)`, id).Scan(&exists); err != nil {
		return wq.Lease{}, fmt.Errorf("claim item %s: %w", id, translate(err))
	}
	if !exists {
		return wq.Lease{}, fmt.Errorf("claim item %s: %w", id, wq.Errorf(wq.ENOTFOUND, "item %s not found", id))
	}
	return wq.Lease{}, fmt.Errorf("claim item %s: %w", id, wq.ErrNotClaimable)
}

// ClaimItems leases the claimable ones of ids in one statement, each under
// its own token (drawn by the server: claimSQL), and reads their
// dimensions in the same batch: one round trip, one transaction. SKIP
// LOCKED leaves an item another claimer is leasing right now to that
// claimer instead of waiting for it; an item it committed meanwhile fails
// the re-checked lease condition. The claim re-checks everything the
// single claim does, plus the type.
func (s *Store) ClaimItems(ctx context.Context, ids []wq.ItemID, types []string, owner string, now time.Time, d time.Duration) ([]wq.Claim, error) {
	if len(ids) == 0 || len(types) == 0 {
		return nil, nil
	}
	until := now.Add(d).UTC()
	b := &pgx.Batch{}
	// Only the ids select rows, and the other conditions test the locked
	// rows (FOR UPDATE returns their latest version), not the table: so
	// the primary key is the only index the plan can use, whatever the
	// statistics say. With the conditions in the locking scan, a planner
	// without statistics (a new database) walked every active item of the
	// type to claim 32.
	arr := uuidArray(ids)
	b.Queue(claimSQL, arr, types, until, now.UTC(), owner)
	b.Queue(`SELECT work_item_id, dimension, variant, status, detail::text, pending_until, updated_at
		FROM work_item_statuses WHERE work_item_id = ANY($1)`, arr)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("claim %d items: %w", len(ids), translate(err))
	}
	// The claim returns each row once (an UPDATE by id), in its own order;
	// the claims go out in the order of ids.
	out := make([]wq.Claim, 0, len(ids))
	byID := make(map[wq.ItemID]*wq.Item, len(ids))
	var sc itemScanner
	for rows.Next() {
		var (
			token    string
			noEvents bool
		)
		it, err := sc.scan(rows, &token, &noEvents)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim %d items: %w", len(ids), err)
		}
		it.Dimensions = wq.Dimensions{}
		byID[it.ID] = it
		out = append(out, wq.Claim{Lease: wq.Lease{ItemID: it.ID, Token: token, Owner: owner, Until: until}, Item: it, NoEvents: noEvents})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim %d items: %w", len(ids), translate(err))
	}
	if err := scanDimensionsInto(br, byID); err != nil {
		return nil, fmt.Errorf("claim %d items: dimensions: %w", len(ids), err)
	}
	seam.SortClaims(out, ids)
	return out, nil
}

// claimSQL claims: $1 the ids, $2 the types, $3 the lease's end, $4
// now, $5 the owner. It locks the ids' rows, keeps those it may claim
// (tested on the locked version, as FOR UPDATE returns it), and updates
// them by id, with no join: the generic plan takes every array for 10
// rows, and a join of the locked rows with the table or with an array
// was a nested loop that compared every row of one side with every row
// of the other (10,000 comparisons for a claim of 100, half the
// statement's time), or, on a new database's statistics, walked every
// item. Each lease's token is drawn by the server (gen_random_uuid, from
// its strong random source) and returned.
var claimSQL = `WITH claimable AS (
			SELECT id, item_type, phase, leased_until FROM work_items WHERE id = ANY($1)
			ORDER BY id FOR UPDATE SKIP LOCKED)
		UPDATE work_items w SET leased_until = $3, lease_token = gen_random_uuid()::text, lease_owner = $5
		WHERE w.id = ANY(ARRAY(SELECT c.id FROM claimable c
			WHERE c.item_type = ANY($2) AND c.phase = 'active' AND (c.leased_until IS NULL OR c.leased_until < $4)))
		RETURNING w.lease_token, NOT EXISTS (SELECT 1 FROM pending_events p WHERE p.work_item_id = w.id), ` + claimColumns

// claimColumns are itemColumns qualified by the claim's alias w, as the
// claim's RETURNING needs them (its FROM list has ids of its own).
var claimColumns = "w." + strings.Join(strings.Split(strings.Join(strings.Fields(itemColumns), " "), ", "), ", w.")

// fenced runs fn in a transaction after locking the item's row under the
// lease token.
func (s *Store) fenced(ctx context.Context, l wq.Lease, op string, fn func(tx pgx.Tx, phase wq.Phase) error) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var phase string
		err := tx.QueryRow(ctx, `SELECT phase FROM work_items WHERE id = $1 AND lease_token = $2 FOR UPDATE`, l.ItemID, l.Token).Scan(&phase)
		if errors.Is(err, pgx.ErrNoRows) {
			return wq.ErrLeaseLost
		}
		if err != nil {
			return translate(err)
		}
		return fn(tx, wq.Phase(phase))
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, l.ItemID, translate(err))
	}
	return nil
}

// ExtendLease moves the lease's end.
func (s *Store) ExtendLease(ctx context.Context, l *wq.Lease, now time.Time, d time.Duration) error {
	until := now.Add(d).UTC()
	tag, err := s.pool.Exec(ctx, `UPDATE work_items SET leased_until = $3 WHERE id = $1 AND lease_token = $2`, l.ItemID, l.Token, until)
	if err != nil {
		return fmt.Errorf("extend lease on %s: %w", l.ItemID, translate(err))
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("extend lease on %s: %w", l.ItemID, wq.ErrLeaseLost)
	}
	l.Until = until
	return nil
}

// ReleaseLease clears the lease if it still holds.
func (s *Store) ReleaseLease(ctx context.Context, l wq.Lease) error {
	_, err := s.pool.Exec(ctx, `UPDATE work_items SET leased_until = NULL, lease_token = NULL, lease_owner = NULL
		WHERE id = $1 AND lease_token = $2`, l.ItemID, l.Token)
	if err != nil {
		return fmt.Errorf("release lease on %s: %w", l.ItemID, translate(err))
	}
	return nil
}

// setPhase moves the item to phase, finishing it and clearing deferred
// dimensions when the phase is terminal (they would otherwise stay in the
// sweep's pending_until index forever).
func setPhase(ctx context.Context, tx pgx.Tx, id wq.ItemID, phase wq.Phase, reason, errText string, now time.Time) error {
	var finished *time.Time
	if phase.Terminal() {
		finished = tsArg(now)
	}
	if _, err := tx.Exec(ctx, `UPDATE work_items SET phase = $2, reason = $3, error = CASE WHEN $4 = '' THEN error ELSE $4 END,
		finished_at = $5, updated_at = $6 WHERE id = $1`, id, string(phase), reason, errText, finished, now.UTC()); err != nil {
		return translate(err)
	}
	if phase.Terminal() {
		// A terminal item is never processed again: it is not actionable and
		// holds no lease, even if the worker dies before its exit decision.
		// The worker drops its pending events (DropEvents).
		if _, err := tx.Exec(ctx, `UPDATE work_items SET actionable = false, leased_until = NULL, lease_token = NULL,
			lease_owner = NULL WHERE id = $1`, id); err != nil {
			return translate(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE work_item_statuses SET pending_until = NULL
			WHERE work_item_id = $1 AND pending_until IS NOT NULL`, id); err != nil {
			return translate(err)
		}
	}
	return nil
}

// ApplyChange applies an executor's change under the lease.
func (s *Store) ApplyChange(ctx context.Context, l wq.Lease, c wq.Change, now time.Time) (wq.Phase, error) {
	if c.Phase == "" && c.Error == "" {
		// Dimensions alone, the common case: coalesced with other
		// executors' writes (coalesced.go).
		r, err := s.co.dims.do(ctx, dimsReq{l: l, seen: c.SeenRevision, dims: c.Dimensions, now: now})
		if err == nil {
			err = r.err
		}
		if err != nil {
			return "", fmt.Errorf("apply change to %s: %w", l.ItemID, err)
		}
		return r.old, nil
	}
	var old wq.Phase
	err := s.fenced(ctx, l, "apply change to", func(tx pgx.Tx, phase wq.Phase) error {
		old = phase
		if c.SeenRevision != 0 {
			var revision int64
			if err := tx.QueryRow(ctx, `SELECT revision FROM work_items WHERE id = $1`, l.ItemID).Scan(&revision); err != nil {
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
			if _, err := tx.Exec(ctx, `UPDATE work_items SET error = $2, updated_at = $3 WHERE id = $1`, l.ItemID, c.Error, now.UTC()); err != nil {
				return translate(err)
			}
		}
		return upsertDimensions(ctx, tx, l.ItemID, c.Dimensions, now)
	})
	return old, err
}

// ApplyAndFinish writes an action's last dimensions and takes the exit
// decision on them: coalesced with other executors' writes, in one
// statement after the exiting items' advisory locks (coalesced.go).
func (s *Store) ApplyAndFinish(ctx context.Context, l wq.Lease, c wq.Change, now time.Time) (bool, error) {
	if !c.FoldsExit() {
		return false, wq.ErrNotFoldable
	}
	r, err := s.co.dims.do(ctx, dimsReq{l: l, seen: c.SeenRevision, dims: c.Dimensions, now: now, exit: true})
	if err == nil {
		err = r.err
	}
	if err != nil {
		return false, fmt.Errorf("apply the last change to %s: %w", l.ItemID, err)
	}
	return r.exited, nil
}

// RecordSuccess resets the failure counters.
func (s *Store) RecordSuccess(ctx context.Context, l wq.Lease, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE work_items SET attempts = 0, failing_since = NULL, retry_after = NULL, error = '', updated_at = $3
		WHERE id = $1 AND lease_token = $2`, l.ItemID, l.Token, now.UTC())
	if err != nil {
		return fmt.Errorf("record success of %s: %w", l.ItemID, translate(err))
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("record success of %s: %w", l.ItemID, wq.ErrLeaseLost)
	}
	return nil
}

// RecordFailure counts a failure and, with f.Fail, fails the item.
func (s *Store) RecordFailure(ctx context.Context, l wq.Lease, f wq.Failure, now time.Time) (int, error) {
	var attempts int
	err := s.fenced(ctx, l, "record failure of", func(tx pgx.Tx, _ wq.Phase) error {
		counted, since := 1, now
		if f.Transient || f.Held {
			counted = 0
		}
		if f.Held {
			since = time.Time{} // NULL: failing_since stays as it is
		}
		if err := tx.QueryRow(ctx, `UPDATE work_items SET attempts = attempts + $5, failing_since = coalesce(failing_since, $6),
			retry_after = $2, error = $3, updated_at = $4 WHERE id = $1 RETURNING attempts`,
			l.ItemID, tsArg(f.RetryAfter), f.Error, now.UTC(), counted, tsArg(since)).Scan(&attempts); err != nil {
			return translate(err)
		}
		if f.Fail {
			return setPhase(ctx, tx, l.ItemID, wq.PhaseFailed, "", f.Error, now)
		}
		return nil
	})
	return attempts, err
}

// DropEvents deletes a terminal item's pending events and returns them.
func (s *Store) DropEvents(ctx context.Context, id wq.ItemID) ([]wq.Event, error) {
	rows, err := s.pool.Query(ctx, `DELETE FROM pending_events WHERE work_item_id = $1
		AND EXISTS (SELECT 1 FROM work_items WHERE id = $1 AND phase <> 'active')
		RETURNING id, source, event_type, delivery_id, event_ts, received_at`, id)
	if err != nil {
		return nil, fmt.Errorf("drop events of %s: %w", id, translate(err))
	}
	defer rows.Close()
	var out []wq.Event
	for rows.Next() {
		ev := wq.Event{ItemID: id}
		var eventTS *time.Time
		if err := rows.Scan(&ev.ID, &ev.Source, &ev.EventType, &ev.DeliveryID, &eventTS, &ev.ReceivedAt); err != nil {
			return nil, translate(err)
		}
		ev.EventTS, ev.ReceivedAt = tsVal(eventTS), ev.ReceivedAt.UTC()
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("drop events of %s: %w", id, translate(err))
	}
	slices.SortFunc(out, func(a, b wq.Event) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// NextEvent returns the item's oldest pending event, or nil.
func (s *Store) NextEvent(ctx context.Context, id wq.ItemID) (*wq.Event, error) {
	var (
		ev      wq.Event
		body    string
		eventTS *time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT id, source, event_type, delivery_id, body::text, event_ts, received_at
		FROM pending_events WHERE work_item_id = $1 ORDER BY id LIMIT 1`, id).
		Scan(&ev.ID, &ev.Source, &ev.EventType, &ev.DeliveryID, &body, &eventTS, &ev.ReceivedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("next event of %s: %w", id, translate(err))
	}
	ev.ItemID, ev.Body, ev.EventTS, ev.ReceivedAt = id, []byte(body), tsVal(eventTS), ev.ReceivedAt.UTC()
	return &ev, nil
}

// ApplyEvent applies a handler's result and deletes the event.
func (s *Store) ApplyEvent(ctx context.Context, l wq.Lease, ev *wq.Event, r wq.EventResult, now time.Time) (wq.AppliedEvent, error) {
	var out wq.AppliedEvent
	err := s.fenced(ctx, l, "apply event to", func(tx pgx.Tx, phase wq.Phase) error {
		out.OldPhase, out.NewPhase = phase, phase
		if _, err := tx.Exec(ctx, `DELETE FROM pending_events WHERE id = $1`, ev.ID); err != nil {
			return translate(err)
		}
		if phase != wq.PhaseActive {
			return nil // DDR-37: only active items accept events
		}
		var last *time.Time
		if err := tx.QueryRow(ctx, `SELECT last_event_at FROM work_items WHERE id = $1`, l.ItemID).Scan(&last); err != nil {
			return translate(err)
		}
		out.Stale = !ev.EventTS.IsZero() && ev.EventTS.Before(tsVal(last))
		if !ev.EventTS.IsZero() && !out.Stale {
			if _, err := tx.Exec(ctx, `UPDATE work_items SET last_event_at = $2 WHERE id = $1`, l.ItemID, ev.EventTS.UTC()); err != nil {
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

// FinishProcessing is the loop's exit decision, under the per-item
// advisory lock shared with InsertDelivery (DDR-34): the lock, then the
// conditional update, whose snapshot is taken once the lock is held, so
// it sees every event whose insert committed before. Exits made at the
// same moment go together (coalesced.go): one transaction, one round
// trip.
func (s *Store) FinishProcessing(ctx context.Context, l wq.Lease, seen int64, now time.Time) (bool, error) {
	r, err := s.co.finish.do(ctx, finishReq{l: l, seen: seen})
	if err == nil {
		err = r.err
	}
	if err != nil {
		return false, fmt.Errorf("finish processing %s: %w", l.ItemID, err)
	}
	return r.exited, nil
}

// DueItems finds the items the sweep should process, through three indexed
// discovery paths.
func (s *Store) DueItems(ctx context.Context, types []string, now time.Time, limit int) ([]wq.ItemID, error) {
	return s.DueItemsOf(ctx, "", types, now, limit)
}

// DueItemsOf is DueItems for instance ("" for none: the whole ready set
// is its share): its own share of the ready set first, then the others'
// when its own cannot fill the limit (wq.SharedSweeper). The pending
// events and the deferred rows are read whole every time.
// The ready set's span of ids is cut into as many ranges as there are
// instances that recorded handling one of types in the last sweepLive,
// this one counted whether it did or not yet, one range each in the
// order of their names (shareBounds). Each instance computes the cut at
// its own sweep, from the span then: a share is a preference, so that
// two cuts a moment apart only let both instances read the few ids
// between them.
// The top-up is what keeps a crashed instance's share moving: its record
// lives on for sweepLive, and an engine sweeps again at once only after
// a full sweep (one short of the limit waits for the sweep interval), so
// reading the others' shares only once its own had nothing due left
// them to the interval whenever its own still held a few items queued
// in the process.
func (s *Store) DueItemsOf(ctx context.Context, instance string, types []string, now time.Time, limit int) ([]wq.ItemID, error) {
	if len(types) == 0 || limit <= 0 {
		return nil, nil
	}
	sw, err := s.sweepStart(ctx, instance, types, now)
	if err != nil {
		return nil, err
	}
	ids, err := s.dueItems(ctx, types, now, limit, sw, false)
	if err != nil || len(ids) >= limit || sw.shares == 1 {
		return ids, err
	}
	// The others' shares, whose instances may be gone or behind. The
	// pending events and deferred rows come again: asked for the whole
	// limit, so that those repeats cannot crowd out the ready items.
	more, err := s.dueItems(ctx, types, now, limit, sw, true)
	if err != nil {
		return nil, err
	}
	found := make(map[wq.ItemID]bool, len(ids))
	for _, id := range ids {
		found[id] = true
	}
	for _, id := range more {
		if len(ids) == limit {
			break
		}
		if !found[id] {
			found[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// dueItems runs dueItemsSQL on the instance's share, or on the others'.
func (s *Store) dueItems(ctx context.Context, types []string, now time.Time, limit int, sw sweep, others bool) ([]wq.ItemID, error) {
	rows, err := s.pool.Query(ctx, dueItemsSQL, types, now.UTC(), limit, sw.start, sw.from, sw.to, others)
	if err != nil {
		return nil, fmt.Errorf("find due items: %w", translate(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("find due items: %w", translate(err))
	}
	return ids, nil
}

// sweepLive is how lately an instance must have recorded its handled
// types to have a share of the ready set: an instance that stopped loses
// its share this long after its last sweep (until then the others sweep
// its items after their own).
const sweepLive = 5 * time.Minute

// sweep is where a sweep starts reading the ready set and which share of
// it is the instance's own: shares instances, this one share (0-based),
// whose ids run from from to to (shareBounds).
type sweep struct {
	start         [16]byte
	lo, hi        *[16]byte // the ready set's span (nil: empty)
	from, to      *[16]byte
	shares, share int
}

// sweepStart is where a sweep starts reading the ready set: an id drawn
// at random inside the instance's share of the ready set's span, so that
// sweeps read different parts of a backlog instead of all queueing its
// oldest items (two instances made 0.68-0.88 of one). The ids are
// UUIDv7, ordered by time, so the draw is on their leading 64 bits. It
// also counts the live instances, in the same round trip, for the share.
func (s *Store) sweepStart(ctx context.Context, instance string, types []string, now time.Time) (sweep, error) {
	var (
		lo, hi        *[16]byte
		others, below int
	)
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT id FROM work_item_ready ORDER BY id LIMIT 1),
		(SELECT id FROM work_item_ready ORDER BY id DESC LIMIT 1),
		(SELECT count(DISTINCT instance) FROM item_type_handlers
			WHERE $1 <> '' AND item_type = ANY($2) AND seen_at >= $3 AND instance <> $1),
		(SELECT count(DISTINCT instance) FROM item_type_handlers
			WHERE $1 <> '' AND item_type = ANY($2) AND seen_at >= $3 AND instance < $1)`,
		instance, types, now.Add(-sweepLive).UTC()).Scan(&lo, &hi, &others, &below); err != nil {
		return sweep{}, fmt.Errorf("find due items: the ready set's span: %w", translate(err))
	}
	sw := sweep{shares: others + 1, share: below, lo: lo, hi: hi}
	if lo == nil || hi == nil {
		return sw, nil
	}
	sw.from, sw.to = shareBounds(*lo, *hi, sw.shares, sw.share)
	from, to := *lo, *hi
	if sw.from != nil {
		from = *sw.from
	}
	if sw.to != nil {
		to = *sw.to
	}
	sw.start = randomBetween(from, to)
	return sw, nil
}

// shareBounds cuts the span of ids from lo to hi, on their leading 64
// bits, into shares equal ranges and returns share's: from inclusive,
// to exclusive, nil for no bound (the first share has no lower bound,
// the last no upper one, so that the shares cover every id, in or out
// of the span). Each instance's share is a run of neighbouring ids, and
// so of items made at about the same time, which sit in the same pages
// of the table and its indexes: an instance's claims and write batches
// touch pages its own share fills. Split by the id's last byte, every
// page held every instance's items, and each batch of a given size was
// spread over twice the pages: two instances took 4.5% more of the
// machine's CPU per item (6 alternating rounds, 106 against 111 ms per
// 1,000 items) and made 3% fewer items/s.
func shareBounds(lo, hi [16]byte, shares, share int) (from, to *[16]byte) {
	if shares <= 1 {
		return nil, nil
	}
	a, b := binary.BigEndian.Uint64(lo[:8]), binary.BigEndian.Uint64(hi[:8])
	if b < a {
		b = a
	}
	bound := func(k int) *[16]byte {
		// a + (b-a)*k/shares, in 128 bits: k < shares, so the quotient fits.
		h, l := bits.Mul64(b-a, uint64(k))
		q, _ := bits.Div64(h, l, uint64(shares))
		var out [16]byte
		binary.BigEndian.PutUint64(out[:8], a+q)
		return &out
	}
	if share > 0 {
		from = bound(share)
	}
	if share < shares-1 {
		to = bound(share + 1)
	}
	return from, to
}

// randomBetween draws an id between lo and hi (inclusive) on their
// leading 64 bits; the trailing ones are lo's.
func randomBetween(lo, hi [16]byte) [16]byte {
	a, b := binary.BigEndian.Uint64(lo[:8]), binary.BigEndian.Uint64(hi[:8])
	if b <= a {
		return lo
	}
	out := lo
	binary.BigEndian.PutUint64(out[:8], a+rand.Uint64N(b-a+1))
	return out
}

// dueItemsSQL is the sweep's query: $1 the types, $2 now, $3 the limit,
// $4 where the path of actionable items starts, $5 and $6 the bounds of
// the instance's share (NULL: none; sweepStart), $7 true to read the
// other shares instead.
// The path of actionable items reads, in turn (UNION ALL runs its inputs
// in turn and stops at the limit): the items whose retry is due, then
// those without a retry from $4 on, then the ones before $4. Each input
// is a range of its own partial index (migration 14) with a limit of its
// own, so a sweep reads about as many ready rows as it returns: an OR of
// the two conditions made one bitmap of every ready item per sweep.
// Due retries come first: they waited their backoff, and a backlog of
// new items would otherwise fill every sweep before them.
// The path of actionable items, where a backlog lives, stops at the limit
// on its own: UNION reads all of its inputs before the outer LIMIT, so a
// backlog of a million due items made every sweep read a million rows to
// return a thousand. The other two paths start from small sets (pending
// events, deferred rows) and keep no limit of their own: one would let
// the planner prefer a plan that walks the items to find a first row.
// That path reads work_item_ready (the actionable active items, kept by
// triggers: migration 8) and looks up each one's lease; the lateral
// subquery, kept apart by OFFSET 0, makes that a lookup per ready item
// whatever the statistics (a merge join walked every item's key).
const dueItemsSQL = `
	(SELECT id FROM (
		(SELECT r.id FROM work_item_ready r,
			LATERAL (SELECT 1 FROM work_items w WHERE (($5::uuid IS NULL OR r.id >= $5) AND ($6::uuid IS NULL OR r.id < $6)) <> $7
				AND w.id = r.id AND (w.leased_until IS NULL OR w.leased_until < $2) OFFSET 0) free
			WHERE r.retry_after <= $2 AND r.item_type = ANY($1)
			LIMIT $3)
		UNION ALL
		(SELECT r.id FROM work_item_ready r,
			LATERAL (SELECT 1 FROM work_items w WHERE (($5::uuid IS NULL OR r.id >= $5) AND ($6::uuid IS NULL OR r.id < $6)) <> $7
				AND w.id = r.id AND (w.leased_until IS NULL OR w.leased_until < $2) OFFSET 0) free
			WHERE r.item_type = ANY($1) AND r.retry_after IS NULL AND r.id >= $4
			LIMIT $3)
		UNION ALL
		(SELECT r.id FROM work_item_ready r,
			LATERAL (SELECT 1 FROM work_items w WHERE (($5::uuid IS NULL OR r.id >= $5) AND ($6::uuid IS NULL OR r.id < $6)) <> $7
				AND w.id = r.id AND (w.leased_until IS NULL OR w.leased_until < $2) OFFSET 0) free
			WHERE r.item_type = ANY($1) AND r.retry_after IS NULL AND r.id < $4
			LIMIT $3)) ready
		LIMIT $3)
	UNION
	SELECT w.id FROM (SELECT DISTINCT work_item_id FROM pending_events) e JOIN work_items w ON w.id = e.work_item_id
		WHERE w.phase = 'active' AND w.item_type = ANY($1) AND (w.leased_until IS NULL OR w.leased_until < $2)
	UNION
	SELECT w.id FROM work_item_statuses s JOIN work_items w ON w.id = s.work_item_id
		WHERE s.pending_until IS NOT NULL AND s.status = 'true' AND s.pending_until <= $2
		AND w.phase = 'active' AND w.item_type = ANY($1)
		AND (w.retry_after IS NULL OR w.retry_after <= $2) AND (w.leased_until IS NULL OR w.leased_until < $2)
	LIMIT $3`

// PruneDeliveries forgets deliveries received before before.
func (s *Store) PruneDeliveries(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE received_at < $1`, before.UTC())
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}

// InsertDelivery stores a webhook delivery's events once.
func (s *Store) InsertDelivery(ctx context.Context, source, deliveryID string, events []wq.Event, now time.Time) (wq.Delivery, error) {
	var (
		out   wq.Delivery
		wakes []string
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out, wakes = wq.Delivery{}, wakes[:0]
		tag, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (source, delivery_id, received_at) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, source, deliveryID, now.UTC())
		if err != nil {
			return translate(err)
		}
		if tag.RowsAffected() == 0 {
			out.Duplicate = true
			return nil
		}
		// The items' locks in key order, as every taker of several takes
		// them (finishItems), so that two never wait for each other.
		ids := make([]wq.ItemID, len(events))
		for i, ev := range events {
			ids[i] = ev.ItemID
		}
		for _, k := range lockKeys(ids) {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, lockItem, k); err != nil {
				return translate(err)
			}
		}
		for _, ev := range events {
			// Under the item's lock, which a terminal write takes too: an
			// item that ended meanwhile takes no event.
			var itemType string
			err := tx.QueryRow(ctx, `UPDATE work_items SET actionable = true, revision = revision + 1 WHERE id = $1 AND phase = 'active'
				RETURNING item_type`, ev.ItemID).Scan(&itemType)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return translate(err)
			}
			if errors.Is(err, pgx.ErrNoRows) {
				var phase string
				if err := tx.QueryRow(ctx, `SELECT phase FROM work_items WHERE id = $1`, ev.ItemID).Scan(&phase); errors.Is(err, pgx.ErrNoRows) {
					return wq.Errorf(wq.ENOTFOUND, "item %s not found", ev.ItemID)
				} else if err != nil {
					return translate(err)
				}
				out.Ended++
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO pending_events (work_item_id, source, event_type, delivery_id, body, event_ts, received_at)
				VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7) ON CONFLICT (work_item_id, source, delivery_id) DO NOTHING`,
				ev.ItemID, source, ev.EventType, deliveryID, string(ev.Body), tsArg(ev.EventTS), now.UTC()); err != nil {
				return translate(err)
			}
			wakes = append(wakes, wakeupPayload(itemType, ev.ItemID))
			out.Stored++
		}
		return nil
	})
	if err != nil {
		return wq.Delivery{}, fmt.Errorf("insert delivery %s/%s: %w", source, deliveryID, err)
	}
	s.wakes.wake(wakes...) // once committed (waker)
	return out, nil
}
