package mr

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// prEvent is what the handlers read of a merge request event, whichever
// forge sent it.
type prEvent struct {
	action  string
	merged  bool
	closed  bool
	headSHA string
}

// onGiteaPullRequest reads Gitea's pull_request family.
func (x *executors) onGiteaPullRequest(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var p struct {
		Action      string `json:"action"`
		PullRequest struct {
			Merged bool   `json:"merged"`
			State  string `json:"state"`
			Head   struct {
				Sha string `json:"sha"`
			} `json:"head"`
		} `json:"pull_request"`
	}
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		return wq.EventResult{}, fmt.Errorf("pull_request event: %w", err)
	}
	return x.onMergeRequestEvent(ctx, item, prEvent{action: p.Action, merged: p.PullRequest.Merged,
		closed: p.PullRequest.State == "closed", headSHA: p.PullRequest.Head.Sha})
}

// onGitLabMergeRequest reads GitLab's Merge Request Hook.
func (x *executors) onGitLabMergeRequest(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var p struct {
		Attrs struct {
			Action     string `json:"action"`
			State      string `json:"state"`
			LastCommit struct {
				ID string `json:"id"`
			} `json:"last_commit"`
		} `json:"object_attributes"`
	}
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		return wq.EventResult{}, fmt.Errorf("merge request event: %w", err)
	}
	return x.onMergeRequestEvent(ctx, item, prEvent{action: p.Attrs.Action, merged: p.Attrs.State == "merged",
		closed: p.Attrs.State == "closed", headSHA: p.Attrs.LastCommit.ID})
}

// onMergeRequestEvent turns a merge request event into an EventResult
// (DDR-33: it reads, the generic layer applies). Merged completes, closed
// cancels; anything else asks for a reconcile now, which merges when
// mergeable. A head the service did not push means someone else pushed to
// its branch: recorded on needs_mr, whose ensure_mr puts the desired state
// back (the service owns the branches it creates; see docs/DESIGN.md).
func (x *executors) onMergeRequestEvent(ctx context.Context, item *wq.Item, e prEvent) (wq.EventResult, error) {
	trigger := map[string]any{"action": e.action}
	switch {
	case e.merged:
		return wq.EventResult{Phase: wq.PhaseCompleted, Reason: ReasonMerged, Trigger: trigger}, nil
	case e.closed:
		return wq.EventResult{Phase: wq.PhaseCancelled, Reason: ReasonClosed, Trigger: trigger}, nil
	}
	dims := []wq.DimensionUpdate{dim(DimReconcile, wq.StatusTrue, time.Time{})}
	d, err := x.Store.GetMRDetail(ctx, item.ID)
	if err != nil {
		return wq.EventResult{}, err
	}
	if e.headSHA != "" && d.HeadSHA != "" && e.headSHA != d.HeadSHA {
		detail, _ := json.Marshal(map[string]string{"foreign_head": e.headSHA, "our_head": d.HeadSHA})
		dims = append(dims, wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: DimMR}, Status: wq.StatusTrue, Detail: detail})
		trigger["reason"] = "foreign_push"
	}
	return wq.EventResult{Dimensions: dims, Trigger: trigger}, nil
}
