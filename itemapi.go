package workqueue

import (
	"context"
	"encoding/json"
	"time"
)

// ItemAPI is an item type's face to callers (DDR-4, DDR-7): what the
// service needs to take the type's submissions and to show and retry its
// items. It is registered with the service beside the engine's ItemType,
// so that no generic layer names a type: the service reads item_type,
// finds the type's ItemAPI, and hands it the body.
type ItemAPI interface {
	// Type is the item type's name, the submission's item_type.
	Type() string

	// Decode reads a submission body strictly: a JSON object whose
	// item_type is this type's, with known members only. A bad field is
	// an EINVALID error or a *Refusal naming it. Nothing is stored.
	Decode(body []byte) (Submission, error)

	// Submit validates s against its scope's configuration, inspects it,
	// and upserts its item for by: it returns the item and the result
	// (SubmitCreated, SubmitUnchanged, SubmitUpdated, SubmitRetried).
	// Nothing is stored on an error. An item that is not finished belongs
	// to the identity that created it: a submission of another identity
	// for its key is refused (ECONFLICT, ReasonOwnerConflict) unless the type finds it
	// entitled (an admin, say).
	Submit(ctx context.Context, s Submission, by Submitter, now time.Time) (*Item, SubmitResult, error)

	// Detail returns the API's view of an item's detail, encoded as the
	// item's "detail" member; nil for a type without one.
	Detail(ctx context.Context, it *Item) (any, error)

	// RetryDimensions are the rows a retry of the item sets (DDR-49), so
	// that the type starts over where it must.
	RetryDimensions(it *Item) []DimensionUpdate
}

// Submitter is who submits: the authenticated caller's identity, and
// whether it is an admin (who may change any caller's item).
type Submitter struct {
	Identity string
	Admin    bool
	// AgentOnly says the submitter may write to the project only as an
	// agent (permission agent without submit): the outbound policy holds
	// its labels and closing references to its assignment.
	AgentOnly bool
}

// ReasonOwnerConflict is the reason of a submission refused because an
// unfinished item of its key belongs to another identity.
const ReasonOwnerConflict = "owner_conflict"

// Summarizer is an optional part of an ItemAPI: a short view of many
// items at once (a title and a link, say), which item lists
// carry as each item's "summary" without a request per item. Items the
// map leaves out have none.
type Summarizer interface {
	Summaries(ctx context.Context, items []*Item) (map[ItemID]any, error)
}

// SubmitDetailer is an optional part of an ItemAPI whose submission
// knows the item's detail: SubmitDetail is Submit that also returns the
// detail exactly as Detail would read it right after (nil when it does
// not know it, to have it read), so that the answer to a submission
// needs no read of what the submission just wrote or read.
type SubmitDetailer interface {
	SubmitDetail(ctx context.Context, s Submission, by Submitter, now time.Time) (*Item, any, SubmitResult, error)
}

// Assigned is a submission made for an assignment of the control plane
// (DESIGN section 9): the item type checks it against the gate; the
// service lets a caller with permission agent make it.
type Assigned interface {
	// AssignmentID names the assignment; "" when the submission was made
	// for none.
	AssignmentID() string
}

// Submission is a decoded submission of some item type.
type Submission interface {
	// Scope is where the item will act: grants are checked on its
	// project before anything else is looked at.
	Scope() Scope
	// Key names what concurrent submissions race for (one branch of one
	// project), so that a process queues them instead of letting them
	// race; "" for none.
	Key() string
}

// SubmitResult says what a submission did (DDR-40).
type SubmitResult string

// Submit results.
const (
	SubmitCreated   SubmitResult = "created"   // a new item (or a new generation after a terminal one)
	SubmitUnchanged SubmitResult = "unchanged" // the active item already wants exactly this
	SubmitUpdated   SubmitResult = "updated"   // the active item's desired state was replaced
	SubmitRetried   SubmitResult = "retried"   // a failed item was replaced and made active again
)

// EventRef is what a forge event names, for finding the item it concerns
// (DDR-32). Zero fields are unknown.
type EventRef struct {
	Number       int64  // merge request number
	PipelineID   int64  // CI pipeline (GitLab pipeline, Gitea workflow run)
	SourceBranch string // the merge request's source branch
	TargetBranch string // the merge request's target branch, if the event says
	HeadSHA      string // a commit: matches the head the service pushed
}

// IsZero reports whether the reference names nothing.
func (r EventRef) IsZero() bool { return r == EventRef{} }

// EventResolver is implemented by the ItemAPI of a type that takes forge
// events: it names the active item of the type that an event on project
// of forge concerns, if any.
type EventResolver interface {
	ResolveEvent(ctx context.Context, forge, project string, ref EventRef) (id ItemID, ok bool, err error)
}

// ItemFace is what the generic faces show of an item type: the API's
// OpenAPI document, the MCP server's tools and the CLI's item commands
// take it from the type's registration, so that none of them names a
// type. It is data, the same in a server and in a client of it.
type ItemFace struct {
	// Type is the type's name, the submission's item_type.
	Type string
	// Schemas are the OpenAPI 3.0 schemas the type adds to the API's
	// document, by component name: its submission, detail and summary,
	// and what they refer to (as #/components/schemas/NAME). Names are
	// the type's to choose and must not clash with another type's.
	Schemas map[string]json.RawMessage
	// Submission, Detail and Summary name the type's submission body, its
	// items' detail and their short view in lists among Schemas ("" for
	// none).
	Submission, Detail, Summary string
	// Tool is the MCP tool agents submit an item of the type with; nil
	// for a type agents do not submit.
	Tool *ItemTool
	// Files names the submission's member that takes a directory's files
	// as file actions ({action, file_path, content, encoding}), for the
	// CLI's submit --dir; "" for a type that takes none.
	Files string
	// Fields are the submission's string members people may give as the
	// CLI's flags (--source-branch for source_branch), over a file's.
	Fields []string
	// Column names View's Link in the CLI's lists ("MR"); "" for none.
	Column string
	// View reads what people see of an item in the CLI from its summary
	// (in lists) or its detail; the zero view for one it cannot read.
	// nil: nothing beyond the generic item.
	View func(summary, detail json.RawMessage) ItemView
}

// ItemView is what people see of an item beyond the generic fields.
type ItemView struct {
	Title    string
	Link     string     // what the item made on the forge, for people (a merge request's page)
	LinkName string     // what Link is ("merge request")
	Lines    []ItemLine // for a whole item: label and value, in order
}

// ItemLine is one labelled line of an item's view.
type ItemLine struct{ Label, Value string }

// ItemTool is an MCP tool that submits an item: the submission body is
// the tool's arguments as the agent wrote them, item_type included.
type ItemTool struct {
	Name        string
	Description string // for a model: what it is for, when to call it, what the answer means
	// Input returns the JSON Schema (draft 2020-12) of the arguments, an
	// object, with each member described for a model: a function, so that
	// a schema is inferred only where a server offers the tool.
	Input func() json.RawMessage
}

// WorkTracker is implemented by the ItemAPI of a type that tracks work
// it did not create: the webhook receiver offers it a pull request of
// project on forge that no item holds (work, as the event's payload
// tells it, and ref, what the event names), and stores the event for
// the item it names. ok is false when the type does not track it.
type WorkTracker interface {
	TrackWork(ctx context.Context, forge, project string, work WorkInfo, ref EventRef, now time.Time) (id ItemID, ok bool, err error)
}

// MergeQueuer is implemented by the ItemAPI of a type that merges through
// a merge train: the control plane's merge of a pull request one of its
// items drives joins the train instead (queued true); queued false, and
// no error, when the project has no train, so that the caller merges as
// before. ECONFLICT when the project has a train and the pull request
// cannot ride it (no item drives it, or its head moved from head).
type MergeQueuer interface {
	QueueMerge(ctx context.Context, forge, project string, number int64, head, by string, now time.Time) (queued bool, err error)
}

// QueueLister is implemented by the ItemAPI of a type whose items wait
// in ordered queues people want to see (merge trains, say): the
// dashboard's Queues page lists them, naming no type.
type QueueLister interface {
	Queues(ctx context.Context) ([]ItemQueue, error)
}

// ItemQueue is one queue of items, in order.
type ItemQueue struct {
	Kind    string // what the queue is, for people ("merge train")
	Forge   string
	Project string // the project it belongs to: who may read it may see it
	Name    string // which of the project's queues ("into main")
	Items   []QueuedItem
}

// QueuedItem is one item in a queue.
type QueuedItem struct {
	ID       ItemID
	Title    string
	Link     string // what the item made on the forge (a merge request's page)
	LinkName string
	State    string // where it stands, in words ("CI passed", "built on the one ahead")
}
