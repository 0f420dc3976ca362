package gitea_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	poll "github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testrunner"
)

// ciWorkflow is a workflow of two jobs for the test runner's label:
// lint, which the scripts pass, and build. Lint comes first, so that
// build's id is not its run's (every run so far has had a job at least,
// and Gitea numbers the jobs of a run in order).
const ciWorkflow = `name: ci
on: push
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: lint
  build:
    runs-on: ubuntu-latest
    steps:
      - run: make
`

const runnerFailure = "ERROR: Job failed: runner system failure"

// actionsRepo makes a repository with a runner of its own that runs
// script.
func actionsRepo(t *testing.T, script testrunner.Script) (f *gitea.Forge, repo string) {
	t.Helper()
	srv := testgitea.Get(t)
	f, err := gitea.New(srv.URL, srv.Token, gitea.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo = srv.NewRepo(t)
	testrunner.Start(t, testrunner.Config{URL: srv.URL, Token: srv.Token, Repo: repo, Script: script})
	return f, repo
}

// pushWorkflow commits ciWorkflow to branch wq/ci of repo.
func pushWorkflow(t *testing.T, f *gitea.Forge, repo string) string {
	t.Helper()
	head, err := f.CommitFiles(context.Background(), wq.CommitRequest{Project: repo, Base: "main", Branch: "wq/ci", Message: "ci",
		Changes: []wq.FileChange{{Action: "create", Path: ".gitea/workflows/ci.yml", Content: []byte(ciWorkflow)}}})
	if err != nil {
		t.Fatal(err)
	}
	return head.SHA
}

// eventually retries check every 100 ms for up to 30 s until it
// returns "", and fails the test with its last complaint otherwise.
func eventually(t *testing.T, check func() string) {
	t.Helper()
	poll.TrueEvery(t, 30*time.Second, 100*time.Millisecond, "the check", func() (bool, any) {
		why := check()
		return why == "", why
	})
}

func TestAFailedActionsJobIsFoundReadAndRerunOnRealGitea(t *testing.T) {
	// The runner fails the first attempt of build as a runner would,
	// holds the second until the test lets it go, and succeeds it.
	held, release := make(chan int64, 1), make(chan struct{})
	f, repo := actionsRepo(t, func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
		switch {
		case task.Name == "lint":
			return testrunner.Outcome{Log: []string{"lint"}}
		case task.Attempt == 1:
			return testrunner.Outcome{Log: []string{"make", runnerFailure}, Result: testrunner.Failure}
		}
		held <- task.Attempt
		select {
		case <-release:
		case <-ctx.Done():
		}
		return testrunner.Outcome{Log: []string{"make", "ok"}}
	})
	ctx := context.Background()
	if run, err := f.LatestPipeline(ctx, repo, strings.Repeat("0", 40)); err != nil || run != 0 {
		t.Errorf("LatestPipeline of a commit without runs: %d, %v; want 0", run, err)
	}
	sha := pushWorkflow(t, f, repo)

	var run int64
	eventually(t, func() string {
		var err error
		if run, err = f.LatestPipeline(ctx, repo, sha); err != nil || run == 0 {
			return "no run for the pushed head: " + errString(err)
		}
		return ""
	})
	// The jobs, newest first: build, then lint, which succeeds once.
	var jobs []wq.CIJob
	jobIs := func(status string, retries int) func() string {
		return func() string {
			var err error
			jobs, err = f.PipelineJobs(ctx, repo, run)
			if err != nil || len(jobs) != 2 || jobs[0].Name != "build" || jobs[0].Status != status || jobs[0].Retries != retries ||
				jobs[1].Name != "lint" || jobs[1].Status != wq.CIJobSuccess || jobs[1].Retries != 0 {
				return "jobs " + jsonString(jobs) + ", " + errString(err) + "; want build " + status + " with retries " + jsonString(retries) + ", lint passed"
			}
			return ""
		}
	}
	eventually(t, jobIs(wq.CIJobFailed, 0))
	build := jobs[0]
	if build.ID == run || build.PipelineID != run || build.FinishedAt.IsZero() || time.Since(build.FinishedAt) > time.Minute ||
		!strings.HasSuffix(build.URL, "/jobs/"+jsonString(build.ID)) || build.Stage != "" || build.FailureReason != "" {
		t.Errorf("failed job %+v of run %d", build, run)
	}

	trace, err := f.JobTrace(ctx, repo, build.ID, 4096)
	if err != nil || !strings.HasSuffix(strings.TrimRight(string(trace), "\n"), runnerFailure) || !strings.Contains(string(trace), "make\n") {
		t.Errorf("trace %q, %v; want it to end with %q", trace, err, runnerFailure)
	}
	end, err := f.JobTrace(ctx, repo, build.ID, 20)
	if err != nil || len(end) != 20 || !strings.HasSuffix(string(trace), string(end)) {
		t.Errorf("last 20 bytes %q, %v; want the end of %q", end, err, trace)
	}

	again, err := f.RetryJob(ctx, repo, run, build.ID)
	if err != nil || again != build.ID {
		t.Fatalf("RetryJob: %d, %v; want job %d again", again, err, build.ID)
	}
	select {
	case attempt := <-held:
		if attempt != 2 {
			t.Errorf("the rerun is attempt %d, want 2", attempt)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the runner was not given the rerun")
	}
	eventually(t, jobIs(wq.CIJobRunning, 1))
	if !jobs[0].FinishedAt.IsZero() {
		t.Errorf("running job %+v has finished", jobs[0])
	}
	_, err = f.RetryJob(ctx, repo, run, build.ID)
	if !wq.IsForgeError(err, wq.ForgeUnprocessable) || !strings.Contains(err.Error(), "not done") {
		t.Errorf("rerun of a running job: %v; want unprocessable, the run is not done", err)
	}
	close(release)
	eventually(t, jobIs(wq.CIJobSuccess, 1))
	if jobs[0].ID != build.ID || jobs[0].FinishedAt.Before(build.FinishedAt) {
		t.Errorf("rerun job %+v, first run %+v", jobs[0], build)
	}
	if latest, err := f.LatestPipeline(ctx, repo, sha); err != nil || latest != run {
		t.Errorf("LatestPipeline after the rerun: %d, %v; want run %d still", latest, err, run)
	}
	trace, err = f.JobTrace(ctx, repo, build.ID, 4096)
	if err != nil || strings.Contains(string(trace), runnerFailure) || !strings.HasSuffix(string(trace), " ok\n") {
		t.Errorf("trace of the rerun %q, %v; want the new log alone", trace, err)
	}

	missing := []struct {
		what string
		err  error
	}{
		{"rerun of a job not in the run", second(f.RetryJob(ctx, repo, run, build.ID+1000))},
		{"rerun in a missing run", second(f.RetryJob(ctx, repo, run+1000, build.ID))},
		{"jobs of a missing run", second(f.PipelineJobs(ctx, repo, run+1000))},
		{"a missing job", second(f.Job(ctx, repo, build.ID+1000))},
		{"log of a missing job", second(f.JobTrace(ctx, repo, build.ID+1000, 100))},
		{"runs of a missing repository", second(f.LatestPipeline(ctx, repo+"-gone", sha))},
	}
	for _, m := range missing {
		if !wq.IsForgeError(m.err, wq.ForgeNotFound) {
			t.Errorf("%s: %v; want not found", m.what, m.err)
		}
	}
}

func TestWorkflowJobEventsNameTheJobItsRunAndAttemptOnRealGitea(t *testing.T) {
	// What the webhook package reads of a workflow_job delivery, as
	// Gitea 1.26 sends it: the job's id, name, status and conclusion, its
	// run and attempt, the head and when it completed.
	var mu sync.Mutex
	var events []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var payload map[string]any
		if r.Header.Get("X-Gitea-Event") == "workflow_job" && json.Unmarshal(b, &payload) == nil {
			mu.Lock()
			events = append(events, payload)
			mu.Unlock()
		}
	}))
	t.Cleanup(hook.Close)
	f, repo := actionsRepo(t, func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
		if task.Name == "lint" {
			return testrunner.Outcome{Log: []string{"lint"}}
		}
		return testrunner.Outcome{Log: []string{runnerFailure}, Result: testrunner.Failure}
	})
	ctx := context.Background()
	if _, err := f.EnsureWebhook(ctx, repo, hook.URL+"/webhooks/gitea", "secret"); err != nil {
		t.Fatal(err)
	}
	sha := pushWorkflow(t, f, repo)
	var done map[string]any
	eventually(t, func() string {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			if job, _ := e["workflow_job"].(map[string]any); e["action"] == "completed" && job != nil && job["name"] == "build" {
				done = job
				return ""
			}
		}
		return "no completed workflow_job delivery among " + jsonString(events)
	})
	run, err := f.LatestPipeline(ctx, repo, sha)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := f.PipelineJobs(ctx, repo, run)
	if err != nil || len(jobs) != 2 || jobs[0].Name != "build" {
		t.Fatalf("jobs %+v, %v", jobs, err)
	}
	want := map[string]any{"id": float64(jobs[0].ID), "name": "build", "status": "completed", "conclusion": "failure",
		"run_id": float64(run), "run_attempt": float64(1), "head_sha": sha, "html_url": jobs[0].URL}
	for k, v := range want {
		if done[k] != v {
			t.Errorf("workflow_job.%s = %#v, want %#v", k, done[k], v)
		}
	}
	if one, err := f.Job(ctx, repo, jobs[0].ID); err != nil || *one != jobs[0] {
		t.Errorf("Job = %+v, %v; want the job as listed, %+v", one, err, jobs[0])
	}
	if at, err := time.Parse(time.RFC3339, stringOf(done["completed_at"])); err != nil || !at.Equal(jobs[0].FinishedAt) {
		t.Errorf("workflow_job.completed_at = %v, want %v", done["completed_at"], jobs[0].FinishedAt)
	}
	t.Logf("workflow_job fields: %v", slices.Sorted(maps.Keys(done)))
	t.Logf("workflow_job: %s", jsonString(done))
	mu.Lock()
	for _, e := range events {
		job, _ := e["workflow_job"].(map[string]any)
		t.Logf("delivery: action %v, job %v %v %v", e["action"], job["name"], job["status"], job["conclusion"])
	}
	mu.Unlock()
}

func second[T any](_ T, err error) error { return err }

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

func TestALogServedWholeIsCutToItsEnd(t *testing.T) {
	// Gitea answers the log's range; a proxy that drops the Range header
	// gets the whole log, which is cut here, and an empty log's range
	// cannot be satisfied.
	log := strings.Repeat("a line of a long log\n", 5000) + runnerFailure + "\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Range") != "bytes=-45":
			http.Error(w, "unexpected range "+r.Header.Get("Range"), http.StatusBadRequest)
		case strings.HasSuffix(r.URL.Path, "/actions/jobs/1/logs"):
			io.WriteString(w, log)
		case strings.HasSuffix(r.URL.Path, "/actions/jobs/2/logs"):
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	f, err := gitea.New(srv.URL, "token", gitea.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := f.JobTrace(ctx, "o/r", 1, 45); err != nil || string(got) != log[len(log)-45:] {
		t.Errorf("%q, %v; want the last 45 bytes", got, err)
	}
	if got, err := f.JobTrace(ctx, "o/r", 2, 45); err != nil || len(got) != 0 {
		t.Errorf("%q, %v; want an empty log", got, err)
	}
	if _, err := f.JobTrace(ctx, "o/r", 3, 45); !wq.IsForgeError(err, wq.ForgeNotFound) {
		t.Errorf("%v; want not found", err)
	}
}
