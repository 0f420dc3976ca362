package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/testforge"
)

// herder check reads a job by its page's URL or by id, runs the
// configured matchers over it, and says which fired, why, and what the
// service would do; it retries nothing.
func TestHerderCheckSaysWhichMatcherFiresAndWhatWouldBeDone(t *testing.T) {
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	fx := testforge.GitLabOn(t, srv)
	project := fx.NewProject(t, "main", "README.md", "# r\n")
	srv.SetPipelineJobs(project, gitlabtest.JobSpec{Name: "build", Stage: "test"}, gitlabtest.JobSpec{Name: "unit", Stage: "test"})
	sha := fx.Push(t, project, "main", testforge.Edit{Path: "a.txt", Content: "a\n"})
	pipeline := srv.Pipelines(project, sha)[0]
	var build, unit int64
	for _, j := range srv.PipelineJobs(project, pipeline) {
		switch j.Name {
		case "build":
			build = j.ID
		case "unit":
			unit = j.ID
		}
	}
	srv.FinishJob(project, build, "failed", "script_failure", "cloning\nERROR: Job failed: runner system failure\n")
	srv.FinishJob(project, unit, "failed", "script_failure", "--- FAIL: TestParse\n")

	t.Setenv("WQ_TEST_GL_TOKEN", srv.Token)
	conf := filepath.Join(t.TempDir(), "wq.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `
forges:
  - {name: lab, kind: gitlab, url: %q, token_env: WQ_TEST_GL_TOKEN}
herder:
  retry_delays: [90s]
  matchers:
    - name: infra
      description: the runner, not the change
      messages: ["ERROR: Job failed: runner system failure"]
`, srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := runCommand(t, "herder", "check", "--config", conf, "--job-url", fmt.Sprintf("%s/%s/-/jobs/%d", srv.URL, project, build))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"matcher   infra (the runner, not the change)", "log read  true", "would     retry it 1m30s after it finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}

	out, err = runCommand(t, "herder", "check", "--config", conf, "--forge", "lab", "--project", project, "--job", fmt.Sprint(unit), "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep struct {
		Job     struct{ Name string }
		Verdict struct {
			Matched bool
			Why     string
		}
		Would string
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Job.Name != "unit" || rep.Verdict.Matched || rep.Verdict.Why == "" || !strings.HasPrefix(rep.Would, "leave it failed") {
		t.Errorf("the unit test failure: %+v", rep)
	}
	if jobs := srv.PipelineJobs(project, pipeline); len(jobs) != 2 {
		t.Errorf("a dry run retried something: %d jobs in the pipeline", len(jobs))
	}

	for _, bad := range [][]string{
		{"--job-url", "https://elsewhere.example/g/p/-/jobs/1"},
		{"--job-url", srv.URL + "/" + project + "/-/pipelines/1"},
		{"--forge", "nope", "--project", project, "--job", "1"},
		{"--forge", "lab"},
	} {
		if out, err := runCommand(t, append([]string{"herder", "check", "--config", conf}, bad...)...); err == nil {
			t.Errorf("herder check %q: no error\n%s", bad, out)
		}
	}
}
