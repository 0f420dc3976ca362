package cpstore

import (
	"context"

	"github.com/workqueue-dev/workqueue/controlplane"
)

// QueryInt reads one integer (with ? placeholders) from the database
// under s: for tests that look at a table no Store method reads (the
// legacy incident links).
func QueryInt(s controlplane.Store, q string, args ...any) (int, error) {
	var n int
	err := s.(*store).reader().queryRow(context.Background(), q, args...).Scan(&n)
	return n, err
}
