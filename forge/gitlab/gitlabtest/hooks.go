package gitlabtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Hook event flags a project hook has, as GitLab names them.
var hookEvents = []string{"merge_requests_events", "issues_events", "pipeline_events", "job_events", "note_events", "push_events"}

// hook is a project hook with GitLab's failure accounting: after four
// failing deliveries in a row it is temporarily disabled, for a backoff
// that doubles from a minute up to a day; after forty, for good. Only a
// 2xx delivery re-enables it (WebHooks::AutoDisabling); editing it does not.
type hook struct {
	id             int
	url, token     string
	events         map[string]bool
	recentFailures int
	disabledUntil  time.Time
}

const (
	temporarilyDisabledAfter = 3  // failures tolerated before a backoff
	permanentlyDisabledAfter = 39 // failures before the hook is disabled for good
)

func (h *hook) alertStatus(now time.Time) string {
	switch {
	case h.recentFailures > temporarilyDisabledAfter && h.recentFailures <= permanentlyDisabledAfter && !h.disabledUntil.Before(now):
		return "temporarily_disabled"
	case h.recentFailures > permanentlyDisabledAfter:
		return "disabled"
	}
	return "executable"
}

// delivered records a delivery's outcome: a 2xx enables the hook again, a
// failure backs it off.
func (h *hook) delivered(ok bool, now time.Time) {
	if ok {
		h.recentFailures, h.disabledUntil = 0, time.Time{}
		return
	}
	h.recentFailures = min(h.recentFailures+1, permanentlyDisabledAfter+1)
	if h.recentFailures > temporarilyDisabledAfter {
		backoff := time.Minute << min(h.recentFailures-temporarilyDisabledAfter, 11)
		h.disabledUntil = now.Add(min(backoff, 24*time.Hour))
	}
}

func (s *Server) hookJSON(h *hook) map[string]any {
	out := map[string]any{"id": h.id, "url": h.url, "alert_status": h.alertStatus(s.now()), "disabled_until": nil,
		"token_present": h.token != ""}
	if !h.disabledUntil.IsZero() {
		out["disabled_until"] = h.disabledUntil.UTC().Format(time.RFC3339)
	}
	for _, k := range hookEvents {
		out[k] = h.events[k]
	}
	return out
}

// projectHooks answers /projects/:id/hooks[/:hook_id]. GitLab never shows
// a hook's token.
func (s *Server) projectHooks(r *http.Request, p *project, rest []string) (int, any, *apiError) {
	if len(rest) == 0 {
		switch r.Method {
		case "GET":
			out := []any{}
			for _, h := range p.hooks {
				out = append(out, s.hookJSON(h))
			}
			return page(r, out)
		case "POST":
			h := &hook{events: map[string]bool{"push_events": true}} // GitLab's default
			if err := h.apply(r); err != nil || h.url == "" {
				return 0, nil, fail(400, "url is missing")
			}
			h.id = 1
			for _, other := range p.hooks {
				h.id = max(h.id, other.id+1)
			}
			p.hooks = append(p.hooks, h)
			return http.StatusCreated, s.hookJSON(h), nil
		}
		return 0, nil, fail(404, "404 Not Found")
	}
	id, _ := strconv.Atoi(rest[0])
	for i, h := range p.hooks {
		if h.id != id {
			continue
		}
		switch r.Method {
		case "GET":
			return 200, s.hookJSON(h), nil
		case "PUT":
			if err := h.apply(r); err != nil {
				return 0, nil, fail(400, err.Error())
			}
			return 200, s.hookJSON(h), nil
		case "DELETE":
			p.hooks = append(p.hooks[:i:i], p.hooks[i+1:]...)
			return http.StatusNoContent, nil, nil
		}
	}
	return 0, nil, fail(404, "404 Not found")
}

// apply sets the fields a create or edit request gives.
func (h *hook) apply(r *http.Request) error {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return err
	}
	if u, ok := req["url"].(string); ok {
		h.url = u
	}
	if t, ok := req["token"].(string); ok {
		h.token = t
	}
	for _, k := range hookEvents {
		if b, ok := req[k].(bool); ok {
			h.events[k] = b
		}
	}
	return nil
}

// SetHookEvent sets one event flag of a project's hook, as a person
// editing it in GitLab would.
func (s *Server) SetHookEvent(project, url, event string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.projects[project].hooks {
		if h.url == url {
			h.events[event] = on
		}
	}
}

// HookEvents returns the event flags of a project's hook to url, and its
// alert_status as "alert_status:<status>" set true.
func (s *Server) HookEvents(project, url string) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.projects[project].hooks {
		if h.url == url {
			out := map[string]bool{"alert_status:" + h.alertStatus(s.now()): true}
			for _, k := range hookEvents {
				out[k] = h.events[k]
			}
			return out
		}
	}
	return nil
}

// HookCount is how many hooks the project has.
func (s *Server) HookCount(project string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.projects[project].hooks)
}

// deliverer sends webhook deliveries one at a time, in order, as GitLab's
// workers do for one hook; it never retries a failed one. Its queue has no
// bound, so that emitting under the server's lock never waits for a
// delivery (whose outcome takes that lock).
type deliverer struct {
	mu     sync.Mutex
	jobs   []delivery
	closed bool
	wake   chan struct{}
	// pending counts the deliveries queued and not yet settled, under mu;
	// settled is signalled when it drops to zero. A counter and a
	// condition, not a WaitGroup: a delivery may be queued while someone
	// waits, which a WaitGroup's Add from zero must not race.
	pending int
	settled *sync.Cond
	client  *http.Client
	done    chan struct{}
}

type delivery struct {
	url    string
	header http.Header
	body   []byte
	result func(ok bool)
}

func newDeliverer() *deliverer {
	d := &deliverer{wake: make(chan struct{}, 1), client: &http.Client{Timeout: 10 * time.Second}, done: make(chan struct{})}
	d.settled = sync.NewCond(&d.mu)
	go d.run()
	return d
}

func (d *deliverer) push(job delivery) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.pending++
	d.jobs = append(d.jobs, job)
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *deliverer) run() {
	defer close(d.done)
	for range d.wake {
		for {
			d.mu.Lock()
			if len(d.jobs) == 0 || d.closed {
				d.mu.Unlock()
				break
			}
			job := d.jobs[0]
			d.jobs = d.jobs[1:]
			d.mu.Unlock()
			job.result(d.send(job))
			d.mu.Lock()
			d.settle(1)
			d.mu.Unlock()
		}
		d.mu.Lock()
		closed := d.closed
		d.mu.Unlock()
		if closed {
			return
		}
	}
}

func (d *deliverer) send(job delivery) bool {
	req, err := http.NewRequest(http.MethodPost, job.url, bytes.NewReader(job.body))
	if err != nil {
		return false
	}
	req.Header = job.header
	resp, err := d.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// close drops the deliveries not yet sent and stops the worker.
func (d *deliverer) close() {
	d.mu.Lock()
	d.closed = true
	d.settle(len(d.jobs))
	d.jobs = nil
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	<-d.done
}

// settle counts n deliveries settled, under d.mu.
func (d *deliverer) settle(n int) {
	if d.pending -= n; d.pending == 0 {
		d.settled.Broadcast()
	}
}

// WaitForDeliveries blocks until every webhook delivery queued so far was
// sent and its outcome recorded. It may be called while deliveries are
// being queued.
func (s *Server) WaitForDeliveries() {
	d := s.hooks
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.pending > 0 {
		d.settled.Wait()
	}
}

// emit queues an event for every executable hook of p subscribed to flag.
// All of one event's deliveries share X-Gitlab-Event-UUID; each has its own
// Idempotency-Key (GitLab 17.4+, kept across manual resends) and
// X-Gitlab-Webhook-UUID.
func (s *Server) emit(p *project, flag, event string, payload map[string]any) {
	body, _ := json.Marshal(payload)
	eventUUID := uuid.NewString()
	now := s.now()
	for _, h := range p.hooks {
		if !h.events[flag] || h.alertStatus(now) != "executable" {
			continue
		}
		hd := http.Header{}
		hd.Set("Content-Type", "application/json")
		hd.Set("User-Agent", "GitLab/17.11.0")
		hd.Set("X-Gitlab-Event", event)
		hd.Set("X-Gitlab-Instance", s.URL)
		hd.Set("X-Gitlab-Event-UUID", eventUUID)
		hd.Set("X-Gitlab-Webhook-UUID", uuid.NewString())
		hd.Set("Idempotency-Key", uuid.NewString())
		if h.token != "" {
			hd.Set("X-Gitlab-Token", h.token)
		}
		s.hooks.push(delivery{url: h.url, header: hd, body: body, result: func(ok bool) {
			s.mu.Lock()
			defer s.mu.Unlock()
			h.delivered(ok, s.now())
		}})
	}
}

func (s *Server) projectPayload(p *project) map[string]any {
	return map[string]any{"id": p.id, "path_with_namespace": p.path, "web_url": s.URL + "/" + p.path,
		"default_branch": p.defaultBranch}
}

// mergeRequestEvent emits a Merge Request Hook.
func (s *Server) mergeRequestEvent(p *project, mr *mergeRequest, action, oldrev string) {
	s.mergeRequestEventWith(p, mr, action, oldrev, nil)
}

// mergeRequestEventWith emits a Merge Request Hook with changes. Like
// GitLab's, it names the author by id only (author_id), and lists the
// reviewers with their states.
func (s *Server) mergeRequestEventWith(p *project, mr *mergeRequest, action, oldrev string, changes map[string]any) {
	attrs := map[string]any{"id": 1000 + mr.iid, "iid": mr.iid, "title": mr.title, "description": mr.description,
		"state": mr.state, "action": action, "source_branch": mr.source, "target_branch": mr.target,
		"source_project_id": mr.sourceProjectID, "target_project_id": p.id, "author_id": s.userID(mr.author),
		"last_commit":           map[string]any{"id": mr.head(p)},
		"updated_at":            mr.updatedAt.UTC().Format("2006-01-02 15:04:05 UTC"),
		"detailed_merge_status": s.detailedMergeStatus(p, mr), "labels": labelsPayload(mr.labels), "draft": false,
		"url": s.URL + "/" + p.path + "/-/merge_requests/" + strconv.FormatInt(mr.iid, 10)}
	if oldrev != "" {
		attrs["oldrev"] = oldrev
	}
	if mr.mergeCommit != "" {
		attrs["merge_commit_sha"] = mr.mergeCommit
	}
	if changes == nil {
		changes = map[string]any{}
	}
	s.emit(p, "merge_requests_events", "Merge Request Hook", map[string]any{"object_kind": "merge_request",
		"event_type": "merge_request", "project": s.projectPayload(p), "object_attributes": attrs,
		"labels": labelsPayload(mr.labels), "reviewers": s.reviewersPayload(mr), "changes": changes,
		"user": map[string]any{"id": s.userID(s.User), "username": s.User}})
}

// issueEvent emits an Issue Hook, or for a confidential issue a
// Confidential Issue Hook (a flag of its own, which hooks here never set).
func (s *Server) issueEvent(p *project, is *issue, action string) {
	attrs := map[string]any{"id": 2000 + is.iid, "iid": is.iid, "title": is.title, "description": is.description,
		"state": is.state, "action": action, "author_id": s.userID(is.author), "confidential": is.confidential,
		"type": is.workItemType(), "labels": labelsPayload(is.labels),
		"updated_at": is.updatedAt.UTC().Format("2006-01-02 15:04:05 UTC"),
		"url":        s.URL + "/" + p.path + "/-/issues/" + strconv.FormatInt(is.iid, 10)}
	flag, event := "issues_events", "Issue Hook"
	if is.confidential {
		flag, event = "confidential_issues_events", "Confidential Issue Hook"
	}
	s.emit(p, flag, event, map[string]any{"object_kind": "issue", "event_type": "issue", "project": s.projectPayload(p),
		"object_attributes": attrs, "labels": labelsPayload(is.labels),
		"user": map[string]any{"id": s.userID(s.User), "username": s.User}})
}

func labelsPayload(labels []string) []any {
	out := []any{}
	for i, l := range labels {
		out = append(out, map[string]any{"id": i + 1, "title": l, "type": "ProjectLabel"})
	}
	return out
}

func (s *Server) reviewersPayload(mr *mergeRequest) []any {
	out := []any{}
	for _, name := range slices.Sorted(maps.Keys(mr.reviewers)) {
		out = append(out, map[string]any{"id": s.userID(name), "username": name, "state": mr.reviewers[name], "re_requested": false})
	}
	return out
}

// pipelineEvent emits the Pipeline Hook of a branch pipeline's status
// (see jobs.go).
func (s *Server) pipelineEvent(p *project, pl *pipeline) {
	s.emit(p, "pipeline_events", "Pipeline Hook", map[string]any{"object_kind": "pipeline",
		"object_attributes": map[string]any{"id": pl.id, "iid": pl.iid, "name": nil, "ref": pl.ref, "tag": false, "sha": pl.sha,
			"before_sha": pl.beforeSHA, "source": pl.source, "status": pl.status, "detailed_status": pl.status,
			"stages": stages(pl), "created_at": hookTime(pl.createdAt), "finished_at": hookTime(pl.finishedAt),
			"duration": wholeSeconds(pl.startedAt, pl.finishedAt), "queued_duration": nil, "variables": []any{},
			"url": fmt.Sprintf("%s/%s/-/pipelines/%d", s.URL, p.path, pl.id)},
		"merge_request": nil, "user": map[string]any{"id": s.userID(s.User), "name": s.User, "username": s.User},
		"project": s.projectPayload(p), "commit": map[string]any{"id": pl.sha, "url": s.URL + "/" + p.path + "/-/commit/" + pl.sha},
		"builds": s.builds(pl), "source_pipeline": nil})
}
