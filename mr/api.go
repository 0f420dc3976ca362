package mr

import (
	"context"
	"fmt"
	"slices"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/strictjson"
	"github.com/workqueue-dev/workqueue/mr/mrapi"
	"github.com/workqueue-dev/workqueue/policy"
)

// APIOptions wire the type's face to callers.
type APIOptions struct {
	Store Store
	// Project returns how a project on a forge is configured for changes,
	// and false when no configuration covers it (the submission is
	// refused).
	Project func(forge, project string) (Project, bool)
	// Assignments checks submissions made for an assignment; nil on an
	// instance without a control plane (such submissions are refused).
	Assignments Assignments
	// DefaultBranch reads a repository's default branch, the target of a
	// project without target_branches; nil, or an error (a forge that is
	// down), leaves that rule to the push, where the forge's guard holds
	// it (package policy).
	DefaultBranch func(ctx context.Context, forge, project string) (string, error)
	// Events stores events for items (the engine's store), and Notify
	// wakes an item: a merger's merge joins the item's merge train
	// through them (QueueMerge). nil: no merge is queued.
	Events interface {
		InsertDelivery(ctx context.Context, source, deliveryID string, events []wq.Event, now time.Time) (wq.Delivery, error)
	}
	Notify func(id wq.ItemID)
}

// API returns the type's face to callers (wq.ItemAPI): submissions of
// desired merge requests, the detail view, retry, and the resolution of
// forge events to items (wq.EventResolver).
func API(opts APIOptions) *TypeAPI { return &TypeAPI{opts: opts} }

// TypeAPI is the mr type's wq.ItemAPI and wq.EventResolver.
type TypeAPI struct {
	opts  APIOptions
	known knownBranches // branches found with an item: their submissions read first
}

var (
	_ wq.ItemAPI       = (*TypeAPI)(nil)
	_ wq.EventResolver = (*TypeAPI)(nil)
)

// request is a submission body: the item type and the desired state.
type request struct {
	ItemType string `json:"item_type"`
	Submission
}

func (r *request) Scope() wq.Scope { return wq.Scope{Forge: r.Forge, Project: r.Project} }
func (r *request) Key() string     { return IdempotencyKey(r.Forge, r.Project, r.SourceBranch) }

// AssignmentID names the assignment the change is made for (wq.Assigned).
func (r *request) AssignmentID() string { return r.Submission.AssignmentID }

// AuditFields say what the submission asked for, without its contents.
func (r *request) AuditFields() map[string]any {
	return map[string]any{"source_branch": r.SourceBranch, "files": len(r.FileActions)}
}

// Type is the item type's name.
func (a *TypeAPI) Type() string { return ItemType }

// Decode reads a submission strictly (see strictjson.Decode): invalid
// UTF-8 and lone surrogates are refused naming the member and the file
// action, never replaced.
func (a *TypeAPI) Decode(body []byte) (wq.Submission, error) {
	var r request
	if err := strictjson.Decode(body, &r, "file_actions"); err != nil {
		return nil, err
	}
	if r.ItemType != ItemType {
		return nil, wq.Errorf(wq.EINVALID, "item_type: want %q, got %q", ItemType, r.ItemType)
	}
	return &r, nil
}

// Submit checks that the project is configured for changes, then
// validates, inspects and upserts the submission (see Submit).
func (a *TypeAPI) Submit(ctx context.Context, s wq.Submission, by wq.Submitter, now time.Time) (*wq.Item, wq.SubmitResult, error) {
	it, _, result, err := a.SubmitDetail(ctx, s, by, now)
	return it, result, err
}

// SubmitDetail is Submit that also returns the item's detail as Detail
// reads it (wq.SubmitDetailer) when the submission knows it: for a new
// item, what it wrote; for an unchanged one, what it read. Nil after an
// update, whose forge state the submission did not read.
func (a *TypeAPI) SubmitDetail(ctx context.Context, s wq.Submission, by wq.Submitter, now time.Time) (*wq.Item, any, wq.SubmitResult, error) {
	r, ok := s.(*request)
	if !ok {
		return nil, nil, "", fmt.Errorf("mr: submission of type %T", s)
	}
	project, ok := a.opts.Project(r.Forge, r.Project)
	if !ok {
		return nil, nil, "", wq.Errorf(wq.EINVALID, "project: %q on forge %q is not configured for changes", r.Project, r.Forge)
	}
	sub := r.Submission
	takeover := by.Admin
	caller := policy.Caller{Identity: by.Identity, AgentOnly: by.AgentOnly}
	if sub.AssignmentID != "" {
		// Validated first, so that the gate is asked about a well-formed
		// change only, and holding no secret (the gate logs its branch).
		if err := sub.validate(); err != nil {
			return nil, nil, "", err
		}
		if rs := policy.Secrets(sub.policyWrite()); len(rs) > 0 {
			return nil, nil, "", rs
		}
		var (
			g   AssignmentGrant
			err error
		)
		if sub, g, err = forAssignment(ctx, a.opts.Assignments, sub, by.Identity); err != nil {
			return nil, nil, "", err
		}
		takeover = takeover || g.Push
		caller.Assignment = &policy.Assignment{ID: sub.AssignmentID, Issue: g.Issue}
	}
	sub, err := a.outbound(ctx, sub, project, caller)
	if err != nil {
		return nil, nil, "", err
	}
	it, d, result, err := submit(ctx, a.opts.Store, sub, project, by.Identity, takeover, &a.known, now)
	if err != nil || d == nil {
		return it, nil, result, err
	}
	return it, detailView(d), result, nil
}

// outbound holds a submission to the outbound policy before anything is
// stored (package policy): every text it will send, its paths (its
// contents are push protection's, in InspectAll), its target and its
// labels. A change touching protected paths that the project sends for
// review is labelled so and never merged by the service on its own.
func (a *TypeAPI) outbound(ctx context.Context, sub Submission, project Project, caller policy.Caller) (Submission, error) {
	if err := sub.validate(); err != nil {
		return sub, err
	}
	w := sub.policyWrite()
	if a.opts.DefaultBranch != nil && len(project.Outbound.TargetBranches) == 0 {
		if def, err := a.opts.DefaultBranch(ctx, sub.Forge, sub.Project); err == nil {
			w.DefaultBranch = def
		}
	}
	if other, _, err := a.opts.Store.FindMRItem(ctx, sub.Forge, sub.Project, sub.TargetBranch); err != nil {
		return sub, err
	} else if other != nil && !other.Phase.Terminal() {
		w.TargetIsSource = "item " + other.ID.String()
	}
	d := policy.Check(caller, project.Outbound, w)
	if err := d.Err(); err != nil {
		return sub, err
	}
	if len(d.Review) > 0 {
		if project.ReviewLabel != "" && !slices.Contains(sub.Labels, project.ReviewLabel) {
			sub.Labels = append(slices.Clone(sub.Labels), project.ReviewLabel)
		}
		sub.AutoMerge = new(bool)
	}
	return sub, nil
}

// policyWrite is the submission as the outbound policy reads it: its
// texts and paths (contents are push protection's, in InspectAll).
func (s Submission) policyWrite() policy.Write {
	w := policy.Write{Op: policy.OpSubmit, Project: s.Project, SourceBranch: s.SourceBranch, TargetBranch: s.TargetBranch,
		Title: s.Title, Description: s.Description, Message: s.CommitMessage, Labels: s.Labels}
	for _, f := range s.FileActions {
		w.Files = append(w.Files, policy.File{Action: f.Action, Path: f.FilePath, PreviousPath: f.PreviousPath})
	}
	return w
}

// Detail is the item's desired merge request and what the forge holds of
// it (mrapi.Detail).
func (a *TypeAPI) Detail(ctx context.Context, it *wq.Item) (any, error) {
	d, err := a.opts.Store.GetMRDetail(ctx, it.ID)
	if err != nil {
		return nil, err
	}
	return detailView(d), nil
}

// detailView is a detail on the wire.
func detailView(d *Detail) mrapi.Detail {
	v := mrapi.Detail{Forge: d.Forge, Project: d.Project, SourceBranch: d.SourceBranch, TargetBranch: d.TargetBranch,
		Title: d.Title, Description: d.Description, Labels: d.Labels, AutoMerge: d.AutoMerge,
		MRIID: d.MRNumber, MRURL: d.MRURL, HeadSHA: d.HeadSHA, PipelineID: d.HeadPipelineID, Files: []mrapi.FileView{}}
	for _, f := range d.FileActions {
		v.Files = append(v.Files, mrapi.FileView{Action: f.Action, Path: f.FilePath, PreviousPath: f.PreviousPath})
	}
	return v
}

// Summaries are the title and merge request of many items (mrapi.Summary),
// read in one query, for item lists.
func (a *TypeAPI) Summaries(ctx context.Context, items []*wq.Item) (map[wq.ItemID]any, error) {
	ids := make([]wq.ItemID, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	sums, err := a.opts.Store.MRSummaries(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[wq.ItemID]any, len(sums))
	for id, m := range sums {
		out[id] = mrapi.Summary{Title: m.Title, MRIID: m.MRNumber, MRURL: m.MRURL}
	}
	return out, nil
}

// RetryDimensions: a retried item ensures its merge request anew
// (reopened or recreated) and reconciles it.
func (a *TypeAPI) RetryDimensions(*wq.Item) []wq.DimensionUpdate {
	return []wq.DimensionUpdate{dim(DimMR, wq.StatusTrue, time.Time{}), dim(DimReconcile, wq.StatusTrue, time.Time{})}
}

// ResolveEvent names the active mr item a forge event concerns (see
// Store.FindActiveMR).
func (a *TypeAPI) ResolveEvent(ctx context.Context, forge, project string, ref wq.EventRef) (wq.ItemID, bool, error) {
	return a.opts.Store.FindActiveMR(ctx, forge, project, ref)
}
