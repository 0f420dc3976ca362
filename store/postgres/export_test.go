package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// DueItemsSQL is the sweep's query, for the plan test.
const DueItemsSQL = dueItemsSQL

// ClaimSQL is the batch claim's statement, for the plan test.
var ClaimSQL = claimSQL

// ClaimDueSQL is the claim of due items, for the plan test.
var ClaimDueSQL = claimDueSQL

// ReadBackSQL are the statements that read a new item back, for the plan
// tests.
var ReadBackSQL = []string{readBackItemSQL, readBackDimensionsSQL}

// Pool is the store's connection pool, for the plan tests.
func Pool(s *Store) *pgxpool.Pool { return s.pool }

// CheckServerVersion is the migration's version check, for its test.
var CheckServerVersion = checkServerVersion

// IsUUIDCodec reports whether c is the store's uuid codec.
func IsUUIDCodec(c any) bool { _, ok := c.(uuidCodec); return ok }

// CoalescedReads counts the single-row reads that went in a batch of more
// than one.
func CoalescedReads(s *Store) int64 { return s.coalescedReads.Load() }

// WakerSent counts the wake-ups the store sent after their writes'
// commits, in transactions of their own.
func WakerSent(s *Store) int64 { return s.wakes.sent.Load() }

// BreakBatchWakeups makes the wake-ups that insert batches send in their
// own transaction fail, as a full notify queue would.
func BreakBatchWakeups(s *Store) {
	s.batchWakeSQL = `SELECT pg_notify(NULL, p) FROM unnest($1::text[]) AS p`
}
