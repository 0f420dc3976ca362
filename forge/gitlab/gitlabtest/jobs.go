package gitlabtest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Pipelines and jobs, as GitLab's CI has them (lib/api/ci/pipelines.rb,
// lib/api/ci/jobs.rb, Ci::Status::Composite, Ci::RetryJobService):
//
//   - every push of a branch runs a branch pipeline for the new head
//     (source push). A pipeline is made with the jobs the test gave the
//     project (SetPipelineJobs), all of them pending; without any it
//     succeeds at once, as the fake's pipelines always did. Jobs can also
//     be added to a pipeline later (AddJob). Stages are recorded, not
//     ordered: every job can run as soon as it exists;
//   - a test runs jobs (StartJob, FinishJob); a pipeline's status follows
//     its jobs as Ci::Status::Composite computes it (a retried job does
//     not count, an allowed failure is a success with warnings), and a
//     Pipeline Hook goes out whenever it changes; a Job Hook goes out
//     whenever a job's status does, with GitLab's commit.id quirk;
//   - a job retried (POST /projects/:id/jobs/:job_id/retry) becomes a
//     retried job and a new job of the same name and stage runs, pending;
//     a job that has not finished, was retried already, or the test made
//     unretryable is 403 "Job is not retryable";
//   - a merge request's head_pipeline is the newest pipeline of its head
//     on its source branch; in a project that only merges once the
//     pipeline succeeded (SetOnlyAllowMergeIfPipelineSucceeds), a head
//     pipeline that is still active is ci_still_running, one that did not
//     succeed (or none) is ci_must_pass, and a merge is 405.

// noSHA is Git's blank SHA, GitLab's before_sha of a new branch.
const noSHA = "0000000000000000000000000000000000000000"

// JobBase is added to a job's sequence number to make its id: job ids are
// server-wide, as GitLab's are, and apart from pipeline ids.
const JobBase = 70000

// JobSpec is a job of a project's CI configuration (SetPipelineJobs).
type JobSpec struct {
	Name, Stage  string
	AllowFailure bool
}

// Job is a job as a test reads it (PipelineJobs).
type Job struct {
	ID, PipelineID int64
	Name, Stage    string
	Status         string // as GitLab spells it: pending, running, success, failed, canceled, skipped, ...
	FailureReason  string // of a failed job
	AllowFailure   bool
	Retried        bool // a newer run of it exists
}

type pipeline struct {
	id, iid                                     int64
	sha, ref, beforeSHA, source, status         string
	createdAt, updatedAt, startedAt, finishedAt time.Time
	jobs                                        []*job // oldest first
}

type job struct {
	id                                  int64
	pl                                  *pipeline
	name, stage, status, failureReason  string
	trace                               string
	allowFailure, retried, notRetryable bool
	createdAt, startedAt, finishedAt    time.Time
}

// activeStatuses are Ci::HasStatus::ACTIVE_STATUSES: a pipeline or job in
// one is running or about to.
var activeStatuses = []string{"waiting_for_resource", "preparing", "waiting_for_callback", "pending", "running", "canceling"}

// completedStatuses are Ci::HasStatus::COMPLETED_STATUSES.
var completedStatuses = []string{"success", "failed", "canceled", "skipped"}

// runPipeline runs the branch pipeline of a push of sha to ref: the
// commit's own pipeline id the first time the commit is pushed, a new one
// after (a push of the same commit to another branch, a fast-forward).
func (s *Server) runPipeline(p *project, ref, sha, before string) *pipeline {
	c := p.commits[sha]
	id := c.pipeline
	if s.pipelineByID(p, id) != nil {
		s.seq++ // shared with commits, whose pipeline ids come from it too
		id = PipelineBase + int64(s.seq)
	}
	now := s.now()
	if before == "" {
		before = noSHA // a new branch
	}
	pl := &pipeline{id: id, iid: int64(len(p.pipelines) + 1), sha: sha, ref: ref, beforeSHA: before, source: "push",
		status: "success", createdAt: now, updatedAt: now, startedAt: now, finishedAt: now}
	p.pipelines = append(p.pipelines, pl)
	if len(p.ciJobs) == 0 {
		s.pipelineEvent(p, pl)
		return pl
	}
	pl.status, pl.startedAt, pl.finishedAt = "created", time.Time{}, time.Time{}
	for _, spec := range p.ciJobs {
		j := s.newJob(pl, spec.Name, spec.Stage)
		j.allowFailure = spec.AllowFailure
	}
	for _, j := range pl.jobs {
		s.jobEvent(p, j)
	}
	s.updatePipeline(p, pl)
	return pl
}

// newJob adds a pending job to pl.
func (s *Server) newJob(pl *pipeline, name, stage string) *job {
	s.jobSeq++
	j := &job{id: JobBase + s.jobSeq, pl: pl, name: name, stage: stage, status: "pending", createdAt: s.now()}
	pl.jobs = append(pl.jobs, j)
	return j
}

func (s *Server) pipelineByID(p *project, id int64) *pipeline {
	for _, pl := range p.pipelines {
		if pl.id == id {
			return pl
		}
	}
	return nil
}

func (s *Server) jobByID(p *project, id int64) *job {
	for _, pl := range p.pipelines {
		for _, j := range pl.jobs {
			if j.id == id {
				return j
			}
		}
	}
	return nil
}

// headPipeline is a merge request's head_pipeline: the newest pipeline of
// its head on its source branch (MergeRequest#diff_head_pipeline), nil
// when there is none (a fork's merge request: its pipelines run in the
// fork).
func (s *Server) headPipeline(p *project, mr *mergeRequest) *pipeline {
	head := mr.head(p)
	for _, pl := range slices.Backward(p.pipelines) {
		if pl.sha == head && pl.ref == mr.source && mr.forkHead == "" {
			return pl
		}
	}
	return nil
}

// ciMergeStatus is the detailed_merge_status the CI check gives a merge
// request ("" when it passes), as MergeRequests::Mergeability::
// CheckCiStatusService does: only in a project that merges only once the
// pipeline succeeded, a head pipeline still active is ci_still_running;
// none, or one that did not succeed (skipped included: the project does
// not allow merging on a skipped pipeline), is ci_must_pass.
func (s *Server) ciMergeStatus(p *project, mr *mergeRequest) string {
	if !p.onlyAllowMergeIfPipelineSucceeds {
		return ""
	}
	pl := s.headPipeline(p, mr)
	switch {
	case pl == nil:
		return "ci_must_pass"
	case pl.status == "success":
		return ""
	case slices.Contains(activeStatuses, pl.status):
		return "ci_still_running"
	}
	return "ci_must_pass"
}

// compositeStatus is a pipeline's status from its latest jobs, as
// Ci::Status::Composite computes it (stages not modelled): an allowed
// failure counts as a success with warnings, an allowed manual job is
// ignored. "" for a pipeline without jobs.
func compositeStatus(jobs []*job) string {
	seen := map[string]bool{}
	for _, j := range jobs {
		switch {
		case j.retried:
		case j.allowFailure && (j.status == "failed" || j.status == "canceled"):
			seen["success_with_warnings"] = true
		case j.allowFailure && j.status == "manual":
			seen["ignored"] = true
		default:
			seen[j.status] = true
		}
	}
	if len(seen) == 0 {
		return ""
	}
	onlyOf := func(statuses ...string) bool {
		for st := range seen {
			if !slices.Contains(statuses, st) {
				return false
			}
		}
		return true
	}
	anyOf := func(statuses ...string) bool {
		return slices.ContainsFunc(statuses, func(st string) bool { return seen[st] })
	}
	switch {
	case onlyOf("skipped", "ignored"):
		return "skipped"
	case onlyOf("success", "skipped", "success_with_warnings", "ignored"):
		return "success"
	case onlyOf("created", "success_with_warnings", "ignored"):
		return "created"
	case onlyOf("preparing", "success_with_warnings", "ignored"):
		return "preparing"
	case onlyOf("canceled", "success", "skipped", "success_with_warnings", "ignored"):
		return "canceled"
	case onlyOf("pending", "created", "skipped", "success_with_warnings", "ignored"):
		return "pending"
	case anyOf("running", "pending"):
		return "running"
	case anyOf("waiting_for_resource"):
		return "waiting_for_resource"
	case anyOf("manual"):
		return "manual"
	case anyOf("scheduled"):
		return "scheduled"
	case anyOf("preparing"):
		return "preparing"
	case anyOf("created"):
		return "running"
	}
	return "failed"
}

// updatePipeline recomputes pl's status from its jobs and sends a
// Pipeline Hook when it changed ("Pipeline events are triggered when the
// status of a pipeline changes").
func (s *Server) updatePipeline(p *project, pl *pipeline) {
	status := compositeStatus(pl.jobs)
	if status == "" || status == pl.status {
		return
	}
	now := s.now()
	pl.status, pl.updatedAt = status, now
	pl.finishedAt = time.Time{} // active again, after a retry
	if slices.Contains(completedStatuses, status) {
		pl.finishedAt = now
	}
	if status == "running" && pl.startedAt.IsZero() {
		pl.startedAt = now
	}
	s.pipelineEvent(p, pl)
}

// setJobStatus moves a job to status and sends its Job Hook, then
// updates its pipeline.
func (s *Server) setJobStatus(p *project, j *job, status, failureReason string) {
	now := s.now()
	j.status = status
	switch {
	case status == "running":
		j.startedAt, j.finishedAt = now, time.Time{}
	case slices.Contains(completedStatuses, status):
		if j.startedAt.IsZero() && (status == "success" || status == "failed") {
			j.startedAt = now // it ran, if only for a moment
		}
		j.finishedAt = now
	}
	j.failureReason = ""
	if status == "failed" {
		// failure_reason defaults to unknown_failure (the enum's 0).
		j.failureReason = failureReason
		if j.failureReason == "" {
			j.failureReason = "unknown_failure"
		}
	}
	s.jobEvent(p, j)
	s.updatePipeline(p, j.pl)
}

// retryable is Ci::Processable#retryable?: a finished (success, failed,
// canceled) job that was not retried already; here also one the test did
// not make unretryable (SetJobRetryable: archived, a rejected
// deployment).
func (j *job) retryable() bool {
	return !j.retried && !j.notRetryable && (j.status == "success" || j.status == "failed" || j.status == "canceled")
}

// retriesCount is Ci::Build#retries_count: the retried jobs of the same
// name in the pipeline.
func (j *job) retriesCount() int {
	n := 0
	for _, o := range j.pl.jobs {
		if o.name == j.name && o.retried {
			n++
		}
	}
	return n
}

// retry is Ci::RetryJobService: the job becomes retried, a new job of
// the same name, stage and allow_failure runs, pending.
func (s *Server) retry(p *project, j *job) *job {
	j.retried = true
	n := s.newJob(j.pl, j.name, j.stage)
	n.allowFailure = j.allowFailure
	s.jobEvent(p, n)
	s.updatePipeline(p, j.pl)
	return n
}

// timeJSON is a REST timestamp (ISO 8601 with milliseconds), nil for a
// zero time.
func timeJSON(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// hookTime is a Pipeline or Job Hook timestamp ("2016-08-12 15:23:28
// UTC"), nil for a zero time.
func hookTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func seconds(from, to time.Time) any {
	if from.IsZero() || to.IsZero() {
		return nil
	}
	return to.Sub(from).Seconds()
}

// wholeSeconds is a pipeline's duration: whole seconds, as GitLab keeps
// it (a job's is fractional).
func wholeSeconds(from, to time.Time) any {
	if from.IsZero() || to.IsZero() {
		return nil
	}
	return int64(to.Sub(from).Seconds())
}

func (s *Server) detailedStatus(p *project, path, status string) map[string]any {
	return map[string]any{"icon": "status_" + status, "text": status, "label": status, "group": status, "tooltip": status,
		"has_details": true, "details_path": "/" + p.path + path}
}

// pipelineJSON is GitLab's Ci::PipelineBasic entity, and with full its
// Ci::Pipeline entity.
func (s *Server) pipelineJSON(p *project, pl *pipeline, full bool) map[string]any {
	out := map[string]any{"id": pl.id, "iid": pl.iid, "project_id": p.id, "sha": pl.sha, "ref": pl.ref, "status": pl.status,
		"source": pl.source, "name": nil, "created_at": timeJSON(pl.createdAt), "updated_at": timeJSON(pl.updatedAt),
		"web_url": fmt.Sprintf("%s/%s/-/pipelines/%d", s.URL, p.path, pl.id)}
	if full {
		out["before_sha"] = pl.beforeSHA
		out["tag"] = false
		out["yaml_errors"] = nil
		out["user"] = s.userJSON(s.User)
		out["started_at"] = timeJSON(pl.startedAt)
		out["finished_at"] = timeJSON(pl.finishedAt)
		out["committed_at"] = nil
		out["duration"] = wholeSeconds(pl.startedAt, pl.finishedAt)
		out["queued_duration"] = nil
		out["coverage"] = nil
		out["detailed_status"] = s.detailedStatus(p, fmt.Sprintf("/-/pipelines/%d", pl.id), pl.status)
		out["archived"] = false
	}
	return out
}

// jobJSON is GitLab's Ci::Job entity. failure_reason is there for a
// failed job only; the REST job has no retried field.
func (s *Server) jobJSON(p *project, j *job) map[string]any {
	out := map[string]any{"id": j.id, "status": j.status, "stage": j.stage, "name": j.name, "ref": j.pl.ref, "tag": false,
		"coverage": nil, "allow_failure": j.allowFailure, "created_at": timeJSON(j.createdAt),
		"started_at": timeJSON(j.startedAt), "finished_at": timeJSON(j.finishedAt), "erased_at": nil,
		"duration": seconds(j.startedAt, j.finishedAt), "queued_duration": seconds(j.createdAt, j.startedAt),
		"user": s.userJSON(s.User), "commit": map[string]any{"id": j.pl.sha, "short_id": j.pl.sha[:8]},
		"pipeline":  map[string]any{"id": j.pl.id, "project_id": p.id, "ref": j.pl.ref, "sha": j.pl.sha, "status": j.pl.status},
		"web_url":   fmt.Sprintf("%s/%s/-/jobs/%d", s.URL, p.path, j.id),
		"project":   map[string]any{"ci_job_token_scope_enabled": false},
		"artifacts": []any{}, "runner": nil, "artifacts_expire_at": nil, "tag_list": []any{}, "archived": false}
	if j.status == "failed" {
		out["failure_reason"] = j.failureReason
	}
	return out
}

// pipelines answers /projects/:id/pipelines[/:pipeline_id[/jobs]].
func (s *Server) pipelines(r *http.Request, p *project, rest []string) (int, any, *apiError) {
	if r.Method != "GET" {
		return 0, nil, fail(404, "404 Not Found")
	}
	q := r.URL.Query()
	if len(rest) == 0 {
		var list []*pipeline
		for _, pl := range p.pipelines {
			if (q.Get("sha") == "" || q.Get("sha") == pl.sha) && (q.Get("ref") == "" || q.Get("ref") == pl.ref) &&
				(q.Get("status") == "" || q.Get("status") == pl.status) && (q.Get("source") == "" || q.Get("source") == pl.source) {
				list = append(list, pl)
			}
		}
		switch q.Get("order_by") {
		case "", "id":
		case "updated_at":
			slices.SortStableFunc(list, func(a, b *pipeline) int { return a.updatedAt.Compare(b.updatedAt) })
		default:
			return 0, nil, fail(400, "order_by does not have a valid value")
		}
		switch q.Get("sort") {
		case "", "desc":
			slices.Reverse(list)
		case "asc":
		default:
			return 0, nil, fail(400, "sort does not have a valid value")
		}
		out := []any{}
		for _, pl := range list {
			out = append(out, s.pipelineJSON(p, pl, false))
		}
		return page(r, out)
	}
	id, _ := strconv.ParseInt(rest[0], 10, 64)
	pl := s.pipelineByID(p, id)
	if pl == nil {
		return 0, nil, fail(404, "404 Not found")
	}
	switch {
	case len(rest) == 1:
		return 200, s.pipelineJSON(p, pl, true), nil
	case len(rest) == 2 && rest[1] == "jobs":
		scope := append(q["scope[]"], q["scope"]...)
		out := []any{}
		for _, j := range slices.Backward(pl.jobs) { // by id, newest first
			if (!j.retried || q.Get("include_retried") == "true") && (len(scope) == 0 || slices.Contains(scope, j.status)) {
				out = append(out, s.jobJSON(p, j))
			}
		}
		return page(r, out)
	}
	return 0, nil, fail(404, "404 Not Found")
}

// jobs answers /projects/:id/jobs/:job_id[/trace|/retry].
func (s *Server) jobs(r *http.Request, p *project, rest []string) (int, any, *apiError) {
	if len(rest) == 0 {
		return 0, nil, fail(404, "404 Not Found")
	}
	id, _ := strconv.ParseInt(rest[0], 10, 64)
	j := s.jobByID(p, id)
	if j == nil {
		return 0, nil, fail(404, "404 Not found")
	}
	switch {
	case len(rest) == 1 && r.Method == "GET":
		return 200, s.jobJSON(p, j), nil
	case len(rest) == 2 && rest[1] == "trace" && r.Method == "GET":
		return 200, []byte(j.trace), nil
	case len(rest) == 2 && rest[1] == "retry" && r.Method == "POST":
		if !j.retryable() {
			return 0, nil, fail(403, "403 Forbidden - Job is not retryable")
		}
		return http.StatusCreated, s.jobJSON(p, s.retry(p, j)), nil
	}
	return 0, nil, fail(404, "404 Not Found")
}

// jobEvent emits the Job Hook of j's status, as GitLab's
// Gitlab::DataBuilder::Build builds it. commit.id is the pipeline's id, a
// quirk GitLab documents; build_failure_reason is unknown_failure for a
// job that did not fail.
func (s *Server) jobEvent(p *project, j *job) {
	pl := j.pl
	reason := j.failureReason
	if reason == "" {
		reason = "unknown_failure"
	}
	user := map[string]any{"id": s.userID(s.User), "name": s.User, "username": s.User, "email": "[REDACTED]"}
	s.emit(p, "job_events", "Job Hook", map[string]any{"object_kind": "build", "ref": pl.ref, "tag": false,
		"before_sha": pl.beforeSHA, "sha": pl.sha, "retries_count": j.retriesCount(),
		"build_id": j.id, "build_name": j.name, "build_stage": j.stage, "build_status": j.status,
		"build_created_at": hookTime(j.createdAt), "build_started_at": hookTime(j.startedAt),
		"build_finished_at": hookTime(j.finishedAt), "build_duration": seconds(j.startedAt, j.finishedAt),
		"build_queued_duration": seconds(j.createdAt, j.startedAt), "build_allow_failure": j.allowFailure,
		"build_failure_reason": reason, "pipeline_id": pl.id, "project_id": p.id, "project_name": strings.ReplaceAll(p.path, "/", " / "), "user": user,
		"commit": map[string]any{"id": pl.id, "name": nil, "sha": pl.sha, "message": "", "author_name": s.User,
			"author_email": "[REDACTED]", "author_url": s.URL + "/" + s.User, "status": pl.status,
			"duration": wholeSeconds(pl.startedAt, pl.finishedAt), "started_at": hookTime(pl.startedAt),
			"finished_at": hookTime(pl.finishedAt)},
		"repository": map[string]any{"name": p.path, "url": s.URL + "/" + p.path + ".git", "homepage": s.URL + "/" + p.path,
			"git_http_url": s.URL + "/" + p.path + ".git", "visibility_level": 20},
		"project":     s.projectPayload(p),
		"runner":      nil,
		"environment": nil})
}

// builds are a Pipeline Hook's builds: the pipeline's latest jobs.
func (s *Server) builds(pl *pipeline) []any {
	out := []any{}
	for _, j := range slices.Backward(pl.jobs) {
		if j.retried {
			continue
		}
		var reason any
		if j.status == "failed" {
			reason = j.failureReason
		}
		out = append(out, map[string]any{"id": j.id, "stage": j.stage, "name": j.name, "status": j.status,
			"created_at": hookTime(j.createdAt), "started_at": hookTime(j.startedAt), "finished_at": hookTime(j.finishedAt),
			"duration": seconds(j.startedAt, j.finishedAt), "queued_duration": seconds(j.createdAt, j.startedAt),
			"failure_reason": reason, "when": "on_success", "manual": false, "allow_failure": j.allowFailure,
			"user": map[string]any{"id": s.userID(s.User), "name": s.User, "username": s.User}, "runner": nil,
			"artifacts_file": map[string]any{"filename": nil, "size": nil}, "environment": nil})
	}
	return out
}

// stages are a pipeline's stages, in the order its jobs name them.
func stages(pl *pipeline) []any {
	out := []any{}
	for _, j := range pl.jobs {
		if !slices.Contains(out, any(j.stage)) {
			out = append(out, j.stage)
		}
	}
	return out
}

// The test's side of CI: what a project's CI configuration holds, and
// what its runners do.

// SetPipelineJobs makes every later pipeline of the project run these
// jobs (its .gitlab-ci.yml): they start pending, and the pipeline waits
// for the test to finish them. Without any, a pipeline succeeds at once.
func (s *Server) SetPipelineJobs(project string, jobs ...JobSpec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustProject(project).ciJobs = slices.Clone(jobs)
}

// SetOnlyAllowMergeIfPipelineSucceeds sets the project's
// only_allow_merge_if_pipeline_succeeds: a merge request merges only once
// its head pipeline succeeded.
func (s *Server) SetOnlyAllowMergeIfPipelineSucceeds(project string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustProject(project).onlyAllowMergeIfPipelineSucceeds = on
}

// Pipelines returns the ids of the project's pipelines of commit sha,
// newest first.
func (s *Server) Pipelines(project, sha string) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for _, pl := range slices.Backward(s.mustProject(project).pipelines) {
		if pl.sha == sha {
			out = append(out, pl.id)
		}
	}
	return out
}

// PipelineStatus returns a pipeline's status as GitLab spells it.
func (s *Server) PipelineStatus(project string, pipelineID int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, pl := s.mustPipeline(project, pipelineID)
	return pl.status
}

// PipelineJobs returns a pipeline's jobs, retried ones included, newest
// first.
func (s *Server) PipelineJobs(project string, pipelineID int64) []Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, pl := s.mustPipeline(project, pipelineID)
	var out []Job
	for _, j := range slices.Backward(pl.jobs) {
		out = append(out, Job{ID: j.id, PipelineID: pl.id, Name: j.name, Stage: j.stage, Status: j.status,
			FailureReason: j.failureReason, AllowFailure: j.allowFailure, Retried: j.retried})
	}
	return out
}

// AddJob adds a pending job to a pipeline, as if the CI configuration had
// it, and returns its id; the pipeline's status follows its jobs from
// then on.
func (s *Server) AddJob(project string, pipelineID int64, name, stage string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, pl := s.mustPipeline(project, pipelineID)
	j := s.newJob(pl, name, stage)
	s.jobEvent(p, j)
	s.updatePipeline(p, pl)
	return j.id
}

// SetJobAllowFailure sets a job's allow_failure: its failure does not
// fail the pipeline.
func (s *Server) SetJobAllowFailure(project string, jobID int64, allow bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, j := s.mustJob(project, jobID)
	j.allowFailure = allow
	s.updatePipeline(p, j.pl)
}

// StartJob has a runner pick the job up: running.
func (s *Server) StartJob(project string, jobID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, j := s.mustJob(project, jobID)
	s.setJobStatus(p, j, "running", "")
}

// FinishJob ends a job with status (success, failed, canceled, skipped),
// its failure reason when it failed (unknown_failure if ""), and its log.
// A Job Hook goes out, and a Pipeline Hook when the pipeline's status
// changes with it.
func (s *Server) FinishJob(project string, jobID int64, status, failureReason, trace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(completedStatuses, status) {
		panic(fmt.Sprintf("gitlabtest: FinishJob with status %q, want one of %v", status, completedStatuses))
	}
	p, j := s.mustJob(project, jobID)
	j.trace = trace
	s.setJobStatus(p, j, status, failureReason)
}

// SetJobRetryable makes a finished job retryable again, or not, as
// GitLab has it for an archived job or a rejected deployment: its retry
// is 403 "Job is not retryable".
func (s *Server) SetJobRetryable(project string, jobID int64, retryable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, j := s.mustJob(project, jobID)
	j.notRetryable = !retryable
}

func (s *Server) mustProject(project string) *project {
	p := s.projects[project]
	if p == nil {
		panic("gitlabtest: no project " + project)
	}
	return p
}

func (s *Server) mustPipeline(project string, id int64) (*project, *pipeline) {
	p := s.mustProject(project)
	pl := s.pipelineByID(p, id)
	if pl == nil {
		panic(fmt.Sprintf("gitlabtest: no pipeline %d in %s", id, project))
	}
	return p, pl
}

func (s *Server) mustJob(project string, id int64) (*project, *job) {
	p := s.mustProject(project)
	j := s.jobByID(p, id)
	if j == nil {
		panic(fmt.Sprintf("gitlabtest: no job %d in %s", id, project))
	}
	return p, j
}
