package cpstore

import (
	"context"
	"fmt"
	"time"

	"github.com/workqueue-dev/workqueue/controlplane"
)

// stateCount is one row of the lease count.
type stateCount struct {
	state string
	n     int64
}

// Count counts the sessions not ended and the leases by state, for
// metrics; callers bound how often (one scan of each table).
func (s *store) Count(ctx context.Context, now time.Time) (controlplane.Counts, error) {
	out := controlplane.Counts{LeasesByState: map[string]int64{}}
	c := s.reader()
	if err := c.queryRow(ctx, `SELECT count(*) FROM cp_sessions WHERE ended_at IS NULL`).Scan(&out.ActiveSessions); err != nil {
		return out, fmt.Errorf("count sessions: %w", err)
	}
	states, err := queryAll(ctx, c, func(r row) (stateCount, error) {
		var sc stateCount
		return sc, r.Scan(&sc.state, &sc.n)
	}, `SELECT state, count(*) FROM cp_leases GROUP BY state`)
	if err != nil {
		return out, fmt.Errorf("count leases: %w", err)
	}
	for _, sc := range states {
		out.LeasesByState[sc.state] = sc.n
	}
	return out, nil
}
