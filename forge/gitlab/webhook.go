package gitlab

import (
	"crypto/sha256"
	"crypto/subtle"
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

// Event types a GitLab delivery stores for an item type's handler
// (forge.Delivery.EventType); Plugin.DecodeEvent reads them.
const (
	EventMergeRequest = "merge_request" // Merge Request Hook
	EventPipeline     = "pipeline"      // Pipeline Hook
	EventJob          = "build"         // Job Hook (object_kind "build")
	EventIssue        = "issue"         // Issue Hook: work only
)

// Plugin is the GitLab kind of forge (the composition root, cmd/workqueue/world.go, registers it).
var Plugin = forge.Plugin{
	Name: wq.ForgeGitLab,
	Open: func(c forge.Config) (wq.Forge, error) {
		f, err := New(c.URL, c.Token, Options{ReviewToken: c.ReviewToken, HTTPClient: c.HTTPClient})
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return f, nil
	},
	ParseWebhook: parseWebhook,
	VerifyHeader: verifyToken,
	EventTypes:   []string{EventMergeRequest, EventPipeline, EventJob},
	DecodeEvent:  decodeEvent,
	JobPage:      jobPage,
	WorkPage:     workPage,
}

// workPage is an issue's or a merge request's page below the base URL.
func workPage(repo, kind string, number int64) string {
	if kind == wq.WorkPR {
		return fmt.Sprintf("/%s/-/merge_requests/%d", repo, number)
	}
	return fmt.Sprintf("/%s/-/issues/%d", repo, number)
}

// verifyToken checks a delivery's X-Gitlab-Token, which GitLab sends as
// the hook's secret itself: the receiver calls it before reading the
// body (Plugin.VerifyHeader), so that a sender without it holds nothing.
func verifyToken(secret string, h http.Header) error {
	got := h.Get("X-Gitlab-Token")
	if subtle.ConstantTimeCompare([]byte(secret), []byte(got)) != 1 {
		return wq.Errorf(wq.EUNAUTHORIZED, "X-Gitlab-Token does not match")
	}
	return nil
}

// parseWebhook checks a delivery's X-Gitlab-Token, then reads it by its
// X-Gitlab-Event.
func parseWebhook(secret string, h http.Header, body []byte) (*forge.Delivery, error) {
	if err := verifyToken(secret, h); err != nil {
		return nil, err
	}
	parse, ok := parsers[h.Get("X-Gitlab-Event")]
	if !ok {
		return nil, nil
	}
	id, err := deliveryID(h, body)
	if err != nil {
		return nil, err
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
	"Merge Request Hook": mergeRequest,
	"Issue Hook":         issue,
	"Pipeline Hook":      pipeline,
	"Job Hook":           job,
	"Push Hook":          push,
}

// deliveryID is what deduplicates a GitLab delivery. Idempotency-Key
// (GitLab 17.4+) names one delivery of one hook and is kept when a person
// resends it: it is the id alone. Before 17.4 there is only
// X-Gitlab-Event-UUID, which every delivery of one request shares (a push
// that triggers a merge request and a pipeline event sends both under one
// UUID): alone it would drop the second event as a duplicate of the first,
// so the id is the UUID and a prefix of the body's SHA-256, which tells
// different events apart and still matches a delivery sent again.
func deliveryID(h http.Header, body []byte) (string, error) {
	if key := h.Get("Idempotency-Key"); key != "" {
		if len(key) > 200 {
			return "", wq.Errorf(wq.EINVALID, "Idempotency-Key: too long")
		}
		return key, nil
	}
	id := h.Get("X-Gitlab-Event-UUID")
	if id == "" || len(id) > 200 {
		return "", wq.Errorf(wq.EINVALID, "X-Gitlab-Event-UUID: missing or too long")
	}
	sum := sha256.Sum256(body)
	return id + ":" + hex.EncodeToString(sum[:8]), nil
}

type hookProject struct {
	PathWithNamespace string `json:"path_with_namespace"`
}

// push reads a Push Hook. Tags and other refs are not used.
func push(body []byte) (*forge.Delivery, error) {
	var p struct {
		Ref     string      `json:"ref"`
		Before  string      `json:"before"`
		After   string      `json:"after"`
		Project hookProject `json:"project"`
	}
	if err := forge.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	return forge.PushDelivery(p.Project.PathWithNamespace, p.Ref, p.Before, p.After), nil
}

// hookBranches are the branches and projects of a merge request, as the
// Merge Request Hook and a Pipeline Hook's merge_request give them.
type hookBranches struct {
	SourceBranch    string `json:"source_branch"`
	TargetBranch    string `json:"target_branch"`
	SourceProjectID int64  `json:"source_project_id"`
	TargetProjectID int64  `json:"target_project_id"`
}

// fromFork reports whether the merge request's source branch lives in
// another project than its target (both ids given and different).
func (b hookBranches) fromFork() bool {
	return b.SourceProjectID != 0 && b.TargetProjectID != 0 && b.SourceProjectID != b.TargetProjectID
}

// mergeRequest reads a Merge Request Hook. Its reviewers carry each
// reviewer's state in recent GitLab (18.x: state and re_requested came
// to the hook's reviewers with gitlab-org/gitlab!205274), which settles
// whether changes are requested; action "approved" says the approvals are
// enough. Other approval actions (approval: one more, not yet enough;
// unapproval, unapproved), a reviewer's new state without changes
// requested, a push (oldrev: approvals may be reset), and reviewers
// without a state (older GitLab, whose hook names reviewers only) leave
// the verdict to a recheck: the inventory reads the merge request's
// approvals and reviewers from the forge.
func mergeRequest(body []byte) (*forge.Delivery, error) {
	var p struct {
		ObjectKind string      `json:"object_kind"`
		Project    hookProject `json:"project"`
		Attrs      *struct {
			IID int64 `json:"iid"`
			hookBranches
			UpdatedAt           hookTime      `json:"updated_at"`
			Title               string        `json:"title"`
			Description         string        `json:"description"`
			State               string        `json:"state"`
			Action              string        `json:"action"`
			OldRev              string        `json:"oldrev"`
			DetailedMergeStatus string        `json:"detailed_merge_status"`
			Labels              []forge.Label `json:"labels"`
			LastCommit          struct {
				ID string `json:"id"`
			} `json:"last_commit"`
		} `json:"object_attributes"`
		Labels    []forge.Label `json:"labels"`
		Reviewers []struct {
			State *string `json:"state"` // unreviewed, review_started, reviewed, requested_changes, approved, unapproved; absent before 18.x
		} `json:"reviewers"`
		Changes struct {
			Reviewers *json.RawMessage `json:"reviewers"`
		} `json:"changes"`
	}
	if err := forge.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	a := p.Attrs
	if p.ObjectKind != "merge_request" || a == nil || a.IID <= 0 {
		return nil, nil // not a merge request's
	}
	labels := p.Labels
	if labels == nil {
		labels = a.Labels
	}
	w := &wq.WorkInfo{Kind: wq.WorkPR, Number: a.IID, Title: a.Title, Labels: forge.LabelNames(labels), HeadSHA: a.LastCommit.ID,
		LinkedIssues: forge.ClosingIssues(a.Description), UpdatedAt: time.Time(a.UpdatedAt)}
	switch a.State {
	case "merged":
		w.State = wq.MergeRequestMerged
	case "closed":
		w.State = wq.MergeRequestClosed
	default: // opened, and locked while a merge is in progress
		w.State = wq.MergeRequestOpen
	}
	w.Mergeable = a.State == "opened" && a.DetailedMergeStatus == "mergeable"
	d := &forge.Delivery{EventType: EventMergeRequest, Project: p.Project.PathWithNamespace, Work: w}
	requested, stateless := false, false
	for _, r := range p.Reviewers {
		requested = requested || r.State != nil && *r.State == "requested_changes"
		stateless = stateless || r.State == nil
	}
	switch {
	case requested:
		w.ReviewState = wq.ReviewChangesRequested
	case a.Action == "approved":
		w.ReviewState = wq.ReviewApproved
	case a.Action == "approval", a.Action == "unapproval", a.Action == "unapproved", a.OldRev != "", p.Changes.Reviewers != nil, stateless:
		d.RecheckReview = true
	}
	if a.fromFork() {
		return d, nil // a fork's merge request: work, never an item's merge request
	}
	d.Number, d.SourceBranch, d.TargetBranch, d.EventTS = a.IID, a.SourceBranch, a.TargetBranch, time.Time(a.UpdatedAt)
	return d, nil
}

// issue reads an Issue Hook: work only, its number is an issue's.
// GitLab sends confidential issues as Confidential Issue Hook, which is
// not read (nor subscribed); incidents and tasks are not work. GitLab
// also sends work items other than issues (tasks, OKRs, epics) under
// Issue Hook, with object_kind work_item: not work either, acknowledged.
func issue(body []byte) (*forge.Delivery, error) {
	var p struct {
		ObjectKind string      `json:"object_kind"`
		Project    hookProject `json:"project"`
		Attrs      *struct {
			IID          int64         `json:"iid"`
			Title        string        `json:"title"`
			State        string        `json:"state"`
			Type         string        `json:"type"`
			Confidential bool          `json:"confidential"`
			UpdatedAt    hookTime      `json:"updated_at"`
			Labels       []forge.Label `json:"labels"`
		} `json:"object_attributes"`
		Labels []forge.Label `json:"labels"`
	}
	if err := forge.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	a := p.Attrs
	if p.ObjectKind != "issue" || a == nil || a.IID <= 0 {
		return nil, nil // a work item of another type, or no issue
	}
	if a.Confidential || (a.Type != "" && a.Type != "Issue") {
		return nil, nil
	}
	labels := p.Labels
	if labels == nil {
		labels = a.Labels
	}
	w := &wq.WorkInfo{Kind: wq.WorkIssue, Number: a.IID, State: wq.MergeRequestOpen, Title: a.Title, Labels: forge.LabelNames(labels),
		UpdatedAt: time.Time(a.UpdatedAt)}
	if a.State == "closed" {
		w.State = wq.MergeRequestClosed
	}
	return &forge.Delivery{EventType: EventIssue, Project: p.Project.PathWithNamespace, Work: w}, nil
}

// pipeline reads a Pipeline Hook. A merge request pipeline names its
// merge request (merge_request.iid), which is what it resolves by: a
// merged-results or merge train pipeline (ref refs/merge-requests/N/merge
// or /train) runs on a merge commit GitLab made, so its sha is not the
// branch's head and is left out; a detached one (/head) runs on the head.
func pipeline(body []byte) (*forge.Delivery, error) {
	var p struct {
		ObjectKind string      `json:"object_kind"`
		Project    hookProject `json:"project"`
		Attrs      *struct {
			ID  int64  `json:"id"`
			Ref string `json:"ref"`
			Tag bool   `json:"tag"`
			SHA string `json:"sha"`
		} `json:"object_attributes"`
		MergeRequest *struct {
			IID int64 `json:"iid"`
			hookBranches
		} `json:"merge_request"`
	}
	if err := forge.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	if p.ObjectKind != "pipeline" || p.Attrs == nil || p.Attrs.ID <= 0 {
		return nil, nil // names no pipeline
	}
	d := &forge.Delivery{EventType: EventPipeline, Project: p.Project.PathWithNamespace, PipelineID: p.Attrs.ID, HeadSHA: p.Attrs.SHA}
	if !p.Attrs.Tag {
		d.SourceBranch = p.Attrs.Ref // a merge request pipeline's ref is refs/merge-requests/N/…: matches no branch
	}
	if mr := p.MergeRequest; mr != nil && mr.IID > 0 {
		if mr.fromFork() {
			return nil, nil
		}
		d.Number, d.SourceBranch, d.TargetBranch = mr.IID, mr.SourceBranch, mr.TargetBranch
		if strings.HasSuffix(p.Attrs.Ref, "/merge") || strings.HasSuffix(p.Attrs.Ref, "/train") {
			d.HeadSHA = ""
		}
	}
	return d, nil
}

// job reads a Job Hook. Its commit.id is the pipeline id, not a commit:
// pipeline_id is read instead.
func job(body []byte) (*forge.Delivery, error) {
	var p struct {
		ObjectKind string      `json:"object_kind"`
		Project    hookProject `json:"project"`
		PipelineID int64       `json:"pipeline_id"`
		Ref        string      `json:"ref"`
		Tag        bool        `json:"tag"`
		SHA        string      `json:"sha"`
	}
	if err := forge.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	if p.ObjectKind != "build" {
		return nil, nil // not a job's
	}
	d := &forge.Delivery{EventType: EventJob, Project: p.Project.PathWithNamespace, PipelineID: p.PipelineID, HeadSHA: p.SHA}
	if !p.Tag {
		d.SourceBranch = p.Ref
	}
	return d, nil
}

// hookTime reads GitLab's webhook timestamps: RFC 3339, or the older
// "2006-01-02 15:04:05 UTC".
type hookTime time.Time

func (t *hookTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil || s == "" {
		return nil // absent or odd: no event time, the stale guard is skipped
	}
	*t = hookTime(forge.PayloadTime(s))
	return nil
}

// pipelineFinal are the pipeline states GitLab does not leave on its own.
var pipelineFinal = []string{"success", "failed", "canceled", "skipped", "manual", "blocked"}

// decodeEvent reads a stored GitLab event into the forge-neutral one.
func decodeEvent(eventType string, body []byte) (forge.Event, error) {
	switch eventType {
	case EventMergeRequest:
		var p struct {
			Attrs struct {
				Action     string `json:"action"`
				State      string `json:"state"`
				LastCommit struct {
					ID string `json:"id"`
				} `json:"last_commit"`
			} `json:"object_attributes"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return forge.Event{}, fmt.Errorf("merge request event: %w", err)
		}
		return forge.Event{MergeRequest: &forge.MergeRequestEvent{Action: p.Attrs.Action, Merged: p.Attrs.State == "merged",
			Closed: p.Attrs.State == "closed", HeadSHA: p.Attrs.LastCommit.ID}}, nil
	case EventPipeline:
		var p struct {
			Attrs struct {
				ID     int64  `json:"id"`
				SHA    string `json:"sha"`
				Ref    string `json:"ref"`
				Status string `json:"status"`
			} `json:"object_attributes"`
			MergeRequest *struct {
				IID int64 `json:"iid"`
			} `json:"merge_request"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return forge.Event{}, fmt.Errorf("pipeline event: %w", err)
		}
		e := &forge.CIEvent{Source: forge.CIPipeline, PipelineID: p.Attrs.ID, SHA: p.Attrs.SHA, Status: p.Attrs.Status,
			Finished: slices.Contains(pipelineFinal, p.Attrs.Status)}
		// A merged-results or merge-train pipeline runs on GitLab's merge of
		// the head into the target, on the merge request's own ref: its
		// commit is never the pushed head, its merge request says whose it is.
		if mrq := p.MergeRequest; mrq != nil && mrq.IID != 0 {
			ref := fmt.Sprintf("refs/merge-requests/%d/", mrq.IID)
			if p.Attrs.Ref == ref+"merge" || p.Attrs.Ref == ref+"train" {
				e.MergeRefOf = mrq.IID
			}
		}
		return forge.Event{CI: e}, nil
	case EventJob:
		// Only a failure is news (failure_reason can be set on jobs that
		// did not fail, so the status decides).
		var p struct {
			PipelineID    int64  `json:"pipeline_id"`
			SHA           string `json:"sha"`
			Status        string `json:"build_status"`
			ID            int64  `json:"build_id"`
			Name          string `json:"build_name"`
			Stage         string `json:"build_stage"`
			FailureReason string `json:"build_failure_reason"`
			FinishedAt    string `json:"build_finished_at"`
			AllowFailure  bool   `json:"build_allow_failure"`
			Retries       int    `json:"retries_count"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return forge.Event{}, fmt.Errorf("job event: %w", err)
		}
		e := &forge.CIEvent{Source: forge.CIJob, PipelineID: p.PipelineID, SHA: p.SHA, Status: p.Status, Failed: p.Status == "failed"}
		if p.Name != "" {
			// A job is its commit status, by name (CommitStatuses).
			check := wq.CommitStatus{Context: p.Name, State: checkState(p.Status), ForgeState: p.Status}
			if check.State == wq.CheckFailed && p.Status == "failed" && p.AllowFailure {
				check.State = wq.CheckSuccess
			}
			e.Check = &check
		}
		// A job allowed to fail does not keep the pipeline from passing.
		if e.Failed && p.ID > 0 && !p.AllowFailure {
			e.Job = &wq.CIJob{ID: p.ID, PipelineID: p.PipelineID, Name: p.Name, Stage: p.Stage, Status: wq.CIJobFailed,
				FailureReason: p.FailureReason, Retries: max(p.Retries, 0), FinishedAt: forge.PayloadTime(p.FinishedAt)}
		}
		return forge.Event{CI: e}, nil
	}
	return forge.Event{}, wq.Errorf(wq.EINVALID, "gitlab: no event type %q", eventType)
}

// jobPage reads the page of a job, /group/project/-/jobs/N.
func jobPage(path string) (forge.JobRef, bool) {
	m := jobPath.FindStringSubmatch(path)
	if m == nil {
		return forge.JobRef{}, false
	}
	id, _ := strconv.ParseInt(m[2], 10, 64)
	return forge.JobRef{Project: m[1], JobID: id}, true
}

var jobPath = regexp.MustCompile(`^/(.+)/-/jobs/(\d+)/?$`)
