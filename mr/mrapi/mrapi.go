// Package mrapi holds the wire shapes of the mr item type: the detail and
// the summary the items API carries for an mr item (api.Item.Detail and
// Summary), the submission as an agent's tool describes it (ChangeInput),
// and their OpenAPI schemas (openapi.json, which the type's registration
// adds to the API's document). It is a leaf, so that a client reads them
// without linking the type: the generic wire package, api, names no item
// type.
package mrapi

import _ "embed"

// OpenAPISchemas are the type's OpenAPI 3.0 schemas, by component name:
// Submission (with FileAction), MRDetail and MRSummary.
//
//go:embed openapi.json
var OpenAPISchemas []byte

// ChangeInput is an mr item's submission as the agents' tool describes
// it (submit_change): its jsonschema tags are the schema's descriptions,
// read by a model. The service is sent the arguments as the agent wrote
// them, and judges them itself.
type ChangeInput struct {
	ItemType      string            `json:"item_type" jsonschema:"always mr: a change carried by a merge request"`
	Forge         string            `json:"forge" jsonschema:"the configured forge's name"`
	Project       string            `json:"project" jsonschema:"the repository's full path, such as group/app"`
	SourceBranch  string            `json:"source_branch" jsonschema:"the branch the service writes; projects may require a prefix such as workqueue/"`
	TargetBranch  string            `json:"target_branch" jsonschema:"the branch the merge request merges into, such as main"`
	Title         string            `json:"title" jsonschema:"the merge request's title (at most 255 bytes)"`
	Description   string            `json:"description,omitempty" jsonschema:"the merge request's description"`
	CommitMessage string            `json:"commit_message,omitempty" jsonschema:"the commit's message (default: the title)"`
	Labels        []string          `json:"labels,omitempty" jsonschema:"labels for the merge request (at most 20)"`
	FileActions   []FileActionInput `json:"file_actions" jsonschema:"what the source branch holds beyond the target branch, one action a file"`
	AutoMerge     *bool             `json:"auto_merge,omitempty" jsonschema:"merge once mergeable (default: the project's setting; false for an assignment's change)"`
	AssignmentID  string            `json:"assignment_id,omitempty" jsonschema:"the assignment (from allocate_work) the change is made for: it must pass the gate when submitted and before each forge write"`
}

// FileActionInput is one file of a ChangeInput.
type FileActionInput struct {
	Action          string  `json:"action" jsonschema:"create, update, delete, move or chmod"`
	FilePath        string  `json:"file_path" jsonschema:"the file's path in the repository"`
	PreviousPath    string  `json:"previous_path,omitempty" jsonschema:"move: the path it had"`
	Content         *string `json:"content,omitempty" jsonschema:"create and update: the whole content (an empty string is an empty file)"`
	Encoding        string  `json:"encoding,omitempty" jsonschema:"text (default) or base64"`
	ExecuteFilemode *bool   `json:"execute_filemode,omitempty" jsonschema:"whether the file is executable (what chmod sets)"`
	ReplaceType     bool    `json:"replace_type,omitempty" jsonschema:"update and move: let the action make a symbolic link or a submodule a regular file (without it such an action fails)"`
}

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
