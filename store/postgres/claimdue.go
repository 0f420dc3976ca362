package postgres

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	wq "github.com/workqueue-dev/workqueue"
)

var _ wq.DueClaimer = (*Store)(nil)

// ClaimDueItems leases up to limit due actionable items of types, its
// instance's share of the ready set first, then the others' when its own
// holds fewer (wq.DueClaimer, DueItemsOf). A burn-down that swept ids and
// then claimed them by id looked each item up three times in two
// statements: the sweep's lease check, the claim's lock, the claim's
// update. Here the ready index leads to the lock, and the lock to the
// update: one statement, one lookup fewer per item, and no sweep.
func (s *Store) ClaimDueItems(ctx context.Context, instance string, types []string, owner string, now time.Time, d time.Duration, limit int) ([]wq.Claim, error) {
	if len(types) == 0 || limit <= 0 {
		return nil, nil
	}
	key := shareKey(instance, types)
	sw, cursor, err := s.shares.get(ctx, s, key, instance, types, now)
	if err != nil {
		return nil, fmt.Errorf("claim due items: %w", err)
	}
	own := idRange{lo: minID, hi: maxID}
	if sw.from != nil {
		own.lo = *sw.from
	}
	if sw.to != nil {
		own.hi = before(*sw.to)
	}
	own.start = own.random(sw)
	if cursor != nil && own.contains(*cursor) {
		own.start = *cursor
	}
	claims, err := s.claimDue(ctx, types, owner, now, d, limit, own)
	if err != nil {
		return nil, err
	}
	if len(claims) > 0 {
		// The next claim goes on after the last item this one took in
		// its read from the start on (or, if that read found none, in
		// the one that went round to the share's beginning): the items
		// behind it are being processed, and reading them again would
		// only pass over their leases.
		last := claims[len(claims)-1].Lease.ItemID
		for i := len(claims) - 1; i >= 0; i-- {
			if id := claims[i].Lease.ItemID; bytes.Compare(id[:], own.start[:]) >= 0 {
				last = id
				break
			}
		}
		s.shares.advance(key, last)
	}
	// The others' shares, whose instances may be gone or behind: the ids
	// below the own share, then those above it.
	var others []idRange
	if sw.from != nil {
		others = append(others, idRange{lo: minID, hi: before(*sw.from)})
	}
	if sw.to != nil {
		others = append(others, idRange{lo: *sw.to, hi: maxID})
	}
	for _, r := range others {
		if len(claims) >= limit {
			break
		}
		r.start = r.random(sw)
		more, err := s.claimDue(ctx, types, owner, now, d, limit-len(claims), r)
		if err != nil {
			return claims, err
		}
		claims = append(claims, more...)
	}
	return claims, nil
}

// idRange is a range of item ids, both ends included, and where a read
// of it starts (it goes round to lo from hi).
type idRange struct{ lo, hi, start [16]byte }

var (
	minID [16]byte
	maxID = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

func (r idRange) contains(id [16]byte) bool {
	return bytes.Compare(id[:], r.lo[:]) >= 0 && bytes.Compare(id[:], r.hi[:]) <= 0
}

// random draws a start in the range, inside the ready set's span when
// sw knows it (as sweepStart draws), so that claims after a restart
// start at different items of a backlog.
func (r idRange) random(sw sweep) [16]byte {
	lo, hi := r.lo, r.hi
	if sw.lo != nil && bytes.Compare(sw.lo[:], lo[:]) > 0 {
		lo = *sw.lo
	}
	if sw.hi != nil && bytes.Compare(sw.hi[:], hi[:]) < 0 {
		hi = *sw.hi
	}
	if bytes.Compare(lo[:], hi[:]) > 0 {
		return r.lo
	}
	return randomBetween(lo, hi)
}

// before is the id just below id (the 128-bit id minus one; id is not
// the least, which no share bound is).
func before(id [16]byte) [16]byte {
	for i := len(id) - 1; i >= 0; i-- {
		id[i]--
		if id[i] != 0xff {
			break
		}
	}
	return id
}

// claimDue runs claimDueSQL on a range of ids, and reads the dimensions
// of the claimed items that have any. The claims come in the order of
// their ids.
func (s *Store) claimDue(ctx context.Context, types []string, owner string, now time.Time, d time.Duration, limit int, r idRange) ([]wq.Claim, error) {
	until := now.Add(d).UTC()
	rows, err := s.pool.Query(ctx, claimDueSQL, types, until, now.UTC(), owner, limit, r.start, r.lo, r.hi)
	if err != nil {
		return nil, fmt.Errorf("claim due items: %w", translate(err))
	}
	var (
		out     []wq.Claim
		withDim []wq.ItemID
		byID    map[wq.ItemID]*wq.Item
		sc      itemScanner
	)
	for rows.Next() {
		var (
			token             string
			noEvents, hasDims bool
		)
		it, err := sc.scan(rows, &token, &noEvents, &hasDims)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim due items: %w", err)
		}
		it.Dimensions = wq.Dimensions{}
		if hasDims {
			if byID == nil {
				byID = map[wq.ItemID]*wq.Item{}
			}
			byID[it.ID] = it
			withDim = append(withDim, it.ID)
		}
		out = append(out, wq.Claim{Lease: wq.Lease{ItemID: it.ID, Token: token, Owner: owner, Until: until}, Item: it, NoEvents: noEvents})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim due items: %w", translate(err))
	}
	slices.SortFunc(out, func(a, b wq.Claim) int { return bytes.Compare(a.Lease.ItemID[:], b.Lease.ItemID[:]) })
	if len(withDim) > 0 {
		// Leased now, so only this claimer's writes change them: read
		// after the claim, as ClaimItems's second statement does.
		b := &pgx.Batch{}
		b.Queue(`SELECT work_item_id, dimension, variant, status, detail::text, pending_until, updated_at
			FROM work_item_statuses WHERE work_item_id = ANY($1)`, uuidArray(withDim))
		br := s.pool.SendBatch(ctx, b)
		err := scanDimensionsInto(br, byID)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			// The leases are held: give them back rather than leave them
			// to expire.
			s.releaseAll(context.WithoutCancel(ctx), out)
			return nil, fmt.Errorf("claim due items: dimensions: %w", translate(err))
		}
	}
	return out, nil
}

// releaseAll gives back the leases of claims, best effort, within a few
// seconds (a lease not given back expires).
func (s *Store) releaseAll(ctx context.Context, claims []wq.Claim) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, c := range claims {
		if s.ReleaseLease(ctx, c.Lease) != nil {
			return
		}
	}
}

// claimDueSQL: $1 the types, $2 the lease's end, $3 now, $4 the owner,
// $5 the limit, $6 where the read starts, $7 and $8 the range of ids
// read (both included). The ready set is read as dueItemsSQL reads it
// (retries due first, then from $6 on, then from the range's start to
// $6; each a range of an index with a limit of its own), and each ready
// row leads to its item's row, locked in a subquery of its own: the
// lock's quals are re-checked on the row's latest version (an item
// exited, claimed or moved to a retry since the statement's snapshot is
// passed over), SKIP LOCKED passes over an item another claimer or
// writer holds, and a locking subquery is never flattened, so the plan
// is a lookup per ready row whatever the statistics (a merge join walked
// every item). The outer limit stops the reading, and the locking, at
// limit items. The update finds the locked rows by id, which follows
// them to their latest version; as in claimSQL, the server draws each
// token.
var claimDueSQL = `WITH claimable AS (
		SELECT id FROM (
			(SELECT l.id FROM work_item_ready r, LATERAL (` + claimDueRetryLock + `) l
				WHERE r.retry_after <= $3 AND r.item_type = ANY($1)
				LIMIT $5)
			UNION ALL
			(SELECT l.id FROM work_item_ready r, LATERAL (` + claimDueLock + `) l
				WHERE r.item_type = ANY($1) AND r.retry_after IS NULL AND r.id >= $6 AND r.id <= $8
				LIMIT $5)
			UNION ALL
			(SELECT l.id FROM work_item_ready r, LATERAL (` + claimDueLock + `) l
				WHERE r.item_type = ANY($1) AND r.retry_after IS NULL AND r.id >= $7 AND r.id < $6
				LIMIT $5)) ready
		LIMIT $5)
	UPDATE work_items w SET leased_until = $2, lease_token = gen_random_uuid()::text, lease_owner = $4
	WHERE w.id = ANY(ARRAY(SELECT id FROM claimable))
	RETURNING w.lease_token, NOT EXISTS (SELECT 1 FROM pending_events p WHERE p.work_item_id = w.id),
		EXISTS (SELECT 1 FROM work_item_statuses s WHERE s.work_item_id = w.id), ` + claimColumns

// claimDueLock locks a ready row's item if it may be claimed: of a
// handled type, active, actionable with no retry pending (or its retry
// due), and not leased.
var claimDueLock = `SELECT w.id FROM work_items w WHERE ` + claimDueQuals + ` FOR UPDATE SKIP LOCKED`

// claimDueRetryLock is claimDueLock for a due retry, which it also tests
// for the range: a test on r.id alone is a one-time filter there, so the
// retries are read from their own index (work_item_ready_retry), whereas
// with the range beside retry_after in the read, the generic plan read
// the range of the ready set's primary key, every ready item, to find
// the few retries.
var claimDueRetryLock = `SELECT w.id FROM work_items w WHERE r.id >= $7 AND r.id <= $8 AND ` + claimDueQuals + ` FOR UPDATE SKIP LOCKED`

const claimDueQuals = `w.id = r.id AND w.item_type = ANY($1) AND w.phase = 'active' AND w.actionable
	AND (w.retry_after IS NULL OR w.retry_after <= $3) AND (w.leased_until IS NULL OR w.leased_until < $3)`

// shareCache keeps each instance's share of the ready set (sweepStart)
// for a moment: a claim of due items that asked for it every time would
// add a statement per claim, and a share a second old is as good a
// preference (the others' shares are read whenever the own one is short).
type shareCache struct {
	mu      sync.Mutex
	entries map[string]shareEntry
}

type shareEntry struct {
	sw sweep
	at time.Time // wall time, not the injected clock
	// next is where the instance's next claim of due items starts: the
	// last item its previous claim took (nil: anywhere in the share).
	next *[16]byte
}

// shareKey is the cache's key of an instance's share for types.
func shareKey(instance string, types []string) string {
	return instance + "\x00" + strings.Join(types, "\x00")
}

// shareTTL is how long a cached share is used.
const shareTTL = time.Second

// get returns the instance's share and where its next claim starts.
func (c *shareCache) get(ctx context.Context, s *Store, key, instance string, types []string, now time.Time) (sweep, *[16]byte, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && time.Since(e.at) < shareTTL {
		return e.sw, e.next, nil
	}
	sw, err := s.sweepStart(ctx, instance, types, now)
	if err != nil {
		return sweep{}, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]shareEntry{}
	}
	if len(c.entries) > 64 {
		clear(c.entries) // instances and type lists are few; never grow without bound
	}
	e = shareEntry{sw: sw, at: time.Now(), next: c.entries[key].next}
	c.entries[key] = e
	return e.sw, e.next, nil
}

// advance moves where the instance's next claim starts to id.
func (c *shareCache) advance(key string, id [16]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		e.next = &id
		c.entries[key] = e
	}
}
