package mr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// touchedPaths are the paths a change writes or removes: every action's
// path, and a move's previous path.
func touchedPaths(chs []wq.FileChange) map[string]bool {
	touched := make(map[string]bool, len(chs))
	for _, c := range chs {
		touched[c.Path] = true
		if c.Action == ActionMove {
			touched[c.PreviousPath] = true
		}
	}
	return touched
}

// targetMatches reports whether the target branch already holds a change,
// given a commit that holds it (the head the service pushed for the
// item's content): their trees agree on every path the change touches
// (see docs/DESIGN.md, "empty diff"). Paths the change does not touch may
// differ: the target moves on. It is one compare whatever the number of
// files, costing what those paths' directories hold at most (see
// wq.Forge.CompareTrees), never the repository; and it sees modes, so a
// chmod the target already has is held.
func targetMatches(ctx context.Context, f wq.Forge, project, target, commit string, chs []wq.FileChange) (bool, error) {
	touched := touchedPaths(chs)
	differ, err := f.CompareTrees(ctx, project, target, commit, slices.Sorted(maps.Keys(touched)))
	if err != nil {
		return false, err
	}
	return !changesAny(differ, chs), nil
}

// changesAny reports whether changes (a compare's or a commit's) name a
// path chs touch.
func changesAny(changes []wq.PathChange, chs []wq.FileChange) bool {
	touched := touchedPaths(chs)
	for _, c := range changes {
		if touched[c.Path] {
			return true
		}
	}
	return false
}

// targetHoldsByReading reads every path the change touches at the target
// (see holdsAt): whether the whole change holds there. It is one call per
// path; only a commit the forge refused needs it, when no commit holds
// the change to compare the target with.
func targetHoldsByReading(ctx context.Context, f wq.Forge, project, target string, chs []wq.FileChange) (bool, error) {
	for _, c := range chs {
		held, _, err := holdsAt(ctx, f, project, target, c)
		if err != nil || !held {
			return false, err
		}
	}
	return true, nil
}

// holdsAt reports whether change c's effect already holds at the target:
// create and update hold when the content is there, delete when the path
// is absent, move when the previous path is absent and the new one
// present. A mode cannot be read back, so a chmod counts as not held.
// occupied says c creates a path the target holds with other content.
func holdsAt(ctx context.Context, f wq.Forge, project, target string, c wq.FileChange) (held, occupied bool, err error) {
	switch c.Action {
	case ActionChmod:
		return false, false, nil
	case ActionDelete, ActionMove:
		gone := c.Path
		if c.Action == ActionMove {
			gone = c.PreviousPath
		}
		if _, found, err := f.ReadFile(ctx, project, target, gone); err != nil || found {
			return false, false, err
		}
		if c.Action == ActionDelete {
			return true, false, nil
		}
	}
	content, found, err := f.ReadFile(ctx, project, target, c.Path)
	if err != nil || !found {
		return false, false, err
	}
	if c.Content != nil && !bytes.Equal(content, c.Content) {
		return false, c.Action == ActionCreate, nil
	}
	return true, false, nil
}

// commitRefused handles a commit the forge refused for good: a file to
// create exists, one to update, delete or move does not (409, 422, 404),
// which the same request would meet again. A desired state the target
// already holds is no change: each action whose effect holds there is
// dropped, and the rest is returned to commit again; when all hold (the
// target received the change another way, or a recurring caller
// resubmitted what was merged) the item is done, empty. A create over a
// path the target holds with other content fails, naming the path: a
// create never overwrites. Otherwise the change no longer applies to the
// target (a rebuild on a target that moved, or a first push), and the
// item fails with the forge's message.
func (x *executors) commitRefused(ctx context.Context, ex *wq.Execution, d *Detail, f wq.Forge, chs []wq.FileChange, refusal error) ([]wq.FileChange, error) {
	refused := fmt.Errorf("%w: commit on %s: %w", wq.ErrPermanent, d.TargetBranch, refusal)
	// A missing target would hold every delete: read it first.
	if _, err := f.BranchHead(ctx, d.Project, d.TargetBranch); wq.IsForgeError(err, wq.ForgeNotFound) {
		return nil, refused
	} else if err != nil {
		return nil, forgeFailure("read the target", err)
	}
	var rest []wq.FileChange
	for _, c := range chs {
		held, occupied, err := holdsAt(ctx, f, d.Project, d.TargetBranch, c)
		switch {
		case err != nil:
			return nil, forgeFailure("read the target", err)
		case occupied:
			return nil, fmt.Errorf("%w: create %s: %s already holds this path with other content, and a create never overwrites: "+
				"submit it as update to replace it", wq.ErrPermanent, c.Path, d.TargetBranch)
		case !held:
			rest = append(rest, c)
		}
	}
	switch {
	case len(rest) == 0:
		return nil, x.targetHolds(ctx, ex, d, f)
	case len(rest) == len(chs):
		return nil, refused
	}
	return rest, nil
}

// targetHolds ends an item whose target already holds its change. Without
// a merge request it completes as empty_diff (none is opened for an empty
// diff, DDR-43), and the branch ensure_mr pushed to find out is deleted,
// whatever the project's delete_source_branch: nothing refers to it. With
// one, the merge request is superseded.
func (x *executors) targetHolds(ctx context.Context, ex *wq.Execution, d *Detail, f wq.Forge) error {
	if d.MRNumber != 0 {
		return x.supersede(ctx, ex, d, f)
	}
	if err := x.deleteOwnBranch(ctx, ex, f, d); err != nil {
		return err
	}
	return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: ReasonEmptyDiff,
		Dimensions: []wq.DimensionUpdate{dim(DimMR, wq.StatusFalse, time.Time{})}})
}

// supersede closes a merge request whose change reached the target
// another way, with a note, deletes its branch when the project says so,
// and completes the item. A merge request closed already (by us before a
// dropped write, or by a person) or merged gets no note.
func (x *executors) supersede(ctx context.Context, ex *wq.Execution, d *Detail, f wq.Forge) error {
	mr, err := f.GetMergeRequest(ctx, d.Project, d.MRNumber)
	if err != nil && !wq.IsForgeError(err, wq.ForgeNotFound) {
		return forgeFailure("read the merge request", err)
	}
	if err := closeWithNote(ctx, f, d, mr, fmt.Sprintf(
		"Closed by workqueue: `%s` already holds this change, so this merge request would merge nothing.", d.TargetBranch)); err != nil {
		return err
	}
	if x.deletesSourceBranch(d) {
		if err := x.deleteOwnBranch(ctx, ex, f, d); err != nil {
			return err
		}
	}
	return ex.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: ReasonSuperseded})
}

// EmptyCheckDetail is needs_empty_check's detail: a target head that was
// found not to hold the change, by a compare with the pushed head Head
// (or by the push itself: a commit whose own changes touch the change's
// paths was made on top of a parent that lacked them). Trees do not
// change under a commit, so while the target's head is still Target and
// ours still Head the answer is the same, and check_empty_diff reads the
// target's head alone (issue 53: one request where a compare is one on
// GitLab and the directories on the way to the paths, in both trees, on
// Gitea).
type EmptyCheckDetail struct {
	Target string `json:"target,omitempty"`
	Head   string `json:"head,omitempty"`
}

// emptyCheckDetail is what the item's needs_empty_check row records; a
// detail that does not parse says nothing, so the next look compares.
func emptyCheckDetail(item *wq.Item) EmptyCheckDetail {
	var seen EmptyCheckDetail
	if row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimEmptyCheck}]; ok && len(row.Detail) > 0 {
		_ = json.Unmarshal(row.Detail, &seen)
	}
	return seen
}

// emptyCheckRow schedules the next empty check at at, keeping seen.
func emptyCheckRow(at time.Time, seen EmptyCheckDetail) wq.DimensionUpdate {
	row := dim(DimEmptyCheck, wq.StatusTrue, at)
	if seen != (EmptyCheckDetail{}) {
		row.Detail, _ = json.Marshal(seen)
	}
	return row
}

// checkEmptyDiff closes the merge request when the target received the
// change another way; otherwise it reschedules itself. It compares the
// target with the head the service pushed, so it looks only while that
// head holds the latest content (a newer one is pushed first, by
// ensure_mr). It reads the target's head first, and compares only when
// that head, or ours, is not the pair a compare (or the push) last found
// lacking the change: a target that did not move costs one read. The
// compare is with the head read, not the branch's name, so that what is
// recorded is what was compared.
func (x *executors) checkEmptyDiff(ctx context.Context, ex *wq.Execution) error {
	ctx = scheduled(ctx, ex.Item, DimEmptyCheck)
	d, f, chs, err := x.loadChange(ctx, ex.Item)
	if err != nil {
		return err
	}
	if d.Tracked {
		return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{dim(DimEmptyCheck, wq.StatusFalse, time.Time{})}})
	}
	seen := emptyCheckDetail(ex.Item)
	next := []wq.DimensionUpdate{emptyCheckRow(ex.Now.Add(x.EmptyCheckInterval), seen)}
	if d.MRNumber != 0 && d.HeadSHA != "" && d.PushedHash == d.ContentHash {
		target, err := f.BranchHead(ctx, d.Project, d.TargetBranch)
		holds := false
		if err == nil && (target != seen.Target || d.HeadSHA != seen.Head) {
			holds, err = targetMatches(ctx, f, d.Project, target, d.HeadSHA, chs)
			if err == nil && !holds {
				next[0] = emptyCheckRow(ex.Now.Add(x.EmptyCheckInterval), EmptyCheckDetail{Target: target, Head: d.HeadSHA})
			}
		}
		switch {
		case wq.IsForgeError(err, wq.ForgeNotFound):
			// Our commit or the target is gone from the forge: push the
			// content again (ensure_mr says so when it is the target).
			next = append(next, dim(DimMR, wq.StatusTrue, time.Time{}))
		case err != nil:
			return forgeFailure("compare with the target", err)
		case holds:
			return x.supersede(ctx, ex, d, f)
		}
	}
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: next})
}
