package mr

// Actions a file change may take.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
	ActionMove   = "move"
	ActionChmod  = "chmod"
)

// Content encodings.
const (
	EncodingText   = "text"
	EncodingBase64 = "base64"
)

// FileAction is one change to one file, as a caller submits it. The JSON
// names follow GitLab's Commits API.
type FileAction struct {
	Action          string  `json:"action"`
	FilePath        string  `json:"file_path"`
	PreviousPath    string  `json:"previous_path,omitempty"`
	Content         *string `json:"content,omitempty"`  // nil: not given; "" is an empty file
	Encoding        string  `json:"encoding,omitempty"` // "text" (default) or "base64"
	ExecuteFilemode *bool   `json:"execute_filemode,omitempty"`
	// ReplaceType lets an update or a move make a symbolic link or a
	// submodule of the target a regular file. Without it such an action
	// fails: modes are part of the submission, and a link's type is not
	// lost by accident.
	ReplaceType bool `json:"replace_type,omitempty"`
}
