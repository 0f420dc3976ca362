package mr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// ItemType is the name the mr type registers under.
const ItemType = "mr"

// Detail is an mr item's row in mr_details (DDR-7): what the caller asked
// for, and what the service has done on the forge so far.
type Detail struct {
	// Desired state, from the submission.
	Forge         string
	Project       string
	SourceBranch  string
	TargetBranch  string
	Title         string
	Description   string
	CommitMessage string
	Labels        []string
	FileActions   []FileAction
	AutoMerge     bool
	// AssignmentID names the control-plane assignment the change was
	// submitted for; "" for none.
	AssignmentID string
	// Tracked says the merge request is a person's, tracked because they
	// labelled it (projects[].track_label): the item has no desired
	// content, HeadSHA follows the merge request's head, and the service
	// never writes its branch, title, description or state.
	Tracked bool
	// ContentHash is the item's content hash (work_items.content_hash),
	// read in the same snapshot as FileActions: the hash of exactly these
	// actions. What ensure_mr pushes is recorded as PushedHash from it.
	ContentHash string

	// Forge state, written by the executors.
	MRNumber       int64 // 0 until the merge request exists
	MRURL          string
	HeadSHA        string // the commit the service pushed; merges are pinned to it
	PushedHash     string // content hash of what HeadSHA holds
	HeadPipelineID int64
	NoteID         int64
	PushingHash    string // the content hash of a push begun and not yet recorded as done (see ForgeState)
	CIRetried      string // the CI jobs retry_ci_jobs retried (see ForgeState)
}

// ForgeState is what the executors record about the forge, under the
// item's lease.
type ForgeState struct {
	MRNumber       int64
	MRURL          string
	HeadSHA        string
	PushedHash     string
	HeadPipelineID int64 // the CI pipeline of HeadSHA, 0 until one is seen
	NoteID         int64
	// PushingHash is recorded before a push and cleared with the push's
	// recording: when a crash fell between the two, a branch head the
	// service has not recorded is its own push, not someone else's branch.
	PushingHash string
	// CIRetried are the CI jobs retry_ci_jobs retried, recorded right
	// after the forge's retry (a JSON array of CIRetry, the latest
	// maxCIDecisions): the retry's own webhooks can supersede the write of
	// its decision, and the next run must know the newer job is its own.
	CIRetried string
}

// ForgeState returns the forge state the detail holds, for an executor to
// change a field of and record.
func (d *Detail) ForgeState() ForgeState {
	return ForgeState{MRNumber: d.MRNumber, MRURL: d.MRURL, HeadSHA: d.HeadSHA, PushedHash: d.PushedHash,
		HeadPipelineID: d.HeadPipelineID, NoteID: d.NoteID, PushingHash: d.PushingHash, CIRetried: d.CIRetried}
}

// EventRef is what a forge event says about the merge request it concerns;
// zero fields say nothing. Resolution tries them in this order (DDR-32).
type EventRef = wq.EventRef

// Store is the persistence the mr type needs beyond the generic store.
// mr/mrstore implements it on both drivers, and passes its conformance
// suite on both.
type Store interface {
	// CreateMR inserts an active, actionable mr item and its detail in one
	// transaction. ECONFLICT if another item holds the idempotency key
	// (an active or failed item for the same forge, project and branch).
	CreateMR(ctx context.Context, n wq.NewItem, d Detail, now time.Time) (*wq.Item, error)

	// GetMRDetail returns an item's detail. ENOTFOUND.
	GetMRDetail(ctx context.Context, id wq.ItemID) (*Detail, error)

	// MRSummaries returns the title and merge request of each of ids that
	// is an mr item, in one query.
	MRSummaries(ctx context.Context, ids []wq.ItemID) (map[wq.ItemID]Summary, error)

	// FindMRItem returns the active or failed item for the natural key,
	// with its detail, or nil if there is none.
	FindMRItem(ctx context.Context, forge, project, sourceBranch string) (*wq.Item, *Detail, error)

	// LatestMRGeneration returns the highest generation of any item for the
	// natural key, 0 if there is none.
	LatestMRGeneration(ctx context.Context, forge, project, sourceBranch string) (int, error)

	// LatestMROwner returns the caller and phase of the latest generation's
	// item for the natural key ("" when there is none).
	LatestMROwner(ctx context.Context, forge, project, sourceBranch string) (caller string, phase wq.Phase, err error)

	// (CurrentReader: a store may answer the three in one read.)

	// ResubmitMR replaces the desired state of an active or failed item,
	// provided its revision is still seen: it sets the detail's desired
	// fields and the content hash, sets needs_mr, marks the item
	// actionable and bumps its revision; a failed item becomes active with
	// its attempts, error and backoff cleared (DDR-40). ECONFLICT if the
	// revision moved or the item is no longer active or failed.
	ResubmitMR(ctx context.Context, id wq.ItemID, seen int64, d Detail, contentHash, caller string, now time.Time) (*wq.Item, error)

	// FindActiveMR resolves a forge event to the active item it concerns
	// (DDR-32). An event that names a merge request (ref.Number) resolves
	// only to the item of that merge request, or to an item whose merge
	// request is not recorded yet, from ref's source branch into ref's
	// target (the event can beat the recording): once an item has its
	// number, another merge request from the same branch is never its. An
	// event without a number (CI) resolves to the item whose head
	// pipeline is ref's pipeline, else whose pushed head is ref's commit,
	// else, by branch, one without a merge request yet. ok is false when
	// no active item matches.
	FindActiveMR(ctx context.Context, forge, project string, ref EventRef) (id wq.ItemID, ok bool, err error)

	// OwnsBranchHead reports whether any mr item for (forge, project,
	// branch) of caller ("" for any caller), of any generation, recorded
	// sha as a head it pushed: the branch at that head is that caller's,
	// through the service.
	OwnsBranchHead(ctx context.Context, forge, project, branch, sha, caller string) (bool, error)

	// RecordForgeState writes the forge state under the lease.
	// ErrLeaseLost.
	RecordForgeState(ctx context.Context, l wq.Lease, s ForgeState, now time.Time) error

	// TrainCars lists the active items riding the merge train of target
	// on forge and project: those whose needs_train row is true, with
	// that row's detail, in no particular order (PlanTrain sorts).
	TrainCars(ctx context.Context, forge, project, target string) ([]TrainCar, error)

	// AllTrainCars lists the active items riding every merge train, with
	// their train (Forge, Project, TargetBranch), title and merge
	// request, for people.
	AllTrainCars(ctx context.Context) ([]TrainCar, error)

	// OpenMRs lists the active items of forge whose merge request is
	// recorded, ordered by project: what the bulk reconciliation compares
	// with each project's one listing of open merge requests.
	OpenMRs(ctx context.Context, forge string) ([]OpenMR, error)
}

// CurrentReader is what a Store may add to read, for a natural key,
// what a submission decides on (Current) in one statement where it made
// three (FindMRItem, LatestMROwner, LatestMRGeneration) before creating
// an item.
type CurrentReader interface {
	CurrentMR(ctx context.Context, forge, project, sourceBranch string) (Current, error)
}

// FirstCreator is what a Store may add to create the first item of a
// natural key without reading first: a submission for a branch that never
// had an item (the common case: one branch per change) then costs one
// round trip, not two.
type FirstCreator interface {
	// CreateFirstMR is CreateMR of generation 1, unless any item, of any
	// generation or phase, has the natural key of d when it runs: then
	// nothing is written and created is false. ECONFLICT as CreateMR.
	CreateFirstMR(ctx context.Context, n wq.NewItem, d Detail, now time.Time) (it *wq.Item, created bool, err error)
}

// Current is what a submission decides on for its natural key: the
// active or failed item with its detail, if there is one (Item nil if
// not), and the latest generation's caller, phase and number (zero when
// no item ever had the key). When Item is set, it is the latest
// generation.
type Current struct {
	Item       *wq.Item
	Detail     *Detail
	Owner      string
	Phase      wq.Phase
	Generation int
}

// OpenMR is an active item's merge request as the service recorded it.
// TrainCar is an item in a merge train, as TrainCars reads it.
type TrainCar struct {
	ItemID wq.ItemID
	// Forge, Project, TargetBranch, Title and MRURL are set by
	// AllTrainCars only.
	Forge, Project, TargetBranch, Title, MRURL string
	SourceBranch                               string
	MRNumber                                   int64
	HeadSHA                                    string
	Labels                                     []string // the merge request's desired labels
	Detail                                     []byte   // the needs_train row's detail (TrainDetail)
}

type OpenMR struct {
	ItemID  wq.ItemID
	Project string
	Number  int64
	HeadSHA string
}

// IdempotencyKey is the database-level guard of the natural key (DDR-39):
// unique among items that are not completed or cancelled. The generation
// is a column of its own; leaving it out of the key means two live
// generations can never coexist.
func IdempotencyKey(forge, project, sourceBranch string) string {
	// A JSON array is unambiguous whatever the parts hold, and printable.
	b, _ := json.Marshal([]string{forge, project, sourceBranch})
	return "mr:" + string(b)
}

// ContentHash is the SHA-256 of the file actions sorted by path, then
// action, as compact JSON (DDR-40).
func ContentHash(actions []FileAction) string {
	sorted := append([]FileAction(nil), actions...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].FilePath != sorted[j].FilePath {
			return sorted[i].FilePath < sorted[j].FilePath
		}
		return sorted[i].Action < sorted[j].Action
	})
	b, _ := json.Marshal(sorted) // FileAction always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// EncodeColumns renders the detail's JSON columns (labels, file_actions)
// as the drivers store them.
func (d Detail) EncodeColumns() (labels, actions string, err error) {
	if d.Labels == nil {
		d.Labels = []string{}
	}
	l, err := json.Marshal(d.Labels)
	if err != nil {
		return "", "", err
	}
	a, err := json.Marshal(d.FileActions)
	return string(l), string(a), err
}

// DecodeColumns reads the detail's JSON columns back.
func (d *Detail) DecodeColumns(labels, actions string) error {
	if err := json.Unmarshal([]byte(labels), &d.Labels); err != nil {
		return fmt.Errorf("mr labels: %w", err)
	}
	if err := json.Unmarshal([]byte(actions), &d.FileActions); err != nil {
		return fmt.Errorf("mr file actions: %w", err)
	}
	return nil
}

// Summary is what an item list shows of an mr item: its title and its
// merge request.
type Summary struct {
	Title    string
	MRNumber int64
	MRURL    string
}
