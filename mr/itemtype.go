package mr

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/herder"
)

// Actions of the mr type.
const (
	ActEnsureMR       = "ensure_mr"
	ActCheckEmptyDiff = "check_empty_diff"
	ActPostDashboard  = "post_dashboard"
	ActReconcileMR    = "reconcile_mr"
	ActCloseMR        = "close_mr"
	ActRetryCIJobs    = "retry_ci_jobs"
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
	// DeleteSourceBranch says whether the source branch of an item on
	// forge and project is deleted once its merge request is merged or
	// the item is cancelled (projects[].delete_source_branch); nil: it
	// is. It is the operator's policy for a repository, not part of what a
	// caller asks for, so it is asked when the branch is done with rather
	// than stored per item: no column holds it, and a changed setting
	// applies to items in flight.
	DeleteSourceBranch func(forge, project string) bool
	// Assignments is the control plane's gate for items submitted for an
	// assignment; nil on an instance without one.
	Assignments Assignments
	// NoteMinInterval is the least time between two edits of the status
	// note (mr.note_min_interval; default 1m).
	NoteMinInterval time.Duration
	// Herder decides which failed CI jobs of a merge request's head are
	// retried (the herder section of the configuration); nil: none are,
	// and failed jobs are not recorded.
	Herder *herder.Herder
	// RequiredChecks are the checks (globs over commit status contexts)
	// that must have succeeded on an item's head on forge and project
	// before its merge request is merged (projects[].required_checks);
	// nil: none. Asked when needed, as DeleteSourceBranch is, so that a
	// changed setting applies to items in flight.
	RequiredChecks func(forge, project string) []string
	// TrackLabel is the track_label of forge and project (""
	// when it tracks none): a tracked merge request without it is no
	// longer tracked. nil: tracked items are never untracked by label.
	TrackLabel func(forge, project string) string
	// MergeTrain reports whether forge and project merge through a merge
	// train (projects[].merge_train), and its batch size; nil: none does.
	MergeTrain func(forge, project string) (bool, int)
	// TrainPriority is a car's priority in its train from its merge
	// request's labels (the control plane's priority_labels: an earlier
	// label rides first); nil: cars ride in order of arrival.
	TrainPriority func(labels []string) int
	// TrainMetrics receive the merge trains' events; nil: none.
	TrainMetrics *TrainMetrics
	// Notify wakes another item of the type (a merge train's cars wake
	// each other); nil: they find each other at their next ride.
	Notify func(id wq.ItemID)
	// Log receives what the executors cannot report through an item's
	// state (a branch the forge would not delete); nil: slog.Default().
	Log *slog.Logger
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
	if o.NoteMinInterval <= 0 {
		o.NoteMinInterval = time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	o.Log = o.Log.With("component", "mr")
}

// Type returns the mr item type for the engine's registry.
func Type(opts Options) wq.ItemType {
	opts.defaults()
	x := &executors{Options: opts}
	return wq.ItemType{
		Name:   ItemType,
		Decide: Decide,
		Executors: map[string]wq.Executor{
			ActEnsureMR:       x.finalNote(x.ensureMR),
			ActCheckEmptyDiff: x.finalNote(x.checkEmptyDiff),
			ActPostDashboard:  x.finalNote(x.postDashboard),
			ActReconcileMR:    x.finalNote(x.reconcileMR),
			ActCloseMR:        x.finalNote(x.closeMR),
			ActRetryCIJobs:    x.finalNote(x.retryCIJobs),
			ActReadChecks:     x.finalNote(x.readChecksAction),
			ActRideTrain:      x.finalNote(x.rideTrain),
		},
		EventHandlers:   x.eventHandlers(),
		Dimensions:      []string{DimClose, DimMR, DimEmptyCheck, DimCIRetry, DimCheck, DimTrain, DimDashboard, DimReconcile},
		CancelDimension: DimClose,
	}
}

// Decide picks the next action in DESIGN section 6's priority order. A
// cancel comes before anything else: nothing is pushed or merged for an
// item being wound down. Otherwise a missing dimension row means the
// action is needed (DDR-48); ensure_mr comes first, so the later actions
// only run once the merge request exists. needs_ci_retry is, like the
// cancel, needed only once a row says so: a missing row means no job
// failed.
func Decide(item *wq.Item, now time.Time) string {
	if item.Phase != wq.PhaseActive {
		return ""
	}
	dims := item.Dimensions
	_, cancelling := dims[wq.DimensionKey{Dimension: DimClose}]
	switch {
	case cancelling && dims.Needs(DimClose, "", now):
		return ActCloseMR
	case dims.Needs(DimMR, "", now):
		return ActEnsureMR
	case dims.Needs(DimEmptyCheck, "", now):
		return ActCheckEmptyDiff
	case ciRetryDue(dims, now):
		return ActRetryCIJobs
	case checksDue(dims, now):
		return ActReadChecks
	case trainDue(dims, now):
		return ActRideTrain
	case noteDue(item, now):
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
		return fmt.Errorf("%w: %s: %w", wq.ErrPermanent, op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// missingTargetError is an item's target branch that its project does
// not have: permanent, and said without the forge's error chain, which
// it wraps for errors.Is and errors.As.
type missingTargetError struct {
	branch, project string
	err             error
}

func (e missingTargetError) Error() string {
	return fmt.Sprintf("the target branch %q does not exist on %s", e.branch, e.project)
}
func (e missingTargetError) Unwrap() []error { return []error{wq.ErrPermanent, e.err} }

func dim(name, status string, pendingUntil time.Time) wq.DimensionUpdate {
	return wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: name}, Status: status, PendingUntil: pendingUntil}
}

// changes decodes inspected file actions for the forge.
func changes(actions []FileAction) ([]wq.FileChange, error) {
	out := make([]wq.FileChange, 0, len(actions))
	for _, a := range actions {
		content, err := decodedContent(a)
		if err != nil {
			return nil, err
		}
		out = append(out, wq.FileChange{Action: a.Action, Path: a.FilePath, PreviousPath: a.PreviousPath,
			Content: content, Executable: a.ExecuteFilemode})
	}
	return out, nil
}

// loadChange loads the item's detail and forge, and decodes its changes.
func (x *executors) loadChange(ctx context.Context, item *wq.Item) (*Detail, wq.Forge, []wq.FileChange, error) {
	d, f, err := x.load(ctx, item)
	if err != nil {
		return nil, nil, nil, err
	}
	chs, err := changes(d.FileActions)
	if err != nil {
		return nil, nil, nil, err
	}
	return d, f, chs, nil
}

// ensureMR makes the branch one commit on top of the target holding the
// desired change, and the merge request match the desired title and
// description (DESIGN section 6). It writes only a branch the service
// owns and only a merge request it created; what it pushes is the content
// it read, recorded with that content's hash, and its closing write is
// dropped (ErrSuperseded) if a resubmission arrived meanwhile, so the
// newer content is pushed next. A change the target already holds opens
// no merge request (DDR-43): the pushed head is compared with the target,
// and the branch deleted again.
func (x *executors) ensureMR(ctx context.Context, ex *wq.Execution) error {
	d, f, chs, err := x.loadChange(ctx, ex.Item)
	if err != nil {
		return err
	}
	if d.Tracked {
		// Nothing to push, ever: a retry or a head the service did not
		// push asks for a look instead.
		return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{
			dim(DimMR, wq.StatusFalse, time.Time{}), dim(DimReconcile, wq.StatusTrue, time.Time{})}})
	}
	state := d.ForgeState()

	// The commit: skipped when the branch still holds exactly what we
	// pushed for this content (a title or description change), unless
	// reconcile_mr asked for it again on the current target.
	head, err := f.BranchHead(ctx, d.Project, d.SourceBranch)
	if err != nil && !wq.IsForgeError(err, wq.ForgeNotFound) {
		return forgeFailure("read the branch", err)
	}
	if err := x.checkOwnership(ctx, d, head, ex.Item.CallerIdentity); err != nil {
		return err
	}
	pushed := false
	parent := "" // the pushed commit's, when the forge said
	// A merge train's car is built on the car ahead of it (or the
	// target): the rest of the push is the same.
	base := d.TargetBranch
	trainReq, onTrain := trainRebuild(ex.Item, d.HeadSHA)
	if onTrain && d.PushedHash == d.ContentHash {
		base = trainReq.OnBranch
	} else {
		onTrain = false
	}
	if d.PushedHash != d.ContentHash || d.HeadSHA == "" || head != d.HeadSHA || rebuildRequested(ex.Item, d.HeadSHA) {
		// The gate is asked before a write, not before every run: a run
		// that finds its push and its merge request in place (a late
		// webhook's) writes nothing, and an assignment whose lease ended
		// after its pull request opened must not cancel the item.
		if stopped, err := x.gateStopped(ctx, ex, d); stopped || err != nil {
			return err
		}
		// What the change means depends on what the base holds (the
		// target, or a merge train's car ahead): the directories on the
		// way to the paths it touches, read before the first write, give
		// the modes to keep and the names a change may not collide with.
		entries, err := f.WalkTree(ctx, d.Project, base, treeDirs(chs))
		if onTrain && wq.IsForgeError(err, wq.ForgeNotFound) {
			return x.trainBaseGone(ctx, ex)
		}
		if wq.IsForgeError(err, wq.ForgeNotFound) {
			// Said in words, once: the forge's own answer (Gitea's "sha
			// not found [nope]") names neither the branch nor the
			// project (issue 55). Not found here is nearly always the
			// branch: a project that is missing altogether is refused
			// at submission when its default branch cannot be read.
			return missingTargetError{branch: base, project: d.Project, err: err}
		}
		if err != nil {
			return forgeFailure("read the target's tree", err)
		}
		if err := planChanges(d.FileActions, chs, newTargetTree(base, entries)); err != nil {
			return err
		}
		// Say what is being pushed before pushing it: a crash before the
		// push is recorded must not make our own branch look foreign.
		state.PushingHash = d.ContentHash
		if err := x.recordState(ctx, ex, state); err != nil {
			return err
		}
		commit := func(chs []wq.FileChange) (wq.Commit, error) {
			return f.CommitFiles(ctx, wq.CommitRequest{Project: d.Project, Base: base, Target: d.TargetBranch, Branch: d.SourceBranch,
				Message: d.CommitMessage, Changes: chs})
		}
		c, err := commit(chs)
		if onTrain && err != nil {
			// The car ahead may have merged (its branch deleted) or moved
			// since the plan: a refusal then is the train's to plan again,
			// never the item's failure.
			if h, herr := f.BranchHead(ctx, d.Project, base); wq.IsForgeError(herr, wq.ForgeNotFound) || herr == nil && h != trainReq.Target {
				return x.trainBaseGone(ctx, ex)
			}
		}
		if commitRefusedForGood(err) {
			// What the target already holds is no change: the rest is
			// committed again, once.
			rest, rerr := x.commitRefused(ctx, ex, d, f, chs, err)
			if rest == nil {
				return rerr
			}
			if c, err = commit(rest); commitRefusedForGood(err) {
				return fmt.Errorf("%w: commit on %s: %w", wq.ErrPermanent, base, err)
			}
		}
		if err != nil {
			return forgeFailure("commit", err)
		}
		// Record the push at once: a crash before the merge request is made
		// must not lose which commit is ours, or which content it holds.
		state.HeadSHA, state.PushedHash, state.PushingHash, state.HeadPipelineID = c.SHA, d.ContentHash, "", 0 // a new head, no pipeline yet
		if err := x.recordState(ctx, ex, state); err != nil {
			return err
		}
		d.HeadSHA, d.PushedHash, d.PushingHash, d.HeadPipelineID = c.SHA, d.ContentHash, "", 0
		pushed, parent = true, c.Parent
		if d.AssignmentID != "" {
			if err := x.Assignments.Pushed(ctx, ex.Item.CallerIdentity, d.AssignmentID, c.SHA); err != nil {
				return fmt.Errorf("declare the push on assignment %s: %w", d.AssignmentID, err)
			}
		}
	}

	// The head holds the change: if the target agrees with it on every
	// path the change touches, there is nothing to merge. A push made now
	// mostly says so itself: its commit is on top of the target as it
	// was, so a touched path in what the commit changed is one the target
	// lacked, and the same read verifies the push (issue 53: one read
	// where a compare with the target was another). A commit that changed
	// none of them is compared with the target all the same, tree against
	// tree: a forge's list of a commit's changes can leave a path out
	// (Gitea's, a path whose type changed). Either comes before the
	// verification, which would read back every path of an empty commit.
	var changed []wq.PathChange
	modesAsked := true
	if pushed {
		changed, modesAsked, err = commitChanges(ctx, f, d, chs)
		if err != nil {
			return x.unverified(ctx, ex, state, forgeFailure("verify the commit", err))
		}
	}
	if !pushed || !changesAny(changed, chs) {
		holds, err := targetMatches(ctx, f, d.Project, d.TargetBranch, d.HeadSHA, chs)
		if err != nil {
			return forgeFailure("compare with the target", err)
		}
		if holds {
			return x.targetHolds(ctx, ex, d, f)
		}
	}
	if pushed {
		if err := x.verifyPush(ctx, f, d, d.HeadSHA, changed, chs, modesAsked); err != nil {
			return x.unverified(ctx, ex, state, err)
		}
	}

	// The merge request: asking the gate before opening one.
	if d.MRNumber == 0 {
		if stopped, err := x.gateStopped(ctx, ex, d); stopped || err != nil {
			return err
		}
	}
	mr, err := x.ensureMergeRequest(ctx, f, ex.Item.ID, d)
	if err != nil {
		return err
	}
	state.MRNumber, state.MRURL = mr.Number, mr.URL
	if err := x.recordState(ctx, ex, state); err != nil {
		return err
	}
	if d.AssignmentID != "" {
		// The assignment's session wrote this merge request: its review
		// and merge go to other identities.
		if err := x.Assignments.Opened(ctx, ex.Item.CallerIdentity, d.AssignmentID, mr.Number, d.HeadSHA); err != nil {
			return fmt.Errorf("record merge request !%d as assignment %s's: %w", mr.Number, d.AssignmentID, err)
		}
	}
	now := ex.Now
	// A push whose own changes touch the change's paths was made on a
	// parent that lacked them: the empty check need not compare while
	// the target stays there. Only when its base was the target: a car
	// built on the car ahead says nothing of the target.
	seen := emptyCheckDetail(ex.Item)
	if pushed {
		seen = EmptyCheckDetail{}
		if parent != "" && base == d.TargetBranch && changesAny(changed, chs) {
			seen = EmptyCheckDetail{Target: parent, Head: d.HeadSHA}
		}
	}
	dims := []wq.DimensionUpdate{
		dim(DimMR, wq.StatusFalse, time.Time{}),
		dim(DimReconcile, wq.StatusTrue, time.Time{}), // look at it now: merge when mergeable
		emptyCheckRow(now.Add(x.EmptyCheckInterval), seen),
	}
	// What follows a new head is decided by the head, not by this run's
	// push: a run that pushed and failed before here leaves it to the
	// next, which finds the head in place and pushes nothing.
	if pushed || checksBehind(ex.Item, d.HeadSHA) {
		// A new head: no required check has succeeded on it yet.
		dims = append(dims, x.newHeadChecks(ex.Item, d, now)...)
	}
	if td, riding := trainOf(ex.Item); riding && td.Head != d.HeadSHA {
		if req, ok := trainRequest(ex.Item); ok {
			// Built on the car ahead: ride again at once, on the new head.
			td.Base, td.Head, td.CI, td.Failed, td.AheadMR = req.Target, d.HeadSHA, trainCIPending, nil, req.AheadMR
			dims = append(dims, trainRow(td, time.Time{}))
		} else {
			// Pushed for another reason (new content, a person's push
			// put back): the car leaves its train, and joins it again at
			// the back once mergeable.
			dims = append(dims, leftTrain())
		}
	}
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: dims})
}

// commitRefusedForGood reports whether the forge refused a commit in a
// way the same request meets again: a path to create exists, one to
// change does not (409, 422, 404, or a refusal it calls permanent).
func commitRefusedForGood(err error) bool {
	kind, ok := wq.ForgeErrorOf(err)
	return ok && (kind == wq.ForgeUnprocessable || kind == wq.ForgeConflict || kind == wq.ForgeNotFound || kind == wq.ForgePermanent)
}

// checkOwnership refuses, permanently, to write a branch that exists and
// that the service did not create: its head is not one the service pushed
// for this branch, this item never pushed to it, and no push of ours was
// in flight when a crash interrupted it. A branch the service created
// stays its own even if someone pushed to it since (that push is
// overwritten with the desired state: see docs/DESIGN.md, "Foreign
// pushes").
func (x *executors) checkOwnership(ctx context.Context, d *Detail, head, caller string) error {
	if head == "" || head == d.HeadSHA || d.HeadSHA != "" || d.PushingHash != "" {
		return nil
	}
	owned, err := x.Store.OwnsBranchHead(ctx, d.Forge, d.Project, d.SourceBranch, head, "")
	if err != nil {
		return err
	}
	if !owned {
		return fmt.Errorf("%w: branch %q already exists on %s at %.12s and workqueue did not create it; "+
			"workqueue never overwrites a branch it does not own: submit to a new branch", wq.ErrPermanent, d.SourceBranch, d.Project, head)
	}
	// The service pushed it, but for whom: a branch another caller's
	// item left (its pull request may still be open) is that caller's.
	if mine, err := x.Store.OwnsBranchHead(ctx, d.Forge, d.Project, d.SourceBranch, head, caller); err != nil {
		return err
	} else if !mine {
		return fmt.Errorf("%w: branch %q on %s is at %.12s, which workqueue pushed for another caller; "+
			"a caller never writes over another's branch: submit to a new branch", wq.ErrPermanent, d.SourceBranch, d.Project, head)
	}
	return nil
}

// unverified records that the push of state holds no verified content,
// and returns err, why: whatever runs ensure_mr next (a retry after a
// transient failure, or after the item failed) pushes and verifies again
// instead of opening a merge request on it.
func (x *executors) unverified(ctx context.Context, ex *wq.Execution, state ForgeState, err error) error {
	state.PushedHash = ""
	if rerr := x.recordState(ctx, ex, state); rerr != nil {
		return rerr
	}
	return err
}

// commitChanges reads what the pushed head changed, and whether with the
// modes: a change of new regular files and deletions on a forge that
// writes no other mode (it cannot set one) has no mode in question, and
// is read without them where that is cheaper (wq.CommitPathLister).
func commitChanges(ctx context.Context, f wq.Forge, d *Detail, chs []wq.FileChange) ([]wq.PathChange, bool, error) {
	if l, ok := f.(wq.CommitPathLister); ok && !wq.SetsFileModes(f) && !slices.ContainsFunc(chs, func(c wq.FileChange) bool {
		return c.Action != ActionDelete && (c.Action != ActionCreate || c.Mode != "" && c.Mode != wq.ModeFile)
	}) {
		changed, err := l.CommitPaths(ctx, d.Project, d.HeadSHA)
		return changed, false, err
	}
	changed, err := f.CommitChanges(ctx, d.Project, d.HeadSHA)
	return changed, true, err
}

// verifyPush checks that the pushed commit sha changed exactly what the
// submission asked for, given what it changed (CommitChanges): a forge
// that silently dropped a path, or changed one that was not asked for,
// fails the item before any merge request can carry the partial change.
func (x *executors) verifyPush(ctx context.Context, f wq.Forge, d *Detail, sha string, changed []wq.PathChange, chs []wq.FileChange, withModes bool) error {
	modes := make(map[string]string, len(chs))
	for _, c := range chs {
		if c.Mode != "" && withModes {
			modes[c.Path] = c.Mode
		}
	}
	unchanged, problem := CheckCommit(d.FileActions, changed, modes)
	if problem == "" {
		for _, a := range unchanged {
			// Not in the commit's diff: the target held this content already,
			// or the forge dropped it. The branch tells which.
			content, found, err := f.ReadFile(ctx, d.Project, sha, a.FilePath)
			if err != nil {
				return forgeFailure("verify the commit", err)
			}
			want, err := decodedContent(a)
			if err != nil {
				return err
			}
			if !found || (want != nil && !bytes.Equal(content, want)) {
				problem = fmt.Sprintf("%s %q is not in the pushed commit", a.Action, a.FilePath)
				break
			}
		}
	}
	if problem != "" {
		return fmt.Errorf("%w: the forge's commit %.12s differs from the submitted change: %s", wq.ErrPermanent, sha, problem)
	}
	return nil
}

// decodedContent is an action's content as bytes, nil when it has none.
func decodedContent(a FileAction) ([]byte, error) {
	if a.Content == nil {
		return nil, nil
	}
	if a.Encoding != EncodingBase64 {
		return []byte(*a.Content), nil
	}
	b, err := base64.StdEncoding.DecodeString(*a.Content)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", wq.ErrPermanent, a.FilePath, err)
	}
	return b, nil
}

// Managed merge requests carry this marker, invisible when rendered, at
// the end of their description: it is how the service recognises a merge
// request it created when a crash fell between creating and recording it,
// and never takes over one it did not create.
const markerPrefix = "<!-- workqueue item "

func marker(id wq.ItemID) string { return markerPrefix + id.String() + " -->" }

// ManagedDescription is the description of the merge request the service
// keeps for an item: the desired description, then the item's marker.
func ManagedDescription(id wq.ItemID, description string) string {
	if description == "" {
		return marker(id)
	}
	return description + "\n\n" + marker(id)
}

// ownMergeRequest reads the merge request the item created: the
// recorded number, or, when a crash lost it, the newest one from its
// branches that carries the item's marker. nil if there is none.
func ownMergeRequest(ctx context.Context, f wq.Forge, id wq.ItemID, d *Detail) (*wq.MergeRequest, error) {
	if d.MRNumber != 0 {
		mr, err := f.GetMergeRequest(ctx, d.Project, d.MRNumber)
		if err == nil {
			return mr, nil
		}
		if !wq.IsForgeError(err, wq.ForgeNotFound) {
			return nil, forgeFailure("read the merge request", err)
		}
	}
	found, err := f.FindMergeRequest(ctx, d.Project, d.SourceBranch, d.TargetBranch)
	if err != nil {
		return nil, forgeFailure("find the merge request", err)
	}
	if found != nil && strings.Contains(found.Description, marker(id)) {
		return found, nil
	}
	return nil, nil
}

// ensureMergeRequest finds, reopens or creates the item's merge request
// and syncs its title and description. Only a merge request the item
// created is ever found, reopened or edited: the recorded number, or, when
// a crash lost it, one that carries the item's marker.
func (x *executors) ensureMergeRequest(ctx context.Context, f wq.Forge, id wq.ItemID, d *Detail) (*wq.MergeRequest, error) {
	description := ManagedDescription(id, d.Description)
	if d.MRNumber == 0 {
		// No merge request recorded: create it at once. One that a crash
		// between its creation and its record left makes the forge answer
		// a conflict, and only then is it looked for, by its marker: a
		// search before every creation would cost every merge request a
		// request for a crash's sake.
		created, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: d.Project, SourceBranch: d.SourceBranch,
			TargetBranch: d.TargetBranch, Title: d.Title, Description: description, Labels: d.Labels})
		if err == nil {
			return created, nil
		}
		if !wq.IsForgeError(err, wq.ForgeConflict) {
			return nil, forgeFailure("create the merge request", err)
		}
	}
	mr, err := ownMergeRequest(ctx, f, id, d)
	if err != nil {
		return nil, err
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
			TargetBranch: d.TargetBranch, Title: d.Title, Description: description, Labels: d.Labels})
		if wq.IsForgeError(err, wq.ForgeConflict) {
			return nil, fmt.Errorf("%w: an open merge request that workqueue did not create already proposes %q into %q; "+
				"workqueue never takes over a merge request it did not create", wq.ErrPermanent, d.SourceBranch, d.TargetBranch)
		}
		if err != nil {
			return nil, forgeFailure("create the merge request", err)
		}
		return created, nil
	}
	// The forge stores a description it interprets in its inert form
	// (GitLab's quick actions): that is what it holds when in sync.
	if mr.Title != d.Title || mr.Description != description && mr.Description != wq.InertText(f, description) {
		synced, err := f.UpdateMergeRequest(ctx, d.Project, mr.Number, wq.MergeRequestUpdate{Title: &d.Title, Description: &description})
		if err != nil {
			return nil, forgeFailure("sync the merge request", err)
		}
		mr = synced
	}
	return mr, nil
}

func (x *executors) recordState(ctx context.Context, ex *wq.Execution, s ForgeState) error {
	return x.Store.RecordForgeState(ctx, ex.Lease, s, ex.Now)
}
