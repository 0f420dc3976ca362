package mr

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Merge requests the service did not open (issue 51; seed 000,
// "Non-managed MR tracking"). A person labels one with the project's
// track_label (default workqueue-track), and it becomes a tracked item:
// the status note, the CI retry herder, required checks and
// reconciliation run for it as for one of ours, and nothing else. The
// service never writes its branch (no push, no rebuild, no deletion),
// never merges or closes it, and never edits its title or description:
// every executor that writes one of those refuses a tracked item before
// any forge call, and the store never counts its head as one the service
// pushed, so no submission can take its branch over. Its head follows the
// merge request's. Removing the label ends the item (reason untracked),
// and the status note says so, once; a person merging or closing it ends
// it as for one of ours.

// TrackedCaller is the caller identity of tracked items: no caller's.
const TrackedCaller = "workqueue:track"

// ReasonUntracked is the reason a tracked item completes when its label
// was removed.
const ReasonUntracked = "untracked"

// TrackKey is the idempotency key of the tracked item of merge request
// number of project on forge.
func TrackKey(forge, project string, number int64) string {
	b, _ := json.Marshal([]any{forge, project, number})
	return "mr-track:" + string(b)
}

// TrackWork makes the tracked item of a pull request a person labelled
// with the project's track_label (wq.WorkTracker), or names the one that
// exists. An open pull request without the label, or of a project that
// does not track, is not tracked.
func (a *TypeAPI) TrackWork(ctx context.Context, forge, project string, work wq.WorkInfo, ref wq.EventRef, now time.Time) (wq.ItemID, bool, error) {
	if work.Kind != wq.WorkPR || work.State != wq.MergeRequestOpen || work.Number <= 0 || a.opts.Project == nil {
		return wq.ItemID{}, false, nil
	}
	p, ok := a.opts.Project(forge, project)
	if !ok || p.TrackLabel == "" || !slices.Contains(work.Labels, p.TrackLabel) {
		return wq.ItemID{}, false, nil
	}
	if id, found, err := a.opts.Store.FindActiveMR(ctx, forge, project, wq.EventRef{Number: work.Number}); err != nil || found {
		return id, found, err
	}
	d := Detail{Forge: forge, Project: project, SourceBranch: ref.SourceBranch, TargetBranch: ref.TargetBranch, Title: work.Title,
		Tracked: true, MRNumber: work.Number, MRURL: work.URL, HeadSHA: cmpOr(work.HeadSHA, ref.HeadSHA)}
	it, err := a.opts.Store.CreateMR(ctx, wq.NewItem{ItemType: ItemType, IdempotencyKey: TrackKey(forge, project, work.Number),
		Generation: 1, CallerIdentity: TrackedCaller, Dimensions: []wq.DimensionUpdate{
			dim(DimMR, wq.StatusFalse, time.Time{}),         // nothing to push: never
			dim(DimEmptyCheck, wq.StatusFalse, time.Time{}), // nothing of ours to be empty
			dim(DimReconcile, wq.StatusTrue, time.Time{}),   // read it now
		}}, d, now)
	if wq.ErrorCode(err) == wq.ECONFLICT {
		// Another delivery made it first.
		return a.opts.Store.FindActiveMR(ctx, forge, project, wq.EventRef{Number: work.Number})
	}
	if err != nil {
		return wq.ItemID{}, false, fmt.Errorf("track %s!%d: %w", project, work.Number, err)
	}
	return it.ID, true, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// errTrackedWrite refuses a write to a tracked merge request: a bug if it
// is ever reached, and never a forge call.
func errTrackedWrite(what string) error {
	return fmt.Errorf("%w: %s: the merge request is a person's, tracked; workqueue never writes it", wq.ErrPermanent, what)
}

// reconcileTracked reads a tracked merge request: merged completes the
// item, closed cancels it, its label removed completes it as untracked,
// and a new head is followed (its required checks start over). It is
// never merged, and it is read again after ReconcileInterval or at its
// next event.
func (x *executors) reconcileTracked(ctx context.Context, ex *wq.Execution, d *Detail, f wq.Forge) error {
	mr, err := f.GetMergeRequest(ctx, d.Project, d.MRNumber)
	if err != nil {
		return forgeFailure("read the merge request", err)
	}
	switch {
	case mr.State == wq.MergeRequestMerged:
		return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: ReasonMerged})
	case mr.State == wq.MergeRequestClosed:
		return x.closedTwice(ctx, ex, d, f)
	case x.TrackLabel != nil && !slices.Contains(mr.Labels, x.TrackLabel(d.Forge, d.Project)):
		return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: ReasonUntracked})
	}
	var dims []wq.DimensionUpdate
	if mr.HeadSHA != "" && mr.HeadSHA != d.HeadSHA || mr.HeadPipelineID != 0 && mr.HeadPipelineID != d.HeadPipelineID {
		state := d.ForgeState()
		if mr.HeadSHA != d.HeadSHA {
			state.HeadPipelineID, state.CIRetried = 0, ""
			d.HeadSHA = mr.HeadSHA
			dims = x.newHeadChecks(ex.Item, d, ex.Now)
		}
		state.HeadSHA = mr.HeadSHA
		if mr.HeadPipelineID != 0 {
			state.HeadPipelineID = mr.HeadPipelineID
		}
		if err := x.recordState(ctx, ex, state); err != nil {
			return err
		}
	}
	dims = append(dims, wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: DimReconcile}, Status: wq.StatusTrue,
		PendingUntil: ex.Now.Add(x.ReconcileInterval)})
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: dims})
}
