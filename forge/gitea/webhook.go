package gitea

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Event types a Gitea delivery stores for an item type's handler
// (forge.Delivery.EventType); Plugin.DecodeEvent reads them.
const (
	EventPullRequest = "pull_request"        // the pull_request family
	EventReview      = "pull_request_review" // pull_request_approved and pull_request_rejected
	EventStatus      = "status"              // a commit status
	EventWorkflowRun = "workflow_run"        // an Actions run
	EventWorkflowJob = "workflow_job"        // an Actions job
	EventIssues      = "issues"              // the issues family (opened, closed, edited, labelled): work only
)

// signaturePresent refuses, before the body is read, a delivery whose
// X-Gitea-Signature could not be an HMAC-SHA256 (missing, not hex, or
// not 32 bytes): Gitea signs the body, so that only reading it under the
// receiver's small budget settles the rest (parseWebhook).
func signaturePresent(_ string, h http.Header) error {
	sig, err := hex.DecodeString(strings.TrimSpace(h.Get("X-Gitea-Signature")))
	if err != nil || len(sig) != sha256.Size {
		return wq.Errorf(wq.EUNAUTHORIZED, "X-Gitea-Signature is missing or not an HMAC-SHA256")
	}
	return nil
}

// parseWebhook verifies a delivery's X-Gitea-Signature, then reads it by
// its X-Gitea-Event.
func parseWebhook(secret string, h http.Header, body []byte) (*forge.Delivery, error) {
	if !forge.VerifyHMAC(body, h.Get("X-Gitea-Signature"), secret) {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "X-Gitea-Signature does not match the body")
	}
	parse, ok := parsers[h.Get("X-Gitea-Event")]
	if !ok {
		return nil, nil
	}
	id := h.Get("X-Gitea-Delivery")
	if id == "" || len(id) > 200 {
		return nil, wq.Errorf(wq.EINVALID, "X-Gitea-Delivery: missing or too long")
	}
	d, err := parse(body)
	if err != nil || d == nil {
		return nil, err
	}
	d.DeliveryID = id
	return d, nil
}

// parsers map each event header to its reader (events not listed are not
// used).
var parsers = map[string]func(body []byte) (*forge.Delivery, error){
	"pull_request":          func(b []byte) (*forge.Delivery, error) { return pullRequest(EventPullRequest, "", b) },
	"pull_request_approved": func(b []byte) (*forge.Delivery, error) { return pullRequest(EventReview, wq.ReviewApproved, b) },
	"pull_request_rejected": func(b []byte) (*forge.Delivery, error) { return pullRequest(EventReview, wq.ReviewChangesRequested, b) },
	"issues":                issue,
	"status":                status,
	"workflow_run":          func(b []byte) (*forge.Delivery, error) { return workflow(EventWorkflowRun, b) },
	"workflow_job":          func(b []byte) (*forge.Delivery, error) { return workflow(EventWorkflowJob, b) },
	"push":                  push,
}

type hookRepo struct {
	FullName string `json:"full_name"`
}

type hookUser struct {
	Login string `json:"login"`
}

// push reads a push to a branch. Tags and other refs are not used.
func push(body []byte) (*forge.Delivery, error) {
	var p struct {
		Ref        string   `json:"ref"`
		Before     string   `json:"before"`
		After      string   `json:"after"`
		Repository hookRepo `json:"repository"`
	}
	if err := forge.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	return forge.PushDelivery(p.Repository.FullName, p.Ref, p.Before, p.After), nil
}

// pullRequest reads a pull_request event, or (verdict set) a review
// event, whose payload is the same.
func pullRequest(eventType, verdict string, body []byte) (*forge.Delivery, error) {
	var p struct {
		Action      string `json:"action"`
		PullRequest *struct {
			Number    int64         `json:"number"`
			Title     string        `json:"title"`
			Body      string        `json:"body"`
			State     string        `json:"state"`
			Merged    bool          `json:"merged"`
			Mergeable bool          `json:"mergeable"`
			Draft     bool          `json:"draft"`
			User      *hookUser     `json:"user"`
			Labels    []forge.Label `json:"labels"`
			UpdatedAt *time.Time    `json:"updated_at"`
			Head      struct {
				Ref    string `json:"ref"`
				SHA    string `json:"sha"`
				RepoID int64  `json:"repo_id"`
			} `json:"head"`
			Base struct {
				Ref    string `json:"ref"`
				RepoID int64  `json:"repo_id"`
			} `json:"base"`
		} `json:"pull_request"`
		Repository hookRepo `json:"repository"`
	}
	if err := forge.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	pr := p.PullRequest
	if pr == nil || pr.Number <= 0 {
		return nil, nil // names no pull request
	}
	w := &wq.WorkInfo{Kind: wq.WorkPR, Number: pr.Number, State: wq.MergeRequestOpen, Title: pr.Title, Labels: forge.LabelNames(pr.Labels),
		HeadSHA: pr.Head.SHA, LinkedIssues: forge.ClosingIssues(pr.Body)}
	switch {
	case pr.Merged:
		w.State = wq.MergeRequestMerged
	case pr.State == "closed":
		w.State = wq.MergeRequestClosed
	}
	// As the adapter's Mergeable, but for a fast-forward-only repository
	// whose target moved, which the payload does not tell: the sync does.
	w.Mergeable = w.State == wq.MergeRequestOpen && pr.Mergeable && !pr.Draft
	if pr.User != nil {
		w.Author = pr.User.Login
	}
	if pr.UpdatedAt != nil {
		w.UpdatedAt = pr.UpdatedAt.UTC()
	}
	d := &forge.Delivery{EventType: eventType, Project: p.Repository.FullName, Work: w}
	switch {
	case verdict == wq.ReviewChangesRequested:
		// A reviewer's latest verdict requests changes: whatever the
		// others said, changes are requested.
		w.ReviewState = verdict
	case verdict == wq.ReviewApproved, slices.Contains([]string{"synchronized", "review_requested", "review_request_removed"}, p.Action):
		// An approval settles nothing while another reviewer may still
		// request changes; a push may dismiss stale approvals (Gitea sends
		// no event for a dismissal); a new request for review withdraws
		// that reviewer's verdict.
		d.RecheckReview = true
	}
	if head, base := pr.Head.RepoID, pr.Base.RepoID; head != 0 && base != 0 && head != base {
		return d, nil // a fork's pull request: work, never an item's merge request
	}
	d.Number, d.SourceBranch, d.TargetBranch = pr.Number, pr.Head.Ref, pr.Base.Ref
	if pr.UpdatedAt != nil && eventType == EventPullRequest {
		d.EventTS = pr.UpdatedAt.UTC()
	}
	return d, nil
}

// issue reads an issues event: work only, its number is an issue's.
func issue(body []byte) (*forge.Delivery, error) {
	var p struct {
		Issue *struct {
			Number      int64         `json:"number"`
			Title       string        `json:"title"`
			State       string        `json:"state"`
			User        *hookUser     `json:"user"`
			Labels      []forge.Label `json:"labels"`
			UpdatedAt   *time.Time    `json:"updated_at"`
			PullRequest *struct{}     `json:"pull_request"`
		} `json:"issue"`
		Repository hookRepo `json:"repository"`
	}
	if err := forge.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	is := p.Issue
	if is == nil || is.Number <= 0 {
		return nil, nil // names no issue
	}
	if is.PullRequest != nil {
		return nil, nil // a pull request's issue side: its pull_request events carry it
	}
	w := &wq.WorkInfo{Kind: wq.WorkIssue, Number: is.Number, State: wq.MergeRequestOpen, Title: is.Title, Labels: forge.LabelNames(is.Labels)}
	if is.State == "closed" {
		w.State = wq.MergeRequestClosed
	}
	if is.User != nil {
		w.Author = is.User.Login
	}
	if is.UpdatedAt != nil {
		w.UpdatedAt = is.UpdatedAt.UTC()
	}
	return &forge.Delivery{EventType: EventIssues, Project: p.Repository.FullName, Work: w}, nil
}

// status reads a commit status: it names only the commit.
func status(body []byte) (*forge.Delivery, error) {
	var p struct {
		SHA        string   `json:"sha"`
		Repository hookRepo `json:"repository"`
	}
	if err := forge.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	return &forge.Delivery{EventType: EventStatus, Project: p.Repository.FullName, HeadSHA: p.SHA}, nil
}

// workflow reads an Actions run or job event: the run is the pipeline.
func workflow(event string, body []byte) (*forge.Delivery, error) {
	type run struct {
		ID         int64  `json:"id"`
		RunID      int64  `json:"run_id"`
		HeadSHA    string `json:"head_sha"`
		HeadBranch string `json:"head_branch"`
	}
	var p struct {
		Run         *run `json:"workflow_run"`
		Job         *run `json:"workflow_job"`
		PullRequest *struct {
			Number int64 `json:"number"`
		} `json:"pull_request"`
		Repository hookRepo `json:"repository"`
	}
	if err := forge.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	d := &forge.Delivery{EventType: event, Project: p.Repository.FullName}
	switch {
	case event == EventWorkflowRun && p.Run != nil:
		d.PipelineID, d.HeadSHA, d.SourceBranch = p.Run.ID, p.Run.HeadSHA, p.Run.HeadBranch
	case event == EventWorkflowJob && p.Job != nil:
		d.PipelineID, d.HeadSHA, d.SourceBranch = p.Job.RunID, p.Job.HeadSHA, p.Job.HeadBranch
	default:
		return nil, nil // names no run or job
	}
	if p.PullRequest != nil {
		d.Number = p.PullRequest.Number
	}
	return d, nil
}

// decodeEvent reads a stored Gitea event into the forge-neutral one.
func decodeEvent(eventType string, body []byte) (forge.Event, error) {
	switch eventType {
	case EventPullRequest:
		var p struct {
			Action      string `json:"action"`
			PullRequest struct {
				Merged bool   `json:"merged"`
				State  string `json:"state"`
				Head   struct {
					Sha string `json:"sha"`
				} `json:"head"`
			} `json:"pull_request"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return forge.Event{}, fmt.Errorf("pull_request event: %w", err)
		}
		return forge.Event{MergeRequest: &forge.MergeRequestEvent{Action: p.Action, Merged: p.PullRequest.Merged,
			Closed: p.PullRequest.State == "closed", HeadSHA: p.PullRequest.Head.Sha}}, nil
	case EventReview:
		var p struct {
			Review struct {
				Type string `json:"type"`
			} `json:"review"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return forge.Event{}, fmt.Errorf("review event: %w", err)
		}
		return forge.Event{Review: &forge.ReviewEvent{Review: p.Review.Type}}, nil
	case EventStatus:
		// Statuses have no pipeline id.
		var p struct {
			SHA       string `json:"sha"`
			State     string `json:"state"`
			Context   string `json:"context"`
			TargetURL string `json:"target_url"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return forge.Event{}, fmt.Errorf("status event: %w", err)
		}
		e := &forge.CIEvent{Source: forge.CIStatus, SHA: p.SHA, Status: p.State,
			Finished: slices.Contains([]string{"success", "failure", "error", "warning"}, p.State)}
		if p.Context != "" {
			e.Check = &wq.CommitStatus{Context: p.Context, State: checkState(p.State), ForgeState: p.State, URL: p.TargetURL}
		}
		return forge.Event{CI: e}, nil
	case EventWorkflowRun:
		var p struct {
			Action string `json:"action"`
			Run    struct {
				ID         int64  `json:"id"`
				HeadSHA    string `json:"head_sha"`
				Conclusion string `json:"conclusion"`
			} `json:"workflow_run"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return forge.Event{}, fmt.Errorf("workflow_run event: %w", err)
		}
		st := p.Action
		if p.Run.Conclusion != "" {
			st = p.Run.Conclusion
		}
		return forge.Event{CI: &forge.CIEvent{Source: forge.CIPipeline, PipelineID: p.Run.ID, SHA: p.Run.HeadSHA, Status: st,
			Finished: p.Action == "completed"}}, nil
	case EventWorkflowJob:
		var p struct {
			Action string `json:"action"`
			Job    struct {
				ID          int64  `json:"id"`
				Name        string `json:"name"`
				RunID       int64  `json:"run_id"`
				RunAttempt  int    `json:"run_attempt"`
				HeadSHA     string `json:"head_sha"`
				Conclusion  string `json:"conclusion"`
				CompletedAt string `json:"completed_at"`
				HTMLURL     string `json:"html_url"`
			} `json:"workflow_job"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return forge.Event{}, fmt.Errorf("workflow_job event: %w", err)
		}
		e := &forge.CIEvent{Source: forge.CIJob, PipelineID: p.Job.RunID, SHA: p.Job.HeadSHA, Status: p.Job.Conclusion,
			Failed: p.Action == "completed" && p.Job.Conclusion == "failure"}
		if e.Failed && p.Job.ID > 0 {
			e.Job = &wq.CIJob{ID: p.Job.ID, PipelineID: p.Job.RunID, Name: p.Job.Name, Status: wq.CIJobFailed,
				Retries: max(p.Job.RunAttempt-1, 0), FinishedAt: forge.PayloadTime(p.Job.CompletedAt), URL: p.Job.HTMLURL}
		}
		return forge.Event{CI: e}, nil
	}
	return forge.Event{}, wq.Errorf(wq.EINVALID, "gitea: no event type %q", eventType)
}

// jobPage reads the page of an Actions job, /owner/repo/actions/runs/R/jobs/N:
// its N is the job's position in the run, not an API id, so the run is
// what it names.
func jobPage(path string) (forge.JobRef, bool) {
	m := jobPath.FindStringSubmatch(path)
	if m == nil {
		return forge.JobRef{}, false
	}
	run, _ := strconv.ParseInt(m[2], 10, 64)
	return forge.JobRef{Project: m[1], RunID: run}, true
}

var jobPath = regexp.MustCompile(`^/([^/]+/[^/]+)/actions/runs/(\d+)/jobs/(\d+)/?$`)

// workPage is an issue's or a pull request's page below the base URL.
func workPage(repo, kind string, number int64) string {
	if kind == wq.WorkPR {
		return fmt.Sprintf("/%s/pulls/%d", repo, number)
	}
	return fmt.Sprintf("/%s/issues/%d", repo, number)
}

// Plugin is the Gitea kind of forge (the composition root, cmd/workqueue/world.go, registers it).
var Plugin = forge.Plugin{
	Name: wq.ForgeGitea,
	Open: func(c forge.Config) (wq.Forge, error) {
		f, err := New(c.URL, c.Token, Options{ReviewToken: c.ReviewToken, HTTPClient: c.HTTPClient})
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return f, nil
	},
	ParseWebhook: parseWebhook,
	VerifyHeader: signaturePresent,
	EventTypes:   []string{EventPullRequest, EventReview, EventStatus, EventWorkflowRun, EventWorkflowJob},
	DecodeEvent:  decodeEvent,
	JobPage:      jobPage,
	WorkPage:     workPage,
	// Gitea's ChangeFiles writes regular files only: no chmod.
}
