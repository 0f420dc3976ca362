// Package relay is a kind of forge that exists for tests: it shows that a
// kind is one package plus one registration line (kinds.Register(relay.Plugin)),
// with no switch to extend anywhere else. Everything in it is its own: a
// minimal client on net/http (client.go) of the REST API it speaks
// (GitLab's v4 shapes, which the test server forge/gitlab/gitlabtest
// serves), which passes the forge conformance suite without GitLab's
// client library or the GitLab kind; its webhooks, a small JSON envelope
// signed with HMAC-SHA256 in X-Relay-Signature; its event types
// "relay.*"; its job pages /PROJECT/jobs/ID. It claims no file modes.
package relay

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Kind is the kind's name, as forges[].kind names it.
const Kind = "relay"

// Event types its deliveries store.
const (
	EventMergeRequest = "relay.merge_request"
	EventPipeline     = "relay.pipeline"
	EventJob          = "relay.job"
)

// Plugin is the relay kind of forge.
var Plugin = forge.Plugin{
	Name:         Kind,
	Open:         open,
	ParseWebhook: parseWebhook,
	EventTypes:   []string{EventMergeRequest, EventPipeline, EventJob},
	DecodeEvent:  decodeEvent,
	JobPage:      jobPage,
}

// Envelope is a relay delivery's body.
type Envelope struct {
	Project      string        `json:"project"`
	MergeRequest *MergeRequest `json:"merge_request,omitempty"`
	Pipeline     *Pipeline     `json:"pipeline,omitempty"`
	Job          *Job          `json:"job,omitempty"`
}

// MergeRequest is a merge request's news.
type MergeRequest struct {
	Number       int64     `json:"number"`
	SourceBranch string    `json:"source_branch"`
	TargetBranch string    `json:"target_branch"`
	HeadSHA      string    `json:"head_sha"`
	Action       string    `json:"action"`
	State        string    `json:"state"` // open, merged, closed
	UpdatedAt    time.Time `json:"updated_at"`
}

// Pipeline is a pipeline's news.
type Pipeline struct {
	ID     int64  `json:"id"`
	SHA    string `json:"sha"`
	Branch string `json:"branch"`
	Status string `json:"status"`
	Done   bool   `json:"done"`
}

// Job is a job's news.
type Job struct {
	ID         int64     `json:"id"`
	PipelineID int64     `json:"pipeline_id"`
	SHA        string    `json:"sha"`
	Name       string    `json:"name"`
	Status     string    `json:"status"`
	FinishedAt time.Time `json:"finished_at"`
}

// Headers are the headers a relay delivery of event is sent with.
func Headers(secret, event, deliveryID string, body []byte) http.Header {
	h := http.Header{}
	h.Set("X-Relay-Event", event)
	h.Set("X-Relay-Delivery", deliveryID)
	h.Set("X-Relay-Signature", sign(secret, body))
	return h
}

func parseWebhook(secret string, h http.Header, body []byte) (*forge.Delivery, error) {
	if !forge.VerifyHMAC(body, h.Get("X-Relay-Signature"), secret) {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "X-Relay-Signature does not match the body")
	}
	id := h.Get("X-Relay-Delivery")
	if id == "" || len(id) > 200 {
		return nil, wq.Errorf(wq.EINVALID, "X-Relay-Delivery: missing or too long")
	}
	var e Envelope
	if err := forge.Unmarshal(body, &e); err != nil {
		return nil, err
	}
	d := &forge.Delivery{DeliveryID: id, Project: e.Project}
	switch h.Get("X-Relay-Event") {
	case "merge_request":
		m := e.MergeRequest
		if m == nil {
			return nil, nil
		}
		state := map[string]string{"merged": wq.MergeRequestMerged, "closed": wq.MergeRequestClosed}[m.State]
		if state == "" {
			state = wq.MergeRequestOpen
		}
		d.EventType, d.Number, d.SourceBranch, d.TargetBranch, d.EventTS = EventMergeRequest, m.Number, m.SourceBranch, m.TargetBranch, m.UpdatedAt
		d.Work = &wq.WorkInfo{Kind: wq.WorkPR, Number: m.Number, State: state, HeadSHA: m.HeadSHA, UpdatedAt: m.UpdatedAt}
	case "pipeline":
		if e.Pipeline == nil {
			return nil, nil
		}
		d.EventType, d.PipelineID, d.HeadSHA, d.SourceBranch = EventPipeline, e.Pipeline.ID, e.Pipeline.SHA, e.Pipeline.Branch
	case "job":
		if e.Job == nil {
			return nil, nil
		}
		d.EventType, d.PipelineID, d.HeadSHA = EventJob, e.Job.PipelineID, e.Job.SHA
	default:
		return nil, nil // not an event the relay sends
	}
	return d, nil
}

func decodeEvent(eventType string, body []byte) (forge.Event, error) {
	var e Envelope
	if err := json.Unmarshal(body, &e); err != nil {
		return forge.Event{}, fmt.Errorf("%s event: %w", eventType, err)
	}
	switch {
	case eventType == EventMergeRequest && e.MergeRequest != nil:
		m := e.MergeRequest
		return forge.Event{MergeRequest: &forge.MergeRequestEvent{Action: m.Action, Merged: m.State == "merged",
			Closed: m.State == "closed", HeadSHA: m.HeadSHA}}, nil
	case eventType == EventPipeline && e.Pipeline != nil:
		p := e.Pipeline
		return forge.Event{CI: &forge.CIEvent{Source: forge.CIPipeline, PipelineID: p.ID, SHA: p.SHA, Status: p.Status, Finished: p.Done}}, nil
	case eventType == EventJob && e.Job != nil:
		j := e.Job
		c := &forge.CIEvent{Source: forge.CIJob, PipelineID: j.PipelineID, SHA: j.SHA, Status: j.Status, Failed: j.Status == "failed"}
		if c.Failed {
			c.Job = &wq.CIJob{ID: j.ID, PipelineID: j.PipelineID, Name: j.Name, Status: wq.CIJobFailed, FinishedAt: j.FinishedAt}
		}
		return forge.Event{CI: c}, nil
	}
	return forge.Event{}, wq.Errorf(wq.EINVALID, "relay: a %s event without its member", eventType)
}

var jobPath = regexp.MustCompile(`^/(.+)/jobs/(\d+)/?$`)

func jobPage(path string) (forge.JobRef, bool) {
	m := jobPath.FindStringSubmatch(path)
	if m == nil {
		return forge.JobRef{}, false
	}
	id, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return forge.JobRef{}, false
	}
	return forge.JobRef{Project: m[1], JobID: id}, true
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
