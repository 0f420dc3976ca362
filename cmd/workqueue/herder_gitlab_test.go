package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/mr/mrapi"
)

// The CI retry herder end to end on GitLab (issue 14): a whole serve,
// configured from YAML with a herder section, against the GitLab-shaped
// server, whose project merges only once the head pipeline succeeded and
// whose hook (made by EnsureWebhook, as `hooks ensure` makes it) delivers
// merge request, pipeline and job events to the service's /webhooks/lab.
// The test plays CI: it finishes the jobs GitLab makes. Reconcile and the
// empty check are an hour apart (a merge blocked on CI is rechecked with a
// backoff from 200ms), so the failed jobs reach the service by their Job
// Hooks and the merge follows the Pipeline Hook of success.
//
// The service reaches GitLab through a counting proxy (glCalls): the
// herder's forge calls (job lists, traces, retries, pipeline lookups) are
// counted per pipeline and per job at the HTTP level. The proxy answers a
// job retry only once the webhooks the retry set off were delivered, a
// real order of events fixed so that every run sees it.

const (
	glProject    = "g/p"
	glForge      = "lab"
	glHookSecret = "gl-herder-hook-secret"
	// glRunnerLog is the line the runner-log matcher looks for.
	glRunnerLog = "ERROR: Job failed: runner system failure"
	// glWait bounds each wait: a liveness bound on a loaded two-core
	// machine, not a performance goal.
	glWait = 60 * time.Second
)

// glMatchers are the matchers every test configures: GitLab's own
// failure_reason for a runner failure (no log needed), and the runner's
// log line for a failure GitLab could not classify (the log is read).
const glMatchers = `  matchers:
    - name: runner-system-failure
      description: the runner failed, not the job
      failure_reason: runner_system_failure
    - name: runner-log
      description: the runner said so in the log
      messages: [%q]
      tail_lines: 50
`

// glHerder is a herder section with glMatchers and extra top-level
// settings (retry_delays, retry_limit), each a YAML line.
func glHerder(settings ...string) string {
	var b strings.Builder
	b.WriteString("herder:\n")
	for _, s := range settings {
		b.WriteString("  " + s + "\n")
	}
	fmt.Fprintf(&b, glMatchers, glRunnerLog)
	return b.String()
}

// glCalls counts the requests the service makes to GitLab, by what they
// are: "jobs <pipeline>" (a pipeline's job list), "trace <job>",
// "retry <job>", "pipelines" (a pipeline search: LatestPipeline).
type glCalls struct {
	mu  sync.Mutex
	n   map[string]int
	all []string
}

var glCallKinds = []struct {
	method string
	re     *regexp.Regexp
	kind   string
}{
	{"GET", regexp.MustCompile(`/pipelines/(\d+)/jobs$`), "jobs"},
	{"GET", regexp.MustCompile(`/jobs/(\d+)/trace$`), "trace"},
	{"POST", regexp.MustCompile(`/jobs/(\d+)/retry$`), "retry"},
	{"GET", regexp.MustCompile(`/pipelines()$`), "pipelines"},
}

func (c *glCalls) record(r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, r.Method+" "+r.URL.RequestURI())
	for _, k := range glCallKinds {
		if m := k.re.FindStringSubmatch(r.URL.Path); m != nil && r.Method == k.method {
			c.n[strings.TrimSpace(k.kind+" "+m[1])]++
			return
		}
	}
}

// count is how many calls of key ("jobs 5003", "trace 70001") were made.
func (c *glCalls) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// total is how many calls of a kind ("retry") were made, whatever their id.
func (c *glCalls) total(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.n {
		if k == kind || strings.HasPrefix(k, kind+" ") {
			n += v
		}
	}
	return n
}

func (c *glCalls) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.n)
}

// glLog keeps the service's log, shown when a test fails.
type glLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *glLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *glLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *glLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	return s[max(len(s)-n, 0):]
}

// glWorld is a serve on the GitLab-shaped server.
type glWorld struct {
	t           *testing.T
	srv         *gitlabtest.Server
	base        string // the service
	read, write string // API tokens
	calls       *glCalls
	log         *glLog
	forge       *gitlab.Forge // the test's own client, straight to the server (not counted)
}

// glStart runs serve with herderYAML as its herder section, on a new
// project that only merges once its pipeline succeeded and whose every
// pipeline runs jobs, and points the project's hook at the service.
func glStart(t *testing.T, herderYAML string, jobs ...gitlabtest.JobSpec) *glWorld {
	t.Helper()
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	srv.CreateProject(glProject)
	srv.SetOnlyAllowMergeIfPipelineSucceeds(glProject, true)
	srv.SetPipelineJobs(glProject, jobs...)

	calls := &glCalls{n: map[string]int{}}
	target, _ := url.Parse(srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.record(r)
		if r.Method != "POST" || !strings.HasSuffix(r.URL.Path, "/retry") {
			proxy.ServeHTTP(w, r)
			return
		}
		// A retry's answer reaches the service after the Job and Pipeline
		// Hooks the retry set off: GitLab sends them at once, and nothing
		// orders them after the answer. Held here, the order is the same
		// on every run instead of a race the test sometimes loses.
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		srv.WaitForDeliveries()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(counting.Close)

	t.Setenv("WQ_TEST_GITLAB_TOKEN", srv.Token)
	t.Setenv("WQ_TEST_GL_HOOK_SECRET", glHookSecret)
	w := &glWorld{t: t, srv: srv, calls: calls}
	var readHash, writeHash string
	var err error
	if w.read, readHash, err = auth.NewToken(); err != nil {
		t.Fatal(err)
	}
	if w.write, writeHash, err = auth.NewToken(); err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf(`listen: 127.0.0.1:0
database: %q
handled_types: [mr]
processing: {sweep_interval: 100ms}
mr: {reconcile_interval: 1h, empty_check_interval: 1h, merge_recheck_interval: 200ms, note_min_interval: 200ms}
forges: [{name: %s, kind: gitlab, url: %q, token_env: WQ_TEST_GITLAB_TOKEN, webhook_secret_env: WQ_TEST_GL_HOOK_SECRET}]
projects: [{match: %q, forge: %s, auto_merge: true}]
auth:
  tokens:
    - {name: reader, sha256: %s, permissions: [read]}
    - {name: submitter, sha256: %s, permissions: [submit, read]}
%s`, "sqlite://"+filepath.Join(t.TempDir(), "wq.db"), glForge, counting.URL, glProject, glForge, readHash, writeHash, herderYAML)
	cfg, err := config.Parse(strings.NewReader(doc), assemble().known())
	if err != nil {
		t.Fatalf("config: %v\n%s", err, doc)
	}
	if !cfg.Herder.Enabled() {
		t.Fatalf("the herder section did not configure a herder:\n%s", doc)
	}
	log := &glLog{}
	w.log = log
	m := NewMain(cfg, slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		if t.Failed() {
			t.Logf("forge calls: %v\nservice log (tail):\n%s", calls, log.tail(8000))
		}
	})
	w.base = "http://" + m.Addr()

	if w.forge, err = gitlab.New(srv.URL, srv.Token, gitlab.Options{}); err != nil {
		t.Fatal(err)
	}
	outcome, err := w.forge.EnsureWebhook(context.Background(), glProject, w.base+"/webhooks/"+glForge, glHookSecret)
	if err != nil || outcome != wq.WebhookCreated {
		t.Fatalf("the project's hook: %v %v", outcome, err)
	}
	return w
}

// glDo calls the service's API.
func (w *glWorld) glDo(method, path, token string, body any) (int, []byte) {
	w.t.Helper()
	var r *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	} else {
		r = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, w.base+path, r)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

// glSubmit submits (or resubmits) a change that writes file on branch,
// and returns the item's id and the submission's result.
func (w *glWorld) glSubmit(branch, file, content string) (string, string) {
	w.t.Helper()
	status, body := w.glDo("POST", "/api/v1/items", w.write, map[string]any{"item_type": "mr", "forge": glForge,
		"project": glProject, "source_branch": branch, "target_branch": "main", "title": "Herded change",
		"file_actions": []map[string]any{{"action": "create", "file_path": file, "content": content}}})
	var out struct {
		ID     string `json:"id"`
		Result string `json:"result"`
	}
	if err := json.Unmarshal(body, &out); err != nil || status >= 300 || out.ID == "" {
		w.t.Fatalf("submit: %d %s", status, body)
	}
	return out.ID, out.Result
}

// glView is an item as the API shows it, with its mr detail and its
// needs_ci_retry row read.
type glView struct {
	api.Item
	MR      mrapi.Detail
	CI      mr.CIRetryDetail
	CIRow   *api.Dimension // nil: no job failed yet
	rawJSON string
}

func (v glView) String() string { return v.rawJSON }

func (w *glWorld) glItem(id string) glView {
	w.t.Helper()
	status, body := w.glDo("GET", "/api/v1/items/"+id, w.read, nil)
	if status != http.StatusOK {
		w.t.Fatalf("GET item: %d %s", status, body)
	}
	v := glView{rawJSON: string(body)}
	if err := json.Unmarshal(body, &v.Item); err != nil {
		w.t.Fatal(err)
	}
	if len(v.Detail) > 0 {
		if err := json.Unmarshal(v.Detail, &v.MR); err != nil {
			w.t.Fatal(err)
		}
	}
	for i, d := range v.Dimensions {
		if d.Dimension == mr.DimCIRetry {
			v.CIRow = &v.Dimensions[i]
			if err := json.Unmarshal(d.Detail, &v.CI); err != nil {
				w.t.Fatalf("needs_ci_retry detail: %v: %s", err, d.Detail)
			}
		}
	}
	return v
}

// glWaitItem polls the item until cond holds.
func (w *glWorld) glWaitItem(id, what string, cond func(glView) bool) glView {
	w.t.Helper()
	return eventually.Value(w.t, glWait, what, func() (glView, bool) {
		v := w.glItem(id)
		return v, cond(v)
	})
}

// glDecided is a condition: the item's needs_ci_retry holds n decisions.
func glDecided(n int) func(glView) bool {
	return func(v glView) bool { return len(v.CI.Decisions) >= n }
}

// glHeadPipeline waits until the item's merge request exists and the
// head it pushed has a pipeline, and returns the view and the newest
// pipeline of its head.
func (w *glWorld) glHeadPipeline(id string, notHead string) (glView, int64) {
	w.t.Helper()
	v := w.glWaitItem(id, "the merge request and the pipeline of its head", func(v glView) bool {
		return v.MR.MRIID != 0 && v.MR.HeadSHA != "" && v.MR.HeadSHA != notHead && len(w.srv.Pipelines(glProject, v.MR.HeadSHA)) > 0
	})
	return v, w.srv.Pipelines(glProject, v.MR.HeadSHA)[0]
}

// glJobNamed returns the latest run of name in the pipeline.
func (w *glWorld) glJobNamed(pipeline int64, name string) gitlabtest.Job {
	w.t.Helper()
	for _, j := range w.srv.PipelineJobs(glProject, pipeline) { // newest first
		if j.Name == name {
			return j
		}
	}
	w.t.Fatalf("pipeline %d has no job %s: %+v", pipeline, name, w.srv.PipelineJobs(glProject, pipeline))
	return gitlabtest.Job{}
}

// glWaitRetried waits until job has been retried in its pipeline, and
// returns the new run and when the test first saw it.
func (w *glWorld) glWaitRetried(pipeline int64, job gitlabtest.Job) (gitlabtest.Job, time.Time) {
	w.t.Helper()
	n := eventually.Value(w.t, glWait, fmt.Sprintf("a new run of job %s (%d)", job.Name, job.ID), func() (gitlabtest.Job, bool) {
		for _, j := range w.srv.PipelineJobs(glProject, pipeline) {
			if j.Name == job.Name && j.ID > job.ID && !j.Retried {
				return j, true
			}
		}
		return gitlabtest.Job{}, false
	})
	return n, time.Now()
}

type glNote struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
}

// glNotes reads the merge request's notes from GitLab's REST API.
func (w *glWorld) glNotes(iid int64) []glNote {
	w.t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v4/projects/%s/merge_requests/%d/notes?per_page=100", w.srv.URL,
		url.PathEscape(glProject), iid), nil)
	req.Header.Set("PRIVATE-TOKEN", w.srv.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var notes []glNote
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&notes) != nil {
		w.t.Fatalf("GET notes: %d", resp.StatusCode)
	}
	return notes
}

// glWaitNote waits until the merge request has exactly one note (the
// status note) and cond holds of its body.
func (w *glWorld) glWaitNote(iid int64, what string, cond func(string) bool) glNote {
	w.t.Helper()
	return eventually.Value(w.t, glWait, what, func() (glNote, bool) {
		notes := w.glNotes(iid)
		if len(notes) != 1 {
			return glNote{Body: fmt.Sprintf("%d notes: %+v", len(notes), notes)}, false
		}
		return notes[0], cond(notes[0].Body)
	})
}

// glRuns is how many retry_ci_jobs runs the service made, from its
// audit log: those whose write was applied (an action entry) and those
// whose write was dropped because newer work arrived meanwhile
// (write_superseded). Decisions alone cannot tell: a dropped run leaves
// none.
// glRunsAfter is glRuns once at least one run's action is logged: the
// audit line follows the run's write, which the test may see first.
func (w *glWorld) glRunsAfter() (applied, superseded int) {
	w.t.Helper()
	eventually.True(w.t, glWait, "a retry_ci_jobs run in the audit log", func() (bool, any) {
		applied, superseded = w.glRuns()
		return applied > 0, w.log.all()
	})
	return applied, superseded
}

func (w *glWorld) glRuns() (applied, superseded int) {
	for _, line := range strings.Split(w.log.all(), "\n") {
		if !strings.Contains(line, "action:retry_ci_jobs") {
			continue
		}
		switch {
		case strings.Contains(line, "event_type=action "):
			applied++
		case strings.Contains(line, "event_type=write_superseded "):
			superseded++
		}
	}
	return applied, superseded
}

// glCheckRetried reports a decision that should say retried and does
// not; when the forge was asked to retry the job anyway, it says how the
// decision was lost.
func (w *glWorld) glCheckRetried(d mr.CIDecision) {
	w.t.Helper()
	if d.Outcome == mr.CIOutcomeRetried && d.NewJobID != 0 {
		return
	}
	msg := fmt.Sprintf("decision for job %s (%d) is %+v, want retried", d.Name, d.JobID, d)
	if n := w.calls.count(fmt.Sprintf("retry %d", d.JobID)); n > 0 {
		applied, superseded := w.glRuns()
		msg += fmt.Sprintf("; yet the service did retry it at GitLab (%d POST …/jobs/%d/retry): the run that retried it lost its write "+
			"(retry_ci_jobs runs: %d applied, %d superseded by newer work, i.e. the Job and Pipeline Hooks of its own retry), "+
			"and a later run found the new run and decided %s", n, d.JobID, applied, superseded, d.Outcome)
	}
	w.t.Error(msg)
}

// glEarlyOfSecond waits, if need be, until the wall clock is early in a
// second, so that jobs finished next share the Job Hook's
// second-precision build_finished_at (and so their not_before). A
// scheduling wait, not an assertion.
func glEarlyOfSecond() {
	if ns := time.Duration(time.Now().Nanosecond()); ns > 500*time.Millisecond {
		time.Sleep(time.Second - ns + 20*time.Millisecond)
	}
}

// TestHerderOnGitLabRetriesTransientFailuresAfterTheirDelayAndMerges: two
// jobs of an auto-merge merge request's pipeline fail in the same second,
// build with GitLab's runner_system_failure and test with the runner's
// log line: after the 2s delay (not before it, less the fraction of a
// second the Job Hook's time drops), the service retries each once, with
// one job list of the pipeline per retry_ci_jobs run, reading test's log
// and never build's, and records both as retried; CI passes the new runs
// and the item is merged with no human step.
func TestHerderOnGitLabRetriesTransientFailuresAfterTheirDelayAndMerges(t *testing.T) {
	const delay = 2 * time.Second
	w := glStart(t, glHerder("retry_delays: [2s]"),
		gitlabtest.JobSpec{Name: "build", Stage: "build"}, gitlabtest.JobSpec{Name: "test", Stage: "test"})
	id, _ := w.glSubmit("workqueue/herder-retry", "retry.txt", "retry me\n")
	v, pipeline := w.glHeadPipeline(id, "")
	build, test := w.glJobNamed(pipeline, "build"), w.glJobNamed(pipeline, "test")
	w.srv.StartJob(glProject, build.ID)
	w.srv.StartJob(glProject, test.ID)

	glEarlyOfSecond()
	failed := time.Now()
	w.srv.FinishJob(glProject, build.ID, "failed", "runner_system_failure", "Preparing the docker executor\nsomething the herder never reads\n")
	w.srv.FinishJob(glProject, test.ID, "failed", "unknown_failure", "Running tests\n"+glRunnerLog+"\n")

	// Both are recorded, to be retried once their delay has passed.
	v = w.glWaitItem(id, "both failed jobs recorded", func(v glView) bool { return len(v.CI.Jobs) == 2 })
	if v.CIRow.Status != wq.StatusTrue || v.CIRow.PendingUntil == nil {
		t.Fatalf("needs_ci_retry with two jobs waiting: %+v", *v.CIRow)
	}
	notBefore := v.CI.Jobs[0].NotBefore
	for _, j := range v.CI.Jobs {
		if !j.NotBefore.Equal(j.FinishedAt.Add(delay)) || j.NotBefore.Before(failed.Add(delay-time.Second)) || j.NotBefore.After(failed.Add(delay)) {
			t.Errorf("job %s: not_before %v, finished %v; want the finish (as the hook tells it, to the second) plus %v, around %v",
				j.Name, j.NotBefore, j.FinishedAt, delay, failed.Add(delay))
		}
		if j.NotBefore.Before(notBefore) {
			notBefore = j.NotBefore
		}
	}
	if !v.CIRow.PendingUntil.Equal(notBefore) {
		t.Errorf("needs_ci_retry pending_until %v, want the earliest not_before %v", v.CIRow.PendingUntil, notBefore)
	}

	newBuild, seenBuild := w.glWaitRetried(pipeline, build)
	newTest, seenTest := w.glWaitRetried(pipeline, test)
	for _, seen := range []time.Time{seenBuild, seenTest} {
		if seen.Before(notBefore) || seen.Sub(failed) < delay-time.Second {
			t.Errorf("retried %v after the failure, before its not_before %v (delay %v)", seen.Sub(failed), notBefore, delay)
		}
		if seen.Sub(failed) > delay+20*time.Second {
			t.Errorf("retried %v after the failure; the delay is %v", seen.Sub(failed), delay)
		}
	}
	t.Logf("retries seen %v and %v after the failures (delay %v)", seenBuild.Sub(failed), seenTest.Sub(failed), delay)

	v = w.glWaitItem(id, "both decisions recorded", glDecided(2))
	if len(v.CI.Jobs) != 0 || v.CIRow.Status != wq.StatusFalse {
		t.Errorf("after the retries needs_ci_retry still waits: %+v %+v", v.CI.Jobs, *v.CIRow)
	}
	// What GitLab saw: each job retried once, and only test's log read
	// (build's matcher needs only failure_reason).
	if b, tr := w.calls.count(fmt.Sprintf("retry %d", build.ID)), w.calls.count(fmt.Sprintf("retry %d", test.ID)); b != 1 || tr != 1 || w.calls.total("retry") != 2 {
		t.Errorf("retries: build %d, test %d, all %d; want one each", b, tr, w.calls.total("retry"))
	}
	if got := w.calls.count(fmt.Sprintf("trace %d", build.ID)); got != 0 {
		t.Errorf("build's log read %d times; its matcher needs only failure_reason", got)
	}
	if got := w.calls.count(fmt.Sprintf("trace %d", test.ID)); got != 1 {
		t.Errorf("test's log read %d times, want once", got)
	}
	// At most one job list of the pipeline per retry_ci_jobs run, whatever
	// became of the run's write (a run after a superseded one decides the
	// recorded retries without listing), and at least one.
	applied, superseded := w.glRunsAfter()
	if got := w.calls.count(fmt.Sprintf("jobs %d", pipeline)); got < 1 || got > applied+superseded {
		t.Errorf("%d job lists of pipeline %d for %d+%d retry_ci_jobs runs, want one per run at most (calls %v)", got, pipeline, applied, superseded, w.calls)
	}
	t.Logf("retry_ci_jobs runs: %d applied, %d superseded; forge calls %v", applied, superseded, w.calls)

	// What the service recorded: both retried, by their matchers, with
	// the new runs' ids.
	byName := map[string]mr.CIDecision{}
	for _, d := range v.CI.Decisions {
		byName[d.Name] = d
		if d.At.Before(notBefore) {
			t.Errorf("decision %+v made before the jobs' not_before %v", d, notBefore)
		}
		w.glCheckRetried(d)
	}
	if d := byName["build"]; d.Outcome == mr.CIOutcomeRetried && (d.Matcher != "runner-system-failure" || d.JobID != build.ID || d.NewJobID != newBuild.ID) {
		t.Errorf("build's decision %+v: want matcher runner-system-failure, job %d → %d", d, build.ID, newBuild.ID)
	}
	if d := byName["test"]; d.Outcome == mr.CIOutcomeRetried && (d.Matcher != "runner-log" || d.JobID != test.ID || d.NewJobID != newTest.ID || !strings.Contains(d.Why, glRunnerLog)) {
		t.Errorf("test's decision %+v: want matcher runner-log, job %d → %d, the log line in why", d, test.ID, newTest.ID)
	}

	// CI passes the new runs: the pipeline succeeds and the item merges.
	if st := w.srv.PipelineStatus(glProject, pipeline); st != "running" && st != "pending" {
		t.Errorf("pipeline %d is %s with its jobs retried, want active again", pipeline, st)
	}
	w.srv.FinishJob(glProject, newBuild.ID, "success", "", "ok\n")
	w.srv.FinishJob(glProject, newTest.ID, "success", "", "ok\n")
	v = w.glWaitItem(id, "the merge", func(v glView) bool { return v.Phase != wq.PhaseActive })
	if v.Phase != wq.PhaseCompleted || v.Reason != mr.ReasonMerged {
		t.Fatalf("after CI passed the retried jobs: %s/%s, want completed/merged (error %q)", v.Phase, v.Reason, v.Error)
	}
	got, err := w.forge.GetMergeRequest(context.Background(), glProject, v.MR.MRIID)
	if err != nil || got.State != wq.MergeRequestMerged {
		t.Errorf("the merge request on GitLab: %+v %v, want merged", got, err)
	}
	if notes := w.glNotes(v.MR.MRIID); len(notes) != 1 {
		t.Errorf("%d notes on the merge request, want the one status note: %+v", len(notes), notes)
	}
}

// TestHerderOnGitLabDoesNotRetryAnUnrecognisedFailureAndTheNoteSaysWhy: a
// test failure no matcher knows is decided after its delay with one job
// list and one log read, not retried (no new job, no retry call), the
// item stays active, and the status note, the same note edited, says
// no_match and why.
func TestHerderOnGitLabDoesNotRetryAnUnrecognisedFailureAndTheNoteSaysWhy(t *testing.T) {
	w := glStart(t, glHerder("retry_delays: [1s]"), gitlabtest.JobSpec{Name: "build", Stage: "build"})
	id, _ := w.glSubmit("workqueue/herder-nomatch", "nomatch.txt", "no match\n")
	v, pipeline := w.glHeadPipeline(id, "")
	first := w.glWaitNote(v.MR.MRIID, "the status note", func(string) bool { return true })

	build := w.glJobNamed(pipeline, "build")
	glEarlyOfSecond() // the 1s delay is not eaten by the hook's dropped fraction of a second
	w.srv.FinishJob(glProject, build.ID, "failed", "script_failure", "=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\nFAIL\n")
	v = w.glWaitItem(id, "the decision", glDecided(1))
	d := v.CI.Decisions[0]
	if d.Outcome != mr.CIOutcomeNoMatch || d.JobID != build.ID || d.NewJobID != 0 || d.Matcher != "" {
		t.Fatalf("decision %+v, want no_match for job %d", d, build.ID)
	}
	for _, part := range []string{"runner-system-failure", "script_failure", "runner-log", "messages occur"} {
		if !strings.Contains(d.Why, part) {
			t.Errorf("why %q does not say %q", d.Why, part)
		}
	}
	if v.Phase != wq.PhaseActive || len(v.CI.Jobs) != 0 || v.CIRow.Status != wq.StatusFalse {
		t.Errorf("after no_match: phase %s, waiting jobs %+v, needs_ci_retry %s; want active and nothing waiting", v.Phase, v.CI.Jobs, v.CIRow.Status)
	}
	jobs := w.srv.PipelineJobs(glProject, pipeline)
	if len(jobs) != 1 || jobs[0].Status != "failed" || jobs[0].Retried {
		t.Errorf("pipeline %d's jobs %+v, want the one failed job, not retried", pipeline, jobs)
	}
	// Per retry_ci_jobs run, one job list and, the cheap checks passing,
	// one log read; one run decided (a run that lost its write to a
	// webhook arriving meanwhile is made again).
	applied, superseded := w.glRunsAfter()
	lists, traces := w.calls.count(fmt.Sprintf("jobs %d", pipeline)), w.calls.count(fmt.Sprintf("trace %d", build.ID))
	if w.calls.total("retry") != 0 || applied != 1 || lists != applied+superseded || traces != lists {
		t.Errorf("forge calls %v for %d+%d retry_ci_jobs runs: want no retry, and one job list and one log read per run", w.calls, applied, superseded)
	}

	// The note: the same one, edited to say what was decided and why.
	want := fmt.Sprintf("| CI retries | 0 made; last: job build (%d) no_match: %s |", build.ID, d.Why)
	note := w.glWaitNote(v.MR.MRIID, "the note saying no_match", func(body string) bool { return strings.Contains(body, want) })
	if note.ID != first.ID {
		t.Errorf("the status note is note %d, was %d: posted again, not edited", note.ID, first.ID)
	}
	if v = w.glItem(id); v.Phase != wq.PhaseActive {
		t.Errorf("the item is %s/%s, want active: a failed pipeline waits for a person", v.Phase, v.Reason)
	}
	t.Logf("note:\n%s", note.Body)
}

// TestHerderOnGitLabStopsAtTheRetryLimit: with retry_limit 1, a job that
// fails with the runner's log line is retried once; its new run fails the
// same way and is not retried: the decision says limit, one retry call in
// all, each run's log read once, one job list per run.
func TestHerderOnGitLabStopsAtTheRetryLimit(t *testing.T) {
	w := glStart(t, glHerder("retry_delays: [1s]", "retry_limit: 1"), gitlabtest.JobSpec{Name: "build", Stage: "build"})
	id, _ := w.glSubmit("workqueue/herder-limit", "limit.txt", "limit\n")
	v, pipeline := w.glHeadPipeline(id, "")

	build := w.glJobNamed(pipeline, "build")
	w.srv.FinishJob(glProject, build.ID, "failed", "unknown_failure", "step 1\n"+glRunnerLog+"\n")
	again, _ := w.glWaitRetried(pipeline, build)
	w.srv.FinishJob(glProject, again.ID, "failed", "unknown_failure", "step 1\n"+glRunnerLog+"\n")

	v = w.glWaitItem(id, "two decisions", glDecided(2))
	first, last := v.CI.Decisions[0], v.CI.Decisions[len(v.CI.Decisions)-1]
	if last.Outcome != mr.CIOutcomeLimit || last.JobID != again.ID || last.Matcher != "runner-log" || !strings.Contains(last.Why, "the limit is 1") {
		t.Errorf("last decision %+v, want limit for job %d by runner-log, the limit in why", last, again.ID)
	}
	if len(v.CI.Jobs) != 0 || v.CIRow.Status != wq.StatusFalse || v.Phase != wq.PhaseActive {
		t.Errorf("after the limit: waiting %+v, needs_ci_retry %s, phase %s; want nothing waiting, active", v.CI.Jobs, v.CIRow.Status, v.Phase)
	}
	jobs := w.srv.PipelineJobs(glProject, pipeline)
	if len(jobs) != 2 || jobs[0].ID != again.ID || jobs[0].Retried || jobs[0].Status != "failed" || !jobs[1].Retried {
		t.Errorf("pipeline %d's jobs %+v, want the first run retried and the second failed, no third", pipeline, jobs)
	}
	if n := w.calls.total("retry"); n != 1 {
		t.Errorf("%d retry calls, want exactly one", n)
	}
	// At most one job list per retry_ci_jobs run; each job's log read (its
	// matcher looks at logs) at most once per run, and at least once.
	applied, superseded := w.glRunsAfter()
	if got := w.calls.count(fmt.Sprintf("jobs %d", pipeline)); got < 1 || got > applied+superseded {
		t.Errorf("%d job lists for %d+%d retry_ci_jobs runs, want one per run at most", got, applied, superseded)
	}
	a, b := w.calls.count(fmt.Sprintf("trace %d", build.ID)), w.calls.count(fmt.Sprintf("trace %d", again.ID))
	if a < 1 || b < 1 || a+b > applied+superseded {
		t.Errorf("logs read: first run %d, second run %d, for %d+%d retry_ci_jobs runs; want each read, once a run at most", a, b, applied, superseded)
	}
	if a+b > 2 {
		t.Logf("logs read %d times for two failed runs: the runs whose writes were superseded read them again", a+b)
	}
	t.Logf("retry_ci_jobs runs: %d applied, %d superseded; forge calls %v", applied, superseded, w.calls)
	// The decisions: the first run retried, the second hit the limit.
	if len(v.CI.Decisions) != 2 {
		t.Errorf("decisions %+v, want two: retried, then limit", v.CI.Decisions)
	}
	if first.JobID == build.ID {
		w.glCheckRetried(first)
	} else {
		t.Errorf("first decision %+v, want job %d's", first, build.ID)
	}
	note := w.glWaitNote(v.MR.MRIID, "the note saying limit", func(body string) bool {
		return strings.Contains(body, fmt.Sprintf("last: job build (%d) limit: ", again.ID))
	})
	if want := "| CI retries | 1 made; "; !strings.Contains(note.Body, want) {
		t.Errorf("the note does not say %q:\n%s", want, note.Body)
	}
}

// TestHerderOnGitLabANewerPipelineMakesTheOldRetryANoOp: a job fails with
// runner_system_failure and waits its 3s delay; meanwhile the change is
// resubmitted with new content, so the head, and its pipeline, is new.
// When the old job's delay passes it is not retried: the decision says
// outdated, made on the pipeline alone (no job list, no log, no retry).
func TestHerderOnGitLabANewerPipelineMakesTheOldRetryANoOp(t *testing.T) {
	w := glStart(t, glHerder("retry_delays: [3s]"), gitlabtest.JobSpec{Name: "build", Stage: "build"})
	const branch = "workqueue/herder-outdated"
	id, _ := w.glSubmit(branch, "outdated.txt", "first\n")
	v, oldPipeline := w.glHeadPipeline(id, "")
	oldHead := v.MR.HeadSHA

	build := w.glJobNamed(oldPipeline, "build")
	w.srv.FinishJob(glProject, build.ID, "failed", "runner_system_failure", "")
	v = w.glWaitItem(id, "the failed job recorded", func(v glView) bool { return len(v.CI.Jobs) == 1 })
	notBefore := v.CI.Jobs[0].NotBefore

	if _, result := w.glSubmit(branch, "outdated.txt", "second\n"); result != "updated" {
		t.Fatalf("resubmission: %s, want updated", result)
	}
	v, newPipeline := w.glHeadPipeline(id, oldHead)
	if now := time.Now(); !now.Before(notBefore) {
		t.Fatalf("the new head %s and pipeline %d came at %v, after the old job's not_before %v: the test's premise failed (slow machine?)",
			v.MR.HeadSHA, newPipeline, now, notBefore)
	}

	v = w.glWaitItem(id, "the old job's decision", glDecided(1))
	d := v.CI.Decisions[0]
	if d.Outcome != mr.CIOutcomeOutdated || d.JobID != build.ID || d.PipelineID != oldPipeline || d.NewJobID != 0 {
		t.Fatalf("decision %+v, want outdated for job %d of pipeline %d", d, build.ID, oldPipeline)
	}
	if !strings.Contains(d.Why, fmt.Sprint(newPipeline)) || d.At.Before(notBefore) {
		t.Errorf("decision %+v: want it made at or after %v, naming the newer pipeline %d", d, notBefore, newPipeline)
	}
	jobs := w.srv.PipelineJobs(glProject, oldPipeline)
	if len(jobs) != 1 || jobs[0].Retried {
		t.Errorf("the old pipeline's jobs %+v, want the failed job alone, not retried", jobs)
	}
	if w.calls.total("retry") != 0 || w.calls.total("trace") != 0 || w.calls.total("jobs") != 0 {
		t.Errorf("forge calls %v: an outdated pipeline needs no job list, log or retry", w.calls)
	}
	if len(v.CI.Jobs) != 0 || v.Phase != wq.PhaseActive {
		t.Errorf("after outdated: waiting %+v, phase %s", v.CI.Jobs, v.Phase)
	}
}
