package gitlab_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/forgetest"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
)

// ciProject is newProject whose pipelines run build and test (test
// allowed to fail when allowTestFailure), with a commit pushed to wq/a:
// it returns the commit, its pipeline and the pipeline's jobs by name.
func ciProject(t *testing.T, allowTestFailure bool) (*gitlabtest.Server, *gitlab.Forge, string, int64, map[string]int64) {
	t.Helper()
	srv, f := newProject(t)
	srv.SetPipelineJobs("g/p", gitlabtest.JobSpec{Name: "build", Stage: "build"},
		gitlabtest.JobSpec{Name: "test", Stage: "test", AllowFailure: allowTestFailure})
	c := commitTo(t, f, "wq/a", wq.FileChange{Action: "create", Path: "a", Content: []byte("a\n")})
	pipelines := srv.Pipelines("g/p", c.SHA)
	if len(pipelines) != 1 {
		t.Fatalf("pipelines of the push: %v, want one", pipelines)
	}
	jobs := map[string]int64{}
	for _, j := range srv.PipelineJobs("g/p", pipelines[0]) {
		jobs[j.Name] = j.ID
	}
	return srv, f, c.SHA, pipelines[0], jobs
}

func pipelineJobs(t *testing.T, f *gitlab.Forge, pipeline int64) []wq.CIJob {
	t.Helper()
	jobs, err := f.PipelineJobs(context.Background(), "g/p", pipeline)
	if err != nil {
		t.Fatalf("PipelineJobs: %v", err)
	}
	return jobs
}

func retry(t *testing.T, f *gitlab.Forge, pipeline, job int64) int64 {
	t.Helper()
	id, err := f.RetryJob(context.Background(), "g/p", pipeline, job)
	if err != nil {
		t.Fatalf("RetryJob %d: %v", job, err)
	}
	return id
}

func TestPipelineJobsListRetriedRunsNewestFirstWithTheirRetriesCounted(t *testing.T) {
	srv, f, _, pipeline, jobs := ciProject(t, false)
	srv.FinishJob("g/p", jobs["build"], "success", "", "built\n")
	srv.FinishJob("g/p", jobs["test"], "failed", "runner_system_failure", "lost the runner\n")
	second := retry(t, f, pipeline, jobs["test"])
	srv.FinishJob("g/p", second, "failed", "stuck_pending_no_matching_runners", "")
	third := retry(t, f, pipeline, second)

	got := pipelineJobs(t, f, pipeline)
	type row struct {
		ID            int64
		Name, Stage   string
		Status        string
		FailureReason string
		Retries       int
		Finished      bool
	}
	var rows []row
	for _, j := range got {
		rows = append(rows, row{j.ID, j.Name, j.Stage, j.Status, j.FailureReason, j.Retries, !j.FinishedAt.IsZero()})
		if j.PipelineID != pipeline || !strings.HasSuffix(j.URL, fmt.Sprintf("/g/p/-/jobs/%d", j.ID)) {
			t.Errorf("job %d: pipeline %d, URL %q", j.ID, j.PipelineID, j.URL)
		}
	}
	want := []row{
		{third, "test", "test", wq.CIJobPending, "", 2, false},
		{second, "test", "test", wq.CIJobFailed, "stuck_pending_no_matching_runners", 1, true},
		{jobs["test"], "test", "test", wq.CIJobFailed, "runner_system_failure", 0, true},
		{jobs["build"], "build", "build", wq.CIJobSuccess, "", 0, true},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("PipelineJobs:\n got %v\nwant %v", rows, want)
	}
}

func TestPipelineJobsPageToTheEnd(t *testing.T) {
	srv, f, _, pipeline, _ := ciProject(t, false)
	for i := range gitlab.WorkPageSize + 5 {
		srv.AddJob("g/p", pipeline, fmt.Sprintf("shard-%d", i), "test")
	}
	got := pipelineJobs(t, f, pipeline)
	if len(got) != gitlab.WorkPageSize+7 {
		t.Fatalf("%d jobs, want %d", len(got), gitlab.WorkPageSize+7)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].ID <= got[i].ID {
			t.Fatalf("job %d listed before job %d: not newest first", got[i-1].ID, got[i].ID)
		}
	}
}

func TestAnAllowedFailureKeepsItsFlagAndPassesThePipeline(t *testing.T) {
	srv, f, _, pipeline, jobs := ciProject(t, true)
	srv.FinishJob("g/p", jobs["build"], "success", "", "")
	srv.FinishJob("g/p", jobs["test"], "failed", "script_failure", "")
	for _, j := range pipelineJobs(t, f, pipeline) {
		if j.AllowFailure != (j.Name == "test") {
			t.Errorf("job %s: allow_failure %v", j.Name, j.AllowFailure)
		}
	}
	if got := srv.PipelineStatus("g/p", pipeline); got != "success" {
		t.Errorf("pipeline %s with only an allowed failure, want success", got)
	}
}

func TestTheLatestPipelineOfACommitIsItsNewest(t *testing.T) {
	srv, f := newProject(t)
	ctx := context.Background()
	if _, _, err := rawClient(t, srv).Projects.EditProject("g/p", &gl.EditProjectOptions{MergeMethod: gl.Ptr(gl.FastForwardMerge)}); err != nil {
		t.Fatal(err)
	}
	mr := openMergeRequest(t, f)
	first, err := f.LatestPipeline(ctx, "g/p", mr.HeadSHA)
	if err != nil || first == 0 {
		t.Fatalf("LatestPipeline of the pushed head = %d, %v", first, err)
	}
	// A fast-forward pushes the same commit to main: a second pipeline.
	if err := f.MergeMergeRequest(ctx, "g/p", mr.Number, mr.HeadSHA); err != nil {
		t.Fatal(err)
	}
	all := srv.Pipelines("g/p", mr.HeadSHA)
	if len(all) != 2 || all[1] != first {
		t.Fatalf("pipelines of the commit %v, want a newer one before %d", all, first)
	}
	if got, err := f.LatestPipeline(ctx, "g/p", mr.HeadSHA); err != nil || got != all[0] {
		t.Errorf("LatestPipeline after the fast-forward = %d, %v, want %d", got, err, all[0])
	}
	if got, err := f.LatestPipeline(ctx, "g/p", strings.Repeat("0", 40)); err != nil || got != 0 {
		t.Errorf("LatestPipeline of a commit without pipelines = %d, %v, want 0", got, err)
	}
	if _, err := f.LatestPipeline(ctx, "g/missing", mr.HeadSHA); !wq.IsForgeError(err, wq.ForgeNotFound) {
		t.Errorf("LatestPipeline in a missing project: %v, want not found", err)
	}
}

func TestAJobTraceIsTailedToMaxBytes(t *testing.T) {
	srv, f, _, _, jobs := ciProject(t, false)
	const log = "Running with gitlab-runner\n$ make test\nFAIL: TestFlaky\nERROR: Job failed: exit code 1\n"
	srv.FinishJob("g/p", jobs["test"], "failed", "script_failure", log)
	ctx := context.Background()
	for _, tc := range []struct {
		max  int
		want string
	}{{31, "ERROR: Job failed: exit code 1\n"}, {len(log), log}, {10 * len(log), log}, {0, ""}} {
		got, err := f.JobTrace(ctx, "g/p", jobs["test"], tc.max)
		if err != nil || string(got) != tc.want {
			t.Errorf("JobTrace(%d) = %q, %v, want %q", tc.max, got, err, tc.want)
		}
	}
	if got, err := f.JobTrace(ctx, "g/p", jobs["build"], 100); err != nil || len(got) != 0 {
		t.Errorf("JobTrace of a job without a log = %q, %v, want nothing", got, err)
	}
}

func TestARetriedFailedJobRunsAgainAsANewJob(t *testing.T) {
	srv, f, _, pipeline, jobs := ciProject(t, false)
	srv.FinishJob("g/p", jobs["build"], "success", "", "")
	srv.FinishJob("g/p", jobs["test"], "failed", "runner_system_failure", "")
	if got := srv.PipelineStatus("g/p", pipeline); got != "failed" {
		t.Fatalf("pipeline %s, want failed", got)
	}
	id := retry(t, f, pipeline, jobs["test"])
	if id == jobs["test"] || id == 0 {
		t.Fatalf("RetryJob = %d, want a new job (the failed one is %d)", id, jobs["test"])
	}
	latest := pipelineJobs(t, f, pipeline)[0]
	if latest.ID != id || latest.Name != "test" || latest.Retries != 1 || latest.Status != wq.CIJobPending {
		t.Errorf("the newest job is %+v, want job %d of test, pending, Retries 1", latest, id)
	}
	// Build passed, test waits again: GitLab's composite status is running.
	if got := srv.PipelineStatus("g/p", pipeline); got != "running" {
		t.Errorf("pipeline %s after the retry, want running again", got)
	}
}

func TestAJobThatCannotBeRetriedIsPermanent(t *testing.T) {
	srv, f, _, pipeline, jobs := ciProject(t, false)
	ctx := context.Background()
	permanent := func(what string, job int64) {
		t.Helper()
		_, err := f.RetryJob(ctx, "g/p", pipeline, job)
		var fe *wq.ForgeError
		if !wq.IsForgeError(err, wq.ForgePermanent) || !errors.As(err, &fe) || fe.Status != http.StatusForbidden ||
			!strings.Contains(fe.Message, "Job is not retryable") {
			t.Errorf("retry of %s: %v, want permanent: GitLab's 403 Job is not retryable", what, err)
		}
	}
	permanent("a pending job", jobs["test"])
	srv.StartJob("g/p", jobs["test"])
	permanent("a running job", jobs["test"])
	srv.FinishJob("g/p", jobs["test"], "failed", "script_failure", "")
	srv.SetJobRetryable("g/p", jobs["test"], false)
	permanent("an archived job", jobs["test"])
	srv.SetJobRetryable("g/p", jobs["test"], true)
	retry(t, f, pipeline, jobs["test"])
	permanent("a job retried already", jobs["test"])
}

func TestAMissingPipelineOrJobIsNotFound(t *testing.T) {
	_, f, _, pipeline, _ := ciProject(t, false)
	ctx := context.Background()
	if _, err := f.PipelineJobs(ctx, "g/p", pipeline+1000); !wq.IsForgeError(err, wq.ForgeNotFound) {
		t.Errorf("PipelineJobs of a missing pipeline: %v, want not found", err)
	}
	if _, err := f.PipelineJobs(ctx, "g/missing", pipeline); !wq.IsForgeError(err, wq.ForgeNotFound) {
		t.Errorf("PipelineJobs in a missing project: %v, want not found", err)
	}
	if _, err := f.JobTrace(ctx, "g/p", 1, 100); !wq.IsForgeError(err, wq.ForgeNotFound) {
		t.Errorf("JobTrace of a missing job: %v, want not found", err)
	}
	if _, err := f.RetryJob(ctx, "g/p", pipeline, 1); !wq.IsForgeError(err, wq.ForgeNotFound) {
		t.Errorf("RetryJob of a missing job: %v, want not found", err)
	}
}

func TestCIJobStatusesAreMappedToNeutralWords(t *testing.T) {
	for gitlabStatus, want := range map[string]string{
		"created": wq.CIJobPending, "waiting_for_resource": wq.CIJobPending, "preparing": wq.CIJobPending,
		"pending": wq.CIJobPending, "scheduled": wq.CIJobPending, "manual": wq.CIJobPending, "running": wq.CIJobRunning,
		"success": wq.CIJobSuccess, "failed": wq.CIJobFailed, "canceled": wq.CIJobCanceled, "skipped": wq.CIJobSkipped,
		"canceling": "canceling", "a_later_status": "a_later_status",
	} {
		if got := gitlab.CIJobStatus(gitlabStatus); got != want {
			t.Errorf("CIJobStatus(%q) = %q, want %q", gitlabStatus, got, want)
		}
	}
}

// A project that merges only once the pipeline succeeded: a failed head
// pipeline blocks the merge request until a retry passes.
func TestAFailedHeadPipelineBlocksTheMergeUntilARetryPasses(t *testing.T) {
	srv, f := newProject(t)
	ctx := context.Background()
	srv.SetOnlyAllowMergeIfPipelineSucceeds("g/p", true)
	srv.SetPipelineJobs("g/p", gitlabtest.JobSpec{Name: "test", Stage: "test"})
	mr := openMergeRequest(t, f)
	blocker := func(want string) *wq.MergeRequest {
		t.Helper()
		got, err := f.GetMergeRequest(ctx, "g/p", mr.Number)
		if err != nil {
			t.Fatal(err)
		}
		if got.MergeStatus == "checking" { // the first look starts GitLab's check
			got, _ = f.GetMergeRequest(ctx, "g/p", mr.Number)
		}
		if got.MergeStatus != want {
			t.Errorf("detailed_merge_status %q, want %q", got.MergeStatus, want)
		}
		return got
	}
	head := blocker("ci_still_running")
	if head.Blocker != wq.MergeCI || head.HeadPipelineID == 0 {
		t.Fatalf("blocker %q, head pipeline %d", head.Blocker, head.HeadPipelineID)
	}
	job := srv.PipelineJobs("g/p", head.HeadPipelineID)[0].ID
	srv.FinishJob("g/p", job, "failed", "runner_system_failure", "")
	blocker("ci_must_pass")
	if err := f.MergeMergeRequest(ctx, "g/p", mr.Number, mr.HeadSHA); !wq.IsForgeError(err, wq.ForgeUnprocessable) {
		t.Fatalf("merge with a failed pipeline: %v, want unprocessable", err)
	}
	again := retry(t, f, head.HeadPipelineID, job)
	blocker("ci_still_running")
	srv.FinishJob("g/p", again, "success", "", "")
	if got := blocker("mergeable"); !got.Mergeable {
		t.Errorf("not mergeable after the retry passed: %+v", got)
	}
	if err := f.MergeMergeRequest(ctx, "g/p", mr.Number, mr.HeadSHA); err != nil {
		t.Errorf("merge after the retry passed: %v", err)
	}
}

func TestWithoutTheSettingAFailedPipelineDoesNotBlockTheMerge(t *testing.T) {
	srv, f := newProject(t)
	ctx := context.Background()
	srv.SetPipelineJobs("g/p", gitlabtest.JobSpec{Name: "test", Stage: "test"})
	mr := openMergeRequest(t, f)
	pipeline := srv.Pipelines("g/p", mr.HeadSHA)[0]
	srv.FinishJob("g/p", srv.PipelineJobs("g/p", pipeline)[0].ID, "failed", "script_failure", "")
	if err := f.MergeMergeRequest(ctx, "g/p", mr.Number, mr.HeadSHA); err != nil {
		t.Errorf("merge with a failed pipeline, not required to pass: %v", err)
	}
}

// The hooks a job's run sends parse as client-go's events, with GitLab's
// fields: the Job Hook's commit.id is the pipeline's id, and the Pipeline
// Hook goes out when the pipeline's status changes.
func TestJobAndPipelineHooksFollowTheRun(t *testing.T) {
	srv, f := newProject(t)
	var mu sync.Mutex
	var jobEvents []*gl.JobEvent
	var pipelineStatuses []string
	var raw []map[string]any
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev, err := gl.ParseWebhook(gl.HookEventType(r), body)
		if err != nil {
			t.Errorf("%s: %v", gl.HookEventType(r), err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *gl.JobEvent:
			jobEvents = append(jobEvents, ev)
			var m map[string]any
			json.Unmarshal(body, &m)
			raw = append(raw, m)
		case *gl.PipelineEvent:
			pipelineStatuses = append(pipelineStatuses, ev.ObjectAttributes.Status)
		}
	}))
	t.Cleanup(receiver.Close)
	if _, err := f.EnsureWebhook(context.Background(), "g/p", receiver.URL, "s"); err != nil {
		t.Fatal(err)
	}
	srv.SetPipelineJobs("g/p", gitlabtest.JobSpec{Name: "test", Stage: "test"})
	c := commitTo(t, f, "wq/a", wq.FileChange{Action: "create", Path: "a", Content: []byte("a\n")})
	pipeline := srv.Pipelines("g/p", c.SHA)[0]
	job := srv.PipelineJobs("g/p", pipeline)[0].ID
	srv.StartJob("g/p", job)
	srv.FinishJob("g/p", job, "failed", "runner_system_failure", "")
	again := retry(t, f, pipeline, job)
	srv.WaitForDeliveries()

	mu.Lock()
	defer mu.Unlock()
	if got, want := fmt.Sprint(pipelineStatuses), "[pending running failed pending]"; got != want {
		t.Errorf("Pipeline Hook statuses %s, want %s", got, want)
	}
	var statuses []string
	for _, ev := range jobEvents {
		statuses = append(statuses, fmt.Sprintf("%d:%s", ev.BuildID, ev.BuildStatus))
		if ev.PipelineID != pipeline || ev.SHA != c.SHA || ev.Ref != "wq/a" || ev.BuildName != "test" || ev.BuildStage != "test" {
			t.Errorf("Job Hook %+v", ev)
		}
	}
	if got, want := fmt.Sprint(statuses), fmt.Sprintf("[%d:pending %d:running %d:failed %d:pending]", job, job, job, again); got != want {
		t.Errorf("Job Hooks %s, want %s", got, want)
	}
	failed, retried := jobEvents[2], jobEvents[3]
	if failed.BuildFailureReason != "runner_system_failure" || failed.BuildFinishedAt == "" || failed.RetriesCount != 0 {
		t.Errorf("the failure's Job Hook: reason %q, finished %q, retries %d", failed.BuildFailureReason, failed.BuildFinishedAt, failed.RetriesCount)
	}
	if retried.RetriesCount != 1 {
		t.Errorf("the retry's Job Hook has retries_count %d, want 1", retried.RetriesCount)
	}
	commit := raw[2]["commit"].(map[string]any)
	project := raw[2]["project"].(map[string]any)
	if commit["id"] != float64(pipeline) || commit["sha"] != c.SHA || project["path_with_namespace"] != "g/p" || raw[2]["object_kind"] != "build" {
		t.Errorf("Job Hook commit %v, project %v, object_kind %v: commit.id must be the pipeline id", commit, project, raw[2]["object_kind"])
	}
}

func TestCIJobsConformanceOnAGitLabShapedServer(t *testing.T) {
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	f, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	forgetest.RunCIJobs(t, func(t *testing.T) forgetest.CIProject {
		n++
		path := fmt.Sprintf("group/ci-%d", n)
		srv.CreateProject(path)
		return forgetest.CIProject{Forge: f, Path: path, FailedJob: func(t *testing.T, name, log string) (string, int64, int64) {
			t.Helper()
			srv.SetPipelineJobs(path, gitlabtest.JobSpec{Name: name, Stage: "test"})
			c, err := f.CommitFiles(context.Background(), wq.CommitRequest{Project: path, Base: "main", Branch: "wq/ci", Message: "m",
				Changes: []wq.FileChange{{Action: "create", Path: "ci.txt", Content: []byte("ci\n")}}})
			if err != nil {
				t.Fatal(err)
			}
			pipeline := srv.Pipelines(path, c.SHA)[0]
			job := srv.PipelineJobs(path, pipeline)[0].ID
			srv.FinishJob(path, job, "failed", "script_failure", log)
			return c.SHA, pipeline, job
		}}
	})
}
