package gitlab

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
)

// The GitLab adapter reads and retries CI jobs with GitLab's jobs API.
var _ wq.CIJobs = (*Forge)(nil)

// PipelineJobs lists every job of the pipeline, earlier runs of retried
// jobs included (GET /projects/:id/pipelines/:pipeline_id/jobs with
// include_retried=true: GitLab leaves them out by default), WorkPageSize a
// page, followed to the end. GitLab orders them by id, newest first; they
// are sorted so again, in case a page boundary moved while paging.
//
// GitLab keeps each run of a job as a job of its own and its REST job has
// no "retried" field: a job's Retries is the number of older jobs of the
// same name in the pipeline. NotFound for a missing project or pipeline.
func (f *Forge) PipelineJobs(ctx context.Context, project string, pipelineID int64) ([]wq.CIJob, error) {
	jobs, err := listAll(ctx, f, fmt.Sprintf("jobs of pipeline %s#%d", project, pipelineID),
		func(page gl.ListOptions, o gl.RequestOptionFunc) ([]*gl.Job, *gl.Response, error) {
			return f.client.Jobs.ListPipelineJobs(project, pipelineID, &gl.ListJobsOptions{ListOptions: page, IncludeRetried: gl.Ptr(true)}, o)
		})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(jobs, func(a, b *gl.Job) int { return cmp.Compare(b.ID, a.ID) })
	jobs = slices.CompactFunc(jobs, func(a, b *gl.Job) bool { return a.ID == b.ID }) // a job seen on two pages
	out := make([]wq.CIJob, len(jobs))
	runs := map[string]int{} // name → runs seen so far, oldest first
	for i := len(jobs) - 1; i >= 0; i-- {
		j := jobs[i]
		out[i] = toCIJob(j, pipelineID)
		out[i].Retries = runs[j.Name]
		runs[j.Name]++
	}
	return out, nil
}

// Job reads one job (GET /projects/:id/jobs/:job_id) and, for its
// Retries, the jobs of its pipeline: GitLab's REST job does not say how
// many runs of it came before.
func (f *Forge) Job(ctx context.Context, project string, jobID int64) (*wq.CIJob, error) {
	var j *gl.Job
	err := f.call(ctx, fmt.Sprintf("get job %s#%d", project, jobID), func(o gl.RequestOptionFunc) error {
		var err error
		j, _, err = f.client.Jobs.GetJob(project, jobID, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	jobs, err := f.PipelineJobs(ctx, project, j.Pipeline.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range jobs {
		if c.ID == jobID {
			return &c, nil
		}
	}
	out := toCIJob(j, j.Pipeline.ID)
	return &out, nil
}

func toCIJob(j *gl.Job, pipelineID int64) wq.CIJob {
	out := wq.CIJob{ID: j.ID, PipelineID: cmp.Or(j.Pipeline.ID, pipelineID), Name: j.Name, Stage: j.Stage,
		Status: CIJobStatus(j.Status), AllowFailure: j.AllowFailure, URL: j.WebURL}
	if j.Status == "failed" {
		// GitLab gives failure_reason for failed jobs only; its Job Hook
		// may say unknown_failure of others.
		out.FailureReason = j.FailureReason
	}
	if j.FinishedAt != nil {
		out.FinishedAt = j.FinishedAt.UTC()
	}
	return out
}

// CIJobStatus maps a GitLab job status to a wq.CIJob* status. The states
// of a job that has not started are pending: created (its stage has not
// come), waiting_for_resource (a resource group), preparing (the runner
// prepares), pending (queued), scheduled (a delayed job) and manual (a
// person must play it). A status GitLab adds later, and canceling (the
// job is being canceled: not finished yet), is kept as GitLab spells it.
func CIJobStatus(status string) string {
	switch status {
	case "created", "waiting_for_resource", "preparing", "pending", "scheduled", "manual":
		return wq.CIJobPending
	case "running":
		return wq.CIJobRunning
	case "success":
		return wq.CIJobSuccess
	case "failed":
		return wq.CIJobFailed
	case "canceled":
		return wq.CIJobCanceled
	case "skipped":
		return wq.CIJobSkipped
	}
	return status
}

// LatestPipeline returns the newest pipeline of commit sha, of any source
// and ref (GET /projects/:id/pipelines?sha=…&order_by=id&sort=desc,
// one result), 0 when there is none. NotFound for a missing project.
func (f *Forge) LatestPipeline(ctx context.Context, project, sha string) (int64, error) {
	var id int64
	err := f.call(ctx, "latest pipeline of "+project+"@"+sha, func(o gl.RequestOptionFunc) error {
		list, _, err := f.client.Pipelines.ListProjectPipelines(project, &gl.ListProjectPipelinesOptions{
			ListOptions: gl.ListOptions{Page: 1, PerPage: 1}, SHA: &sha, OrderBy: gl.Ptr("id"), Sort: gl.Ptr("desc")}, o)
		for _, p := range list {
			// GitLab filters by sha; a pipeline of another commit is
			// never this commit's.
			if p.SHA == sha {
				id = max(id, p.ID)
			}
		}
		return err
	})
	return id, err
}

// JobTrace returns the last maxBytes bytes of the job's log (GET
// /projects/:id/jobs/:job_id/trace, the whole log read: GitLab offers no
// range of it). An empty log, and maxBytes <= 0, give no bytes. NotFound
// for a missing job.
func (f *Forge) JobTrace(ctx context.Context, project string, jobID int64, maxBytes int) ([]byte, error) {
	var out []byte
	err := f.call(ctx, fmt.Sprintf("trace of job %s#%d", project, jobID), func(o gl.RequestOptionFunc) error {
		r, _, err := f.client.Jobs.GetTraceFile(project, jobID, o)
		if err != nil {
			return err
		}
		if n := r.Size(); maxBytes < int(n) {
			if _, err := r.Seek(n-int64(max(maxBytes, 0)), io.SeekStart); err != nil {
				return err
			}
		}
		out, err = io.ReadAll(r)
		return err
	})
	return out, err
}

// RetryJob retries the job (POST /projects/:id/jobs/:job_id/retry) and
// returns the id of the new job GitLab makes; the old one becomes a
// retried job. GitLab retries by job id alone: pipelineID is not sent.
// GitLab answers 403 "Job is not retryable" for a job that is not
// finished, already retried, or archived, and 403 when the token may not
// retry it: Permanent, as the shared classification has it.
func (f *Forge) RetryJob(ctx context.Context, project string, pipelineID, jobID int64) (int64, error) {
	var id int64
	err := f.call(ctx, fmt.Sprintf("retry job %s#%d of pipeline %d", project, jobID, pipelineID), func(o gl.RequestOptionFunc) error {
		j, _, err := f.client.Jobs.RetryJob(project, jobID, o)
		if err == nil {
			id = j.ID
		}
		return err
	})
	return id, err
}
