package gitea

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// The CI jobs of Gitea Actions (1.26's REST API), for the retry herder. A
// pipeline is an Actions run (its id, not its run_number); a job is a job
// of the run. Gitea reruns a job in place: the same job id, its attempt
// counted up (run_attempt) once a runner takes the rerun, its old log
// replaced by the new one. The run itself has no attempt in the API
// (run_attempt is 0 on runs).

var _ wq.CIJobs = (*Forge)(nil)

// PipelineJobs lists the jobs of Actions run pipelineID (GET
// /repos/{o}/{r}/actions/runs/{run}/jobs, 50 a page, followed by the Link
// header), newest (highest id) first. Gitea answers an empty list for a
// run that does not exist, and a run has at least one job, so an empty
// list is checked with a read of the run (GET …/actions/runs/{run}):
// NotFound if it is missing.
//
// Retries is the job's run_attempt less one; after RetryJob the job waits
// with its old attempt (and no finish time) until a runner takes it, so a
// job reads pending with the attempt before, then running with the next.
func (f *Forge) PipelineJobs(ctx context.Context, project string, pipelineID int64) ([]wq.CIJob, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("list jobs of run %d of %s", pipelineID, project)
	if pipelineID <= 0 {
		return nil, &wq.ForgeError{Kind: wq.ForgeNotFound, Op: "gitea: " + what, Message: "no such run"}
	}
	jobs, err := listAll(ctx, f, what, func(c *sdk.Client, page sdk.ListOptions) ([]*sdk.ActionWorkflowJob, *sdk.Response, error) {
		list, resp, err := c.ListRepoActionRunJobs(owner, repo, pipelineID, sdk.ListRepoActionJobsOptions{ListOptions: page})
		if list == nil {
			return nil, resp, err
		}
		return list.Jobs, resp, err
	})
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		if _, err := callGet(ctx, f, fmt.Sprintf("get run %d of %s", pipelineID, project), func(c *sdk.Client) (*sdk.ActionWorkflowRun, *sdk.Response, error) {
			return c.GetRepoActionRun(owner, repo, pipelineID)
		}); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(jobs, func(a, b *sdk.ActionWorkflowJob) int { return cmp.Compare(b.ID, a.ID) })
	out := make([]wq.CIJob, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, ciJob(pipelineID, j))
	}
	return out, nil
}

// Job reads one Actions job (GET /repos/{owner}/{repo}/actions/jobs/{id}).
func (f *Forge) Job(ctx context.Context, project string, jobID int64) (*wq.CIJob, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	j, err := callGet(ctx, f, fmt.Sprintf("get job %d of %s", jobID, project), func(c *sdk.Client) (*sdk.ActionWorkflowJob, *sdk.Response, error) {
		return c.GetRepoActionJob(owner, repo, jobID)
	})
	if err != nil {
		return nil, err
	}
	out := ciJob(j.RunID, j)
	return &out, nil
}

// ciJob is an Actions job in the forge's neutral words.
func ciJob(runID int64, j *sdk.ActionWorkflowJob) wq.CIJob {
	out := wq.CIJob{ID: j.ID, PipelineID: runID, Name: j.Name, Status: ciStatus(j.Status, j.Conclusion),
		Retries: max(int(j.RunAttempt)-1, 0), URL: j.HTMLURL}
	if j.RunID != 0 {
		out.PipelineID = j.RunID
	}
	// Gitea answers the Unix epoch for a job that has not stopped.
	if j.Status == "completed" && j.CompletedAt.Unix() > 0 {
		out.FinishedAt = j.CompletedAt.UTC()
	}
	return out
}

// ciStatus maps an Actions job's status and conclusion (services/convert
// ToActionsStatus): queued (waiting for a runner) and waiting (blocked on
// other jobs or a concurrency group) are pending, in_progress running,
// completed its conclusion. A word a later Gitea adds is passed on.
func ciStatus(status, conclusion string) string {
	switch status {
	case "queued", "waiting", "pending", "requested":
		return wq.CIJobPending
	case "in_progress":
		return wq.CIJobRunning
	case "completed":
		switch conclusion {
		case "success":
			return wq.CIJobSuccess
		case "failure":
			return wq.CIJobFailed
		case "cancelled":
			return wq.CIJobCanceled
		case "skipped":
			return wq.CIJobSkipped
		}
		return conclusion
	}
	return status
}

// LatestPipeline returns the newest Actions run for sha (GET
// /repos/{o}/{r}/actions/runs?head_sha=…&limit=1: Gitea lists runs by id,
// newest first), 0 when there is none.
func (f *Forge) LatestPipeline(ctx context.Context, project, sha string) (int64, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return 0, err
	}
	what := "find the newest run of " + project + "@" + sha
	if strings.TrimSpace(sha) == "" {
		// Gitea would drop the filter and answer the repository's newest run.
		return 0, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: " + what, Message: "empty commit sha"}
	}
	runs, err := callGet(ctx, f, what, func(c *sdk.Client) (*sdk.ActionWorkflowRunsResponse, *sdk.Response, error) {
		return c.ListRepoActionRuns(owner, repo, sdk.ListRepoActionRunsOptions{
			ListOptions: sdk.ListOptions{Page: 1, PageSize: 1}, HeadSHA: sha})
	})
	if err != nil {
		return 0, err
	}
	var newest int64
	for _, r := range runs.WorkflowRuns {
		if r.HeadSha == sha || r.HeadSha == "" {
			newest = max(newest, r.ID)
		}
	}
	return newest, nil
}

// JobTrace reads the end of a job's log (GET
// /repos/{o}/{r}/actions/jobs/{job_id}/logs) with a range of its last
// maxBytes bytes, so that a long log is not read whole; a server that
// answers the whole log anyway is cut here. The log is Gitea's raw log:
// each line starts with its timestamp, and the first line may be cut.
// NotFound also for a job no runner has taken yet (Gitea: "job not
// started"), as after a rerun. The SDK's GetRepoActionJobLogs reads the
// whole log, hence plain net/http.
func (f *Forge) JobTrace(ctx context.Context, project string, jobID int64, maxBytes int) ([]byte, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	op := fmt.Sprintf("gitea: log of job %d of %s", jobID, project)
	if maxBytes <= 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	u := fmt.Sprintf("%s/api/v1/repos/%s/%s/actions/jobs/%d/logs", f.url, url.PathEscape(owner), url.PathEscape(repo), jobID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: op, Err: err}
	}
	req.Header.Set("Authorization", "token "+f.token)
	req.Header.Set("Range", "bytes=-"+strconv.Itoa(maxBytes))
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, classify(forge.OpAny, op, nil, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return []byte{}, nil // an empty log has no last bytes
	case resp.StatusCode >= 400:
		return nil, classifyWith(forge.OpAny, op, &sdk.Response{Response: resp}, errors.New(resp.Status), refusalMessage(resp.Body))
	}
	var b []byte
	if resp.StatusCode == http.StatusPartialContent {
		b, err = io.ReadAll(io.LimitReader(resp.Body, int64(maxBytes)))
	} else {
		b, err = tail(resp.Body, maxBytes)
	}
	if err != nil {
		return nil, &wq.ForgeError{Kind: wq.ForgeTransient, Op: op, Status: resp.StatusCode, Err: err}
	}
	return b, nil
}

// tail reads r to its end and keeps its last n bytes.
func tail(r io.Reader, n int) ([]byte, error) {
	keep := make([]byte, 0, 2*n)
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		keep = append(keep, buf[:k]...)
		if len(keep) > n {
			keep = append(keep[:0], keep[len(keep)-n:]...)
		}
		if err == io.EOF {
			return keep, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// refusalMessage is the message of a refusal's JSON body, if it has one.
func refusalMessage(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, maxRefusalBody))
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &m) != nil {
		return strings.TrimSpace(string(b))
	}
	return m.Message
}

// RetryJob reruns job jobID of run pipelineID (POST
// /repos/{o}/{r}/actions/runs/{run}/jobs/{job_id}/rerun, 201 with the
// job) and returns the same id: Gitea reruns in place, and with it the
// jobs that need it. NotFound for a missing run, or a job not of that run.
// Gitea reruns a job only once its whole run is done: before, it answers
// 400 "this workflow run is not done", which is Unprocessable here (the
// run will finish); its other 400s (the workflow is disabled) stay
// Permanent, as do 403s.
func (f *Forge) RetryJob(ctx context.Context, project string, pipelineID, jobID int64) (int64, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return 0, err
	}
	what := fmt.Sprintf("rerun job %d of run %d of %s", jobID, pipelineID, project)
	job, err := callGet(ctx, f, what, func(c *sdk.Client) (*sdk.ActionWorkflowJob, *sdk.Response, error) {
		return c.RerunRepoActionJob(owner, repo, pipelineID, jobID)
	})
	var fe *wq.ForgeError
	if errors.As(err, &fe) && fe.Status == http.StatusBadRequest && strings.Contains(fe.Message, "not done") {
		fe.Kind = wq.ForgeUnprocessable
	}
	if err != nil {
		return 0, err
	}
	if job != nil && job.ID != 0 {
		return job.ID, nil
	}
	return jobID, nil
}
