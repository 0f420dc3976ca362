package mr_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/herder"
	"github.com/workqueue-dev/workqueue/mr"
)

// ciForge is the fake forge with CI jobs: pipelines of jobs (newest
// first, as the forges list them), their logs, and the newest pipeline
// of each commit. Its calls are counted with the fake's.
type ciForge struct {
	*fakeForge
	pipelines map[int64][]wq.CIJob
	traces    map[int64]string
	latest    map[string]int64
	nextJob   int64
	// duringRetry, when set, runs while the forge retries a job (the
	// retry's own webhooks arriving at once).
	duringRetry func()
	// notNow is how many retries to refuse as not possible yet, as
	// Gitea does while another job of the run still runs.
	notNow int
}

var _ wq.CIJobs = (*ciForge)(nil)

func (f *ciForge) PipelineJobs(_ context.Context, _ string, pipeline int64) ([]wq.CIJob, error) {
	defer f.call("PipelineJobs")()
	jobs, ok := f.pipelines[pipeline]
	if !ok {
		return nil, fakeError(wq.ForgeNotFound, 404, "pipeline jobs", "no such pipeline")
	}
	return append([]wq.CIJob(nil), jobs...), nil
}

func (f *ciForge) Job(_ context.Context, _ string, id int64) (*wq.CIJob, error) {
	defer f.call("Job")()
	for _, jobs := range f.pipelines {
		for _, j := range jobs {
			if j.ID == id {
				return &j, nil
			}
		}
	}
	return nil, fakeError(wq.ForgeNotFound, 404, "job", "no such job")
}

func (f *ciForge) LatestPipeline(_ context.Context, _, sha string) (int64, error) {
	defer f.call("LatestPipeline")()
	return f.latest[sha], nil
}

func (f *ciForge) JobTrace(_ context.Context, _ string, job int64, maxBytes int) ([]byte, error) {
	defer f.call("JobTrace")()
	t := f.traces[job]
	return []byte(t[max(len(t)-maxBytes, 0):]), nil
}

// RetryJob makes a new job of the same name, as GitLab does.
func (f *ciForge) RetryJob(_ context.Context, _ string, pipeline, job int64) (int64, error) {
	if f.duringRetry != nil {
		f.duringRetry()
	}
	defer f.call("RetryJob")()
	if f.notNow > 0 {
		f.notNow--
		return 0, fakeError(wq.ForgeUnprocessable, 400, "retry job", "this workflow run is not done")
	}
	jobs := f.pipelines[pipeline]
	for _, j := range jobs {
		if j.ID == job {
			if j.Status != wq.CIJobFailed {
				return 0, fakeError(wq.ForgePermanent, 403, "retry job", "Job is not retryable")
			}
			f.nextJob++
			again := wq.CIJob{ID: f.nextJob, PipelineID: pipeline, Name: j.Name, Status: wq.CIJobPending, Retries: j.Retries + 1}
			f.pipelines[pipeline] = append([]wq.CIJob{again}, jobs...)
			return again.ID, nil
		}
	}
	return 0, fakeError(wq.ForgeNotFound, 404, "retry job", "no such job")
}

// failJob makes a job of pipeline (the newest of sha) that failed at
// finished with log, and returns it.
func (f *ciForge) failJob(pipeline int64, sha, name, reason, log string, retries int, finished time.Time) wq.CIJob {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextJob++
	j := wq.CIJob{ID: f.nextJob, PipelineID: pipeline, Name: name, Status: wq.CIJobFailed, FailureReason: reason,
		Retries: retries, FinishedAt: finished}
	f.pipelines[pipeline] = append([]wq.CIJob{j}, f.pipelines[pipeline]...)
	f.traces[j.ID] = log
	if f.latest[sha] < pipeline {
		f.latest[sha] = pipeline
	}
	return j
}

// newCIHarness is a harness whose forge has CI jobs, with the herder's
// rules.
func newCIHarness(t *testing.T, rules string) (*harness, *ciForge) {
	t.Helper()
	r, err := herder.Parse([]byte(rules))
	if err != nil {
		t.Fatal(err)
	}
	hd, err := r.Compile()
	if err != nil {
		t.Fatal(err)
	}
	ff := newFakeForge()
	ci := &ciForge{fakeForge: ff, pipelines: map[int64][]wq.CIJob{}, traces: map[int64]string{}, latest: map[string]int64{}, nextJob: 100}
	h := newHarness(t, mr.Options{Herder: hd, Forges: map[string]wq.Forge{"fake": ci}})
	h.forge = ff
	return h, ci
}

const ciRules = `
matchers:
  - name: infra
    description: the runner, not the change
    retry_limit: 2
    retry_delays: [2m, 10m]
    matchers:
      - name: runner-system-failure
        failure_reason: runner_system_failure
      - name: runner-lost
        messages: ["ERROR: Job failed: runner system failure", "/fatal: unable to access '.*': Could not resolve host/"]
        tail_lines: 20
`

// jobEvent delivers GitLab's Job Hook for a failed job.
func (h *harness) jobEvent(id wq.ItemID, sha string, j wq.CIJob) {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"object_kind": "build", "build_id": j.ID, "build_name": j.Name, "build_status": "failed",
		"build_failure_reason": j.FailureReason, "build_finished_at": j.FinishedAt.Format("2006-01-02 15:04:05 UTC"),
		"retries_count": j.Retries, "pipeline_id": j.PipelineID, "sha": sha})
	h.event(id, gitlab.EventJob, string(body), fmt.Sprintf("job-%d-%d", j.ID, j.Retries))
}

func ciDecisions(t *testing.T, it *wq.Item) (wq.Dimension, mr.CIRetryDetail) {
	t.Helper()
	row := it.Dimensions[wq.DimensionKey{Dimension: mr.DimCIRetry}]
	var d mr.CIRetryDetail
	if len(row.Detail) > 0 {
		if err := json.Unmarshal(row.Detail, &d); err != nil {
			t.Fatal(err)
		}
	}
	return row, d
}

// A job that failed for a reason the rules call transient is retried
// once its delay has passed, not before, reading the job list once and
// the log only when a matcher needs it; the merge follows when CI passes.
func TestATransientJobFailureIsRetriedAfterItsDelayAndTheMergeFollows(t *testing.T) {
	h, ci := newCIHarness(t, ciRules)
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("a"))
	job := ci.failJob(7, d.HeadSHA, "build", "script_failure", "step 1\nERROR: Job failed: runner system failure\n", 0, h.clock.Now())
	h.jobEvent(it.ID, d.HeadSHA, job)

	row, _ := ciDecisions(t, mustItem(h, it.ID))
	if row.Status != wq.StatusTrue || !row.PendingUntil.Equal(job.FinishedAt.Add(2*time.Minute)) {
		t.Fatalf("needs_ci_retry %+v, want true until the first delay (2m) after the job finished", row)
	}
	h.advance(time.Minute, 30*time.Second)
	if n := h.forge.count("RetryJob"); n != 0 {
		t.Fatalf("retried %d times before the delay passed", n)
	}
	h.advance(90*time.Second, 30*time.Second)
	if n := h.forge.count("RetryJob"); n != 1 {
		t.Fatalf("retried %d times once the delay passed, want 1", n)
	}
	if lists, traces := h.forge.count("PipelineJobs"), h.forge.count("JobTrace"); lists != 1 || traces != 1 {
		t.Errorf("%d job lists and %d logs read, want one of each", lists, traces)
	}
	row, detail := ciDecisions(t, mustItem(h, it.ID))
	if row.Status != wq.StatusFalse || len(detail.Decisions) != 1 || detail.Decisions[0].Outcome != mr.CIOutcomeRetried ||
		detail.Decisions[0].Matcher != "infra/runner-lost" || detail.Decisions[0].NewJobID == 0 {
		t.Fatalf("after the retry: %+v %+v", row, detail)
	}
	h.forge.setBlocker(wq.MergeClear)
	h.event(it.ID, gitlab.EventPipeline, fmt.Sprintf(`{"object_kind":"pipeline","object_attributes":{"id":7,"sha":%q,"status":"success"}}`, d.HeadSHA), "p7")
	got, _ := h.get(it.ID)
	wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
}

// A failure no matcher recognises is not retried, its log is read only
// when some matcher's cheap checks hold, and the decision says why.
func TestAFailureNoMatcherRecognisesIsNotRetriedAndSaysWhy(t *testing.T) {
	h, ci := newCIHarness(t, ciRules)
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("a"))
	job := ci.failJob(7, d.HeadSHA, "test", "script_failure", "--- FAIL: TestParse (0.00s)\n", 0, h.clock.Now())
	h.jobEvent(it.ID, d.HeadSHA, job)
	h.advance(3*time.Minute, time.Minute)
	if n := h.forge.count("RetryJob"); n != 0 {
		t.Fatalf("a test failure was retried %d times", n)
	}
	_, detail := ciDecisions(t, mustItem(h, it.ID))
	if len(detail.Decisions) != 1 || detail.Decisions[0].Outcome != mr.CIOutcomeNoMatch || detail.Decisions[0].Why == "" {
		t.Fatalf("decisions %+v, want one no_match saying why", detail.Decisions)
	}
}

// The matcher's retry limit stops the retries: a job already retried as
// often as it allows is left failed.
func TestTheRetryLimitStopsRetrying(t *testing.T) {
	h, ci := newCIHarness(t, ciRules)
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("a"))
	job := ci.failJob(7, d.HeadSHA, "build", "runner_system_failure", "", 2, h.clock.Now())
	h.jobEvent(it.ID, d.HeadSHA, job)
	h.advance(15*time.Minute, time.Minute)
	if n := h.forge.count("RetryJob"); n != 0 {
		t.Fatalf("retried past the limit %d times", n)
	}
	if n := h.forge.count("JobTrace"); n != 0 {
		t.Errorf("read the log %d times though the failure reason settled it", n)
	}
	_, detail := ciDecisions(t, mustItem(h, it.ID))
	if len(detail.Decisions) != 1 || detail.Decisions[0].Outcome != mr.CIOutcomeLimit || !strings.Contains(detail.Decisions[0].Why, "limit") {
		t.Fatalf("decisions %+v, want the limit", detail.Decisions)
	}
}

// A newer pipeline of the head makes the old job's retry a no-op: no job
// list, no log, no retry.
func TestANewerPipelineMakesTheOldJobsRetryANoOp(t *testing.T) {
	h, ci := newCIHarness(t, ciRules)
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("a"))
	job := ci.failJob(7, d.HeadSHA, "build", "runner_system_failure", "", 0, h.clock.Now())
	h.jobEvent(it.ID, d.HeadSHA, job)
	ci.failJob(8, d.HeadSHA, "lint", "script_failure", "", 0, h.clock.Now()) // pipeline 8 is newer
	h.advance(3*time.Minute, time.Minute)
	if retries, lists := h.forge.count("RetryJob"), h.forge.count("PipelineJobs"); retries != 0 || lists != 0 {
		t.Fatalf("%d retries and %d job lists for an outdated pipeline", retries, lists)
	}
	_, detail := ciDecisions(t, mustItem(h, it.ID))
	if len(detail.Decisions) != 1 || detail.Decisions[0].Outcome != mr.CIOutcomeOutdated {
		t.Fatalf("decisions %+v, want outdated", detail.Decisions)
	}
}

// Two failed jobs of one pipeline due together cost one job list; a job
// another run of which already started is not retried again.
func TestJobsOfOnePipelineShareOneJobList(t *testing.T) {
	h, ci := newCIHarness(t, ciRules)
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("a"))
	a := ci.failJob(7, d.HeadSHA, "build", "runner_system_failure", "", 0, h.clock.Now())
	b := ci.failJob(7, d.HeadSHA, "deploy", "runner_system_failure", "", 0, h.clock.Now())
	c := ci.failJob(7, d.HeadSHA, "docs", "runner_system_failure", "", 0, h.clock.Now())
	ci.mu.Lock()
	ci.nextJob++
	ci.pipelines[7] = append([]wq.CIJob{{ID: ci.nextJob, PipelineID: 7, Name: "docs", Status: wq.CIJobRunning, Retries: 1}}, ci.pipelines[7]...)
	ci.mu.Unlock()
	for _, j := range []wq.CIJob{a, b, c} {
		h.jobEvent(it.ID, d.HeadSHA, j)
	}
	h.jobEvent(it.ID, d.HeadSHA, a) // told twice, recorded once
	h.advance(3*time.Minute, 3*time.Minute)
	if lists, retries := h.forge.count("PipelineJobs"), h.forge.count("RetryJob"); lists != 1 || retries != 2 {
		t.Fatalf("%d job lists and %d retries, want 1 and 2 (build, deploy)", lists, retries)
	}
	_, detail := ciDecisions(t, mustItem(h, it.ID))
	outcomes := map[string]string{}
	for _, dec := range detail.Decisions {
		outcomes[dec.Name] = dec.Outcome
	}
	want := map[string]string{"build": mr.CIOutcomeRetried, "deploy": mr.CIOutcomeRetried, "docs": mr.CIOutcomeOutdated}
	if fmt.Sprint(outcomes) != fmt.Sprint(want) || len(detail.Decisions) != 3 {
		t.Errorf("decisions %+v, want %v", detail.Decisions, want)
	}
}

// Without a herder, failed jobs are not recorded and nothing is retried.
func TestWithoutAHerderFailedJobsAreLeftAlone(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("a"))
	h.jobEvent(it.ID, d.HeadSHA, wq.CIJob{ID: 5, PipelineID: 7, Name: "build", FailureReason: "runner_system_failure", FinishedAt: h.clock.Now()})
	if _, ok := mustItem(h, it.ID).Dimensions[wq.DimensionKey{Dimension: mr.DimCIRetry}]; ok {
		t.Fatal("needs_ci_retry was written without a herder")
	}
}

func mustItem(h *harness, id wq.ItemID) *wq.Item {
	h.t.Helper()
	it, _ := h.get(id)
	return it
}

// A retry's own webhooks can arrive while retry_ci_jobs still runs, and
// supersede its write: the retry is recorded under the lease at once, so
// the next run decides it retried (not outdated) and retries nothing
// again.
func TestARetryWhoseDecisionWasSupersededIsRecordedOnce(t *testing.T) {
	h, ci := newCIHarness(t, ciRules)
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("a"))
	job := ci.failJob(7, d.HeadSHA, "build", "runner_system_failure", "", 0, h.clock.Now())
	h.jobEvent(it.ID, d.HeadSHA, job)
	ci.duringRetry = func() {
		ci.duringRetry = nil
		if _, err := h.store.InsertDelivery(h.ctx, "fake", "retry-hook", []wq.Event{{ItemID: it.ID, EventType: forge.EventType,
			Body: neutral(t, gitlab.EventPipeline, fmt.Sprintf(`{"object_kind":"pipeline","object_attributes":{"id":7,"sha":%q,"status":"running"}}`, d.HeadSHA))}},
			h.clock.Now()); err != nil {
			t.Error(err)
		}
	}
	h.advance(3*time.Minute, time.Minute)
	if n := h.forge.count("RetryJob"); n != 1 {
		t.Fatalf("%d retries, want 1", n)
	}
	_, detail := ciDecisions(t, mustItem(h, it.ID))
	if len(detail.Decisions) != 1 || detail.Decisions[0].Outcome != mr.CIOutcomeRetried || detail.Decisions[0].NewJobID == 0 || len(detail.Jobs) != 0 {
		t.Fatalf("decisions %+v, jobs %+v: want the retry recorded once", detail.Decisions, detail.Jobs)
	}
}

// A forge that cannot retry a job yet (Gitea while another job of its
// run still runs) leaves the job waiting, and it is retried later.
func TestAJobTheForgeCannotRetryYetWaitsAndIsRetriedLater(t *testing.T) {
	h, ci := newCIHarness(t, ciRules)
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("a"))
	job := ci.failJob(7, d.HeadSHA, "build", "runner_system_failure", "", 0, h.clock.Now())
	ci.notNow = 1
	h.jobEvent(it.ID, d.HeadSHA, job)
	h.advance(2*time.Minute, time.Minute)
	row, detail := ciDecisions(t, mustItem(h, it.ID))
	if h.forge.count("RetryJob") != 1 || len(detail.Decisions) != 0 || len(detail.Jobs) != 1 || row.Status != wq.StatusTrue {
		t.Fatalf("after a retry refused for now: %d retry calls, row %+v, detail %+v; want the job waiting", h.forge.count("RetryJob"), row, detail)
	}
	h.advance(time.Minute, 30*time.Second)
	_, detail = ciDecisions(t, mustItem(h, it.ID))
	if h.forge.count("RetryJob") != 2 || len(detail.Decisions) != 1 || detail.Decisions[0].Outcome != mr.CIOutcomeRetried {
		t.Fatalf("%d retry calls, decisions %+v; want the job retried once the forge could", h.forge.count("RetryJob"), detail.Decisions)
	}
}

// With webhooks lost, the bulk reconciliation reads the CI state of the
// item's head and tells it of the failed job as the job's event would
// have (issue 50): the herder retries it after its delay. The same run of
// the job is told once, however many sweeps (or instances) see it; a job
// allowed to fail, or that passed, is not told.
func TestTheBulkReconciliationTellsTheHerderOfAFailedJobNoWebhookToldOf(t *testing.T) {
	h, ci := newCIHarness(t, ciRules)
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("a"))
	job := ci.failJob(7, d.HeadSHA, "build", "runner_system_failure", "boom\n", 0, h.clock.Now())
	ci.failJob(7, d.HeadSHA, "lint", "script_failure", "", 0, h.clock.Now())
	ci.mu.Lock()
	ci.pipelines[7][0].AllowFailure = true // lint may fail
	ci.mu.Unlock()
	b := &mr.BulkReconciler{Store: h.store, Forges: map[string]wq.Forge{"fake": ci}, Events: h.store, Interval: time.Minute,
		Clock: h.clock, CI: true}
	for range 3 {
		if _, err := b.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
	}
	ev, _ := h.store.NextEvent(h.ctx, it.ID)
	if ev == nil || ev.EventType != mr.EventBulkCI {
		t.Fatalf("after three sweeps the item's next event is %+v, want one bulk_ci", ev)
	}
	h.settle()
	row, detail := ciDecisions(t, mustItem(h, it.ID))
	if row.Status != wq.StatusTrue || len(detail.Jobs) != 1 || detail.Jobs[0].ID != job.ID {
		t.Fatalf("needs_ci_retry after the sweeps: %+v %+v, want build (not lint) waiting once", row, detail)
	}
	h.advance(3*time.Minute, 30*time.Second)
	if n := h.forge.count("RetryJob"); n != 1 {
		t.Fatalf("retried %d times once the delay passed, want 1", n)
	}
	// The rerun is pending: a sweep now tells nothing.
	if woken, err := b.Sweep(h.ctx); err != nil || woken != 0 {
		t.Errorf("a sweep after the retry woke %d, %v; want none", woken, err)
	}

	// Without the herder (CI off), the sweep reads no CI.
	quiet := &mr.BulkReconciler{Store: h.store, Forges: map[string]wq.Forge{"fake": ci}, Events: h.store, Interval: time.Minute, Clock: h.clock}
	before := h.forge.count("LatestPipeline")
	quiet.Sweep(h.ctx)
	if n := h.forge.count("LatestPipeline") - before; n != 0 {
		t.Errorf("a sweep without CI read %d pipelines", n)
	}
}
