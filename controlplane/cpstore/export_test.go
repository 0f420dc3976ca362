package cpstore

import (
	"context"

	"github.com/workqueue-dev/workqueue/controlplane"
)

// Exec runs a statement (with ? placeholders) on the database under s in
// a write transaction: for tests that need a state no Store method makes,
// or that tune the database (ANALYZE).
func Exec(s controlplane.Store, q string, args ...any) error {
	ctx := context.Background()
	return s.(*store).write(ctx, func(c conn) error {
		_, err := c.exec(ctx, q, args...)
		return err
	})
}
