package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	wq "github.com/workqueue-dev/workqueue"
)

// The engine's per-step calls, coalesced (batch.go): item loads, the exit
// decision, and executors' writes of dimensions alone.

type coalescers struct {
	load   *batcher[wq.ItemID, loaded]
	finish *batcher[finishReq, finishRes]
	dims   *batcher[dimsReq, dimsRes]
	insert *batcher[insertReq, inserted]
	read   *batcher[readReq, readRes]
}

func (s *Store) startCoalescers() {
	s.co = coalescers{
		load:   newBatcher(s.loadItems),
		finish: newBatcher(s.finishItems),
		dims:   newBatcher(s.applyDimensions),
		// One insert batch at a time: the inserts made while it runs
		// go in the next, one commit for all of them. Two batches in
		// flight made smaller ones, and took 15% more of the machine's
		// CPU per submission (bench submit, 16 clients). An insert waits
		// for no lock but a unique key another transaction is inserting.
		insert: startBatcher(&batcher[insertReq, inserted]{run: s.insertItems, runners: 1}),
		read:   startBatcher(&batcher[readReq, readRes]{run: s.readRows, loneCancels: true}),
	}
}

func (c coalescers) close() {
	c.load.close()
	c.finish.close()
	c.dims.close()
	c.insert.close()
	c.read.close()
}

// loaded is one item load: the item, or ENOTFOUND.
type loaded struct {
	item *wq.Item
	err  error
}

// loadItemsSQL and loadDimensionsSQL read items and their dimensions ($1
// their ids): the coalesced loads, and the read-back of a batch of
// inserts.
const (
	loadItemsSQL      = `SELECT ` + itemColumns + ` FROM work_items WHERE id = ANY($1)`
	loadDimensionsSQL = `SELECT work_item_id, dimension, variant, status, detail::text, pending_until, updated_at
		FROM work_item_statuses WHERE work_item_id = ANY($1)`
)

// scanLoaded scans the results of loadItemsSQL and loadDimensionsSQL,
// next in br, into the items found by id; n is how many are expected.
func scanLoaded(br pgx.BatchResults, sc *itemScanner, n int) (map[wq.ItemID]*wq.Item, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, translate(err)
	}
	found := make(map[wq.ItemID]*wq.Item, n)
	for rows.Next() {
		it, err := sc.scan(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		it.Dimensions = wq.Dimensions{}
		found[it.ID] = it
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	if err := scanDimensionsInto(br, found); err != nil {
		return nil, err
	}
	return found, nil
}

// loadItems reads items and their dimensions: both queries in one batch,
// one round trip.
func (s *Store) loadItems(ctx context.Context, ids []wq.ItemID) ([]loaded, error) {
	b := &pgx.Batch{}
	arr := uuidArray(ids)
	b.Queue(loadItemsSQL, arr)
	b.Queue(loadDimensionsSQL, arr)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	var sc itemScanner
	found, err := scanLoaded(br, &sc, len(ids))
	if err != nil {
		return nil, err
	}
	out := make([]loaded, len(ids))
	seen := map[wq.ItemID]bool{}
	for i, id := range ids {
		it, ok := found[id]
		switch {
		case !ok:
			out[i].err = wq.Errorf(wq.ENOTFOUND, "not found")
		case seen[id]:
			out[i].item = cloneItem(it) // each caller gets an item of its own
		default:
			seen[id] = true
			out[i].item = it
		}
	}
	return out, nil
}

// scanDimensionsInto reads the batch's next result, dimension rows led
// by their item id, into the items of byID; rows of other items are
// skipped.
func scanDimensionsInto(br pgx.BatchResults, byID map[wq.ItemID]*wq.Item) error {
	rows, err := br.Query()
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      wq.ItemID
			k       wq.DimensionKey
			dim     wq.Dimension
			detail  *string
			pending *time.Time
		)
		if err := rows.Scan(&id, &k.Dimension, &k.Variant, &dim.Status, &detail, &pending, &dim.UpdatedAt); err != nil {
			return translate(err)
		}
		it, ok := byID[id]
		if !ok {
			continue
		}
		if detail != nil {
			dim.Detail = []byte(*detail)
		}
		dim.PendingUntil, dim.UpdatedAt = tsVal(pending), dim.UpdatedAt.UTC()
		it.Dimensions[k] = dim
	}
	return translate(rows.Err())
}

func cloneItem(it *wq.Item) *wq.Item {
	c := *it
	c.Dimensions = make(wq.Dimensions, len(it.Dimensions))
	for k, d := range it.Dimensions {
		d.Detail = slices.Clone(d.Detail)
		c.Dimensions[k] = d
	}
	return &c
}

type finishReq struct {
	l    wq.Lease
	seen int64
}

type finishRes struct {
	exited bool
	err    error
}

// finishItems takes the exit decisions of many items in one transaction
// and one round trip, each as FinishProcessing describes: the items'
// advisory locks first (in key order, as every taker of several takes
// them, so that two never wait for each other), then the conditional
// update, whose snapshot is taken once the locks are held, then which of
// the items not exited are still held.
func (s *Store) finishItems(ctx context.Context, reqs []finishReq) ([]finishRes, error) {
	ids := make([]wq.ItemID, len(reqs))
	tokens := make([]string, len(reqs))
	seens := make([]int64, len(reqs))
	for i, r := range reqs {
		ids[i], tokens[i], seens[i] = r.l.ItemID, r.l.Token, r.seen
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock($1, k) FROM unnest($2::int[]) WITH ORDINALITY AS a(k, n) ORDER BY n`, lockItem, lockKeys(ids))
	b.Queue(`WITH ex AS (UPDATE work_items w SET actionable = false, leased_until = NULL, lease_token = NULL, lease_owner = NULL
		FROM unnest($1::uuid[], $2::text[], $3::bigint[]) AS t(id, token, seen)
		WHERE w.id = t.id AND w.lease_token = t.token AND w.revision = t.seen
		AND NOT EXISTS (SELECT 1 FROM pending_events p WHERE p.work_item_id = w.id)
		RETURNING w.id, t.token),
		unready AS (DELETE FROM work_item_ready r WHERE r.id IN (SELECT id FROM ex))
		SELECT id, token FROM ex`, uuidArray(ids), tokens, seens)
	b.Queue(`SELECT w.id, t.token FROM work_items w JOIN unnest($1::uuid[], $2::text[]) AS t(id, token)
		ON w.id = t.id AND w.lease_token = t.token`, uuidArray(ids), tokens)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, translate(err)
	}
	exited, err := collectIDs(br)
	if err != nil {
		return nil, err
	}
	held, err := collectIDs(br)
	if err != nil {
		return nil, err
	}
	out := make([]finishRes, len(reqs))
	for i, r := range reqs {
		k := leaseKey{r.l.ItemID, r.l.Token}
		switch {
		case exited[k]:
			out[i].exited = true
		case !held[k]:
			out[i].err = wq.ErrLeaseLost
		}
	}
	return out, nil
}

// uuidArray is ids as pgx encodes them directly: an ItemID is a
// driver.Valuer, which pgx would turn into text and parse back, element
// by element (a quarter of the engine's CPU in the burn-down).
func uuidArray(ids []wq.ItemID) [][16]byte {
	out := make([][16]byte, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// lockKeys are the advisory lock keys of ids, sorted and without repeats:
// the order every transaction that locks several items takes them in.
func lockKeys(ids []wq.ItemID) []int32 {
	keys := make([]int32, len(ids))
	for i, id := range ids {
		keys[i] = itemLockKey(id)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// leaseKey names a lease: two calls for one item under different tokens
// (a worker that lost its lease, and the new holder) are told apart.
type leaseKey struct {
	id    wq.ItemID
	token string
}

// collectIDs reads the batch's next result, rows of (id, token).
func collectIDs(br pgx.BatchResults) (map[leaseKey]bool, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[leaseKey]bool{}
	for rows.Next() {
		var k leaseKey
		if err := rows.Scan(&k.id, &k.token); err != nil {
			return nil, translate(err)
		}
		out[k] = true
	}
	return out, translate(rows.Err())
}

// dimsReq is an executor's change that writes dimensions only.
type dimsReq struct {
	l    wq.Lease
	seen int64 // 0: no revision check
	dims []wq.DimensionUpdate
	now  time.Time
	exit bool // the action's last write: take the exit decision with it (ApplyAndFinish)
}

type dimsRes struct {
	old    wq.Phase
	exited bool
	err    error
}

// applyDimensions writes the dimensions of many executors' changes in one
// statement, each under its lease and, where it has one, its seen
// revision: the items' rows are locked (in id order) with the lease
// tokens checked, the dimensions of those whose revision still holds are
// upserted, and every locked item is returned with the revision it had,
// from which each change learns whether it was written, superseded or
// refused for a lost lease. A request with exit set is also the exit
// decision, as finishItems takes it: the batch first takes the advisory
// locks of those items (in key order), then the statement's exit clears
// actionable and the lease of each whose write held and that has no event
// pending. One round trip either way, where a write and its exit were two.
func (s *Store) applyDimensions(ctx context.Context, reqs []dimsReq) ([]dimsRes, error) {
	// Every array is made at its size at once (one allocation each, not
	// a chain of growths), and the nullable columns are values: in a
	// burn-down this runs for every item.
	nrows := 0
	for _, r := range reqs {
		nrows += len(r.dims)
	}
	var (
		ids                       = make([]wq.ItemID, 0, len(reqs))
		exitIDs                   []wq.ItemID
		tokens                    = make([]string, 0, len(reqs))
		seens                     = make([]int64, 0, len(reqs))
		exits                     = make([]bool, 0, len(reqs))
		dimReqs                   = make([]int64, 0, nrows) // the ordinal (from 1) of the request a dimension row belongs to
		names, variants, statuses = make([]string, 0, nrows), make([]string, 0, nrows), make([]string, 0, nrows)
		details                   = make([]pgtype.Text, 0, nrows)
		pendings, updated         = make([]pgtype.Timestamptz, 0, nrows), make([]pgtype.Timestamptz, 0, nrows)
	)
	for n, r := range reqs {
		ids, tokens, seens, exits = append(ids, r.l.ItemID), append(tokens, r.l.Token), append(seens, r.seen), append(exits, r.exit)
		if r.exit {
			exitIDs = append(exitIDs, r.l.ItemID)
		}
		// One row per key, the last update of a key winning as it would
		// upserted one after another.
		var last map[wq.DimensionKey]int
		if len(r.dims) > 1 {
			last = make(map[wq.DimensionKey]int, len(r.dims))
			for i, d := range r.dims {
				last[d.DimensionKey] = i
			}
		}
		now := pgtype.Timestamptz{Time: r.now.UTC(), Valid: true}
		for i, d := range r.dims {
			if last != nil && last[d.DimensionKey] != i {
				continue
			}
			dimReqs, names, variants = append(dimReqs, int64(n+1)), append(names, d.Dimension), append(variants, d.Variant)
			statuses = append(statuses, string(d.Status))
			details = append(details, pgtype.Text{String: string(d.Detail), Valid: len(d.Detail) > 0})
			pendings = append(pendings, pgtype.Timestamptz{Time: d.PendingUntil.UTC(), Valid: !d.PendingUntil.IsZero()})
			updated = append(updated, now)
		}
	}
	// Rows are matched to requests by ordinal, not by item id: a request
	// under a lost lease never writes under the holder's.
	b := &pgx.Batch{}
	if len(exitIDs) > 0 {
		b.Queue(`SELECT pg_advisory_xact_lock($1, k) FROM unnest($2::int[]) WITH ORDINALITY AS a(k, n) ORDER BY n`, lockItem, lockKeys(exitIDs))
	}
	b.Queue(`WITH t AS (
			SELECT * FROM unnest($1::uuid[], $2::text[], $3::bigint[], $11::bool[]) WITH ORDINALITY AS t(id, token, seen, exit, n)),
		locked AS (SELECT t.n, w.id, w.phase, w.revision, t.seen, t.exit FROM work_items w JOIN t ON w.id = t.id AND w.lease_token = t.token
			ORDER BY w.id FOR UPDATE OF w),
		up AS (INSERT INTO work_item_statuses (work_item_id, dimension, variant, status, detail, pending_until, updated_at)
			SELECT l.id, d.dimension, d.variant, d.status, d.detail::jsonb, d.pending_until, d.updated_at
			FROM unnest($4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[], $10::timestamptz[])
				AS d(n, dimension, variant, status, detail, pending_until, updated_at)
			JOIN locked l ON l.n = d.n WHERE l.seen = 0 OR l.revision = l.seen
			ON CONFLICT (work_item_id, dimension, variant) DO UPDATE SET status = excluded.status,
				detail = excluded.detail, pending_until = excluded.pending_until, updated_at = excluded.updated_at
			RETURNING 1),
		ex AS (UPDATE work_items w SET actionable = false, leased_until = NULL, lease_token = NULL, lease_owner = NULL
			FROM locked l WHERE w.id = l.id AND l.exit AND l.revision = l.seen
			AND NOT EXISTS (SELECT 1 FROM pending_events p WHERE p.work_item_id = l.id)
			RETURNING l.n, w.id),
		unready AS (DELETE FROM work_item_ready r WHERE r.id IN (SELECT id FROM ex))
		SELECT n, phase, revision, false FROM locked UNION ALL SELECT n, '', 0, true FROM ex`,
		uuidArray(ids), tokens, seens, dimReqs, names, variants, statuses, details, pendings, updated, exits)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if len(exitIDs) > 0 {
		if _, err := br.Exec(); err != nil {
			return nil, translate(err)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, translate(err)
	}
	type state struct {
		locked   bool
		phase    wq.Phase
		revision int64
		exited   bool
	}
	locked := make([]state, len(reqs)) // by request: a row's n is its request's index plus one
	var (
		n      int64
		phase  string
		rev    int64
		exited bool
	)
	for rows.Next() {
		if err := rows.Scan(&n, &phase, &rev, &exited); err != nil {
			rows.Close()
			return nil, translate(err)
		}
		if n < 1 || n > int64(len(reqs)) {
			rows.Close()
			return nil, fmt.Errorf("apply dimensions: a row for request %d of %d", n, len(reqs))
		}
		// An exit's row (from ex) only marks its request exited: joined to
		// locked in SQL, ex was scanned again for every locked row.
		st := &locked[n-1]
		if exited {
			st.exited = true
		} else {
			st.locked, st.phase, st.revision = true, wq.Phase(phase), rev
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	out := make([]dimsRes, len(reqs))
	for i, r := range reqs {
		st, ok := locked[i], locked[i].locked
		switch {
		case !ok:
			out[i].err = wq.ErrLeaseLost
		case r.seen != 0 && st.revision != r.seen:
			out[i].err = wq.ErrSuperseded
		default:
			out[i].old, out[i].exited = st.phase, st.exited
		}
	}
	return out, nil
}
