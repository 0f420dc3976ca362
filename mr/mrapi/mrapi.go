// Package mrapi holds the wire shapes of the mr item type: the detail and
// the summary the items API carries for an mr item (api.Item.Detail and
// Summary). It is a leaf, so that a client reads them without linking the
// type: the generic wire package, api, names no item type.
package mrapi

// Summary is what an item list shows of an mr item (api.Item.Summary).
type Summary struct {
	Title string `json:"title"`
	MRIID int64  `json:"mr_iid,omitempty"` // the merge request's number, once opened
	MRURL string `json:"mr_url,omitempty"`
}

// Detail is the view of an mr item's detail (api.Item.Detail). File contents are left
// out: they can be large, and the paths say what changes.
type Detail struct {
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
