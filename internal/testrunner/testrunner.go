// Package testrunner is a Gitea Actions runner for tests: it takes the
// jobs of the test Gitea (scripts/gitea, Actions enabled) over Gitea's
// public runner protocol, as act_runner does, but runs nothing. A test
// scripts each job's outcome, its log lines and its result, so that CI
// failures, logs and reruns can be produced on a real Gitea without
// containers.
//
// The protocol (code.gitea.io/actions-proto-go, Connect RPC under
// {gitea}/api/actions), step by step:
//
//  1. A registration token comes from the REST API with the admin token:
//     POST /api/v1/repos/{owner}/{repo}/actions/runners/registration-token
//     for a runner of one repository (what Start makes, so that tests that
//     share a Gitea do not take each other's jobs), or POST
//     /api/v1/admin/actions/runners/registration-token for one of the
//     whole instance. Both answer {"token": ...}.
//  2. ping.v1.PingService/Ping checks that the runner endpoint answers.
//  3. runner.v1.RunnerService/Register with the token, a name and the
//     labels (e.g. "ubuntu-latest"; a job runs on a runner that has all
//     its runs-on labels) answers the runner's uuid and its own token.
//     Every later call carries them in the headers x-runner-uuid and
//     x-runner-token.
//  4. Declare states the runner's version and labels again (act_runner
//     does on every start).
//  5. FetchTask is polled. It carries tasks_version, the version of the
//     runner's scope that the last answer gave: Gitea looks for a waiting
//     job only when the runner's version is older, and every job that
//     starts waiting bumps it. After a task the version is reset to 0, so
//     that the next poll looks again. A task carries its id (one per
//     attempt of a job), the job's expanded workflow (one job) and the
//     github context: "job" (the job's key), "run_id", "run_attempt",
//     "repository", "sha", and gitea_runtime_token, a JWT whose claims
//     name the job's numeric id (JobID), which the REST API uses.
//     Fetching the task moves the job to running and makes the attempt.
//  6. UpdateLog appends log rows: index is the number of the first row
//     sent, Gitea answers ack_index (the rows it holds) and ignores rows it
//     already has; no_more on the last call moves the log from the
//     database to storage, after which it cannot grow.
//  7. UpdateTask with a result (success, failure, cancelled, skipped) and
//     stopped_at finishes the task and its job (stopped_at becomes the
//     job's completed_at). Step states say which log rows belong to which
//     step; this runner puts every row in the first step.
//
// Stopping the runner (Start's cleanup) cancels the task it is running,
// reporting it cancelled, and deletes the runner through the REST API
// (DELETE …/actions/runners/{id}).
package testrunner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	pingv1 "code.gitea.io/actions-proto-go/ping/v1"
	"code.gitea.io/actions-proto-go/ping/v1/pingv1connect"
	runnerv1 "code.gitea.io/actions-proto-go/runner/v1"
	"code.gitea.io/actions-proto-go/runner/v1/runnerv1connect"
	"connectrpc.com/connect"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Version is the runner version the runner declares.
const Version = "workqueue-testrunner"

// Task is one job Gitea handed to the runner.
type Task struct {
	ID      int64  // the task: one per attempt of a job
	JobID   int64  // the job's id in the REST API (…/actions/jobs/{id})
	Job     string // the job's key in the workflow ("build")
	Name    string // the job's name: its name: field, else its key
	RunID   int64  // the workflow run (the REST API's run id)
	Attempt int64  // 1 for the first run of the job, 2 for its first rerun, ...
	Repo    string // owner/name
	SHA     string // the commit the run is for
	// Payload is the job's workflow as Gitea expanded it: YAML with one
	// job under jobs.
	Payload []byte
	// Context is the github context Gitea sent (strings, mostly).
	Context map[string]any

	log *logSender
}

// Log sends lines to the job's log at once, before the outcome's: a
// script that holds its job running can show progress.
func (t Task) Log(ctx context.Context, lines ...string) error {
	return t.log.send(ctx, lines, false)
}

// Result is how a task ends.
type Result int

// The results a script can give.
const (
	Success Result = iota
	Failure
	Cancelled
	Skipped
)

func (r Result) proto() runnerv1.Result {
	switch r {
	case Failure:
		return runnerv1.Result_RESULT_FAILURE
	case Cancelled:
		return runnerv1.Result_RESULT_CANCELLED
	case Skipped:
		return runnerv1.Result_RESULT_SKIPPED
	}
	return runnerv1.Result_RESULT_SUCCESS
}

// Outcome is what a script makes of a task: the log lines to append and
// the result.
type Outcome struct {
	Log    []string
	Result Result
}

// Script decides a task's outcome. It runs while the job is running:
// a script that blocks keeps the job running until it returns or ctx,
// which ends when the runner stops, is done. Tasks are run one at a time.
type Script func(ctx context.Context, t Task) Outcome

// Config is what a runner needs.
type Config struct {
	URL   string // the Gitea, http://host:port
	Token string // an API token that may make registration tokens: the admin's for an instance runner
	// Repo is owner/name for a runner of that repository only; "" for
	// a runner of the whole instance.
	Repo string
	// Name is the runner's name; "" for "testrunner".
	Name string
	// Labels are the runner's labels; none for "ubuntu-latest".
	Labels []string
	Script Script
	// Poll is the wait between two FetchTask calls that found nothing;
	// 0 for 100 ms.
	Poll       time.Duration
	HTTPClient *http.Client // nil for a client of its own
}

// Runner is a registered runner.
type Runner struct {
	cfg    Config
	id     int64
	uuid   string
	token  string
	client runnerv1connect.RunnerServiceClient
}

// Register makes a runner on the Gitea of cfg: a registration token
// through the REST API, a ping, Register and Declare. The runner takes
// no task until Run.
func Register(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.Script == nil {
		return nil, errors.New("testrunner: no script")
	}
	if cfg.Name == "" {
		cfg.Name = "testrunner"
	}
	if len(cfg.Labels) == 0 {
		cfg.Labels = []string{"ubuntu-latest"}
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 100 * time.Millisecond
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	var tok struct {
		Token string `json:"token"`
	}
	if err := restCall(ctx, cfg, http.MethodPost, scopePath(cfg.Repo)+"/registration-token", &tok); err != nil {
		return nil, fmt.Errorf("testrunner: registration token: %w", err)
	}
	base := cfg.URL + "/api/actions"
	if _, err := pingv1connect.NewPingServiceClient(cfg.HTTPClient, base).
		Ping(ctx, connect.NewRequest(&pingv1.PingRequest{Data: cfg.Name})); err != nil {
		if connect.CodeOf(err) == connect.CodeUnimplemented {
			// Gitea serves /api/actions only with Actions enabled.
			return nil, fmt.Errorf("testrunner: %s has Gitea Actions off ([actions] ENABLED = true; a Gitea that scripts/gitea starts has it on): %w", cfg.URL, err)
		}
		return nil, fmt.Errorf("testrunner: ping %s: %w", base, err)
	}
	r := &Runner{cfg: cfg}
	r.client = runnerv1connect.NewRunnerServiceClient(cfg.HTTPClient, base, connect.WithInterceptors(r.credentials()))
	reg, err := r.client.Register(ctx, connect.NewRequest(&runnerv1.RegisterRequest{
		Name: cfg.Name, Token: tok.Token, Version: Version, Labels: cfg.Labels}))
	if err != nil {
		return nil, fmt.Errorf("testrunner: register: %w", err)
	}
	r.id, r.uuid, r.token = reg.Msg.Runner.Id, reg.Msg.Runner.Uuid, reg.Msg.Runner.Token
	if _, err := r.client.Declare(ctx, connect.NewRequest(&runnerv1.DeclareRequest{Version: Version, Labels: cfg.Labels})); err != nil {
		return nil, errors.Join(fmt.Errorf("testrunner: declare: %w", err), r.Unregister(ctx))
	}
	return r, nil
}

// ID is the runner's id in the REST API.
func (r *Runner) ID() int64 { return r.id }

// credentials adds the runner's uuid and token to every call after
// Register.
func (r *Runner) credentials() connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if r.uuid != "" {
				req.Header().Set("x-runner-uuid", r.uuid)
				req.Header().Set("x-runner-token", r.token)
			}
			return next(ctx, req)
		}
	}
}

// Run polls for tasks and runs each through the script until ctx is
// done; then it returns nil. It returns an error when Gitea refuses the
// runner or keeps failing for about 30 s.
func (r *Runner) Run(ctx context.Context) error {
	var version int64
	var failingSince time.Time
	for ctx.Err() == nil {
		resp, err := r.client.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{TasksVersion: version}))
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && connect.CodeOf(err) == connect.CodeUnauthenticated:
			return fmt.Errorf("testrunner: fetch task: %w", err)
		case err != nil:
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if time.Since(failingSince) > 30*time.Second {
				return fmt.Errorf("testrunner: fetch task, failing since %s: %w", failingSince.Format(time.TimeOnly), err)
			}
			sleep(ctx, r.cfg.Poll)
			continue
		}
		failingSince = time.Time{}
		version = resp.Msg.TasksVersion
		if resp.Msg.Task == nil {
			sleep(ctx, r.cfg.Poll)
			continue
		}
		version = 0 // another waiting job may be there already
		if err := r.run(ctx, resp.Msg.Task); err != nil {
			return err
		}
	}
	return nil
}

// run runs one task through the script and reports its log and result.
// When ctx ends while the script runs, the task is reported cancelled.
func (r *Runner) run(ctx context.Context, pt *runnerv1.Task) error {
	started := time.Now()
	t := taskOf(pt)
	t.log = &logSender{client: r.client, task: pt.Id}
	out := r.cfg.Script(ctx, t)
	if ctx.Err() != nil {
		out.Result = Cancelled
	}
	// The outcome is reported even when the runner stops meanwhile: a
	// task left running would hold its job until Gitea's zombie timeout.
	report, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := t.log.send(report, out.Log, true); err != nil {
		return fmt.Errorf("testrunner: log of task %d: %w", pt.Id, err)
	}
	stopped := timestamppb.Now()
	state := &runnerv1.TaskState{Id: pt.Id, Result: out.Result.proto(), StartedAt: timestamppb.New(started), StoppedAt: stopped}
	for i := range steps(pt.WorkflowPayload) {
		step := &runnerv1.StepState{Id: int64(i), Result: runnerv1.Result_RESULT_SKIPPED, StartedAt: stopped, StoppedAt: stopped}
		if i == 0 {
			step.Result, step.StartedAt, step.LogLength = out.Result.proto(), state.StartedAt, t.log.acked
		}
		state.Steps = append(state.Steps, step)
	}
	if _, err := r.client.UpdateTask(report, connect.NewRequest(&runnerv1.UpdateTaskRequest{State: state})); err != nil {
		return fmt.Errorf("testrunner: finish task %d: %w", pt.Id, err)
	}
	return nil
}

// Unregister deletes the runner through the REST API.
func (r *Runner) Unregister(ctx context.Context) error {
	err := restCall(ctx, r.cfg, http.MethodDelete, scopePath(r.cfg.Repo)+"/"+strconv.FormatInt(r.id, 10), nil)
	if err != nil {
		return fmt.Errorf("testrunner: delete runner %d: %w", r.id, err)
	}
	return nil
}

// Start registers a runner and runs it until the test ends; the test's
// cleanup stops it (a task it is running is reported cancelled) and
// deletes it. A runner that fails meanwhile fails the test.
func Start(t testing.TB, cfg Config) *Runner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Register(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Unregister(ctx); err != nil {
			t.Error(err)
		}
	})
	return r
}

// logSender appends rows to one task's log.
type logSender struct {
	client runnerv1connect.RunnerServiceClient
	task   int64
	mu     sync.Mutex
	acked  int64 // rows Gitea holds
}

func (l *logSender) send(ctx context.Context, lines []string, last bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(lines) == 0 && !last {
		return nil
	}
	now := timestamppb.Now()
	rows := make([]*runnerv1.LogRow, len(lines))
	for i, line := range lines {
		rows[i] = &runnerv1.LogRow{Time: now, Content: line}
	}
	want := l.acked + int64(len(rows))
	resp, err := l.client.UpdateLog(ctx, connect.NewRequest(&runnerv1.UpdateLogRequest{
		TaskId: l.task, Index: l.acked, Rows: rows, NoMore: last}))
	if err != nil {
		return err
	}
	if resp.Msg.AckIndex != want {
		return fmt.Errorf("gitea holds %d log rows, want %d", resp.Msg.AckIndex, want)
	}
	l.acked = want
	return nil
}

// taskOf reads a task's context and workflow.
func taskOf(pt *runnerv1.Task) Task {
	t := Task{ID: pt.Id, Payload: pt.WorkflowPayload, Context: pt.Context.AsMap()}
	str := func(k string) string { s, _ := t.Context[k].(string); return s }
	num := func(k string) int64 { n, _ := strconv.ParseInt(str(k), 10, 64); return n }
	t.Job, t.Repo, t.SHA = str("job"), str("repository"), str("sha")
	t.RunID, t.Attempt = num("run_id"), num("run_attempt")
	t.JobID = jobID(str("gitea_runtime_token"))
	t.Name = t.Job
	var wf struct {
		Jobs map[string]struct {
			Name string `yaml:"name"`
		} `yaml:"jobs"`
	}
	if yaml.Unmarshal(pt.WorkflowPayload, &wf) == nil {
		for key, j := range wf.Jobs {
			if key == t.Job && j.Name != "" {
				t.Name = j.Name
			}
		}
	}
	return t
}

// jobID reads the job's id from the claims of the task's runtime token
// (unverified: the runner only reads what Gitea told it).
func jobID(token string) int64 {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return 0
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return 0
	}
	var claims struct {
		JobID int64 `json:"JobID"`
	}
	_ = json.Unmarshal(b, &claims)
	return claims.JobID
}

// steps counts the steps of the one job of a task's workflow.
func steps(payload []byte) int {
	var wf struct {
		Jobs map[string]struct {
			Steps []yaml.Node `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if yaml.Unmarshal(payload, &wf) != nil {
		return 0
	}
	for _, j := range wf.Jobs {
		return len(j.Steps)
	}
	return 0
}

// scopePath is the REST path of the runners of repo, or of the instance.
func scopePath(repo string) string {
	if repo == "" {
		return "/api/v1/admin/actions/runners"
	}
	owner, name, _ := strings.Cut(repo, "/")
	return "/api/v1/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/actions/runners"
}

// restCall calls the REST API with cfg's token and decodes a JSON answer
// into v (nil: the answer is dropped).
func restCall(ctx context.Context, cfg Config, method, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, cfg.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+cfg.Token)
	req.Header.Set("Accept", "application/json")
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(body))
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(body, v)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
