package api

import (
	"encoding/json"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Item is the API's view of an item.
type Item struct {
	ID             string     `json:"id"`
	ItemType       string     `json:"item_type"`
	Phase          wq.Phase   `json:"phase"`
	Reason         string     `json:"reason,omitempty"`
	Forge          string     `json:"forge,omitempty"`   // where the item acts, if anywhere
	Project        string     `json:"project,omitempty"` // where the item acts, if anywhere
	Attempts       int        `json:"attempts"`
	Error          string     `json:"error,omitempty"`
	RetryAfter     *time.Time `json:"retry_after,omitempty"`
	Generation     int        `json:"generation"`
	CallerIdentity string     `json:"caller_identity,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
	LastEventAt    *time.Time `json:"last_event_at,omitempty"` // the newest forge event time applied (the stale guard's mark)
	// Warnings say, in words, why the item may not progress: that no
	// instance handles its type. Set on a submission's answer and on a
	// single item's view.
	Warnings []string `json:"warnings,omitempty"`
	// Detail is the item type's own view (MRDetail for mr items), absent
	// for types without one.
	Detail json.RawMessage `json:"detail,omitempty"`
	// Summary is the item type's short view, in lists only (MRSummary for
	// mr items): what a table shows without loading each item.
	Summary    json.RawMessage `json:"summary,omitempty"`
	Dimensions []Dimension     `json:"dimensions,omitempty"`
}

// Dimension is the API's view of a needs_* row.
type Dimension struct {
	Dimension    string          `json:"dimension"`
	Variant      string          `json:"variant,omitempty"`
	Status       string          `json:"status"`
	PendingUntil *time.Time      `json:"pending_until,omitempty"`
	Detail       json.RawMessage `json:"detail,omitempty"`
}

// Submitted is the answer to a submission: the item and what the
// submission did.
type Submitted struct {
	Result wq.SubmitResult `json:"result"`
	*Item
}

// ItemPage is a page of items, newest first; NextCursor is "" on the last.
type ItemPage struct {
	Items      []*Item `json:"items"`
	NextCursor string  `json:"next_cursor"`
}

// MRSummary is what an item list shows of an mr item (its "summary").
type MRSummary struct {
	Title string `json:"title"`
	MRIID int64  `json:"mr_iid,omitempty"` // the merge request's number, once opened
	MRURL string `json:"mr_url,omitempty"`
}

// MRDetail is the view of an mr item's detail. File contents are left
// out: they can be large, and the paths say what changes.
type MRDetail struct {
	Forge        string     `json:"forge"`                 // the configured forge
	Project      string     `json:"project"`               // the project's full path
	SourceBranch string     `json:"source_branch"`         // the service's branch
	TargetBranch string     `json:"target_branch"`         // the branch it merges into
	Title        string     `json:"title"`                 // of the merge request
	Description  string     `json:"description,omitempty"` // without the service's hidden marker
	Labels       []string   `json:"labels,omitempty"`
	AutoMerge    bool       `json:"auto_merge"`
	Files        []FileView `json:"files"`
	MRIID        int64      `json:"mr_iid,omitempty"`
	MRURL        string     `json:"mr_url,omitempty"`
	HeadSHA      string     `json:"head_sha,omitempty"`
	PipelineID   int64      `json:"head_pipeline_id,omitempty"`
}

// FileView names one file action.
type FileView struct {
	Action       string `json:"action"`
	Path         string `json:"file_path"`
	PreviousPath string `json:"previous_path,omitempty"`
}
