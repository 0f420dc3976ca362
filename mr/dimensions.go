package mr

// The mr type's needs_* dimensions (DDR-48), in the decider's priority
// order, and the action each one asks for.
const (
	// DimClose is the type's wq.ItemType.CancelDimension: set by a cancel,
	// with a wq.CancelRequest as its detail. Unlike the others, a missing
	// row means no cancel was asked for.
	DimClose      = "needs_close"       // close_mr: close the merge request with a note, delete the branch, cancel
	DimMR         = "needs_mr"          // ensure_mr: the branch commit and the merge request match the desired state
	DimEmptyCheck = "needs_empty_check" // check_empty_diff: has the target received the change another way?
	DimCIRetry    = "needs_ci_retry"    // retry_ci_jobs: retry failed CI jobs the herder says are transient; a missing row means none failed
	DimDashboard  = "needs_dashboard"   // post_dashboard: a note on the MR linking to the item
	DimReconcile  = "needs_reconcile"   // reconcile_mr: read the MR, merge when mergeable
)
