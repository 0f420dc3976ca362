package mr

import (
	"context"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/budget"
)

// scheduled marks ctx's forge reads as a periodic sweep's, which wait
// behind every other request under the forge's budget (forge/budget),
// when the action runs because its own recheck came due: the row of
// dimension was written with a pending_until, as reconcile_mr's waits and
// check_empty_diff's interval write it. An event, a push or a caller sets
// the row without one, and then the action's reads go first. Writes go
// first whatever the context says.
func scheduled(ctx context.Context, item *wq.Item, dimension string) context.Context {
	if row, ok := item.Dimensions[wq.DimensionKey{Dimension: dimension}]; ok && !row.PendingUntil.IsZero() {
		return budget.InBackground(ctx)
	}
	return ctx
}
