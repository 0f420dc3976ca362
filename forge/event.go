package forge

import wq "github.com/workqueue-dev/workqueue"

// EventType is the type of every stored forge event (wq.Event.EventType):
// its body is an Event in JSON, whichever forge sent it.
const EventType = "forge"

// Event is a forge event as it is stored and as item types read it,
// whichever forge sent it: exactly one member is set. The kind's
// DecodeEvent makes it from the delivery's payload at receipt
// (Registry.ParseWebhook), so that the payload is parsed once, by the
// kind that knows it. Pushes and issues reach the control
// plane's inventory through Delivery.Push and Delivery.Work instead: they
// resolve to no item.
type Event struct {
	// Type is the forge's own name of the event (Delivery.EventType):
	// for people reading an item's history, never for deciding.
	Type         string             `json:"type,omitempty"`
	MergeRequest *MergeRequestEvent `json:"merge_request,omitempty"` // a merge request changed
	Review       *ReviewEvent       `json:"review,omitempty"`        // a review was given
	CI           *CIEvent           `json:"ci,omitempty"`            // a pipeline, commit status or job changed
}

// MergeRequestEvent says a merge request changed: opened, updated (a
// push), merged, closed or reopened. Its payload is a claim: item types
// read the merge request from the forge before acting on it.
type MergeRequestEvent struct {
	Action  string `json:"action"`             // the forge's own word for what happened
	Merged  bool   `json:"merged,omitempty"`   // the payload says it is merged
	Closed  bool   `json:"closed,omitempty"`   // the payload says it is closed without a merge
	HeadSHA string `json:"head_sha,omitempty"` // the head the payload names, "" if none
}

// ReviewEvent says a reviewer gave a verdict.
type ReviewEvent struct {
	Review string `json:"review"` // the forge's own name of the review (its type)
}

// CI sources of a CIEvent.
const (
	CIPipeline = "pipeline" // a pipeline (GitLab) or an Actions run (Gitea)
	CIStatus   = "status"   // a commit status, which names no pipeline
	CIJob      = "job"      // one job of a pipeline
)

// CIEvent says a pipeline, a commit status or a job changed.
type CIEvent struct {
	Source     string `json:"source"`                // CIPipeline, CIStatus or CIJob
	PipelineID int64  `json:"pipeline_id,omitempty"` // 0 for a commit status
	SHA        string `json:"sha,omitempty"`         // the commit it ran on, "" if the payload names none
	Status     string `json:"status,omitempty"`      // the forge's own status word
	Finished   bool   `json:"finished,omitempty"`    // a pipeline or status reached a final state
	Failed     bool   `json:"failed,omitempty"`      // a job failed
	// MergeRefOf is the merge request whose merge ref the pipeline ran on
	// (GitLab's merged results and merge trains): SHA is then a merge
	// commit the forge made, never a pushed head.
	MergeRefOf int64 `json:"merge_ref_of,omitempty"`
	// Job is the failed job a job event tells of, for the herder; its
	// FinishedAt is zero when the payload gives no time that reads.
	Job *wq.CIJob `json:"job,omitempty"`
	// Check is the commit status the event tells of, for required
	// checks: a status event's context (Gitea), a job event's job, whose
	// name GitLab lists as its commit status. nil when the event names
	// none (a pipeline, a run).
	Check *wq.CommitStatus `json:"check,omitempty"`
}
