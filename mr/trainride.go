package mr

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// The merge train's executor (docs/merge-train.md): each car plans the
// train from the store and the forge (PlanTrain) and carries out its own
// step, under its own lease. The plan is made again by every car at every
// ride, so that a crash between two steps, or two instances riding two
// cars at once, leaves nothing that the next ride does not put right: a
// rebuild is the car's own push, a merge is pinned to the head that was
// tested.

// ActRideTrain plans the car's train and carries out its own step.
const ActRideTrain = "ride_train"

// DimTrain is a car in its project's merge train for its target branch:
// true while it rides (or waits to), with a TrainDetail; false once it
// left. A missing row means it never joined.
const DimTrain = "needs_train"

// blockerTrain is ReconcileDetail.Blocker while the merge train, not
// reconcile_mr, merges the item.
const blockerTrain = "merge_train"

// rebuildTrain is RebuildRequest.Rebuild for a car built on the car ahead.
const rebuildTrain = "merge_train"

// Car CI words of TrainDetail.CI.
const (
	trainCIPending = "pending"
	trainCIPassed  = "passed"
	trainCIFailed  = "failed"
)

// TrainDetail is a car's needs_train detail.
type TrainDetail struct {
	Seq  int64  `json:"seq"`            // when it joined (Unix nanoseconds): its place among equals
	Base string `json:"base,omitempty"` // the commit Head was built on
	Head string `json:"head,omitempty"` // the head Base and CI are about
	CI   string `json:"ci,omitempty"`   // pending, passed or failed, of Head
	// Failed are the checks that failed on Head, for the note and the
	// ejection's comment.
	Failed []string `json:"failed,omitempty"`
	// Place and Of are the car's place in the train (1 is next to merge)
	// and the train's length, at its last ride.
	Place int `json:"place,omitempty"`
	Of    int `json:"of,omitempty"`
	// AheadMR is the merge request of the car Base is the head of (0:
	// Base was the target's head).
	AheadMR int64 `json:"ahead_mr,omitempty"`
}

// trainOf returns the car's row detail, and whether it rides.
func trainOf(item *wq.Item) (TrainDetail, bool) {
	row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimTrain}]
	if !ok || row.Status != wq.StatusTrue {
		return TrainDetail{}, false
	}
	var td TrainDetail
	_ = json.Unmarshal(row.Detail, &td)
	return td, true
}

func trainDue(dims wq.Dimensions, now time.Time) bool {
	row, ok := dims[wq.DimensionKey{Dimension: DimTrain}]
	return ok && row.Status == wq.StatusTrue && dims.Needs(DimTrain, "", now)
}

// trainRow is the update of a car's row: riding, ridden again at wait
// (zero: now).
func trainRow(td TrainDetail, wait time.Time) wq.DimensionUpdate {
	raw, _ := json.Marshal(td)
	return wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: DimTrain}, Status: wq.StatusTrue, PendingUntil: wait, Detail: raw}
}

// leftTrain is the update of a car that left its train.
func leftTrain() wq.DimensionUpdate { return dim(DimTrain, wq.StatusFalse, time.Time{}) }

// train reports whether the item's project merges through a train, and
// its batch size.
func (x *executors) train(d *Detail) (bool, int) {
	if x.MergeTrain == nil || d.Tracked {
		return false, 0
	}
	return x.MergeTrain(d.Forge, d.Project)
}

// trainRebuild returns the rebuild request of a car asked to be built on
// the car ahead, if the head it names is still the item's head.
func trainRebuild(item *wq.Item, head string) (RebuildRequest, bool) {
	req, ok := trainRequest(item)
	return req, ok && req.Head == head && req.OnBranch != ""
}

// joinTrain makes a mergeable item a car of its train instead of merging
// it: at the back, built on the commit its merge request starts from.
func (x *executors) joinTrain(ctx context.Context, ex *wq.Execution, d *Detail, mr *wq.MergeRequest) error {
	td := TrainDetail{Seq: ex.Now.UnixNano(), Base: mr.MergeBase, Head: d.HeadSHA, CI: trainCIPending}
	detail, _ := json.Marshal(ReconcileDetail{Blocker: blockerTrain})
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{trainRow(td, time.Time{}),
		{DimensionKey: wq.DimensionKey{Dimension: DimReconcile}, Status: wq.StatusTrue, PendingUntil: ex.Now.Add(x.ReconcileInterval), Detail: detail}}})
}

// carCI is what the checks of the car's head say: the project's required
// checks when it has any, otherwise every check reported on the head,
// with at least one: a train needs CI that reports on its cars.
func (x *executors) carCI(ctx context.Context, item *wq.Item, d *Detail, f wq.Forge) (string, []string, error) {
	r, ok := f.(wq.CommitStatusReader)
	if !ok {
		return "", nil, fmt.Errorf("%w: project %s merges through a train, and the %s forge cannot read a head's checks", wq.ErrPermanent, d.Project, f.Kind())
	}
	seen, err := r.CommitStatuses(ctx, d.Project, d.HeadSHA)
	if err != nil {
		return "", nil, forgeFailure("read the car's checks", err)
	}
	var failed []string
	pending := len(seen) == 0
	if globs := x.requiredChecks(d); len(globs) > 0 {
		pending = false
		for _, g := range globs {
			j := judge(g, d.HeadSHA, seen)
			switch j.State {
			case wq.CheckFailed:
				for _, c := range j.Checks {
					if c.State == wq.CheckFailed {
						failed = append(failed, c.Context)
					}
				}
			case wq.CheckPending:
				pending = true
			}
		}
	} else {
		for _, s := range seen {
			switch s.State {
			case wq.CheckFailed:
				failed = append(failed, s.Context)
			case wq.CheckPending:
				pending = true
			}
		}
	}
	switch {
	case len(failed) > 0:
		return trainCIFailed, failed, nil
	case pending:
		return trainCIPending, nil, nil
	}
	return trainCIPassed, nil, nil
}

func carCI(word string) CarCI {
	switch word {
	case trainCIPassed:
		return CarCIPassed
	case trainCIFailed:
		return CarCIFailed
	}
	return CarCIPending
}

// rideTrain plans the car's train and carries out the car's own step.
func (x *executors) rideTrain(ctx context.Context, ex *wq.Execution) error {
	d, f, err := x.load(ctx, ex.Item)
	if err != nil {
		return err
	}
	td, riding := trainOf(ex.Item)
	on, batch := x.train(d)
	if !on || !riding {
		// The project stopped merging through a train: reconcile_mr
		// merges it as before.
		return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{leftTrain(), dim(DimReconcile, wq.StatusTrue, time.Time{})}})
	}
	if d.MRNumber == 0 || d.HeadSHA == "" || d.PushedHash != d.ContentHash {
		// Being pushed: ensure_mr comes first, and says when it is done.
		return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{trainRow(td, ex.Now.Add(x.MergeRecheckInterval))}})
	}
	// Merged already (a merge the forge did though it answered an error,
	// a person's) or closed: the car is done, whatever the train says.
	switch live, err := f.GetMergeRequest(ctx, d.Project, d.MRNumber); {
	case err != nil:
		return forgeFailure("read the merge request", err)
	case live.State == wq.MergeRequestMerged:
		x.TrainMetrics.merged(d.Forge, ex.Now.Sub(time.Unix(0, td.Seq)))
		return x.merged(ctx, ex, d, f)
	case live.State == wq.MergeRequestClosed:
		return x.closedTwice(ctx, ex, d, f)
	}
	if td.Head != d.HeadSHA {
		// A head the train did not build (a push before it joined): its
		// base is unknown, so it is built again.
		td.Head, td.Base = d.HeadSHA, ""
	}
	ci, failed, err := x.carCI(ctx, ex.Item, d, f)
	if err != nil {
		return err
	}
	td.CI, td.Failed = ci, failed

	raw, err := x.Store.TrainCars(ctx, d.Forge, d.Project, d.TargetBranch)
	if err != nil {
		return err
	}
	cars := make([]Car, 0, len(raw)+1)
	branches := map[string]string{} // head → the branch of the car at it
	numbers := map[string]int64{}   // head → the merge request of the car at it
	for _, c := range raw {
		if c.ItemID == ex.Item.ID {
			continue // added from its own row below: the store's snapshot may predate its join
		}
		var other TrainDetail
		_ = json.Unmarshal(c.Detail, &other)
		car := Car{Item: c.ItemID.String(), Seq: other.Seq, Head: c.HeadSHA, Priority: x.trainPriority(c.Labels)}
		if other.Head == c.HeadSHA {
			car.Base, car.CI = other.Base, carCI(other.CI)
		}
		cars = append(cars, car)
		if c.HeadSHA != "" {
			branches[c.HeadSHA], numbers[c.HeadSHA] = c.SourceBranch, c.MRNumber
		}
	}
	cars = append(cars, Car{Item: ex.Item.ID.String(), Seq: td.Seq, Head: d.HeadSHA, Base: td.Base, CI: carCI(td.CI), Priority: x.trainPriority(d.Labels)})

	targetHead, err := f.BranchHead(ctx, d.Project, d.TargetBranch)
	if err != nil {
		return forgeFailure("read the target", err)
	}
	branches[targetHead] = d.TargetBranch
	var holdsErr error
	holds := func(commit string) bool {
		switch {
		case commit == targetHead:
			return true
		case commit != td.Base || td.AheadMR == 0:
			// Another car's base: its own ride decides; the cars behind
			// it build on it meanwhile.
			return commit != td.Base
		}
		// This car was built on the car ahead, which has merged since: the
		// target holds exactly what it was built on if the merge left the
		// target at that merge request's merge commit (a fast-forward
		// leaves it at the head itself, the case above).
		ahead, err := f.GetMergeRequest(ctx, d.Project, td.AheadMR)
		if err != nil {
			holdsErr = err
			return false
		}
		return ahead.State == wq.MergeRequestMerged && ahead.HeadSHA == commit && ahead.MergeCommitSHA == targetHead
	}
	plans := PlanTrain(cars, TrainTarget{Head: targetHead, Holds: holds}, batch)
	if holdsErr != nil {
		return forgeFailure("compare the target with the car's base", holdsErr)
	}
	x.TrainMetrics.seen(d.Forge, d.Project, d.TargetBranch, len(plans))
	var plan Plan
	for i, p := range plans {
		if p.Item == ex.Item.ID.String() {
			plan, td.Place, td.Of = p, i+1, len(plans)
		}
	}
	wait := ex.Now.Add(x.MergeRecheckInterval)
	switch plan.Step {
	case StepRebuild:
		branch, ok := branches[plan.On]
		if !ok {
			return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{trainRow(td, wait)}})
		}
		req, _ := json.Marshal(RebuildRequest{Rebuild: rebuildTrain, Head: d.HeadSHA, Target: plan.On, OnBranch: branch, AheadMR: numbers[plan.On]})
		x.TrainMetrics.outcome(d.Forge, TrainRebuilt)
		return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{
			{DimensionKey: wq.DimensionKey{Dimension: DimMR}, Status: wq.StatusTrue, Detail: req},
			trainRow(td, ex.Now.Add(x.ReconcileInterval)), // ensure_mr rides it again once built
		}})
	case StepMerge:
		if now, err := x.Store.GetMRDetail(ctx, ex.Item.ID); err != nil || now.ContentHash != d.ContentHash {
			return err // resubmitted meanwhile: ensure_mr takes it out of the train
		}
		err := f.MergeMergeRequest(ctx, d.Project, d.MRNumber, d.HeadSHA)
		if err == nil {
			x.wakeTrain(raw, ex.Item.ID)
			x.TrainMetrics.merged(d.Forge, ex.Now.Sub(time.Unix(0, td.Seq)))
			return x.mergedAt(ctx, ex, d, f, true)
		}
		if kind, _ := wq.ForgeErrorOf(err); kind != wq.ForgeConflict && kind != wq.ForgeUnprocessable {
			return forgeFailure("merge", err)
		}
		// The forge is not ready (still checking) or the target moved: the
		// next ride plans again.
		return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{trainRow(td, wait)}})
	case StepEject:
		note := fmt.Sprintf("**workqueue** took this merge request out of the merge train into `%s`: its CI failed on `%.12s` (%s), "+
			"built on top of the merge requests ahead of it, which passed. Submit the change again to rejoin the train.",
			d.TargetBranch, d.HeadSHA, strings.Join(failed, ", "))
		if _, err := f.CreateNote(ctx, d.Project, d.MRNumber, note); err != nil {
			return forgeFailure("comment on the ejected merge request", err)
		}
		x.wakeTrain(raw, ex.Item.ID)
		x.TrainMetrics.outcome(d.Forge, TrainEjected)
		if err := ex.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{leftTrain()}}); err != nil {
			return err
		}
		return fmt.Errorf("%w: ejected from the merge train into %s: CI failed on %.12s (%s) on top of the merge requests ahead, which passed",
			wq.ErrPermanent, d.TargetBranch, d.HeadSHA, strings.Join(failed, ", "))
	}
	if td.CI != trainCIPending {
		// A decided car may unblock the cars behind it.
		x.wakeTrain(raw, ex.Item.ID)
	}
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{trainRow(td, wait)}})
}

// wakeTrain wakes the other cars of a train: a car that merged, left or
// decided can let the cars behind it go on.
func (x *executors) wakeTrain(cars []TrainCar, self wq.ItemID) {
	if x.Notify == nil {
		return
	}
	for _, c := range cars {
		if c.ItemID != self {
			x.Notify(c.ItemID)
		}
	}
}

// trainBaseGone drops a request to build a car on a branch that is gone
// (the car ahead merged, and its branch was deleted, or it left): the car
// rides again at once and plans on what the train is now.
func (x *executors) trainBaseGone(ctx context.Context, ex *wq.Execution) error {
	td, riding := trainOf(ex.Item)
	dims := []wq.DimensionUpdate{dim(DimMR, wq.StatusFalse, time.Time{})}
	if riding {
		dims = append(dims, trainRow(td, time.Time{}))
	}
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: dims})
}

// EventTrainJoin is the event type of a merger's merge queued in the
// item's merge train (TypeAPI.QueueMerge).
const EventTrainJoin = "train_join"

// trainJoinEvent is the body of an EventTrainJoin event.
type trainJoinEvent struct {
	Head string `json:"head"` // the head the merger approved for the merge
	By   string `json:"by"`   // who asked
}

// QueueMerge puts the merge request a merger asked to merge into its
// project's merge train (wq.MergeQueuer): as an event for the item that
// drives it, so that the item joins under its own lease. The merge
// request must be one of ours, at the head the merger saw.
func (a *TypeAPI) QueueMerge(ctx context.Context, forge, project string, number int64, head, by string, now time.Time) (bool, error) {
	p, ok := a.opts.Project(forge, project)
	if !ok || !p.MergeTrain || a.opts.Events == nil {
		return false, nil
	}
	id, found, err := a.opts.Store.FindActiveMR(ctx, forge, project, wq.EventRef{Number: number})
	if err != nil {
		return false, err
	}
	if !found {
		return false, &wq.Error{Code: wq.ECONFLICT, Reason: blockerTrain, Message: fmt.Sprintf(
			"%s: %s merges through its merge train, and no workqueue item drives !%d: only they ride it", blockerTrain, project, number)}
	}
	d, err := a.opts.Store.GetMRDetail(ctx, id)
	if err != nil {
		return false, err
	}
	if d.Tracked || d.HeadSHA != head {
		return false, &wq.Error{Code: wq.ECONFLICT, Reason: blockerTrain, Message: fmt.Sprintf(
			"%s: !%d of %s cannot join the merge train at %.12s (its head is %.12s, tracked: %t)", blockerTrain, number, project, head, d.HeadSHA, d.Tracked)}
	}
	body, _ := json.Marshal(trainJoinEvent{Head: head, By: by})
	if _, err := a.opts.Events.InsertDelivery(ctx, "control-plane", fmt.Sprintf("train/%s/%s", id, head),
		[]wq.Event{{ItemID: id, EventType: EventTrainJoin, Body: body, EventTS: now}}, now); err != nil {
		return false, err
	}
	if a.opts.Notify != nil {
		a.opts.Notify(id)
	}
	return true, nil
}

// onTrainJoin makes the item a car of its train at a merger's word, if
// its head is still the one the merger saw.
func (x *executors) onTrainJoin(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var e trainJoinEvent
	if err := json.Unmarshal(ev.Body, &e); err != nil {
		return wq.EventResult{}, fmt.Errorf("%w: train join event: %w", wq.ErrPermanent, err)
	}
	trigger := map[string]any{"action": "train_join", "by": e.By}
	d, err := x.Store.GetMRDetail(ctx, item.ID)
	if err != nil {
		return wq.EventResult{}, err
	}
	if _, riding := trainOf(item); riding || d.HeadSHA != e.Head {
		trigger["ignored"] = "riding already, or the head moved"
		return wq.EventResult{Trigger: trigger}, nil
	}
	td := TrainDetail{Seq: ev.ReceivedAt.UnixNano(), Head: d.HeadSHA, CI: trainCIPending}
	return wq.EventResult{Trigger: trigger, Dimensions: []wq.DimensionUpdate{trainRow(td, time.Time{})}}, nil
}

// trainRequest returns the train's request on needs_mr, whichever head it
// named: the push that followed it was the train's.
func trainRequest(item *wq.Item) (RebuildRequest, bool) {
	var req RebuildRequest
	row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimMR}]
	if !ok || len(row.Detail) == 0 || json.Unmarshal(row.Detail, &req) != nil {
		return RebuildRequest{}, false
	}
	return req, req.Rebuild == rebuildTrain
}

func (x *executors) trainPriority(labels []string) int {
	if x.TrainPriority == nil {
		return 0
	}
	return x.TrainPriority(labels)
}

// Queues lists the merge trains (wq.QueueLister), each car in its place.
func (a *TypeAPI) Queues(ctx context.Context) ([]wq.ItemQueue, error) {
	cars, err := a.opts.Store.AllTrainCars(ctx)
	if err != nil {
		return nil, err
	}
	type key struct{ forge, project, target string }
	trains := map[key][]TrainCar{}
	var order []key
	for _, c := range cars {
		k := key{c.Forge, c.Project, c.TargetBranch}
		if _, ok := trains[k]; !ok {
			order = append(order, k)
		}
		trains[k] = append(trains[k], c)
	}
	slices.SortFunc(order, func(x, y key) int {
		return cmp.Or(cmp.Compare(x.forge, y.forge), cmp.Compare(x.project, y.project), cmp.Compare(x.target, y.target))
	})
	var out []wq.ItemQueue
	for _, k := range order {
		q := wq.ItemQueue{Kind: "merge train", Forge: k.forge, Project: k.project, Name: "into " + k.target}
		members := trains[k]
		details := make(map[wq.ItemID]TrainDetail, len(members))
		for _, c := range members {
			var td TrainDetail
			_ = json.Unmarshal(c.Detail, &td)
			details[c.ItemID] = td
		}
		slices.SortStableFunc(members, func(x, y TrainCar) int {
			dx, dy := details[x.ItemID], details[y.ItemID]
			return cmp.Or(cmp.Compare(placeOrLast(dx), placeOrLast(dy)), cmp.Compare(dx.Seq, dy.Seq))
		})
		for _, c := range members {
			td := details[c.ItemID]
			state := "joined"
			switch {
			case td.Head != c.HeadSHA || td.Base == "":
				state = "being built on the one ahead"
			case td.CI == trainCIPassed:
				state = "CI passed"
			case td.CI == trainCIFailed:
				state = "CI failed: " + strings.Join(td.Failed, ", ")
			case td.CI == trainCIPending:
				state = "CI running"
			}
			q.Items = append(q.Items, wq.QueuedItem{ID: c.ItemID, Title: c.Title, Link: c.MRURL, LinkName: fmt.Sprintf("!%d", c.MRNumber), State: state})
		}
		out = append(out, q)
	}
	return out, nil
}

// placeOrLast is a car's place at its last ride, cars that never rode
// last.
func placeOrLast(td TrainDetail) int {
	if td.Place == 0 {
		return math.MaxInt
	}
	return td.Place
}
