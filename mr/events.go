package mr

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// eventHandlers reads the events the webhook receiver stores (forge-
// neutral, whichever forge sent them) and the bulk reconciliation's.
func (x *executors) eventHandlers() map[string]wq.EventHandler {
	return map[string]wq.EventHandler{EventBulkReconcile: x.onBulkReconcile, EventBulkCI: x.onBulkCI, forge.EventType: x.onForgeEvent,
		EventTrainJoin: x.onTrainJoin}
}

// onForgeEvent reads a forge's event, whichever forge sent it.
func (x *executors) onForgeEvent(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var e forge.Event
	if err := json.Unmarshal(ev.Body, &e); err != nil {
		return wq.EventResult{}, fmt.Errorf("forge event: %w", err)
	}
	r, err := x.onNeutralEvent(ctx, item, ev, e)
	if err == nil && e.Type != "" {
		// The history names the forge's own event, not "forge".
		trigger := map[string]any{"event_type": e.Type}
		for k, v := range r.Trigger {
			trigger[k] = v
		}
		r.Trigger = trigger
	}
	return r, err
}

// onNeutralEvent reads the forge-neutral event e.
func (x *executors) onNeutralEvent(ctx context.Context, item *wq.Item, ev *wq.Event, e forge.Event) (wq.EventResult, error) {
	switch {
	case e.MergeRequest != nil:
		m := e.MergeRequest
		return x.onMergeRequestEvent(ctx, item, prEvent{action: m.Action, merged: m.Merged, closed: m.Closed, headSHA: m.HeadSHA})
	case e.Review != nil:
		return x.onReviewEvent(e.Review)
	case e.CI != nil:
		c := *e.CI
		if c.Job != nil && c.Job.FinishedAt.IsZero() {
			// The payload says nothing that reads: when its event came.
			j := *c.Job
			j.FinishedAt = ev.ReceivedAt.UTC()
			c.Job = &j
		}
		return x.onCIEvent(ctx, item, c, ev.ReceivedAt)
	}
	return wq.EventResult{}, fmt.Errorf("%s event: reads as nothing", ev.EventType)
}

// prEvent is what the handlers read of a merge request event, whichever
// forge sent it.
type prEvent struct {
	action  string
	merged  bool
	closed  bool
	headSHA string
}

// onMergeRequestEvent turns a merge request event into an EventResult
// (DDR-33: it reads, the generic layer applies). No event moves the phase
// by itself: a payload can be forged by anyone who learns the secret,
// replayed late, or describe another merge request than the one the item
// holds, so merged, closed, reopened and updated all ask for a reconcile
// now, which reads the merge request from the forge and completes, cancels
// or merges from what the forge says. A head the service did not push
// means someone else pushed to its branch: recorded on needs_mr, whose
// ensure_mr puts the desired state back (the service owns the branches it
// creates; see docs/DESIGN.md).
func (x *executors) onMergeRequestEvent(ctx context.Context, item *wq.Item, e prEvent) (wq.EventResult, error) {
	trigger := map[string]any{"action": e.action}
	switch {
	case e.merged:
		trigger["says"] = "merged"
	case e.closed:
		trigger["says"] = "closed"
	}
	dims := []wq.DimensionUpdate{dim(DimReconcile, wq.StatusTrue, time.Time{})}
	d, err := x.Store.GetMRDetail(ctx, item.ID)
	if err != nil {
		return wq.EventResult{}, err
	}
	// A tracked merge request's head is its person's to move.
	foreign := !d.Tracked && !e.merged && !e.closed && e.headSHA != "" && d.HeadSHA != "" && e.headSHA != d.HeadSHA
	if foreign {
		// A head the service pushed itself for this caller, for any
		// generation or any resubmission of this branch's item, is its
		// own history arriving late, never someone else's push.
		owned, err := x.Store.OwnsBranchHead(ctx, d.Forge, d.Project, d.SourceBranch, e.headSHA, item.CallerIdentity)
		if err != nil {
			return wq.EventResult{}, err
		}
		foreign = !owned
	}
	if foreign {
		detail, _ := json.Marshal(map[string]string{"foreign_head": e.headSHA, "our_head": d.HeadSHA})
		dims = append(dims, wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: DimMR}, Status: wq.StatusTrue, Detail: detail})
		trigger["reason"] = "foreign_push"
	}
	return wq.EventResult{Dimensions: dims, Trigger: trigger}, nil
}

// onReviewEvent reads an approval or a request for changes: either may
// change mergeability, so look now. The payload's pull request state is
// not trusted for phase changes: a review carries no event time to order
// it by.
func (x *executors) onReviewEvent(r *forge.ReviewEvent) (wq.EventResult, error) {
	return wq.EventResult{Dimensions: []wq.DimensionUpdate{dim(DimReconcile, wq.StatusTrue, time.Time{})},
		Trigger: map[string]any{"action": "reviewed", "review": r.Review}}, nil
}

// onCIEvent asks for a reconcile now when CI news can change what the
// merge request needs: a pipeline of the pushed head finished (it may be
// mergeable now), a job of it failed, or a pipeline not yet recorded as
// the head's started (so that its jobs' events resolve by pipeline).
// Anything about another commit is history: no change.
func (x *executors) onCIEvent(ctx context.Context, item *wq.Item, e forge.CIEvent, now time.Time) (wq.EventResult, error) {
	trigger := map[string]any{"ci": e.Source, "pipeline_id": e.PipelineID, "status": e.Status}
	d, err := x.Store.GetMRDetail(ctx, item.ID)
	if err != nil {
		return wq.EventResult{}, err
	}
	ofOurMergeRef := e.MergeRefOf != 0 && e.MergeRefOf == d.MRNumber
	if d.HeadSHA == "" || (e.SHA != "" && e.SHA != d.HeadSHA && !ofOurMergeRef) {
		trigger["ignored"] = "not the pushed head"
		return wq.EventResult{Trigger: trigger}, nil
	}
	var checks []wq.DimensionUpdate
	if e.Check != nil && e.SHA == d.HeadSHA {
		checks = checkEvent(item, d.HeadSHA, *e.Check, x.ReconcileInterval, now)
		if len(checks) > 0 {
			trigger["check"], trigger["check_state"] = e.Check.Context, e.Check.State
		}
	}
	newPipeline := e.PipelineID != 0 && e.PipelineID != d.HeadPipelineID
	if !e.Finished && !e.Failed && !newPipeline {
		return wq.EventResult{Trigger: trigger, Dimensions: checks}, nil
	}
	detail, _ := json.Marshal(ReconcileDetail{PipelineID: e.PipelineID, SHA: d.HeadSHA, Status: e.Status})
	dims := append(checks, wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: DimReconcile}, Status: wq.StatusTrue, Detail: detail})
	dims = lastPerKey(dims)
	if f := x.Forges[d.Forge]; e.Failed && e.Job != nil && f != nil && x.herds(f) {
		dims = append(dims, x.recordFailedJob(item, *e.Job))
		trigger["job_id"], trigger["job"] = e.Job.ID, e.Job.Name
	}
	return wq.EventResult{Trigger: trigger, Dimensions: dims}, nil
}

// lastPerKey keeps the last update of each dimension row, in order: an
// event's result writes each row once.
func lastPerKey(us []wq.DimensionUpdate) []wq.DimensionUpdate {
	last := map[wq.DimensionKey]int{}
	for i, u := range us {
		last[u.DimensionKey] = i
	}
	out := us[:0:0]
	for i, u := range us {
		if last[u.DimensionKey] == i {
			out = append(out, u)
		}
	}
	return out
}
