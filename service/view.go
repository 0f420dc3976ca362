package service

import (
	"encoding/json"
	"sort"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

// Item is the API's view of an item.
type Item struct {
	ID             string      `json:"id"`
	ItemType       string      `json:"item_type"`
	Phase          wq.Phase    `json:"phase"`
	Reason         string      `json:"reason,omitempty"`
	Attempts       int         `json:"attempts"`
	Error          string      `json:"error,omitempty"`
	RetryAfter     *time.Time  `json:"retry_after,omitempty"`
	Generation     int         `json:"generation"`
	CallerIdentity string      `json:"caller_identity,omitempty"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
	FinishedAt     *time.Time  `json:"finished_at,omitempty"`
	LastEventAt    *time.Time  `json:"last_event_at,omitempty"` // the newest forge event time applied (the stale guard's mark)
	Detail         *MRDetail   `json:"detail,omitempty"`
	Dimensions     []Dimension `json:"dimensions,omitempty"`
}

// MRDetail is the API's view of an mr item's detail. File contents are
// left out: they can be large, and the paths say what changes.
type MRDetail struct {
	Forge        string     `json:"forge"`
	Project      string     `json:"project"`
	SourceBranch string     `json:"source_branch"`
	TargetBranch string     `json:"target_branch"`
	Title        string     `json:"title"`
	Description  string     `json:"description,omitempty"`
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

// Dimension is the API's view of a needs_* row.
type Dimension struct {
	Dimension    string          `json:"dimension"`
	Variant      string          `json:"variant,omitempty"`
	Status       string          `json:"status"`
	PendingUntil *time.Time      `json:"pending_until,omitempty"`
	Detail       json.RawMessage `json:"detail,omitempty"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func render(it *wq.Item, d *mr.Detail) *Item {
	v := &Item{ID: it.ID.String(), ItemType: it.ItemType, Phase: it.Phase, Reason: it.Reason, Attempts: it.Attempts,
		Error: it.Error, RetryAfter: optTime(it.RetryAfter), Generation: it.Generation, CallerIdentity: it.CallerIdentity,
		CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, FinishedAt: optTime(it.FinishedAt), LastEventAt: optTime(it.LastEventAt)}
	for k, dim := range it.Dimensions {
		v.Dimensions = append(v.Dimensions, Dimension{Dimension: k.Dimension, Variant: k.Variant, Status: dim.Status,
			PendingUntil: optTime(dim.PendingUntil), Detail: dim.Detail})
	}
	sort.Slice(v.Dimensions, func(i, j int) bool {
		a, b := v.Dimensions[i], v.Dimensions[j]
		return a.Dimension < b.Dimension || (a.Dimension == b.Dimension && a.Variant < b.Variant)
	})
	if d != nil {
		md := &MRDetail{Forge: d.Forge, Project: d.Project, SourceBranch: d.SourceBranch, TargetBranch: d.TargetBranch,
			Title: d.Title, Description: d.Description, Labels: d.Labels, AutoMerge: d.AutoMerge,
			MRIID: d.MRNumber, MRURL: d.MRURL, HeadSHA: d.HeadSHA, PipelineID: d.HeadPipelineID, Files: []FileView{}}
		for _, a := range d.FileActions {
			md.Files = append(md.Files, FileView{Action: a.Action, Path: a.FilePath, PreviousPath: a.PreviousPath})
		}
		v.Detail = md
	}
	return v
}
