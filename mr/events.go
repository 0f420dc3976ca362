package mr

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/webhook"
)

// eventHandlers reads the events the webhook package stores.
func (x *executors) eventHandlers() map[string]wq.EventHandler {
	return map[string]wq.EventHandler{
		webhook.GiteaPullRequest:   x.onGiteaPullRequest,
		webhook.GiteaReview:        x.onGiteaReview,
		webhook.GiteaStatus:        x.onGiteaStatus,
		webhook.GiteaWorkflowRun:   x.onGiteaWorkflowRun,
		webhook.GiteaWorkflowJob:   x.onGiteaWorkflowJob,
		webhook.GitLabMergeRequest: x.onGitLabMergeRequest,
		webhook.GitLabPipeline:     x.onGitLabPipeline,
		webhook.GitLabJob:          x.onGitLabJob,
		EventBulkReconcile:         x.onBulkReconcile,
	}
}

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
	foreign := !e.merged && !e.closed && e.headSHA != "" && d.HeadSHA != "" && e.headSHA != d.HeadSHA
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

// onGiteaReview reads an approval or a request for changes: either may
// change mergeability, so look now. The payload's pull request state is
// not trusted for phase changes: a review carries no event time to order
// it by.
func (x *executors) onGiteaReview(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var p struct {
		Review struct {
			Type string `json:"type"`
		} `json:"review"`
	}
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		return wq.EventResult{}, fmt.Errorf("review event: %w", err)
	}
	return wq.EventResult{Dimensions: []wq.DimensionUpdate{dim(DimReconcile, wq.StatusTrue, time.Time{})},
		Trigger: map[string]any{"action": "reviewed", "review": p.Review.Type}}, nil
}

// ciEvent is what the handlers read of a CI event, whichever forge sent
// it.
type ciEvent struct {
	kind       string // "pipeline" or "job"
	pipelineID int64
	sha        string
	status     string
	finished   bool // a pipeline reached a final state
	failed     bool // a job failed
	// mergeRefOf is the merge request whose merge ref the pipeline ran on
	// (GitLab merged results, merge trains): sha is GitLab's merge commit.
	mergeRefOf int64
	// job is the failed job a job event tells of, for the herder.
	job *wq.CIJob
}

// onCIEvent asks for a reconcile now when CI news can change what the
// merge request needs: a pipeline of the pushed head finished (it may be
// mergeable now), a job of it failed, or a pipeline not yet recorded as
// the head's started (so that its jobs' events resolve by pipeline).
// Anything about another commit is history: no change.
func (x *executors) onCIEvent(ctx context.Context, item *wq.Item, e ciEvent) (wq.EventResult, error) {
	trigger := map[string]any{"ci": e.kind, "pipeline_id": e.pipelineID, "status": e.status}
	d, err := x.Store.GetMRDetail(ctx, item.ID)
	if err != nil {
		return wq.EventResult{}, err
	}
	ofOurMergeRef := e.mergeRefOf != 0 && e.mergeRefOf == d.MRNumber
	if d.HeadSHA == "" || (e.sha != "" && e.sha != d.HeadSHA && !ofOurMergeRef) {
		trigger["ignored"] = "not the pushed head"
		return wq.EventResult{Trigger: trigger}, nil
	}
	newPipeline := e.pipelineID != 0 && e.pipelineID != d.HeadPipelineID
	if !e.finished && !e.failed && !newPipeline {
		return wq.EventResult{Trigger: trigger}, nil
	}
	detail, _ := json.Marshal(ReconcileDetail{PipelineID: e.pipelineID, SHA: d.HeadSHA, Status: e.status})
	dims := []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: DimReconcile}, Status: wq.StatusTrue, Detail: detail}}
	if f := x.Forges[d.Forge]; e.failed && e.job != nil && f != nil && x.herds(f) {
		dims = append(dims, x.recordFailedJob(item, *e.job))
		trigger["job_id"], trigger["job"] = e.job.ID, e.job.Name
	}
	return wq.EventResult{Trigger: trigger, Dimensions: dims}, nil
}

// eventTime reads a time as the forges write them in payloads: RFC 3339,
// or GitLab's "2006-01-02 15:04:05 UTC"; zero when it does not read.
func eventTime(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// finishedAt is when a failed job finished: the payload's time, or when
// its event was received if the payload says nothing that reads.
func finishedAt(payload string, ev *wq.Event) time.Time {
	if t := eventTime(payload); !t.IsZero() {
		return t
	}
	return ev.ReceivedAt.UTC()
}

// onGiteaStatus reads a commit status. Statuses have no pipeline id.
func (x *executors) onGiteaStatus(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var p struct {
		SHA   string `json:"sha"`
		State string `json:"state"`
	}
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		return wq.EventResult{}, fmt.Errorf("status event: %w", err)
	}
	return x.onCIEvent(ctx, item, ciEvent{kind: "status", sha: p.SHA, status: p.State,
		finished: slices.Contains([]string{"success", "failure", "error", "warning"}, p.State)})
}

// onGiteaWorkflowRun reads a Gitea Actions run: the run is the pipeline.
func (x *executors) onGiteaWorkflowRun(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var p struct {
		Action string `json:"action"`
		Run    struct {
			ID         int64  `json:"id"`
			HeadSHA    string `json:"head_sha"`
			Conclusion string `json:"conclusion"`
		} `json:"workflow_run"`
	}
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		return wq.EventResult{}, fmt.Errorf("workflow_run event: %w", err)
	}
	status := p.Action
	if p.Run.Conclusion != "" {
		status = p.Run.Conclusion
	}
	return x.onCIEvent(ctx, item, ciEvent{kind: "pipeline", pipelineID: p.Run.ID, sha: p.Run.HeadSHA, status: status,
		finished: p.Action == "completed"})
}

// onGiteaWorkflowJob reads a Gitea Actions job.
func (x *executors) onGiteaWorkflowJob(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var p struct {
		Action string `json:"action"`
		Job    struct {
			ID          int64  `json:"id"`
			Name        string `json:"name"`
			RunID       int64  `json:"run_id"`
			RunAttempt  int    `json:"run_attempt"`
			HeadSHA     string `json:"head_sha"`
			Conclusion  string `json:"conclusion"`
			CompletedAt string `json:"completed_at"`
			HTMLURL     string `json:"html_url"`
		} `json:"workflow_job"`
	}
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		return wq.EventResult{}, fmt.Errorf("workflow_job event: %w", err)
	}
	e := ciEvent{kind: "job", pipelineID: p.Job.RunID, sha: p.Job.HeadSHA, status: p.Job.Conclusion,
		failed: p.Action == "completed" && p.Job.Conclusion == "failure"}
	if e.failed && p.Job.ID > 0 {
		e.job = &wq.CIJob{ID: p.Job.ID, PipelineID: p.Job.RunID, Name: p.Job.Name, Status: wq.CIJobFailed,
			Retries: max(p.Job.RunAttempt-1, 0), FinishedAt: finishedAt(p.Job.CompletedAt, ev), URL: p.Job.HTMLURL}
	}
	return x.onCIEvent(ctx, item, e)
}

// gitlabPipelineFinal are the pipeline states GitLab does not leave on
// its own.
var gitlabPipelineFinal = []string{"success", "failed", "canceled", "skipped", "manual", "blocked"}

// onGitLabPipeline reads GitLab's Pipeline Hook.
func (x *executors) onGitLabPipeline(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var p struct {
		Attrs struct {
			ID     int64  `json:"id"`
			SHA    string `json:"sha"`
			Ref    string `json:"ref"`
			Status string `json:"status"`
		} `json:"object_attributes"`
		MergeRequest *struct {
			IID int64 `json:"iid"`
		} `json:"merge_request"`
	}
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		return wq.EventResult{}, fmt.Errorf("pipeline event: %w", err)
	}
	e := ciEvent{kind: "pipeline", pipelineID: p.Attrs.ID, sha: p.Attrs.SHA, status: p.Attrs.Status,
		finished: slices.Contains(gitlabPipelineFinal, p.Attrs.Status)}
	// A merged-results or merge-train pipeline runs on GitLab's merge of
	// the head into the target, on the merge request's own ref: its
	// commit is never the pushed head, its merge request says whose it is.
	if mrq := p.MergeRequest; mrq != nil && mrq.IID != 0 {
		ref := fmt.Sprintf("refs/merge-requests/%d/", mrq.IID)
		if p.Attrs.Ref == ref+"merge" || p.Attrs.Ref == ref+"train" {
			e.mergeRefOf = mrq.IID
		}
	}
	return x.onCIEvent(ctx, item, e)
}

// onGitLabJob reads GitLab's Job Hook: only a failure is news (its
// failure_reason can be set on jobs that did not fail, so the status
// decides).
func (x *executors) onGitLabJob(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var p struct {
		PipelineID    int64  `json:"pipeline_id"`
		SHA           string `json:"sha"`
		Status        string `json:"build_status"`
		ID            int64  `json:"build_id"`
		Name          string `json:"build_name"`
		Stage         string `json:"build_stage"`
		FailureReason string `json:"build_failure_reason"`
		FinishedAt    string `json:"build_finished_at"`
		AllowFailure  bool   `json:"build_allow_failure"`
		Retries       int    `json:"retries_count"`
	}
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		return wq.EventResult{}, fmt.Errorf("job event: %w", err)
	}
	e := ciEvent{kind: "job", pipelineID: p.PipelineID, sha: p.SHA, status: p.Status, failed: p.Status == "failed"}
	// A job allowed to fail does not keep the pipeline from passing.
	if e.failed && p.ID > 0 && !p.AllowFailure {
		e.job = &wq.CIJob{ID: p.ID, PipelineID: p.PipelineID, Name: p.Name, Stage: p.Stage, Status: wq.CIJobFailed,
			FailureReason: p.FailureReason, Retries: max(p.Retries, 0), FinishedAt: finishedAt(p.FinishedAt, ev)}
	}
	return x.onCIEvent(ctx, item, e)
}
