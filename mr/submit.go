package mr

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/policy"
	"github.com/workqueue-dev/workqueue/secrets"
)

// Submission is a caller's desired state for one merge request.
type Submission struct {
	Forge         string       `json:"forge"`
	Project       string       `json:"project"`
	SourceBranch  string       `json:"source_branch"`
	TargetBranch  string       `json:"target_branch"`
	Title         string       `json:"title"`
	Description   string       `json:"description,omitempty"`
	CommitMessage string       `json:"commit_message,omitempty"` // default: the title
	Labels        []string     `json:"labels,omitempty"`
	FileActions   []FileAction `json:"file_actions"`
	AutoMerge     *bool        `json:"auto_merge,omitempty"` // default: the project's setting; for an assignment, false
	// AssignmentID names the control-plane assignment the change is made
	// for: it must pass the gate now and before each forge write.
	AssignmentID string `json:"assignment_id,omitempty"`
}

// ReasonCancelPending refuses a submission for an item whose cancel is
// winding it down: the update would be lost when it ends cancelled.
const ReasonCancelPending = "cancel_pending"

// Submit results (DDR-40).
const (
	ResultCreated   = wq.SubmitCreated
	ResultUnchanged = wq.SubmitUnchanged
	ResultUpdated   = wq.SubmitUpdated
	ResultRetried   = wq.SubmitRetried
)

// SubmitRaceWait bounds how long one submission keeps losing races with
// concurrent submissions for the same branch before it answers
// EUNAVAILABLE.
const SubmitRaceWait = 10 * time.Second

// Bounds on submission fields.
const (
	maxTitleBytes       = 255
	maxDescriptionBytes = 64 << 10
	maxLabels           = 20
)

// Project is the per-project configuration a submission is checked
// against.
type Project struct {
	Policy    Policy
	AutoMerge bool
	Label     string // the managed label every merge request gets
	// BranchPrefix is what every source branch must start with ("" admits
	// any): the service writes only branches it owns.
	BranchPrefix string
	// FileModes is whether the project's forge can set a file's executable
	// bit (wq.FileModeSetter); if not, chmod and execute_filemode are
	// refused at submit instead of failing later.
	FileModes bool
	// Outbound is the project's outbound policy (package policy), which a
	// submission passes before anything is stored.
	Outbound policy.Project
	// ReviewLabel marks a merge request whose protected paths wait for a
	// person's review (policy.ProtectedReview).
	ReviewLabel string
	// TrackLabel is the label of a person's merge request the service
	// tracks (projects[].track_label); "" when the project tracks none.
	TrackLabel string
	// MergeTrain says the project merges through a merge train.
	MergeTrain bool
}

// Rules of submission refusals that are about the submission's fields, not
// one action's path.
const (
	RuleBranchOutsidePrefix = "branch_outside_prefix"
	RuleFileModeUnsupported = "file_mode_unsupported"
)

// Submit validates and inspects a submission, then upserts its item
// (DDR-40): created, unchanged, updated or retried. Nothing is stored when
// validation or inspection refuses: a refusal is a *Refusal, a bad field
// an EINVALID error naming it. A race with a concurrent submission for the
// same branch is caught by the store and the upsert is run again.
//
// An unfinished item belongs to the identity that created it: a
// submission of another caller for its branch is refused (ECONFLICT,
// reason wq.ReasonOwnerConflict), so that nobody rewrites another's
// change while the item still names its first caller.
func Submit(ctx context.Context, store Store, sub Submission, project Project, caller string, now time.Time) (*wq.Item, wq.SubmitResult, error) {
	it, _, result, err := submit(ctx, store, sub, project, caller, false, nil, now)
	return it, result, err
}

// current reads what a submission decides on for d's natural key: in
// one read where the store can (CurrentReader).
func current(ctx context.Context, store Store, d Detail) (Current, error) {
	if r, ok := store.(CurrentReader); ok {
		return r.CurrentMR(ctx, d.Forge, d.Project, d.SourceBranch)
	}
	var (
		c   Current
		err error
	)
	if c.Item, c.Detail, err = store.FindMRItem(ctx, d.Forge, d.Project, d.SourceBranch); err != nil || c.Item != nil {
		if c.Item != nil {
			c.Owner, c.Phase, c.Generation = c.Item.CallerIdentity, c.Item.Phase, c.Item.Generation
		}
		return c, err
	}
	if c.Owner, c.Phase, err = store.LatestMROwner(ctx, d.Forge, d.Project, d.SourceBranch); err != nil {
		return Current{}, err
	}
	c.Generation, err = store.LatestMRGeneration(ctx, d.Forge, d.Project, d.SourceBranch)
	return c, err
}

// submit is Submit; takeover lets caller change an unfinished item of
// another identity (an admin, or an assignment's holder pushing onto
// that item's pull request), which then becomes caller's.
// It also returns the item's detail as the store keeps it when it knows
// it without a read (created or unchanged), nil otherwise.
func submit(ctx context.Context, store Store, sub Submission, project Project, caller string, takeover bool, known *knownBranches, now time.Time) (*wq.Item, *Detail, wq.SubmitResult, error) {
	if err := sub.validate(); err != nil {
		return nil, nil, "", err
	}
	// Every refusal at once (wq.Refusals): the branch, each refused
	// action, each action the project's forge cannot do.
	var refusals wq.Refusals
	if project.BranchPrefix != "" && !strings.HasPrefix(sub.SourceBranch, project.BranchPrefix) {
		refusals = append(refusals, &Refusal{Index: -1, Field: "source_branch", Rule: RuleBranchOutsidePrefix,
			Message: fmt.Sprintf("%q does not start with %q: the service only writes branches of its own prefix", sub.SourceBranch, project.BranchPrefix)})
	}
	// Push protection runs whatever inspection says: a content refused
	// (as binary, too large, on a move) is still read for secrets, so
	// that the caller learns of every one at once and no refusal of
	// another kind is a way around the scan.
	refusals = append(refusals, InspectAll(sub.FileActions, project.Policy)...)
	refusals = append(refusals, scanSecrets(sub.FileActions, project.Policy)...)
	if !project.FileModes {
		for i, a := range sub.FileActions {
			if a.Action == ActionChmod || a.ExecuteFilemode != nil {
				refusals = append(refusals, &Refusal{Index: i, Path: a.FilePath, Rule: RuleFileModeUnsupported,
					Message: "this project's forge cannot set a file's executable bit through its API (chmod, execute_filemode)"})
			}
		}
	}
	if len(refusals) > 0 {
		slices.SortStableFunc(refusals, func(a, b *Refusal) int { return cmp.Compare(a.Index, b.Index) })
		return nil, nil, "", refusals
	}
	d := Detail{
		Forge: sub.Forge, Project: sub.Project, SourceBranch: sub.SourceBranch, TargetBranch: sub.TargetBranch,
		Title: sub.Title, Description: sub.Description, CommitMessage: sub.CommitMessage,
		Labels: labelsWith(sub.Labels, project.Label), FileActions: sub.FileActions, AutoMerge: project.AutoMerge,
		AssignmentID: sub.AssignmentID,
	}
	if d.CommitMessage == "" {
		d.CommitMessage = sub.Title
	}
	if sub.AutoMerge != nil {
		d.AutoMerge = *sub.AutoMerge
	}
	hash := ContentHash(sub.FileActions)
	// Concurrent submissions for one branch are serialised by the caller
	// within a process (service.Items); across instances they race on the
	// store's guards, and the upsert runs again after a short, jittered
	// wait, for at most SubmitRaceWait of wall-clock time.
	key := IdempotencyKey(d.Forge, d.Project, d.SourceBranch)
	started := time.Now()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if time.Since(started) > SubmitRaceWait {
				break
			}
			select {
			case <-ctx.Done():
				return nil, nil, "", ctx.Err()
			case <-time.After(time.Duration(1+rand.IntN(5*min(attempt, 20))) * time.Millisecond):
			}
		}
		if fc, ok := store.(FirstCreator); ok && attempt == 0 && !known.has(key) {
			// A branch that never had an item is created in the insert's
			// own round trip; any other falls through to reading first.
			created, ok, err := fc.CreateFirstMR(ctx, wq.NewItem{ItemType: ItemType, IdempotencyKey: key,
				CallerIdentity: caller, ContentHash: hash}, d, now)
			switch {
			case wq.ErrorCode(err) == wq.ECONFLICT:
				continue // a concurrent submission created it first
			case err != nil:
				return nil, nil, "", err
			case ok:
				return created, &d, ResultCreated, nil
			}
			known.add(key)
		}
		cur, err := current(ctx, store, d)
		if err != nil {
			return nil, nil, "", err
		}
		item := cur.Item
		if item != nil && cur.Detail != nil && cur.Detail.Tracked {
			return nil, nil, "", &wq.Error{Code: wq.ECONFLICT, Reason: wq.ReasonOwnerConflict, Message: fmt.Sprintf(
				"%s: branch %q of %s carries a person's merge request that workqueue tracks (item %s); workqueue never writes it: "+
					"submit to a branch of your own", wq.ReasonOwnerConflict, d.SourceBranch, d.Project, item.ID)}
		}
		if item == nil {
			// A cancelled item can leave its branch and pull request on
			// the forge (a gate refusal, a person's pull request keeping
			// it): they are still its caller's.
			owner, phase, gen := cur.Owner, cur.Phase, cur.Generation
			if owner != "" && owner != caller && phase == wq.PhaseCancelled && !takeover {
				return nil, nil, "", &wq.Error{Code: wq.ECONFLICT, Reason: wq.ReasonOwnerConflict, Message: fmt.Sprintf(
					"%s: branch %q of %s was %s's, whose item was cancelled and may have left its branch and pull request: "+
						"submit to a branch of your own", wq.ReasonOwnerConflict, d.SourceBranch, d.Project, owner)}
			}
			created, err := store.CreateMR(ctx, wq.NewItem{ItemType: ItemType, IdempotencyKey: key,
				Generation: gen + 1, CallerIdentity: caller, ContentHash: hash}, d, now)
			if wq.ErrorCode(err) == wq.ECONFLICT {
				continue // a concurrent submission created it first
			}
			if err != nil {
				return nil, nil, "", err
			}
			return created, &d, ResultCreated, nil
		}
		if item.CallerIdentity != caller && !takeover {
			return nil, nil, "", &wq.Error{Code: wq.ECONFLICT, Reason: wq.ReasonOwnerConflict, Message: fmt.Sprintf(
				"%s: item %s for branch %q of %s belongs to %s, who submitted it; another caller changes it only with an assignment "+
					"allowing push on its pull request, or as an admin", wq.ReasonOwnerConflict, item.ID, d.SourceBranch, d.Project, item.CallerIdentity)}
		}
		if row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimClose}]; ok && row.Status == wq.StatusTrue && item.Phase == wq.PhaseActive {
			// The item is winding down: an update now would be lost
			// when it ends cancelled. Say so; a submission after the
			// cancel ends starts a new generation.
			return nil, nil, "", &wq.Error{Code: wq.ECONFLICT, Reason: ReasonCancelPending, Message: fmt.Sprintf(
				"%s: item %s for branch %q is being cancelled; submit again once it has ended (it starts a new item)",
				ReasonCancelPending, item.ID, d.SourceBranch)}
		}
		if item.Phase == wq.PhaseActive && item.ContentHash == hash && sameDesired(*cur.Detail, d) {
			return item, cur.Detail, ResultUnchanged, nil
		}
		result := ResultUpdated
		if item.Phase == wq.PhaseFailed {
			result = ResultRetried
		}
		updated, err := store.ResubmitMR(ctx, item.ID, item.Revision, d, hash, caller, now)
		if wq.ErrorCode(err) == wq.ECONFLICT {
			continue // the item changed meanwhile: decide again
		}
		if err != nil {
			return nil, nil, "", err
		}
		return updated, nil, result, nil
	}
	return nil, nil, "", wq.Errorf(wq.EUNAVAILABLE, "too many concurrent changes to %s %s; try again", d.Project, d.SourceBranch)
}

// sameDesired compares the fields a submission sets besides the content.
func sameDesired(a, b Detail) bool {
	return a.TargetBranch == b.TargetBranch && a.Title == b.Title && a.Description == b.Description &&
		a.CommitMessage == b.CommitMessage && a.AutoMerge == b.AutoMerge && slices.Equal(a.Labels, b.Labels) &&
		a.AssignmentID == b.AssignmentID
}

func labelsWith(labels []string, managed string) []string {
	out := slices.Clone(labels)
	if managed != "" && !slices.Contains(out, managed) {
		out = append(out, managed)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// validate checks the submission's fields' shapes. A value it quotes is
// redacted first: a refusal never carries a secret back (issue 48).
func (s Submission) validate() error {
	bad := func(field, format string, args ...any) error {
		return wq.Errorf(wq.EINVALID, "%s: %s", field, fmt.Sprintf(format, args...))
	}
	switch {
	case s.Forge == "":
		return bad("forge", "required")
	case s.Project == "" || strings.HasPrefix(s.Project, "/") || strings.HasSuffix(s.Project, "/") || !strings.Contains(s.Project, "/"):
		return bad("project", "want a full path such as group/name, got %q", secrets.Text(s.Project))
	case s.Title == "" || len(s.Title) > maxTitleBytes || !utf8.ValidString(s.Title) || strings.ContainsAny(s.Title, "\n\r\x00"):
		return bad("title", "required, one line of at most %d bytes", maxTitleBytes)
	case len(s.Description) > maxDescriptionBytes || !utf8.ValidString(s.Description):
		return bad("description", "at most %d bytes of UTF-8", maxDescriptionBytes)
	case len(s.CommitMessage) > maxDescriptionBytes || !utf8.ValidString(s.CommitMessage):
		return bad("commit_message", "at most %d bytes of UTF-8", maxDescriptionBytes)
	case len(s.Labels) > maxLabels:
		return bad("labels", "at most %d", maxLabels)
	}
	for i, l := range s.Labels {
		if l == "" || len(l) > 100 || strings.ContainsAny(l, ",\n\r\x00") {
			return bad(fmt.Sprintf("labels[%d]", i), "want a label name of at most 100 bytes without commas, got %q", secrets.Text(l))
		}
	}
	for _, b := range []struct{ field, name string }{{"source_branch", s.SourceBranch}, {"target_branch", s.TargetBranch}} {
		if err := CheckBranchName(b.name); err != nil {
			return &Refusal{Index: -1, Field: b.field, Rule: RuleBranchNameInvalid, Message: fmt.Sprintf("%q: %v", secrets.Text(b.name), err)}
		}
	}
	if len(s.AssignmentID) > 64 || strings.ContainsFunc(s.AssignmentID, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return bad("assignment_id", "want an assignment id of at most 64 printable characters, got %q", secrets.Text(s.AssignmentID))
	}
	if s.SourceBranch == s.TargetBranch {
		return bad("source_branch", "must differ from target_branch")
	}
	return nil
}

// knownBranches remembers the natural keys this process found to have an
// item when it tried to create their first (FirstCreator), so that their
// next submissions (an agent updating its change) read first instead of
// trying again: a failed first creation costs a round trip, and on
// PostgreSQL a second run of the inserts batched with it. It is only a
// hint: a key it never saw or forgot costs that round trip once, and no
// decision rests on it. Bounded: past maxKnownBranches it starts over. A
// nil set knows nothing.
type knownBranches struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

const maxKnownBranches = 10_000

func (k *knownBranches) has(key string) bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.keys[key]
	return ok
}

func (k *knownBranches) add(key string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil || len(k.keys) >= maxKnownBranches {
		k.keys = make(map[string]struct{})
	}
	k.keys[key] = struct{}{}
}
