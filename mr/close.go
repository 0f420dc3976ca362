package mr

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// ReasonCancelled is the reason of a cancel that gave none.
const ReasonCancelled = "cancelled"

// cancelReason is the reason the cancel on needs_close gave.
func cancelReason(item *wq.Item) string {
	var req wq.CancelRequest
	if row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimClose}]; ok && len(row.Detail) > 0 {
		_ = json.Unmarshal(row.Detail, &req) // a detail that does not parse gives no reason
	}
	if req.Reason == "" {
		return ReasonCancelled
	}
	return req.Reason
}

// closeMR winds a cancelled item down (wq.ItemType.CancelDimension): its
// merge request, if open, gets a note saying why and is closed; its
// source branch is deleted when the project says so; the item is
// cancelled with the reason the cancel gave. An item that never pushed
// has nothing on the forge and just cancels. One whose merge request was
// merged, with its latest content, before the cancel took effect
// completes instead: its change is in the target, and saying otherwise
// would be wrong.
func (x *executors) closeMR(ctx context.Context, ex *wq.Execution) error {
	reason := cancelReason(ex.Item)
	cancelled := wq.Change{Phase: wq.PhaseCancelled, Reason: reason,
		Dimensions: []wq.DimensionUpdate{dim(DimClose, wq.StatusFalse, time.Time{})}}
	d, err := x.Store.GetMRDetail(ctx, ex.Item.ID)
	if err != nil {
		return err
	}
	f, ok := x.Forges[d.Forge]
	if !ok || d.Tracked || (d.MRNumber == 0 && d.HeadSHA == "" && d.PushingHash == "") {
		// Nothing of ours on a forge we can reach; a tracked merge
		// request is a person's, left as it is.
		return ex.Writer.Apply(ctx, cancelled)
	}
	mr, err := ownMergeRequest(ctx, f, ex.Item.ID, d)
	if err != nil {
		return err
	}
	if mr != nil && mr.State == wq.MergeRequestMerged && mr.HeadSHA == d.HeadSHA && d.PushedHash == d.ContentHash {
		return x.merged(ctx, ex, d, f)
	}
	if err := closeWithNote(ctx, f, d, mr, "Closed by workqueue: "+reason); err != nil {
		return err
	}
	if x.deletesSourceBranch(d) {
		kept, err := x.keptOrDeleted(ctx, ex, f, d)
		if err != nil {
			return err
		}
		if kept != "" {
			cancelled.Reason += "; " + kept
		}
	}
	return ex.Writer.Apply(ctx, cancelled)
}

// closeWithNote closes the item's merge request mr, if it is open, after
// a note that says why.
func closeWithNote(ctx context.Context, f wq.Forge, d *Detail, mr *wq.MergeRequest, note string) error {
	if mr == nil || mr.State != wq.MergeRequestOpen {
		return nil
	}
	if _, err := f.CreateNote(ctx, d.Project, mr.Number, note); err != nil {
		return forgeFailure("note the closing", err)
	}
	closed := wq.MergeRequestClosed
	if _, err := f.UpdateMergeRequest(ctx, d.Project, mr.Number, wq.MergeRequestUpdate{State: &closed}); err != nil {
		return forgeFailure("close the merge request", err)
	}
	return nil
}

// deletesSourceBranch is the project's delete_source_branch.
func (x *executors) deletesSourceBranch(d *Detail) bool {
	return x.DeleteSourceBranch == nil || x.DeleteSourceBranch(d.Forge, d.Project)
}

// deleteOwnBranch deletes the item's source branch if its head is still
// the commit the service pushed: a branch someone pushed to since is
// theirs now. Cleaning up must not fail an item whose work is done, so a
// refusal a retry cannot change (a protected branch) is logged and leaves
// the branch; a transient failure is returned, to be tried again.
func (x *executors) deleteOwnBranch(ctx context.Context, ex *wq.Execution, f wq.Forge, d *Detail) error {
	_, err := x.keptOrDeleted(ctx, ex, f, d)
	return err
}

// keptOrDeleted is deleteOwnBranch, saying why it kept a branch the
// service pushed: a merge request the service does not own is open from
// it (a person's, into another target), and deleting its head would make
// the forge close it. "" when the branch was deleted, or was not ours to.
func (x *executors) keptOrDeleted(ctx context.Context, ex *wq.Execution, f wq.Forge, d *Detail) (string, error) {
	return x.keptOrDeletedAt(ctx, ex, f, d, false)
}

// keptOrDeletedAt is keptOrDeleted; atOurHead says the branch was at
// d.HeadSHA a moment ago (this run merged it pinned to that head), so
// its head is not read again.
func (x *executors) keptOrDeletedAt(ctx context.Context, ex *wq.Execution, f wq.Forge, d *Detail, atOurHead bool) (string, error) {
	if d.HeadSHA == "" {
		return "", nil
	}
	leave := func(op string, err error) error {
		if wq.IsTransient(err) {
			return fmt.Errorf("%s: %w", op, err)
		}
		x.Log.Warn("left the source branch in place", "item", ex.Item.ID, "project", d.Project,
			"branch", d.SourceBranch, "error", err)
		return nil
	}
	if !atOurHead {
		head, err := f.BranchHead(ctx, d.Project, d.SourceBranch)
		if wq.IsForgeError(err, wq.ForgeNotFound) || (err == nil && head != d.HeadSHA) {
			return "", nil
		}
		if err != nil {
			return "", leave("read the branch", err)
		}
	}
	open, err := f.OpenMergeRequestsFrom(ctx, d.Project, d.SourceBranch)
	if err != nil {
		return "", leave("list the merge requests from the branch", err)
	}
	for _, m := range open {
		if m.Number != d.MRNumber {
			kept := fmt.Sprintf("source branch %s kept: merge request !%d into %s, not workqueue's, uses it", d.SourceBranch, m.Number, m.TargetBranch)
			x.Log.Info("kept the source branch: another merge request uses it", "item", ex.Item.ID, "project", d.Project,
				"branch", d.SourceBranch, "merge_request", m.Number)
			return kept, nil
		}
	}
	if err := f.DeleteBranch(ctx, d.Project, d.SourceBranch); err != nil {
		return "", leave("delete the branch", err)
	}
	return "", nil
}
