package testrunner_test

import (
	"context"
	"encoding/base64"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testrunner"
)

const workflow = `name: ci
on: push
jobs:
  build:
    name: build
    runs-on: ubuntu-latest
    steps:
      - run: echo one
      - run: echo two
`

func TestARunnerTakesAPushedJobAndReportsItsScriptedOutcome(t *testing.T) {
	srv := testgitea.Get(t)
	repo := srv.NewRepo(t)
	owner, name, _ := strings.Cut(repo, "/")
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token), sdk.SetGiteaVersion("1.26.0"))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan testrunner.Task, 1)
	var calls atomic.Int32
	testrunner.Start(t, testrunner.Config{URL: srv.URL, Token: srv.Token, Repo: repo,
		Script: func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
			calls.Add(1)
			if err := task.Log(ctx, "first line"); err != nil {
				t.Errorf("log: %v", err)
			}
			got <- task
			return testrunner.Outcome{Log: []string{"second line", "FAIL: scripted"}, Result: testrunner.Failure}
		}})
	fr, _, err := c.ChangeFiles(owner, name, sdk.ChangeFilesOptions{Branch: "main", NewBranch: "ci",
		Message: "ci",
		Files: []*sdk.ChangeFileOperation{{Operation: "create", Path: ".gitea/workflows/ci.yml",
			Content: base64.StdEncoding.EncodeToString([]byte(workflow))}}})
	if err != nil {
		t.Fatal(err)
	}
	var task testrunner.Task
	select {
	case task = <-got:
	case <-time.After(60 * time.Second):
		t.Fatal("no task in 60 s")
	}
	if task.Name != "build" || task.Job != "build" || task.Attempt != 1 || task.Repo != repo || task.SHA != fr.Commit.SHA ||
		task.RunID == 0 || task.JobID == 0 || !strings.Contains(string(task.Payload), "runs-on") {
		t.Errorf("task %+v", task)
	}
	job := eventually.Value(t, 30*time.Second, "the job completed", func() (*sdk.ActionWorkflowJob, bool) {
		job, _, err := c.GetRepoActionJob(owner, name, task.JobID)
		if err != nil {
			t.Fatal(err)
		}
		return job, job.Status == "completed"
	})
	if job.Status != "completed" || job.Conclusion != "failure" || job.RunID != task.RunID || job.RunAttempt != 1 ||
		job.HeadSha != fr.Commit.SHA || job.CompletedAt.Unix() <= 0 {
		t.Errorf("job %+v", job)
	}
	log, _, err := c.GetRepoActionJobLogs(owner, name, task.JobID)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], " first line") || !strings.HasSuffix(lines[2], " FAIL: scripted") {
		t.Errorf("log %q", log)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d tasks, want 1", n)
	}
}

func TestAStoppedRunnerCancelsItsTaskAndIsDeleted(t *testing.T) {
	srv := testgitea.Get(t)
	repo := srv.NewRepo(t)
	owner, name, _ := strings.Cut(repo, "/")
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token), sdk.SetGiteaVersion("1.26.0"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held := make(chan testrunner.Task, 1)
	r, err := testrunner.Register(ctx, testrunner.Config{URL: srv.URL, Token: srv.Token, Repo: repo,
		Script: func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
			held <- task
			<-ctx.Done()
			return testrunner.Outcome{Log: []string{"stopped"}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	if _, _, err := c.ChangeFiles(owner, name, sdk.ChangeFilesOptions{Branch: "main", NewBranch: "ci",
		Message: "ci",
		Files: []*sdk.ChangeFileOperation{{Operation: "create", Path: ".gitea/workflows/ci.yml",
			Content: base64.StdEncoding.EncodeToString([]byte(workflow))}}}); err != nil {
		t.Fatal(err)
	}
	var task testrunner.Task
	select {
	case task = <-held:
	case <-ctx.Done():
		t.Fatal("no task")
	}
	job, _, err := c.GetRepoActionJob(owner, name, task.JobID)
	if err != nil || job.Status != "in_progress" {
		t.Fatalf("job %+v, %v; want it in progress while the script holds it", job, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	job, _, err = c.GetRepoActionJob(owner, name, task.JobID)
	if err != nil || job.Status != "completed" || job.Conclusion != "cancelled" {
		t.Errorf("job %+v, %v; want it cancelled", job, err)
	}
	if err := r.Unregister(ctx); err != nil {
		t.Fatal(err)
	}
	if _, resp, err := c.GetRepoActionRunner(owner, name, r.ID()); err == nil || resp == nil || resp.StatusCode != 404 {
		t.Errorf("runner %d after Unregister: %v", r.ID(), err)
	}
}
