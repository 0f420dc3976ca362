package mr

// The mr type's needs_* dimensions (DDR-48), in the decider's priority
// order, and the action each one asks for.
const (
	DimMR         = "needs_mr"          // ensure_mr: the branch commit and the merge request match the desired state
	DimEmptyCheck = "needs_empty_check" // check_empty_diff: has the target received the change another way?
	DimCIRetry    = "needs_ci_retry"    // retry_ci_jobs (not offered yet)
	DimDashboard  = "needs_dashboard"   // post_dashboard: a note on the MR linking to the item
	DimReconcile  = "needs_reconcile"   // reconcile_mr: read the MR, merge when mergeable
)
