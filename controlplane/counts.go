package controlplane

import (
	"context"
	"time"
)

// Counts are the control plane's sizes at one time, for metrics.
type Counts struct {
	ActiveSessions int64            // sessions not ended (live or stale)
	LeasesByState  map[string]int64 // every lease ever made, by state
}

// Counter is a Store that counts sessions and leases (cpstore is).
type Counter interface {
	// Count counts as of now. Errors: EUNAVAILABLE, EINTERNAL.
	Count(ctx context.Context, now time.Time) (Counts, error)
}
