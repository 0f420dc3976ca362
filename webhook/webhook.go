// Package webhook verifies and reads forge webhook deliveries. It is pure:
// headers and the raw body in, a Delivery out. The signature (Gitea) or
// token (GitLab) is checked before the body is parsed at all.
//
// A delivery serves two readers. Item types resolve it to the item it
// concerns by the merge request, pipeline, branch or commit it names; the
// control plane's inventory takes the new state of the issue or pull
// request it carries (Delivery.Work), read from the payload alone.
package webhook

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Event types handed to item types' handlers, as stored with the event.
const (
	GiteaPullRequest   = "pull_request"        // Gitea's pull_request family
	GiteaReview        = "pull_request_review" // Gitea's pull_request_approved and pull_request_rejected
	GiteaStatus        = "status"              // a commit status on Gitea
	GiteaWorkflowRun   = "workflow_run"        // a Gitea Actions run
	GiteaWorkflowJob   = "workflow_job"        // a Gitea Actions job
	GitLabMergeRequest = "merge_request"       // GitLab's Merge Request Hook
	GitLabPipeline     = "pipeline"            // GitLab's Pipeline Hook
	GitLabJob          = "build"               // GitLab's Job Hook (object_kind "build")
	GiteaIssues        = "issues"              // Gitea's issues family (opened, closed, edited, labelled)
	GitLabIssue        = "issue"               // GitLab's Issue Hook
	Push               = "push"                // a push to a branch (Gitea push, GitLab Push Hook)
)

// MaxBodyBytes bounds a delivery's body.
const MaxBodyBytes = 1 << 20

// Delivery is a verified delivery, reduced to what resolution needs; Body
// keeps the raw payload for the item type's handler. Of Number,
// PipelineID, SourceBranch and HeadSHA, at least one is set (they are what
// the event says about the merge request it concerns), or Work is.
type Delivery struct {
	DeliveryID   string
	EventType    string
	Project      string
	Number       int64 // merge request number
	PipelineID   int64 // GitLab pipeline id, Gitea Actions run id
	SourceBranch string
	TargetBranch string // set by merge request events: with SourceBranch, it resolves one not yet numbered
	HeadSHA      string
	// EventTS orders phase changes (the stale guard); zero for events that
	// only ask for a look (CI, reviews), whose clocks are not the merge
	// request's.
	EventTS time.Time
	Body    json.RawMessage

	// Work is the new state of the issue or pull request of Project the
	// event concerns, read from the payload alone, for the control plane's
	// inventory; nil when the event carries none (CI events). An issue
	// event, and a pull request from a fork, carry Work only: their
	// numbers are not merge requests of ours, so nothing above resolves
	// them to an item. Fields the payload does not carry are zero: Author
	// on GitLab (its hooks name the author by id), and ReviewState unless
	// the payload settles the verdict on its own (see RecheckReview).
	Work *wq.WorkInfo
	// RecheckReview says the event may have changed the pull request's
	// review verdict in a way its payload cannot settle: an approval while
	// another reviewer may still request changes, a withdrawn approval, a
	// push (which can dismiss stale approvals). The inventory reads the
	// verdict from the forge then; otherwise an empty ReviewState keeps
	// the verdict it has.
	RecheckReview bool
	// Push is a push to a branch of Project: it moves the head of every
	// open pull request whose head was Before. It reaches the inventory
	// at once, where a pull request's own event waits for the forge's
	// checks (Gitea's synchronized event comes seconds later). A push
	// carries nothing else: it resolves to no item.
	Push *BranchPush
}

// BranchPush is a branch's move.
type BranchPush struct {
	Branch string
	Before string // the branch's head before; all zeros for a new branch
	After  string // its head now; all zeros for a deleted branch
}

// Parse verifies and reads a delivery from a forge of the given kind. It
// returns EUNAUTHORIZED if the signature or token does not match (or no
// secret is configured), EINVALID for a delivery of an event workqueue
// reads whose body is not JSON or that has no delivery id, and a nil
// Delivery for every other verified delivery it does not use: an event it
// does not read (a wiki page, a release, a GitLab work item under Issue
// Hook), or one that names nothing it could act on. Those must be
// acknowledged: GitLab disables a hook after four failed deliveries in a
// row, and then sends nothing at all, merges and pipelines included. A
// merge request from a fork gives a Delivery with its Work only: a fork's
// branch can carry the name of one of ours, and workqueue only opens merge
// requests within a project, so it must never resolve to an item; it is
// still work in the project's inventory.
func Parse(kind, secret string, h http.Header, body []byte) (*Delivery, error) {
	if secret == "" {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "no webhook secret is configured for this forge")
	}
	var d *Delivery
	var err error
	switch kind {
	case wq.ForgeGitea:
		d, err = parseGitea(secret, h, body)
	case wq.ForgeGitLab:
		d, err = parseGitLab(secret, h, body)
	default:
		return nil, wq.Errorf(wq.EINVALID, "unknown forge kind %q", kind)
	}
	if err != nil || d == nil {
		return nil, err
	}
	if d.Project == "" || (d.Number <= 0 && d.PipelineID <= 0 && d.SourceBranch == "" && d.HeadSHA == "" && d.Work == nil && d.Push == nil) ||
		d.Number < 0 || d.PipelineID < 0 {
		return nil, nil // names no project, or nothing in it: nothing to act on
	}
	d.Body = body
	return d, nil
}

// VerifyHMAC reports whether signature (hex, either case, surrounding
// space ignored) is the HMAC-SHA256 of body under secret, compared in
// constant time: how Gitea signs a delivery, and Sentry too.
func VerifyHMAC(body []byte, signature, secret string) bool {
	got, err := hex.DecodeString(strings.TrimSpace(signature))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(mac.Sum(nil), got)
}

func parseGitea(secret string, h http.Header, body []byte) (*Delivery, error) {
	if !VerifyHMAC(body, h.Get("X-Gitea-Signature"), secret) {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "X-Gitea-Signature does not match the body")
	}
	parse, ok := giteaParsers[h.Get("X-Gitea-Event")]
	if !ok {
		return nil, nil
	}
	id := h.Get("X-Gitea-Delivery")
	if id == "" || len(id) > 200 {
		return nil, wq.Errorf(wq.EINVALID, "X-Gitea-Delivery: missing or too long")
	}
	return parseWith(parse, id, body)
}

// A parser reads one event's body; the table maps each forge's event
// header to it (events not listed are not used).
type parser func(body []byte) (*Delivery, error)

var giteaParsers = map[string]parser{
	"pull_request":          func(b []byte) (*Delivery, error) { return giteaPullRequest(GiteaPullRequest, "", b) },
	"pull_request_approved": func(b []byte) (*Delivery, error) { return giteaPullRequest(GiteaReview, wq.ReviewApproved, b) },
	"pull_request_rejected": func(b []byte) (*Delivery, error) { return giteaPullRequest(GiteaReview, wq.ReviewChangesRequested, b) },
	"issues":                giteaIssue,
	"status":                giteaStatus,
	"workflow_run":          func(b []byte) (*Delivery, error) { return giteaWorkflow(GiteaWorkflowRun, b) },
	"workflow_job":          func(b []byte) (*Delivery, error) { return giteaWorkflow(GiteaWorkflowJob, b) },
	"push":                  branchPush,
}

var gitlabParsers = map[string]parser{
	"Merge Request Hook": gitlabMergeRequest,
	"Issue Hook":         gitlabIssue,
	"Pipeline Hook":      gitlabPipeline,
	"Job Hook":           gitlabJob,
	"Push Hook":          branchPush,
}

// branchPush reads a push of either forge: both send ref, before and
// after, and name the project as Gitea's repository.full_name or
// GitLab's project.path_with_namespace. Tags and other refs are not used.
func branchPush(body []byte) (*Delivery, error) {
	var p struct {
		Ref        string        `json:"ref"`
		Before     string        `json:"before"`
		After      string        `json:"after"`
		Repository giteaRepo     `json:"repository"`
		Project    gitlabProject `json:"project"`
	}
	if err := unmarshal(body, &p); err != nil {
		return nil, err
	}
	branch, ok := strings.CutPrefix(p.Ref, "refs/heads/")
	if !ok || branch == "" {
		return nil, nil
	}
	project := p.Repository.FullName
	if project == "" {
		project = p.Project.PathWithNamespace
	}
	if project == "" || p.Before == "" || p.After == "" {
		return nil, nil // names no move
	}
	return &Delivery{EventType: Push, Project: project, Push: &BranchPush{Branch: branch, Before: p.Before, After: p.After}}, nil
}

// parseWith reads a delivery with the parser for its event.
func parseWith(parse parser, deliveryID string, body []byte) (*Delivery, error) {
	d, err := parse(body)
	if errors.Is(err, errNotUsed) {
		return nil, nil
	}
	if err != nil || d == nil {
		return nil, err
	}
	d.DeliveryID = deliveryID
	return d, nil
}

type giteaRepo struct {
	FullName string `json:"full_name"`
}

type giteaUser struct {
	Login string `json:"login"`
}

// label is a label in either forge's payload: Gitea names it, GitLab
// titles it.
type label struct {
	Name  string `json:"name"`
	Title string `json:"title"`
}

func labelNames(ls []label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, cmp.Or(l.Name, l.Title))
	}
	return out
}

// giteaPullRequest reads a pull_request event, or (verdict set) a review
// event, whose payload is the same.
func giteaPullRequest(eventType, verdict string, body []byte) (*Delivery, error) {
	var p struct {
		Action      string `json:"action"`
		PullRequest *struct {
			Number    int64      `json:"number"`
			Title     string     `json:"title"`
			Body      string     `json:"body"`
			State     string     `json:"state"`
			Merged    bool       `json:"merged"`
			Mergeable bool       `json:"mergeable"`
			Draft     bool       `json:"draft"`
			User      *giteaUser `json:"user"`
			Labels    []label    `json:"labels"`
			UpdatedAt *time.Time `json:"updated_at"`
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
		Repository giteaRepo `json:"repository"`
	}
	if err := unmarshal(body, &p); err != nil {
		return nil, err
	}
	pr := p.PullRequest
	if pr == nil || pr.Number <= 0 {
		return nil, nil // names no pull request
	}
	w := &wq.WorkInfo{Kind: wq.WorkPR, Number: pr.Number, State: wq.MergeRequestOpen, Title: pr.Title, Labels: labelNames(pr.Labels),
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
	d := &Delivery{EventType: eventType, Project: p.Repository.FullName, Work: w}
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
	if pr.UpdatedAt != nil && eventType == GiteaPullRequest {
		d.EventTS = pr.UpdatedAt.UTC()
	}
	return d, nil
}

// giteaIssue reads an issues event: work only, its number is an issue's.
func giteaIssue(body []byte) (*Delivery, error) {
	var p struct {
		Issue *struct {
			Number      int64      `json:"number"`
			Title       string     `json:"title"`
			State       string     `json:"state"`
			User        *giteaUser `json:"user"`
			Labels      []label    `json:"labels"`
			UpdatedAt   *time.Time `json:"updated_at"`
			PullRequest *struct{}  `json:"pull_request"`
		} `json:"issue"`
		Repository giteaRepo `json:"repository"`
	}
	if err := unmarshal(body, &p); err != nil {
		return nil, err
	}
	is := p.Issue
	if is == nil || is.Number <= 0 {
		return nil, nil // names no issue
	}
	if is.PullRequest != nil {
		return nil, nil // a pull request's issue side: its pull_request events carry it
	}
	w := &wq.WorkInfo{Kind: wq.WorkIssue, Number: is.Number, State: wq.MergeRequestOpen, Title: is.Title, Labels: labelNames(is.Labels)}
	if is.State == "closed" {
		w.State = wq.MergeRequestClosed
	}
	if is.User != nil {
		w.Author = is.User.Login
	}
	if is.UpdatedAt != nil {
		w.UpdatedAt = is.UpdatedAt.UTC()
	}
	return &Delivery{EventType: GiteaIssues, Project: p.Repository.FullName, Work: w}, nil
}

// giteaStatus reads a commit status: it names only the commit.
func giteaStatus(body []byte) (*Delivery, error) {
	var p struct {
		SHA        string    `json:"sha"`
		Repository giteaRepo `json:"repository"`
	}
	if err := unmarshal(body, &p); err != nil {
		return nil, err
	}
	return &Delivery{EventType: GiteaStatus, Project: p.Repository.FullName, HeadSHA: p.SHA}, nil
}

// giteaWorkflow reads an Actions run or job event: the run is the
// pipeline.
func giteaWorkflow(event string, body []byte) (*Delivery, error) {
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
		Repository giteaRepo `json:"repository"`
	}
	if err := unmarshal(body, &p); err != nil {
		return nil, err
	}
	d := &Delivery{EventType: event, Project: p.Repository.FullName}
	switch {
	case event == GiteaWorkflowRun && p.Run != nil:
		d.PipelineID, d.HeadSHA, d.SourceBranch = p.Run.ID, p.Run.HeadSHA, p.Run.HeadBranch
	case event == GiteaWorkflowJob && p.Job != nil:
		d.PipelineID, d.HeadSHA, d.SourceBranch = p.Job.RunID, p.Job.HeadSHA, p.Job.HeadBranch
	default:
		return nil, nil // names no run or job
	}
	if p.PullRequest != nil {
		d.Number = p.PullRequest.Number
	}
	return d, nil
}

func parseGitLab(secret string, h http.Header, body []byte) (*Delivery, error) {
	got := h.Get("X-Gitlab-Token")
	if subtle.ConstantTimeCompare([]byte(secret), []byte(got)) != 1 {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "X-Gitlab-Token does not match")
	}
	parse, ok := gitlabParsers[h.Get("X-Gitlab-Event")]
	if !ok {
		return nil, nil
	}
	id, err := gitlabDeliveryID(h, body)
	if err != nil {
		return nil, err
	}
	return parseWith(parse, id, body)
}

// gitlabDeliveryID is what deduplicates a GitLab delivery. Idempotency-Key
// (GitLab 17.4+) names one delivery of one hook and is kept when a person
// resends it: it is the id alone. Before 17.4 there is only
// X-Gitlab-Event-UUID, which every delivery of one request shares (a push
// that triggers a merge request and a pipeline event sends both under one
// UUID): alone it would drop the second event as a duplicate of the first,
// so the id is the UUID and a prefix of the body's SHA-256, which tells
// different events apart and still matches a delivery sent again.
func gitlabDeliveryID(h http.Header, body []byte) (string, error) {
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

type gitlabProject struct {
	PathWithNamespace string `json:"path_with_namespace"`
}

// gitlabBranches are the branches and projects of a merge request, as
// GitLab's Merge Request Hook and a Pipeline Hook's merge_request give them.
type gitlabBranches struct {
	SourceBranch    string `json:"source_branch"`
	TargetBranch    string `json:"target_branch"`
	SourceProjectID int64  `json:"source_project_id"`
	TargetProjectID int64  `json:"target_project_id"`
}

// fromFork reports whether the merge request's source branch lives in
// another project than its target (both ids given and different).
func (b gitlabBranches) fromFork() bool {
	return b.SourceProjectID != 0 && b.TargetProjectID != 0 && b.SourceProjectID != b.TargetProjectID
}

// gitlabMergeRequest reads a Merge Request Hook. Its reviewers carry each
// reviewer's state in recent GitLab (18.x: state and re_requested came
// to the hook's reviewers with gitlab-org/gitlab!205274), which settles
// whether changes are requested; action "approved" says the approvals are
// enough. Other approval actions (approval: one more, not yet enough;
// unapproval, unapproved), a reviewer's new state without changes
// requested, a push (oldrev: approvals may be reset), and reviewers
// without a state (older GitLab, whose hook names reviewers only) leave
// the verdict to a recheck: the inventory reads the merge request's
// approvals and reviewers from the forge.
func gitlabMergeRequest(body []byte) (*Delivery, error) {
	var p struct {
		ObjectKind string        `json:"object_kind"`
		Project    gitlabProject `json:"project"`
		Attrs      *struct {
			IID int64 `json:"iid"`
			gitlabBranches
			UpdatedAt           gitlabTime `json:"updated_at"`
			Title               string     `json:"title"`
			Description         string     `json:"description"`
			State               string     `json:"state"`
			Action              string     `json:"action"`
			OldRev              string     `json:"oldrev"`
			DetailedMergeStatus string     `json:"detailed_merge_status"`
			Labels              []label    `json:"labels"`
			LastCommit          struct {
				ID string `json:"id"`
			} `json:"last_commit"`
		} `json:"object_attributes"`
		Labels    []label `json:"labels"`
		Reviewers []struct {
			State *string `json:"state"` // unreviewed, review_started, reviewed, requested_changes, approved, unapproved; absent before 18.x
		} `json:"reviewers"`
		Changes struct {
			Reviewers *json.RawMessage `json:"reviewers"`
		} `json:"changes"`
	}
	if err := unmarshal(body, &p); err != nil {
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
	w := &wq.WorkInfo{Kind: wq.WorkPR, Number: a.IID, Title: a.Title, Labels: labelNames(labels), HeadSHA: a.LastCommit.ID,
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
	d := &Delivery{EventType: GitLabMergeRequest, Project: p.Project.PathWithNamespace, Work: w}
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

// gitlabIssue reads an Issue Hook: work only, its number is an issue's.
// GitLab sends confidential issues as Confidential Issue Hook, which is
// not read (nor subscribed); incidents and tasks are not work. GitLab
// also sends work items other than issues (tasks, OKRs, epics) under
// Issue Hook, with object_kind work_item: not work either, acknowledged.
func gitlabIssue(body []byte) (*Delivery, error) {
	var p struct {
		ObjectKind string        `json:"object_kind"`
		Project    gitlabProject `json:"project"`
		Attrs      *struct {
			IID          int64      `json:"iid"`
			Title        string     `json:"title"`
			State        string     `json:"state"`
			Type         string     `json:"type"`
			Confidential bool       `json:"confidential"`
			UpdatedAt    gitlabTime `json:"updated_at"`
			Labels       []label    `json:"labels"`
		} `json:"object_attributes"`
		Labels []label `json:"labels"`
	}
	if err := unmarshal(body, &p); err != nil {
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
	w := &wq.WorkInfo{Kind: wq.WorkIssue, Number: a.IID, State: wq.MergeRequestOpen, Title: a.Title, Labels: labelNames(labels),
		UpdatedAt: time.Time(a.UpdatedAt)}
	if a.State == "closed" {
		w.State = wq.MergeRequestClosed
	}
	return &Delivery{EventType: GitLabIssue, Project: p.Project.PathWithNamespace, Work: w}, nil
}

// gitlabPipeline reads a Pipeline Hook. A merge request pipeline names its
// merge request (merge_request.iid), which is what it resolves by: a
// merged-results or merge train pipeline (ref refs/merge-requests/N/merge
// or /train) runs on a merge commit GitLab made, so its sha is not the
// branch's head and is left out; a detached one (/head) runs on the head.
func gitlabPipeline(body []byte) (*Delivery, error) {
	var p struct {
		ObjectKind string        `json:"object_kind"`
		Project    gitlabProject `json:"project"`
		Attrs      *struct {
			ID  int64  `json:"id"`
			Ref string `json:"ref"`
			Tag bool   `json:"tag"`
			SHA string `json:"sha"`
		} `json:"object_attributes"`
		MergeRequest *struct {
			IID int64 `json:"iid"`
			gitlabBranches
		} `json:"merge_request"`
	}
	if err := unmarshal(body, &p); err != nil {
		return nil, err
	}
	if p.ObjectKind != "pipeline" || p.Attrs == nil || p.Attrs.ID <= 0 {
		return nil, nil // names no pipeline
	}
	d := &Delivery{EventType: GitLabPipeline, Project: p.Project.PathWithNamespace, PipelineID: p.Attrs.ID, HeadSHA: p.Attrs.SHA}
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

// gitlabJob reads a Job Hook. Its commit.id is the pipeline id, not a
// commit: pipeline_id is read instead.
func gitlabJob(body []byte) (*Delivery, error) {
	var p struct {
		ObjectKind string        `json:"object_kind"`
		Project    gitlabProject `json:"project"`
		PipelineID int64         `json:"pipeline_id"`
		Ref        string        `json:"ref"`
		Tag        bool          `json:"tag"`
		SHA        string        `json:"sha"`
	}
	if err := unmarshal(body, &p); err != nil {
		return nil, err
	}
	if p.ObjectKind != "build" {
		return nil, nil // not a job's
	}
	d := &Delivery{EventType: GitLabJob, Project: p.Project.PathWithNamespace, PipelineID: p.PipelineID, HeadSHA: p.SHA}
	if !p.Tag {
		d.SourceBranch = p.Ref
	}
	return d, nil
}

// unmarshal reads a delivery's body into v. A body that is not JSON is
// EINVALID, the forge's request is broken; a member of another type than
// v's is a payload workqueue does not know, acknowledged and not used
// (errNotUsed), never a reason for the forge to count a failure.
func unmarshal(body []byte, v any) error {
	if !json.Valid(body) {
		return wq.Errorf(wq.EINVALID, "body: not JSON")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errNotUsed
	}
	return nil
}

// errNotUsed is a body unmarshal could not read into the event's shape;
// parseWith answers it as an event not used.
var errNotUsed = errors.New("a payload of another shape")

// gitlabTime reads GitLab's webhook timestamps: RFC 3339, or the older
// "2006-01-02 15:04:05 UTC".
type gitlabTime time.Time

func (t *gitlabTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil || s == "" {
		return nil // absent or odd: no event time, the stale guard is skipped
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700"} {
		if v, err := time.Parse(layout, s); err == nil {
			*t = gitlabTime(v.UTC())
			return nil
		}
	}
	return nil
}
