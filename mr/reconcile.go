package mr

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// ReconcileDetail is the detail of needs_reconcile. The CI handlers leave
// the pipeline reconcile_mr records as the head's (DDR-32's
// head_pipeline_id), whichever forge reported it. reconcile_mr leaves
// what keeps an auto-merge waiting and how long it waited, so that the
// next wait can grow; a webhook or a push replaces the detail, and the
// waits start over.
type ReconcileDetail struct {
	PipelineID int64  `json:"pipeline_id,omitempty"`
	SHA        string `json:"sha,omitempty"`
	Status     string `json:"status,omitempty"`
	// Blocker is the merge request's wq.MergeBlocker when it was last
	// read, or "merge_refused".
	Blocker string `json:"blocker,omitempty"`
	// Wait is the wait reconcile_mr scheduled after that look, as a Go
	// duration ("4m0s"); set only while it backs off.
	Wait string `json:"wait,omitempty"`
}

// RebuildRequest is the detail reconcile_mr leaves on needs_mr when the
// merge request needs its branch made again on the current target: the
// target moved since the branch was made, and the forge will not merge it
// as it stands.
type RebuildRequest struct {
	Rebuild   string `json:"rebuild"`    // why: need_rebase, conflict or merge_refused
	Head      string `json:"head"`       // the pushed head to replace: once another is pushed, the rebuild is done
	Target    string `json:"target"`     // the target's head when the rebuild was asked for (a merge train's car: the commit to build on)
	MergeBase string `json:"merge_base"` // where the merge request's diff started
	// OnBranch is the branch at Target to build on, for a merge train's
	// car (the car ahead's, or the target); "" otherwise: the target.
	OnBranch string `json:"on_branch,omitempty"`
	// AheadMR is the car ahead's merge request (0 for the first car, on
	// the target): once it is merged, the target holds Target if the
	// merge left it at that merge request's merge commit.
	AheadMR int64 `json:"ahead_mr,omitempty"`
}

// blockerMergeRefused is ReconcileDetail.Blocker and RebuildRequest.Rebuild
// for a merge the forge refused although it reported the merge request
// mergeable.
const blockerMergeRefused = "merge_refused"

// rebuildRequested reports whether needs_mr asks for the branch at head
// to be made again although it holds the latest content. A request about
// another head was carried out already (a retry after the push must not
// push again).
func rebuildRequested(item *wq.Item, head string) bool {
	var req RebuildRequest
	row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimMR}]
	return ok && len(row.Detail) > 0 && json.Unmarshal(row.Detail, &req) == nil && req.Rebuild != "" && req.Head == head
}

func reconcileDetail(item *wq.Item) ReconcileDetail {
	var seen ReconcileDetail
	if row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimReconcile}]; ok && len(row.Detail) > 0 {
		_ = json.Unmarshal(row.Detail, &seen) // a detail that does not parse says nothing
	}
	return seen
}

// headPipeline is the pipeline of the pushed head: the forge's word for it
// (GitLab), else the one a CI event left on needs_reconcile (Gitea
// Actions). 0 when neither knows, or the merge request's head is not ours.
func headPipeline(item *wq.Item, d *Detail, mr *wq.MergeRequest) int64 {
	if mr.HeadSHA != d.HeadSHA {
		return 0
	}
	if mr.HeadPipelineID != 0 {
		return mr.HeadPipelineID
	}
	if seen := reconcileDetail(item); seen.SHA == d.HeadSHA {
		return seen.PipelineID
	}
	return 0
}

// reconcileMR reads the merge request once: merged completes the item,
// closed cancels it, open and mergeable merges it (auto_merge), pinned to
// the head the service pushed (DDR-46). It reschedules itself by what
// blocks the merge: a forge still computing, a merge in progress or CI is
// looked at again after a wait that doubles from MergeRecheckInterval to
// ReconcileInterval; people are waited for at ReconcileInterval (their
// approvals and comments arrive as webhooks); a target that moved under a
// merge request that must be on top of it gets the branch rebuilt.
func (x *executors) reconcileMR(ctx context.Context, ex *wq.Execution) error {
	ctx = scheduled(ctx, ex.Item, DimReconcile)
	d, f, err := x.load(ctx, ex.Item)
	if err != nil {
		return err
	}
	if d.Tracked {
		return x.reconcileTracked(ctx, ex, d, f)
	}
	mr, err := f.GetMergeRequest(ctx, d.Project, d.MRNumber)
	if err != nil {
		return forgeFailure("read the merge request", err)
	}
	latest := d.PushedHash == d.ContentHash // the pushed head holds the latest accepted content
	switch {
	case !latest:
		// The desired content changed since the push: push it first (a
		// resubmission sets needs_mr itself; this is the backstop).
		return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{dim(DimMR, wq.StatusTrue, time.Time{})}})
	case mr.State == wq.MergeRequestMerged:
		return x.merged(ctx, ex, d, f)
	case mr.State == wq.MergeRequestClosed:
		return x.closedTwice(ctx, ex, d, f)
	}
	if id := headPipeline(ex.Item, d, mr); id != 0 && id != d.HeadPipelineID {
		state := d.ForgeState()
		state.HeadPipelineID = id
		if err := x.recordState(ctx, ex, state); err != nil {
			return err
		}
	}
	if _, riding := trainOf(ex.Item); riding {
		// A car of a merge train: the train builds and merges it.
		return x.recheck(ctx, ex, x.ReconcileInterval, ReconcileDetail{Blocker: blockerTrain})
	}
	if !d.AutoMerge || mr.HeadSHA != d.HeadSHA {
		return x.recheck(ctx, ex, x.ReconcileInterval, ReconcileDetail{})
	}
	if mr.Mergeable {
		// The last look before the merge: a resubmission accepted since the
		// detail was read must not see the older content merged.
		if now, err := x.Store.GetMRDetail(ctx, ex.Item.ID); err != nil || now.ContentHash != d.ContentHash {
			return err // nil: the resubmission set needs_mr; the loop pushes it next
		}
		// The required checks, read from the forge for the head about to
		// be merged: events only said so.
		rows, passed, err := x.readChecks(ctx, ex.Item, d, f, ex.Now)
		if err != nil {
			return err
		}
		if !passed {
			return x.waitForChecks(ctx, ex, rows)
		}
		if on, _ := x.train(d); on {
			// Merged through the project's train, tested on top of the
			// merge requests ahead of it.
			return x.joinTrain(ctx, ex, d, mr)
		}
		err = f.MergeMergeRequest(ctx, d.Project, d.MRNumber, d.HeadSHA)
		if err == nil {
			return x.mergedAt(ctx, ex, d, f, true)
		}
		if kind, _ := wq.ForgeErrorOf(err); kind != wq.ForgeConflict && kind != wq.ForgeUnprocessable {
			return forgeFailure("merge", err)
		}
		// Refused after all: the target or the head moved, or the forge
		// changed its mind (Gitea answers "try again later" for a while).
		return x.blockedByTarget(ctx, ex, d, f, mr, blockerMergeRefused)
	}
	switch mr.Blocker {
	case wq.MergeRebase, wq.MergeConflict:
		return x.blockedByTarget(ctx, ex, d, f, mr, string(mr.Blocker))
	case wq.MergePeople:
		return x.recheck(ctx, ex, x.ReconcileInterval, ReconcileDetail{Blocker: string(mr.Blocker)})
	case wq.MergeClear:
		// Not mergeable, and the forge does not say why: as if checking.
		return x.backOff(ctx, ex, string(wq.MergeChecking))
	default: // checking, merging, CI, anything else
		return x.backOff(ctx, ex, string(mr.Blocker))
	}
}

// merged completes an item whose merge request is merged, deleting its
// source branch when the project says so.
func (x *executors) merged(ctx context.Context, ex *wq.Execution, d *Detail, f wq.Forge) error {
	return x.mergedAt(ctx, ex, d, f, false)
}

// mergedAt is merged; byThisRun says this execution merged it itself,
// pinned to d.HeadSHA, so that the branch was at the service's head a
// moment ago and is not read again before its deletion.
func (x *executors) mergedAt(ctx context.Context, ex *wq.Execution, d *Detail, f wq.Forge, byThisRun bool) error {
	if x.deletesSourceBranch(d) && !d.Tracked {
		if _, err := x.keptOrDeletedAt(ctx, ex, f, d, byThisRun); err != nil {
			return err
		}
	}
	return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: ReasonMerged})
}

// blockedByTarget handles a merge request the forge will not merge as it
// stands: it conflicts with the target, needs a rebase (fast-forward and
// semi-linear merge methods), or its merge was refused. When the target
// moved since the branch was made (its head is not the merge request's
// merge base), ensure_mr rebuilds the branch: a new commit of the same
// content on the current target, so the merge request stays one commit on
// top of it. When it did not, a rebuild would make the same commit: a
// conflict then fails the item, since only a person can resolve it, and
// anything else is looked at again later. A forge that does not say where
// the merge request starts is never rebuilt for: that could loop.
func (x *executors) blockedByTarget(ctx context.Context, ex *wq.Execution, d *Detail, f wq.Forge, mr *wq.MergeRequest, why string) error {
	if mr.MergeBase == "" {
		return x.backOff(ctx, ex, why)
	}
	target, err := f.BranchHead(ctx, d.Project, d.TargetBranch)
	if err != nil {
		return forgeFailure("read the target", err)
	}
	if target != mr.MergeBase {
		detail, _ := json.Marshal(RebuildRequest{Rebuild: why, Head: d.HeadSHA, Target: target, MergeBase: mr.MergeBase})
		return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{{
			DimensionKey: wq.DimensionKey{Dimension: DimMR}, Status: wq.StatusTrue, Detail: detail}}})
	}
	if why == string(wq.MergeConflict) {
		return fmt.Errorf("%w: merge request !%d conflicts with %s although it is one commit on top of its head %.12s: "+
			"a rebuild cannot resolve it", wq.ErrPermanent, mr.Number, d.TargetBranch, target)
	}
	return x.backOff(ctx, ex, why)
}

// closedTwice reads a merge request found closed once more, a moment
// later, and cancels its item only if it is still closed and not merged:
// a forge can answer closed for a moment while it merges (seen on Gitea,
// the merge's own webhook waking the item into that moment), and an item
// a person or a merger merged must complete, not be cancelled. The second
// read is in the same run: the engine wakes a deferred item only at its
// next sweep, and a close must show in seconds.
func (x *executors) closedTwice(ctx context.Context, ex *wq.Execution, d *Detail, f wq.Forge) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(closedRecheck):
	}
	again, err := f.GetMergeRequest(ctx, d.Project, d.MRNumber)
	if err != nil {
		return forgeFailure("read the merge request again", err)
	}
	switch again.State {
	case wq.MergeRequestClosed:
		return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCancelled, Reason: ReasonClosed})
	case wq.MergeRequestMerged:
		if d.Tracked {
			return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: ReasonMerged})
		}
		return x.merged(ctx, ex, d, f)
	}
	// Open again (reopened meanwhile): look at it now.
	return x.recheck(ctx, ex, 0, ReconcileDetail{})
}

// closedRecheck is the pause before a merge request found closed is read
// again.
const closedRecheck = 500 * time.Millisecond

// waitForChecks records the required checks as read and looks at the
// merge request again: soon while a check is pending (a wait that
// doubles, as for CI), after ReconcileInterval when one failed (only a
// new run or a new head changes that, and its event wakes the item).
func (x *executors) waitForChecks(ctx context.Context, ex *wq.Execution, rows []wq.DimensionUpdate) error {
	wait := x.MergeRecheckInterval
	if last, err := time.ParseDuration(reconcileDetail(ex.Item).Wait); err == nil && last > 0 {
		wait = 2 * last
	}
	wait = min(wait, x.ReconcileInterval)
	for _, r := range rows {
		var d CheckDetail
		if json.Unmarshal(r.Detail, &d) == nil && d.State == wq.CheckFailed {
			wait = x.ReconcileInterval
		}
	}
	detail, _ := json.Marshal(ReconcileDetail{Blocker: blockerChecks, Wait: wait.String()})
	rows = append(rows, wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: DimReconcile}, Status: wq.StatusTrue,
		PendingUntil: ex.Now.Add(wait), Detail: detail})
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: rows})
}

// backOff looks at a merge request that is not mergeable yet again after
// a wait that doubles from MergeRecheckInterval up to ReconcileInterval:
// an item waiting an hour for CI reads its merge request a handful of
// times, not sixty. The last wait is kept on needs_reconcile's detail; a
// webhook or a push replaces the detail, which starts the waits over.
func (x *executors) backOff(ctx context.Context, ex *wq.Execution, blocker string) error {
	wait := x.MergeRecheckInterval
	if last, err := time.ParseDuration(reconcileDetail(ex.Item).Wait); err == nil && last > 0 {
		wait = 2 * last
	}
	wait = min(wait, x.ReconcileInterval)
	return x.recheck(ctx, ex, wait, ReconcileDetail{Blocker: blocker, Wait: wait.String()})
}

// recheck schedules the next reconcile_mr after wait, with detail on
// needs_reconcile (none when it is empty).
func (x *executors) recheck(ctx context.Context, ex *wq.Execution, wait time.Duration, detail ReconcileDetail) error {
	var raw json.RawMessage
	if detail != (ReconcileDetail{}) {
		raw, _ = json.Marshal(detail)
	}
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{{
		DimensionKey: wq.DimensionKey{Dimension: DimReconcile}, Status: wq.StatusTrue,
		PendingUntil: ex.Now.Add(wait), Detail: raw}}})
}
