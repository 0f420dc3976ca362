package mr

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// The CI retry herder's side of the mr type (DDR-47, DESIGN section 6):
// a failed job of the merge request's head is recorded on needs_ci_retry
// with the time it may be retried (not_before), and retry_ci_jobs retries
// the due ones the herder's matchers say are transient, after checking
// that each is still worth retrying.

// CIRetryDetail is needs_ci_retry's detail: the failed jobs waiting for a
// decision, and the decisions made so far (the latest last, at most
// maxCIDecisions), which the status note shows.
type CIRetryDetail struct {
	Jobs      []FailedJob  `json:"jobs,omitempty"`
	Decisions []CIDecision `json:"decisions,omitempty"`
}

// FailedJob is a failed CI job as its event told it.
type FailedJob struct {
	ID            int64     `json:"id"`
	PipelineID    int64     `json:"pipeline_id"`
	Name          string    `json:"name"`
	FailureReason string    `json:"failure_reason,omitempty"`
	Retries       int       `json:"retries"`
	FinishedAt    time.Time `json:"finished_at"`
	// NotBefore is FinishedAt plus the delay the herder's first matcher
	// that could fire gives for the job's retries so far.
	NotBefore time.Time `json:"not_before"`
}

// CIDecision is what retry_ci_jobs did with one failed job.
type CIDecision struct {
	JobID      int64     `json:"job_id"`
	Name       string    `json:"name"`
	PipelineID int64     `json:"pipeline_id"`
	At         time.Time `json:"at"`
	// Outcome is one of the CIOutcome* words.
	Outcome string `json:"outcome"`
	Matcher string `json:"matcher,omitempty"`
	Why     string `json:"why"`
	// NewJobID is the job that runs again (GitLab makes a new one).
	NewJobID int64 `json:"new_job_id,omitempty"`
}

// Outcomes of a CIDecision.
const (
	CIOutcomeRetried     = "retried"     // the forge runs the job again
	CIOutcomeNoMatch     = "no_match"    // no matcher says the failure is transient
	CIOutcomeLimit       = "limit"       // the matcher's retry limit is reached
	CIOutcomeOutdated    = "outdated"    // a newer pipeline, or a newer run of the job, exists
	CIOutcomeNotFailed   = "not_failed"  // the job is no longer failed (retried by someone else, running)
	CIOutcomeUnsupported = "unsupported" // the forge cannot retry jobs
	CIOutcomeRefused     = "refused"     // the forge refused the retry
)

// CIRetry is a retry retry_ci_jobs made, as recorded in the detail's
// CIRetried right after the forge made it.
type CIRetry struct {
	JobID    int64  `json:"job_id"`
	Retries  int    `json:"retries"` // the failed run's
	NewJobID int64  `json:"new_job_id"`
	Matcher  string `json:"matcher"`
	Why      string `json:"why"`
}

func decodeCIRetried(s string) []CIRetry {
	var out []CIRetry
	if s != "" {
		_ = json.Unmarshal([]byte(s), &out) // a record that does not read is none
	}
	return out
}

// maxCIDecisions bounds the decisions kept on the dimension.
const maxCIDecisions = 20

// ciNotNowWait is how long a job whose retry the forge refused for now
// (its run still going) waits before it is looked at again.
const ciNotNowWait = 30 * time.Second

// maxTraceBytes is how much of a job's log the herder reads: its
// matchers look at the last lines only.
const maxTraceBytes = 512 << 10

func ciRetryDetail(item *wq.Item) CIRetryDetail {
	var d CIRetryDetail
	if row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimCIRetry}]; ok && len(row.Detail) > 0 {
		_ = json.Unmarshal(row.Detail, &d) // a detail that does not read starts over
	}
	return d
}

// ciRetryUpdate is needs_ci_retry with d: true until the earliest job's
// not_before while jobs wait, false otherwise.
func ciRetryUpdate(d CIRetryDetail) wq.DimensionUpdate {
	if len(d.Decisions) > maxCIDecisions {
		d.Decisions = d.Decisions[len(d.Decisions)-maxCIDecisions:]
	}
	detail, _ := json.Marshal(d)
	u := wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: DimCIRetry}, Status: wq.StatusFalse, Detail: detail}
	for i, j := range d.Jobs {
		if u.Status = wq.StatusTrue; i == 0 || j.NotBefore.Before(u.PendingUntil) {
			u.PendingUntil = j.NotBefore
		}
	}
	return u
}

// ciRetryDue reports whether retry_ci_jobs has work at now. Unlike the
// other needs_* dimensions, a missing row means no job failed.
func ciRetryDue(dims wq.Dimensions, now time.Time) bool {
	_, ok := dims[wq.DimensionKey{Dimension: DimCIRetry}]
	return ok && dims.Needs(DimCIRetry, "", now)
}

// herds reports whether failed jobs on forge f are recorded at all: the
// herder is configured and the forge can retry jobs.
func (x *executors) herds(f wq.Forge) bool {
	_, ok := f.(wq.CIJobs)
	return x.Herder != nil && ok
}

// recordFailedJob adds a failed job of the head to needs_ci_retry, with
// the time it may be retried; the same job told twice is recorded once.
func (x *executors) recordFailedJob(item *wq.Item, job wq.CIJob) wq.DimensionUpdate {
	d := ciRetryDetail(item)
	if slices.ContainsFunc(d.Jobs, func(j FailedJob) bool { return j.ID == job.ID && j.Retries == job.Retries }) {
		return ciRetryUpdate(d)
	}
	delay, _ := x.Herder.Delay(job)
	d.Jobs = append(d.Jobs, FailedJob{ID: job.ID, PipelineID: job.PipelineID, Name: job.Name, FailureReason: job.FailureReason,
		Retries: job.Retries, FinishedAt: job.FinishedAt, NotBefore: job.FinishedAt.Add(delay)})
	return ciRetryUpdate(d)
}

// retryCIJobs decides, for every recorded failed job whose not_before has
// passed, whether to retry it, cheapest check first: the job's pipeline
// must be the newest of the merge request's head, the job the latest run
// of its name and still failed (one job list per pipeline serves every
// job), and only then is its log read, if a matcher needs it. Jobs not
// due yet stay recorded; the dimension waits for the earliest of them.
func (x *executors) retryCIJobs(ctx context.Context, ex *wq.Execution) error {
	d, f, err := x.load(ctx, ex.Item)
	if err != nil {
		return err
	}
	rd := ciRetryDetail(ex.Item)
	ci, ok := f.(wq.CIJobs)
	var due, later []FailedJob
	for _, j := range rd.Jobs {
		if j.NotBefore.After(ex.Now) {
			later = append(later, j)
		} else {
			due = append(due, j)
		}
	}
	decide := func(j FailedJob, outcome, matcher, why string, newID int64) {
		rd.Decisions = append(rd.Decisions, CIDecision{JobID: j.ID, Name: j.Name, PipelineID: j.PipelineID, At: ex.Now,
			Outcome: outcome, Matcher: matcher, Why: why, NewJobID: newID})
	}
	if !ok || x.Herder == nil {
		for _, j := range due {
			decide(j, CIOutcomeUnsupported, "", "this forge's CI jobs cannot be retried, or no herder is configured", 0)
		}
		rd.Jobs = later
		return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{ciRetryUpdate(rd)}})
	}
	var head int64
	if len(due) > 0 {
		if head, err = ci.LatestPipeline(ctx, d.Project, d.HeadSHA); err != nil {
			return forgeFailure("find the head's newest pipeline", err)
		}
	}
	lists := map[int64][]wq.CIJob{} // one job list per pipeline
	retried := decodeCIRetried(d.CIRetried)
	for _, j := range due {
		// A retry made by a run whose write was superseded (the retry's
		// own webhooks arrived meanwhile) is decided, not made again.
		if i := slices.IndexFunc(retried, func(r CIRetry) bool { return r.JobID == j.ID && r.Retries == j.Retries }); i >= 0 {
			decide(j, CIOutcomeRetried, retried[i].Matcher, retried[i].Why, retried[i].NewJobID)
			continue
		}
		if j.PipelineID != head {
			decide(j, CIOutcomeOutdated, "", fmt.Sprintf("pipeline %d is not the newest of the head (%d)", j.PipelineID, head), 0)
			continue
		}
		jobs, listed := lists[j.PipelineID]
		if !listed {
			if jobs, err = ci.PipelineJobs(ctx, d.Project, j.PipelineID); err != nil {
				return forgeFailure("list the pipeline's jobs", err)
			}
			lists[j.PipelineID] = jobs
		}
		i := slices.IndexFunc(jobs, func(c wq.CIJob) bool { return c.Name == j.Name })
		switch {
		case i < 0:
			decide(j, CIOutcomeOutdated, "", "the pipeline no longer lists the job", 0)
			continue
		case jobs[i].ID != j.ID || jobs[i].Retries != j.Retries:
			decide(j, CIOutcomeOutdated, "", fmt.Sprintf("job %d is a newer run of %s", jobs[i].ID, j.Name), 0)
			continue
		case jobs[i].Status != wq.CIJobFailed:
			decide(j, CIOutcomeNotFailed, "", "the job is "+jobs[i].Status+" now", 0)
			continue
		}
		job := jobs[i]
		v, err := x.Herder.Match(job, func() (string, error) {
			b, err := ci.JobTrace(ctx, d.Project, job.ID, maxTraceBytes)
			return string(b), err
		})
		if err != nil {
			return forgeFailure("read the job's log", err)
		}
		switch {
		case !v.Matched:
			decide(j, CIOutcomeNoMatch, "", v.Why, 0)
			continue
		case !v.Retry:
			decide(j, CIOutcomeLimit, v.Matcher, v.Why, 0)
			continue
		}
		newID, err := ci.RetryJob(ctx, d.Project, job.PipelineID, job.ID)
		if err != nil {
			kind, ok := wq.ForgeErrorOf(err)
			if ok && kind == wq.ForgeUnprocessable {
				// Not now: Gitea reruns a job only once its whole run is
				// done. The job waits and is looked at again.
				j.NotBefore = ex.Now.Add(ciNotNowWait)
				later = append(later, j)
				continue
			}
			if ok && (kind == wq.ForgePermanent || kind == wq.ForgeNotFound) {
				decide(j, CIOutcomeRefused, v.Matcher, "the forge refused the retry: "+err.Error(), 0)
				continue
			}
			return forgeFailure("retry the job", err)
		}
		retried = append(retried, CIRetry{JobID: j.ID, Retries: j.Retries, NewJobID: newID, Matcher: v.Matcher, Why: v.Why})
		if len(retried) > maxCIDecisions {
			retried = retried[len(retried)-maxCIDecisions:]
		}
		state := d.ForgeState()
		b, _ := json.Marshal(retried)
		state.CIRetried = string(b)
		if err := x.recordState(ctx, ex, state); err != nil {
			return err
		}
		d.CIRetried = state.CIRetried
		decide(j, CIOutcomeRetried, v.Matcher, v.Why, newID)
	}
	rd.Jobs = later
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{ciRetryUpdate(rd)}})
}
