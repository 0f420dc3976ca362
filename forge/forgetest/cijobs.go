package forgetest

import (
	"context"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

// CIProject is a project whose CI a test drives, for the CIJobs part of
// the suite (RunCIJobs).
type CIProject struct {
	Forge wq.CIJobs
	Path  string
	// FailedJob runs a pipeline (a Gitea Actions run) on a new commit of
	// the project whose one job, named name, fails with log as its log,
	// and returns the commit, the pipeline and the job.
	FailedJob func(t *testing.T, name, log string) (sha string, pipelineID, jobID int64)
}

// RunCIJobs checks what the retry herder relies on, in the neutral words
// of wq.CIJobs, whether the forge makes a new job for a retry (GitLab) or
// reruns the job in place (Gitea).
func RunCIJobs(t *testing.T, newProject func(t *testing.T) CIProject) {
	ctx := context.Background()
	const log = "step one\nstep two\nFAIL: the last line\n"

	t.Run("a failed job is listed in the commit's latest pipeline, with its log's end", func(t *testing.T) {
		p := newProject(t)
		sha, pipeline, job := p.FailedJob(t, "test", log)
		if got, err := p.Forge.LatestPipeline(ctx, p.Path, sha); err != nil || got != pipeline {
			t.Errorf("LatestPipeline = %d, %v, want %d", got, err, pipeline)
		}
		jobs, err := p.Forge.PipelineJobs(ctx, p.Path, pipeline)
		if err != nil {
			t.Fatalf("PipelineJobs: %v", err)
		}
		j := latestRun(jobs, "test")
		if j == nil || j.ID != job || j.Status != wq.CIJobFailed || j.Retries != 0 || j.PipelineID != pipeline || j.FinishedAt.IsZero() {
			t.Errorf("the job in %+v, want job %d of pipeline %d failed and finished, Retries 0", jobs, job, pipeline)
		}
		if one, err := p.Forge.Job(ctx, p.Path, job); err != nil || j == nil || one.ID != j.ID || one.PipelineID != pipeline ||
			one.Name != "test" || one.Status != wq.CIJobFailed || one.Retries != 0 {
			t.Errorf("Job = %+v, %v, want the job as listed: %+v", one, err, j)
		}
		if _, err := p.Forge.Job(ctx, p.Path, job+1_000_000); !wq.IsForgeError(err, wq.ForgeNotFound) {
			t.Errorf("Job of a missing job: %v, want NotFound", err)
		}
		whole, err := p.Forge.JobTrace(ctx, p.Path, job, 1<<20)
		if err != nil || !strings.Contains(string(whole), "FAIL: the last line") {
			t.Errorf("JobTrace = %q, %v: the log's last line is missing", whole, err)
		}
		if tail, err := p.Forge.JobTrace(ctx, p.Path, job, 8); err != nil || len(tail) > 8 || !strings.HasSuffix(string(whole), string(tail)) {
			t.Errorf("JobTrace of 8 bytes = %q, %v, want at most the log's last 8 bytes", tail, err)
		}
	})

	t.Run("a retried job runs again and counts the run before it", func(t *testing.T) {
		p := newProject(t)
		_, pipeline, job := p.FailedJob(t, "test", log)
		id, err := p.Forge.RetryJob(ctx, p.Path, pipeline, job)
		if err != nil || id == 0 {
			t.Fatalf("RetryJob = %d, %v", id, err)
		}
		jobs, err := p.Forge.PipelineJobs(ctx, p.Path, pipeline)
		if err != nil {
			t.Fatalf("PipelineJobs: %v", err)
		}
		j := latestRun(jobs, "test")
		if j == nil || j.ID != id || j.Retries != 1 || (j.Status != wq.CIJobPending && j.Status != wq.CIJobRunning) {
			t.Errorf("after the retry, the latest run in %+v, want job %d pending or running with Retries 1", jobs, id)
		}
	})

	t.Run("a missing pipeline or job is not found, a commit without pipelines has none", func(t *testing.T) {
		p := newProject(t)
		sha, pipeline, job := p.FailedJob(t, "test", log)
		if _, err := p.Forge.PipelineJobs(ctx, p.Path, pipeline+100000); !wq.IsForgeError(err, wq.ForgeNotFound) {
			t.Errorf("PipelineJobs of a missing pipeline: %v, want not found", err)
		}
		if _, err := p.Forge.JobTrace(ctx, p.Path, job+100000, 100); !wq.IsForgeError(err, wq.ForgeNotFound) {
			t.Errorf("JobTrace of a missing job: %v, want not found", err)
		}
		other := strings.Repeat("0", len(sha))
		if got, err := p.Forge.LatestPipeline(ctx, p.Path, other); err != nil || got != 0 {
			t.Errorf("LatestPipeline of a commit without pipelines = %d, %v, want 0", got, err)
		}
	})
}

// latestRun is the first job of name in jobs (newest first: its latest
// run), nil if there is none.
func latestRun(jobs []wq.CIJob, name string) *wq.CIJob {
	for i := range jobs {
		if jobs[i].Name == name {
			return &jobs[i]
		}
	}
	return nil
}
