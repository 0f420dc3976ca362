package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testrunner"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
)

// The CI retry herder end to end on the real Gitea (issue 14): a served
// workqueue with a herder section, the repository's webhook delivering
// pull request, status and Actions events to it, main protected to
// require the build job's status check, and a real Actions run of
// .gitea/workflows/ci.yml whose job outcomes the test runner scripts.

// herdWorkflow runs one job, build, for every pull request event
// (opened, synchronized): its check is "ci / build (pull_request)".
const herdWorkflow = `name: ci
on: pull_request
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: make
`

// herdCheck is the status check main requires: a glob, so that the
// event's suffix Gitea adds to the context does not matter.
const herdCheck = "ci / build*"

// giteaHerd is a served workqueue whose repository runs Actions.
type giteaHerd struct {
	*apiWorld
	cl          *sdk.Client
	owner, name string

	mu    sync.Mutex
	tasks []herdTask // every task the runner took, in order
}

// herdTask is a task the runner took and how it ended.
type herdTask struct {
	JobID, RunID, Attempt int64
	Name, SHA             string
	Start, End            time.Time // when the script got it, when it returned
	Result                testrunner.Result
}

// startHerderOnGitea serves workqueue with herder section h on a fresh
// repository: the workflow on main, main protected to require its check,
// the webhook in place, and a runner of the repository's own that runs
// script.
func startHerderOnGitea(t *testing.T, h config.Herder, script testrunner.Script) *giteaHerd {
	t.Helper()
	return startHerderOnGiteaWith(t, h, script, true, nil)
}

// startHerderOnGiteaWith is startHerderOnGitea with the repository's
// webhook in place or not (hooked), and the configuration edited.
func startHerderOnGiteaWith(t *testing.T, h config.Herder, script testrunner.Script, hooked bool, edit func(*config.Config)) *giteaHerd {
	t.Helper()
	t.Setenv("WQ_TEST_HOOK_SECRET", hookSecret)
	w := startAPI(t, "", func(c *config.Config) {
		c.Forges[0].WebhookSecretEnv = "WQ_TEST_HOOK_SECRET"
		c.Herder = h
		mrtype.In(c).NoteMinInterval = config.Duration(500 * time.Millisecond)
		if edit != nil {
			edit(c)
		}
	})
	srv := testgitea.Get(t)
	cl, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	g := &giteaHerd{apiWorld: w, cl: cl}
	g.owner, g.name, _ = strings.Cut(w.repo, "/")
	if _, _, err := cl.CreateFile(g.owner, g.name, ".gitea/workflows/ci.yml", sdk.CreateFileOptions{
		FileOptions: sdk.FileOptions{Message: "CI: build every pull request", BranchName: "main"},
		Content:     base64.StdEncoding.EncodeToString([]byte(herdWorkflow))}); err != nil {
		t.Fatal(err)
	}
	// Nobody, the admin the service acts as included, merges into main
	// before the build passed.
	if _, _, err := cl.CreateBranchProtection(g.owner, g.name, sdk.CreateBranchProtectionOption{RuleName: "main", EnablePush: true,
		EnableStatusCheck: true, StatusCheckContexts: []string{herdCheck}, BlockAdminMergeOverride: true}); err != nil {
		t.Fatal(err)
	}
	if hooked {
		if _, err := w.forge.EnsureWebhook(context.Background(), w.repo, w.base+"/webhooks/gitea", hookSecret); err != nil {
			t.Fatal(err)
		}
	}
	testrunner.Start(t, testrunner.Config{URL: srv.URL, Token: srv.Token, Repo: w.repo,
		Script: func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
			start := time.Now()
			out := script(ctx, task)
			g.mu.Lock()
			g.tasks = append(g.tasks, herdTask{JobID: task.JobID, RunID: task.RunID, Attempt: task.Attempt, Name: task.Name,
				SHA: task.SHA, Start: start, End: time.Now(), Result: out.Result})
			g.mu.Unlock()
			return out
		}})
	return g
}

// taken is a copy of the tasks the runner finished so far.
func (g *giteaHerd) taken() []herdTask {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.tasks)
}

// submit submits (or resubmits) branch's change: one file with content.
func (g *giteaHerd) submit(branch, content string) string {
	g.t.Helper()
	status, body, _ := g.do("POST", "/api/v1/items", g.tokens["submit"], g.submission(branch,
		map[string]any{"action": "create", "file_path": strings.ReplaceAll(branch, "/", "-") + ".txt", "content": content}))
	if status != http.StatusCreated && status != http.StatusOK {
		g.t.Fatalf("submit %s: %d %v", branch, status, body)
	}
	return body["id"].(string)
}

// item reads an item once.
func (g *giteaHerd) item(id string) map[string]any {
	g.t.Helper()
	status, item, _ := g.do("GET", "/api/v1/items/"+id, g.tokens["read"], nil)
	if status != http.StatusOK {
		g.t.Fatalf("GET item: %d %v", status, item)
	}
	return item
}

// build is the build job of run as Gitea lists it now.
func (g *giteaHerd) build(run int64) (wq.CIJob, error) {
	jobs, err := g.forge.PipelineJobs(context.Background(), g.repo, run)
	if err != nil {
		return wq.CIJob{}, err
	}
	for _, j := range jobs {
		if j.Name == "build" {
			return j, nil
		}
	}
	return wq.CIJob{}, fmt.Errorf("run %d has no build job: %+v", run, jobs)
}

// note is the body of the service's status note on pull request pr, ""
// while there is none; more than one fails the test (it is edited, never
// posted again).
func (g *giteaHerd) note(pr int64) string {
	g.t.Helper()
	return g.noteSaying(pr, "**workqueue** drives this merge request")
}

// noteSaying is the body of the one comment on pull request pr that
// holds marker, "" while there is none; more than one fails the test.
func (g *giteaHerd) noteSaying(pr int64, marker string) string {
	g.t.Helper()
	comments, _, err := g.cl.ListIssueComments(g.owner, g.name, pr, sdk.ListIssueCommentOptions{ListOptions: sdk.ListOptions{PageSize: 50}})
	if err != nil {
		g.t.Fatalf("comments of #%d: %v", pr, err)
	}
	var notes []string
	for _, c := range comments {
		if strings.Contains(c.Body, marker) {
			notes = append(notes, c.Body)
		}
	}
	switch len(notes) {
	case 0:
		return ""
	case 1:
		return notes[0]
	}
	g.t.Fatalf("%d status notes on #%d, want one: %q", len(notes), pr, notes)
	return ""
}

// waitNote waits until the status note on the item's pull request holds
// row, and returns the note.
func (g *giteaHerd) waitNote(pr int64, row string) string {
	g.t.Helper()
	return eventually.Value(g.t, time.Minute, "the status note shows "+row, func() (string, bool) {
		n := g.note(pr)
		return n, strings.Contains(n, row)
	})
}

// buildTasks are the tasks of job build the runner took.
func buildTasks(tasks []herdTask) []herdTask {
	var out []herdTask
	for _, t := range tasks {
		if t.Name == "build" {
			out = append(out, t)
		}
	}
	return out
}

func prOf(item map[string]any) int64 {
	n, _ := item["detail"].(map[string]any)["mr_iid"].(float64)
	return int64(n)
}

// 1. A runner hiccup on attempt 1 is retried once its delay has passed,
// and the rerun passing, the pull request is merged with no human step.
func TestHerderOnGiteaRetriesARunnerFailureAfterItsDelayAndMerges(t *testing.T) {
	const delay = 3 * time.Second
	g := startHerderOnGitea(t, herderSection(3, delay), func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
		if task.Attempt == 1 {
			return testrunner.Outcome{Log: []string{"make", herderRunnerFailure}, Result: testrunner.Failure}
		}
		return testrunner.Outcome{Log: []string{"make", "ok"}}
	})
	id := g.submit("workqueue/herd-flaky", "flaky\n")
	done := g.waitItem(id, "the item ends", func(it map[string]any) bool { return it["phase"] != "active" })
	if done["phase"] != "completed" || done["reason"] != mr.ReasonMerged {
		t.Fatalf("item %s/%s (error %v), want completed/merged", done["phase"], done["reason"], done["error"])
	}

	tasks := buildTasks(g.taken())
	if len(tasks) != 2 || tasks[0].Attempt != 1 || tasks[1].Attempt != 2 || tasks[0].JobID != tasks[1].JobID ||
		tasks[0].RunID != tasks[1].RunID || tasks[0].Result != testrunner.Failure || tasks[1].Result != testrunner.Success {
		t.Fatalf("build's tasks %+v, want attempt 1 failed then attempt 2 of the same job passed", tasks)
	}
	// Gitea keeps the job's finish time in whole seconds: the service can
	// see the failure up to a second before the runner reported it.
	gap := tasks[1].Start.Sub(tasks[0].End)
	if gap < delay-time.Second || gap > delay+time.Minute {
		t.Errorf("the rerun started %v after the failure, want after the %v delay", gap, delay)
	}
	// The runner took attempt 2 and nobody but the service reruns jobs
	// here: the service retried build, and must say so.
	decisions := herderDecisions(t, done)
	if len(decisions) != 1 || decisions[0].Outcome != mr.CIOutcomeRetried {
		t.Fatalf("the service reran build (the runner took attempt 2) but recorded decisions %+v, want one: retried", decisions)
	}
	d := decisions[0]
	if d.Outcome != mr.CIOutcomeRetried || d.JobID != tasks[0].JobID || d.PipelineID != tasks[0].RunID || d.Name != "build" ||
		d.Matcher != herderMatcherName || d.Why == "" || d.At.Before(tasks[0].End.Add(delay-time.Second)) {
		t.Errorf("decision %+v, want build retried by %s no sooner than %v after %v", d, herderMatcherName, delay, tasks[0].End)
	}
	job, err := g.build(tasks[0].RunID)
	if err != nil || job.Status != wq.CIJobSuccess || job.Retries != 1 || job.ID != tasks[0].JobID {
		t.Errorf("build on Gitea: %+v, %v; want job %d passed on its one retry", job, err, tasks[0].JobID)
	}
	if pr, err := g.forge.GetMergeRequest(context.Background(), g.repo, prOf(done)); err != nil || pr.State != wq.MergeRequestMerged {
		t.Errorf("pull request %+v, %v; want merged", pr, err)
	}
	t.Logf("failed %s, rerun %s later, decided %s after the failure", tasks[0].End.Format(time.TimeOnly), gap, d.At.Sub(tasks[0].End))
}

// 1b. With the webhooks lost, a runner hiccup is still retried: the bulk
// reconciliation reads the CI state of the item's head, tells the item of
// the failed job as its event would have (issue 50), and the rerun
// passing, the pull request is merged.
func TestHerderOnGiteaRetriesAFailureNoWebhookToldOfAndMerges(t *testing.T) {
	const delay = time.Second
	g := startHerderOnGiteaWith(t, herderSection(3, delay), func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
		if task.Attempt == 1 {
			return testrunner.Outcome{Log: []string{"make", herderRunnerFailure}, Result: testrunner.Failure}
		}
		return testrunner.Outcome{Log: []string{"make", "ok"}}
	}, false, func(c *config.Config) {
		mrtype.In(c).BulkReconcileInterval = config.Duration(time.Second)
		mrtype.In(c).ReconcileInterval = config.Duration(time.Hour) // only the bulk sweep can see the failure
	})
	id := g.submit("workqueue/herd-unhooked", "unhooked\n")
	done := g.waitItem(id, "the item ends", func(it map[string]any) bool { return it["phase"] != "active" })
	if done["phase"] != "completed" || done["reason"] != mr.ReasonMerged {
		t.Fatalf("item %s/%s (error %v), want completed/merged", done["phase"], done["reason"], done["error"])
	}
	tasks := buildTasks(g.taken())
	if len(tasks) != 2 || tasks[0].Attempt != 1 || tasks[1].Attempt != 2 || tasks[0].JobID != tasks[1].JobID ||
		tasks[0].Result != testrunner.Failure || tasks[1].Result != testrunner.Success {
		t.Fatalf("build's tasks %+v, want attempt 1 failed then attempt 2 of the same job passed", tasks)
	}
	decisions := herderDecisions(t, done)
	if len(decisions) != 1 || decisions[0].Outcome != mr.CIOutcomeRetried || decisions[0].JobID != tasks[0].JobID {
		t.Fatalf("decisions %+v, want build retried once", decisions)
	}
	t.Logf("failed %s, rerun started %s later", tasks[0].End.Format(time.TimeOnly), tasks[1].Start.Sub(tasks[0].End))
}

// 2. A failure no matcher recognises is not retried: the job stays at
// attempt 1, the item waits, and the note says no_match and why.
func TestHerderOnGiteaLeavesAnUnknownFailureAndTheNoteSaysWhy(t *testing.T) {
	g := startHerderOnGitea(t, herderSection(3, 2*time.Second), func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
		return testrunner.Outcome{Log: []string{"go test ./...", herderUnknownFailure, "FAIL"}, Result: testrunner.Failure}
	})
	id := g.submit("workqueue/herd-broken", "broken\n")
	item := g.waitItem(id, "a decision on the failed build", herderDecided(t, 1))
	decisions := herderDecisions(t, item)
	tasks := buildTasks(g.taken())
	if len(decisions) != 1 || len(tasks) != 1 {
		t.Fatalf("decisions %+v after build's tasks %+v, want one of each", decisions, tasks)
	}
	d := decisions[0]
	if d.Outcome != mr.CIOutcomeNoMatch || d.JobID != tasks[0].JobID || d.Name != "build" || d.Matcher != "" || d.Why == "" {
		t.Errorf("decision %+v, want build not matched, with a why", d)
	}
	note := g.waitNote(prOf(item), herderNoteRow(0, d))
	t.Logf("note:\n%s", note)

	herderStays(t, 3*time.Second, "build not rerun and the item waiting", func() (bool, any) {
		job, err := g.build(tasks[0].RunID)
		it := g.item(id)
		ok := err == nil && job.Status == wq.CIJobFailed && job.Retries == 0 && len(buildTasks(g.taken())) == 1 &&
			it["phase"] == "active" && len(herderDecisions(t, it)) == 1
		return ok, fmt.Sprintf("job %+v (%v), item %v/%v with decisions %+v", job, err, it["phase"], it["reason"], herderDecisions(t, it))
	})
	if ci, _, _ := herderCIRetry(t, g.item(id)); len(ci.Jobs) != 0 {
		t.Errorf("jobs still waiting for a retry: %+v", ci.Jobs)
	}
}

// 3. retry_limit 1 with a job that fails the same way every time: one
// rerun, then the decision, and the note, say limit.
func TestHerderOnGiteaStopsAtTheRetryLimit(t *testing.T) {
	g := startHerderOnGitea(t, herderSection(1, 2*time.Second), func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
		return testrunner.Outcome{Log: []string{"make", herderRunnerFailure}, Result: testrunner.Failure}
	})
	id := g.submit("workqueue/herd-down", "down\n")
	item := g.waitItem(id, "two decisions on build", herderDecided(t, 2))
	decisions := herderDecisions(t, item)
	tasks := buildTasks(g.taken())
	if len(tasks) != 2 || tasks[0].Attempt != 1 || tasks[1].Attempt != 2 || tasks[0].JobID != tasks[1].JobID {
		t.Fatalf("build's tasks %+v, want attempts 1 and 2 of one job", tasks)
	}
	if len(decisions) != 2 || decisions[0].Outcome != mr.CIOutcomeRetried || decisions[0].JobID != tasks[0].JobID ||
		decisions[1].Outcome != mr.CIOutcomeLimit || decisions[1].JobID != tasks[0].JobID ||
		decisions[1].Matcher != herderMatcherName || decisions[1].Why == "" {
		t.Fatalf("the service reran build once (the runner took attempts 1 and 2) and recorded decisions %+v, want retried then limit", decisions)
	}
	note := g.waitNote(prOf(item), herderNoteRow(1, decisions[1]))
	t.Logf("note:\n%s", note)

	herderStays(t, 3*time.Second, "no second rerun", func() (bool, any) {
		job, err := g.build(tasks[0].RunID)
		it := g.item(id)
		ok := err == nil && job.Status == wq.CIJobFailed && job.Retries == 1 && len(buildTasks(g.taken())) == 2 &&
			it["phase"] == "active" && len(herderDecisions(t, it)) == 2
		return ok, fmt.Sprintf("job %+v (%v), item %v/%v with decisions %+v", job, err, it["phase"], it["reason"], herderDecisions(t, it))
	})
}

// 4. A resubmission while the failed job waits for its delay makes a new
// head and a new run: when the delay passes, the old job is not rerun.
func TestHerderOnGiteaANewerPipelineMakesTheOldRetryANoOp(t *testing.T) {
	// Long enough for the resubmission's push and its new run to be made
	// before the old job is due, on a loaded machine.
	const delay = 10 * time.Second
	var first sync.Once
	var firstSHA string
	newRun := make(chan herdTask, 1)
	release := make(chan struct{})
	g := startHerderOnGitea(t, herderSection(3, delay), func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
		first.Do(func() { firstSHA = task.SHA })
		if task.SHA == firstSHA {
			return testrunner.Outcome{Log: []string{"make", herderRunnerFailure}, Result: testrunner.Failure}
		}
		// The new head's build runs until the old job's fate is known:
		// the item cannot merge meanwhile.
		select {
		case newRun <- herdTask{JobID: task.JobID, RunID: task.RunID, SHA: task.SHA}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return testrunner.Outcome{Log: []string{"make", "ok"}}
	})
	const branch = "workqueue/herd-moving"
	id := g.submit(branch, "first\n")
	item := g.waitItem(id, "the failed build waiting for its delay", func(it map[string]any) bool {
		ci, status, _ := herderCIRetry(t, it)
		return status == wq.StatusTrue && len(ci.Jobs) == 1
	})
	ci, _, _ := herderCIRetry(t, item)
	old := ci.Jobs[0]
	tasks := buildTasks(g.taken())
	if len(tasks) != 1 || tasks[0].JobID != old.ID || old.PipelineID != tasks[0].RunID || !old.NotBefore.Equal(old.FinishedAt.Add(delay)) {
		t.Fatalf("waiting job %+v after build's tasks %+v, want the failed one, due %v after it finished", old, tasks, delay)
	}
	if time.Now().After(old.NotBefore.Add(-time.Second)) {
		t.Fatalf("the failed job was seen waiting only at %s, its delay ends at %s: too late to resubmit before", time.Now().Format(time.TimeOnly), old.NotBefore.Format(time.TimeOnly))
	}

	resubmitted := time.Now()
	g.submit(branch, "second\n")
	pushed := g.waitItem(id, "the new head pushed", func(it map[string]any) bool {
		return it["detail"].(map[string]any)["head_sha"] != tasks[0].SHA
	})
	t.Logf("resubmitted at %s; new head %v pushed after %v", resubmitted.Format("15:04:05.000"), pushed["detail"].(map[string]any)["head_sha"], time.Since(resubmitted))
	var fresh herdTask
	select {
	case fresh = <-newRun:
	case <-time.After(time.Minute):
		t.Fatal("the resubmission's new head got no build")
	}
	if fresh.RunID == old.PipelineID || fresh.SHA == firstSHA {
		t.Fatalf("the new head's build %+v is of the old run %d or head %s", fresh, old.PipelineID, firstSHA)
	}
	t.Logf("the new head's build taken %v after the resubmission", time.Since(resubmitted))
	if time.Now().After(old.NotBefore) {
		t.Fatalf("the new head's run started after the old job was due (%s): the machine is too slow for this case's delay", old.NotBefore.Format(time.TimeOnly))
	}

	item = g.waitItem(id, "a decision on the old job", herderDecided(t, 1))
	decisions := herderDecisions(t, item)
	if len(decisions) != 1 {
		t.Fatalf("decisions %+v, want one", decisions)
	}
	d := decisions[0]
	if d.Outcome != mr.CIOutcomeOutdated || d.JobID != old.ID || d.PipelineID != old.PipelineID || d.At.Before(old.NotBefore) ||
		!strings.Contains(d.Why, fmt.Sprint(fresh.RunID)) {
		t.Errorf("decision %+v, want job %d outdated by run %d, no sooner than %s", d, old.ID, fresh.RunID, old.NotBefore.Format(time.TimeOnly))
	}
	job, err := g.build(old.PipelineID)
	if err != nil || job.ID != old.ID || job.Status != wq.CIJobFailed || job.Retries != 0 {
		t.Errorf("the old build on Gitea: %+v, %v; want it failed still, at attempt 1", job, err)
	}
	if n := len(buildTasks(g.taken())); n != 1 {
		t.Errorf("the runner finished %d build tasks, want the old one alone", n)
	}

	close(release)
	done := g.waitItem(id, "the item ends", func(it map[string]any) bool { return it["phase"] != "active" })
	if done["phase"] != "completed" || done["reason"] != mr.ReasonMerged || done["detail"].(map[string]any)["head_sha"] != fresh.SHA {
		t.Errorf("item %s/%s at %v, want completed/merged at the new head %s", done["phase"], done["reason"], done["detail"].(map[string]any)["head_sha"], fresh.SHA)
	}
	for _, task := range buildTasks(g.taken()) {
		if task.JobID == old.ID && task.Attempt > 1 {
			t.Errorf("the old build was rerun: %+v", task)
		}
	}
	t.Logf("old job %d of run %d due %s; decided %s: %s", old.ID, old.PipelineID, old.NotBefore.Format(time.TimeOnly), d.At.Format(time.TimeOnly), d.Why)
}
