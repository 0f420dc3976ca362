package mr

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Actions of the mr type.
const (
	ActEnsureMR       = "ensure_mr"
	ActCheckEmptyDiff = "check_empty_diff"
	ActPostDashboard  = "post_dashboard"
	ActReconcileMR    = "reconcile_mr"
)

// Reasons an mr item reaches a terminal phase.
const (
	ReasonMerged     = "merged"     // the merge request was merged (by us or by a person)
	ReasonClosed     = "closed"     // a person closed the merge request
	ReasonEmptyDiff  = "empty_diff" // the target already held the change before any merge request
	ReasonSuperseded = "superseded" // the target received the change another way; the merge request was closed
)

// Options wire the type to its store and forges.
type Options struct {
	Store  Store
	Forges map[string]wq.Forge // by configured forge name

	// ReconcileInterval is how often an open merge request is read again
	// when nothing else wakes its item (default 30m).
	ReconcileInterval time.Duration
	// MergeRecheckInterval is how soon an auto-merge item whose merge
	// request is not mergeable yet is looked at again (default 1m): both
	// forges compute mergeability asynchronously after a push.
	MergeRecheckInterval time.Duration
	// EmptyCheckInterval is how often check_empty_diff runs (default 30m).
	EmptyCheckInterval time.Duration
	// PublicURL is the service's base URL for the dashboard note's link.
	PublicURL string
}

func (o *Options) defaults() {
	if o.ReconcileInterval <= 0 {
		o.ReconcileInterval = 30 * time.Minute
	}
	if o.MergeRecheckInterval <= 0 {
		o.MergeRecheckInterval = time.Minute
	}
	if o.EmptyCheckInterval <= 0 {
		o.EmptyCheckInterval = 30 * time.Minute
	}
}

// Type returns the mr item type for the engine's registry.
func Type(opts Options) wq.ItemType {
	opts.defaults()
	x := &executors{Options: opts}
	return wq.ItemType{
		Name:   ItemType,
		Decide: Decide,
		Executors: map[string]wq.Executor{
			ActEnsureMR:       x.ensureMR,
			ActCheckEmptyDiff: x.checkEmptyDiff,
			ActPostDashboard:  x.postDashboard,
			ActReconcileMR:    x.reconcileMR,
		},
		EventHandlers: x.eventHandlers(),
	}
}

// Decide picks the next action in DESIGN section 6's priority order. A
// missing dimension row means the action is needed (DDR-48); ensure_mr
// comes first, so the later actions only run once the merge request
// exists. needs_ci_retry is not offered yet.
func Decide(item *wq.Item, now time.Time) string {
	if item.Phase != wq.PhaseActive {
		return ""
	}
	dims := item.Dimensions
	switch {
	case dims.Needs(DimMR, "", now):
		return ActEnsureMR
	case dims.Needs(DimEmptyCheck, "", now):
		return ActCheckEmptyDiff
	case dims.Needs(DimDashboard, "", now):
		return ActPostDashboard
	case dims.Needs(DimReconcile, "", now):
		return ActReconcileMR
	}
	return ""
}

type executors struct {
	Options
}

// load returns the item's detail and its forge.
func (x *executors) load(ctx context.Context, item *wq.Item) (*Detail, wq.Forge, error) {
	d, err := x.Store.GetMRDetail(ctx, item.ID)
	if err != nil {
		return nil, nil, err
	}
	f, ok := x.Forges[d.Forge]
	if !ok {
		return nil, nil, fmt.Errorf("%w: forge %q is not configured", wq.ErrPermanent, d.Forge)
	}
	return d, f, nil
}

// forgeFailure makes a forge error an executor error: refusals that a
// retry cannot change fail the item; the rest back off.
func forgeFailure(op string, err error) error {
	kind, ok := wq.ForgeErrorOf(err)
	if ok && (kind == wq.ForgePermanent || kind == wq.ForgeNotFound) {
		return fmt.Errorf("%w: %s: %v", wq.ErrPermanent, op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func dim(name, status string, pendingUntil time.Time) wq.DimensionUpdate {
	return wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: name}, Status: status, PendingUntil: pendingUntil}
}

// changes decodes inspected file actions for the forge.
func changes(actions []FileAction) ([]wq.FileChange, error) {
	out := make([]wq.FileChange, 0, len(actions))
	for _, a := range actions {
		c := wq.FileChange{Action: a.Action, Path: a.FilePath, PreviousPath: a.PreviousPath, Executable: a.ExecuteFilemode}
		if a.Content != nil {
			c.Content = []byte(*a.Content)
			if a.Encoding == EncodingBase64 {
				b, err := base64.StdEncoding.DecodeString(*a.Content)
				if err != nil {
					return nil, fmt.Errorf("%w: %s: %v", wq.ErrPermanent, a.FilePath, err)
				}
				c.Content = b
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// targetHolds reports whether ref already holds every change: the
// change would make an empty diff (see docs/DESIGN.md, "empty diff").
func targetHolds(ctx context.Context, f wq.Forge, project, ref string, chs []wq.FileChange) (bool, error) {
	for _, c := range chs {
		switch c.Action {
		case "chmod":
			return false, nil // a mode cannot be read back: assume not there
		case "delete", "move":
			prev := c.Path
			if c.Action == "move" {
				prev = c.PreviousPath
			}
			if _, found, err := f.ReadFile(ctx, project, ref, prev); err != nil || found {
				return false, err
			}
			if c.Action == "delete" {
				continue
			}
		}
		content, found, err := f.ReadFile(ctx, project, ref, c.Path)
		if err != nil || !found {
			return false, err
		}
		if c.Content != nil && !bytes.Equal(content, c.Content) {
			return false, nil
		}
	}
	return true, nil
}

// loadChange loads the item's detail and forge, decodes its changes, and
// tells whether the target branch already holds them.
func (x *executors) loadChange(ctx context.Context, item *wq.Item) (d *Detail, f wq.Forge, chs []wq.FileChange, holds bool, err error) {
	if d, f, err = x.load(ctx, item); err != nil {
		return nil, nil, nil, false, err
	}
	if chs, err = changes(d.FileActions); err != nil {
		return nil, nil, nil, false, err
	}
	if holds, err = targetHolds(ctx, f, d.Project, d.TargetBranch, chs); err != nil {
		return nil, nil, nil, false, forgeFailure("read the target", err)
	}
	return d, f, chs, holds, nil
}

// ensureMR makes the branch one commit on top of the target holding the
// desired change, and the merge request match the desired title and
// description (DESIGN section 6).
func (x *executors) ensureMR(ctx context.Context, ex *wq.Execution) error {
	d, f, chs, holds, err := x.loadChange(ctx, ex.Item)
	if err != nil {
		return err
	}
	if holds {
		if d.MRNumber == 0 {
			// Never open a merge request for an empty diff (DDR-43).
			return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: ReasonEmptyDiff,
				Dimensions: []wq.DimensionUpdate{dim(DimMR, wq.StatusFalse, time.Time{})}})
		}
		return x.supersede(ctx, ex, d, f)
	}
	state := d.ForgeState()

	// The commit: skipped when the branch still holds exactly what we
	// pushed for this content (a title or description change).
	head, err := f.BranchHead(ctx, d.Project, d.SourceBranch)
	if err != nil && !wq.IsForgeError(err, wq.ForgeNotFound) {
		return forgeFailure("read the branch", err)
	}
	if d.PushedHash != ex.Item.ContentHash || d.HeadSHA == "" || head != d.HeadSHA {
		c, err := f.CommitFiles(ctx, wq.CommitRequest{Project: d.Project, Base: d.TargetBranch, Branch: d.SourceBranch,
			Message: d.CommitMessage, Changes: chs})
		if err != nil {
			return forgeFailure("commit", err)
		}
		state.HeadSHA, state.PushedHash, state.HeadPipelineID = c.SHA, ex.Item.ContentHash, 0 // a new head, no pipeline yet
		// Record the push at once: a crash before the merge request is made
		// must not lose which commit is ours.
		if err := x.recordState(ctx, ex, state); err != nil {
			return err
		}
	}

	// The merge request.
	mr, err := x.ensureMergeRequest(ctx, f, d)
	if err != nil {
		return err
	}
	state.MRNumber, state.MRURL = mr.Number, mr.URL
	if err := x.recordState(ctx, ex, state); err != nil {
		return err
	}
	now := ex.Now
	return ex.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{
		dim(DimMR, wq.StatusFalse, time.Time{}),
		dim(DimReconcile, wq.StatusTrue, time.Time{}), // look at it now: merge when mergeable
		dim(DimEmptyCheck, wq.StatusTrue, now.Add(x.EmptyCheckInterval)),
	}})
}

// ensureMergeRequest finds, reopens or creates the merge request and syncs
// its title and description.
func (x *executors) ensureMergeRequest(ctx context.Context, f wq.Forge, d *Detail) (*wq.MergeRequest, error) {
	var mr *wq.MergeRequest
	var err error
	if d.MRNumber != 0 {
		mr, err = f.GetMergeRequest(ctx, d.Project, d.MRNumber)
		if err != nil && !wq.IsForgeError(err, wq.ForgeNotFound) {
			return nil, forgeFailure("read the merge request", err)
		}
	}
	if mr == nil {
		if mr, err = f.FindMergeRequest(ctx, d.Project, d.SourceBranch, d.TargetBranch); err != nil {
			return nil, forgeFailure("find the merge request", err)
		}
	}
	if mr != nil && mr.State == wq.MergeRequestClosed {
		open := wq.MergeRequestOpen
		reopened, err := f.UpdateMergeRequest(ctx, d.Project, mr.Number, wq.MergeRequestUpdate{State: &open})
		if err == nil {
			mr = reopened
		} else {
			mr = nil // cannot reopen (the forge refused): open a new one
		}
	}
	if mr == nil || mr.State == wq.MergeRequestMerged {
		created, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: d.Project, SourceBranch: d.SourceBranch,
			TargetBranch: d.TargetBranch, Title: d.Title, Description: d.Description, Labels: d.Labels})
		if err != nil {
			return nil, forgeFailure("create the merge request", err)
		}
		return created, nil
	}
	if mr.Title != d.Title || mr.Description != d.Description {
		synced, err := f.UpdateMergeRequest(ctx, d.Project, mr.Number, wq.MergeRequestUpdate{Title: &d.Title, Description: &d.Description})
		if err != nil {
			return nil, forgeFailure("sync the merge request", err)
		}
		mr = synced
	}
	return mr, nil
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
	var seen ReconcileDetail
	if row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimReconcile}]; ok && len(row.Detail) > 0 &&
		json.Unmarshal(row.Detail, &seen) == nil && seen.SHA == d.HeadSHA {
		return seen.PipelineID
	}
	return 0
}

func (x *executors) recordState(ctx context.Context, ex *wq.Execution, s ForgeState) error {
	return x.Store.RecordForgeState(ctx, ex.Lease, s, ex.Now)
}

// supersede closes a merge request whose change reached the target
// another way, with a note, and completes the item.
func (x *executors) supersede(ctx context.Context, ex *wq.Execution, d *Detail, f wq.Forge) error {
	if _, err := f.CreateNote(ctx, d.Project, d.MRNumber, fmt.Sprintf(
		"Closed by workqueue: `%s` already holds this change, so this merge request would merge nothing.", d.TargetBranch)); err != nil {
		return forgeFailure("note the closing", err)
	}
	closed := wq.MergeRequestClosed
	if _, err := f.UpdateMergeRequest(ctx, d.Project, d.MRNumber, wq.MergeRequestUpdate{State: &closed}); err != nil {
		return forgeFailure("close the merge request", err)
	}
	return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: ReasonSuperseded})
}

// checkEmptyDiff closes the merge request when the target received the
// change another way; otherwise it reschedules itself.
func (x *executors) checkEmptyDiff(ctx context.Context, ex *wq.Execution) error {
	d, f, _, holds, err := x.loadChange(ctx, ex.Item)
	if err != nil {
		return err
	}
	if holds && d.MRNumber != 0 {
		return x.supersede(ctx, ex, d, f)
	}
	return ex.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{
		dim(DimEmptyCheck, wq.StatusTrue, ex.Now.Add(x.EmptyCheckInterval))}})
}

// postDashboard leaves a note on the merge request that links to the item.
func (x *executors) postDashboard(ctx context.Context, ex *wq.Execution) error {
	d, f, err := x.load(ctx, ex.Item)
	if err != nil {
		return err
	}
	if d.NoteID == 0 {
		link := ex.Item.ID.String()
		if x.PublicURL != "" {
			link = fmt.Sprintf("[%s](%s/api/v1/items/%s)", ex.Item.ID, x.PublicURL, ex.Item.ID)
		}
		id, err := f.CreateNote(ctx, d.Project, d.MRNumber, "workqueue manages this merge request: item "+link+".")
		if err != nil {
			return forgeFailure("post the dashboard note", err)
		}
		state := d.ForgeState()
		state.NoteID = id
		if err := x.recordState(ctx, ex, state); err != nil {
			return err
		}
	}
	return ex.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{dim(DimDashboard, wq.StatusFalse, time.Time{})}})
}

// reconcileMR reads the merge request once: merged completes the item,
// closed cancels it, open and mergeable merges it (auto_merge), pinned to
// the head the service pushed (DDR-46). It reschedules itself.
func (x *executors) reconcileMR(ctx context.Context, ex *wq.Execution) error {
	d, f, err := x.load(ctx, ex.Item)
	if err != nil {
		return err
	}
	mr, err := f.GetMergeRequest(ctx, d.Project, d.MRNumber)
	if err != nil {
		return forgeFailure("read the merge request", err)
	}
	switch mr.State {
	case wq.MergeRequestMerged:
		return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: ReasonMerged})
	case wq.MergeRequestClosed:
		return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCancelled, Reason: ReasonClosed})
	}
	if id := headPipeline(ex.Item, d, mr); id != 0 && id != d.HeadPipelineID {
		state := d.ForgeState()
		state.HeadPipelineID = id
		if err := x.recordState(ctx, ex, state); err != nil {
			return err
		}
	}
	next := ex.Now.Add(x.ReconcileInterval)
	if d.AutoMerge && mr.HeadSHA == d.HeadSHA {
		if mr.Mergeable {
			err := f.MergeMergeRequest(ctx, d.Project, d.MRNumber, d.HeadSHA)
			if err == nil {
				return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: ReasonMerged})
			}
			kind, _ := wq.ForgeErrorOf(err)
			if kind != wq.ForgeConflict && kind != wq.ForgeUnprocessable {
				return forgeFailure("merge", err)
			}
			// Not mergeable after all, or the head moved: look again soon.
		}
		next = ex.Now.Add(x.MergeRecheckInterval)
	}
	return ex.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{dim(DimReconcile, wq.StatusTrue, next)}})
}
