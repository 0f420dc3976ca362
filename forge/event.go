package forge

import wq "github.com/workqueue-dev/workqueue"

// Event is a stored forge event as item types read it, whichever forge
// sent it: exactly one member is set. A kind's DecodeEvent makes it from
// the payload the delivery carried. Pushes and issues reach the control
// plane's inventory through Delivery.Push and Delivery.Work instead: they
// resolve to no item.
type Event struct {
	MergeRequest *MergeRequestEvent // a merge request changed
	Review       *ReviewEvent       // a review was given
	CI           *CIEvent           // a pipeline, commit status or job changed
}

// MergeRequestEvent says a merge request changed: opened, updated (a
// push), merged, closed or reopened. Its payload is a claim: item types
// read the merge request from the forge before acting on it.
type MergeRequestEvent struct {
	Action  string // the forge's own word for what happened
	Merged  bool   // the payload says it is merged
	Closed  bool   // the payload says it is closed without a merge
	HeadSHA string // the head the payload names, "" if none
}

// ReviewEvent says a reviewer gave a verdict.
type ReviewEvent struct {
	Review string // the forge's own name of the review (its type)
}

// CI sources of a CIEvent.
const (
	CIPipeline = "pipeline" // a pipeline (GitLab) or an Actions run (Gitea)
	CIStatus   = "status"   // a commit status, which names no pipeline
	CIJob      = "job"      // one job of a pipeline
)

// CIEvent says a pipeline, a commit status or a job changed.
type CIEvent struct {
	Source     string // CIPipeline, CIStatus or CIJob
	PipelineID int64  // 0 for a commit status
	SHA        string // the commit it ran on, "" if the payload names none
	Status     string // the forge's own status word
	Finished   bool   // a pipeline or status reached a final state
	Failed     bool   // a job failed
	// MergeRefOf is the merge request whose merge ref the pipeline ran on
	// (GitLab's merged results and merge trains): SHA is then a merge
	// commit the forge made, never a pushed head.
	MergeRefOf int64
	// Job is the failed job a job event tells of, for the herder; its
	// FinishedAt is zero when the payload gives no time that reads.
	Job *wq.CIJob
}
