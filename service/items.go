// Package service is the item service between the API and the store
// (DESIGN section 3): it turns an authenticated caller's request into
// store writes, wakes the engine, audits, and renders the API's view of
// an item.
package service

import (
	"context"
	"time"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/keylock"
	"github.com/workqueue-dev/workqueue/mr"
)

// Store is what the service needs of a driver.
type Store interface {
	wq.Store
	mr.Store
}

// Items is the item service.
type Items struct {
	Store  Store
	Config config.Config
	Notify func(itemType string, id wq.ItemID) // the engine's; may be nil
	Audit  wq.AuditSink
	Now    func() time.Time

	// branches serialises submissions for one branch in this process, so
	// that a burst of them queues instead of racing (and losing) on the
	// store's guards.
	branches keylock.Set
}

func (s *Items) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Items) notify(it *wq.Item) {
	if s.Notify != nil {
		s.Notify(it.ItemType, it.ID)
	}
}

// submitRequest is the body of POST /api/v1/items.
type submitRequest struct {
	ItemType string `json:"item_type"`
	mr.Submission
}

// Submit decodes a submission strictly (see decodeSubmission: invalid
// UTF-8 and lone surrogates are refused, never replaced), checks that its
// project is configured, inspects and upserts it. It returns the item, the
// result (created, unchanged, updated, retried) and nothing stored on any
// error.
func (s *Items) Submit(ctx context.Context, caller *auth.Caller, body []byte) (*Item, string, error) {
	req, err := decodeSubmission(body)
	if err != nil {
		return nil, "", err
	}
	if req.ItemType != mr.ItemType {
		return nil, "", wq.Errorf(wq.EINVALID, "item_type: want %q, got %q", mr.ItemType, req.ItemType)
	}
	if err := s.authorize(ctx, caller, auth.Submit, req.Project); err != nil {
		return nil, "", err
	}
	project, ok := s.Config.ProjectFor(req.Forge, req.Project)
	if !ok {
		return nil, "", wq.Errorf(wq.EINVALID, "project: %q on forge %q is not configured for changes", req.Project, req.Forge)
	}
	forge, _ := s.Config.ForgeNamed(req.Forge)
	policy := mr.Project{
		Policy: mr.Policy{BlockedPaths: project.BlockedPaths, MaxFileBytes: project.MaxFileBytes,
			MaxTotalBytes: project.MaxTotalBytes, AllowBinary: project.AllowBinary, AllowGitConfigFiles: project.AllowGitConfigFiles},
		AutoMerge:    project.AutoMerge,
		Label:        s.Config.MR.ManagedLabel,
		BranchPrefix: project.SourceBranchPrefix(),
		FileModes:    wq.ForgeSetsFileModes(forge.Kind),
	}
	waitCtx, cancel := context.WithTimeout(ctx, mr.SubmitRaceWait)
	defer cancel()
	unlock, err := s.branches.Lock(waitCtx, mr.IdempotencyKey(req.Forge, req.Project, req.SourceBranch))
	if err != nil {
		return nil, "", wq.Errorf(wq.EUNAVAILABLE, "too many concurrent changes to %s %s; try again", req.Project, req.SourceBranch)
	}
	now := s.now()
	it, result, err := mr.Submit(ctx, s.Store, req.Submission, policy, caller.Identity, now)
	unlock()
	if err != nil {
		return nil, "", err
	}
	if result != mr.ResultUnchanged {
		s.notify(it)
	}
	s.audit(ctx, now, "item_"+result, it, caller, map[string]any{"forge": req.Forge, "project": req.Project,
		"source_branch": req.SourceBranch, "files": len(req.FileActions)})
	view, err := s.view(ctx, it)
	return view, result, err
}

// Get returns one item with its detail and dimensions, if the caller may
// read its project.
func (s *Items) Get(ctx context.Context, caller *auth.Caller, id wq.ItemID) (*Item, error) {
	it, err := s.Store.GetItem(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.authorizeItem(ctx, caller, auth.Read, it); err != nil {
		return nil, err
	}
	return s.view(ctx, it)
}

// authorize refuses, with EFORBIDDEN, a caller whose grants do not give
// perm on project, and audits the refusal (allowed requests are audited by
// what they do).
func (s *Items) authorize(ctx context.Context, caller *auth.Caller, perm auth.Permission, project string) error {
	if caller.CanOn(perm, project) {
		return nil
	}
	if s.Audit != nil {
		s.Audit.WriteAudit(ctx, wq.AuditEntry{Time: s.now(), EventType: "auth_refused", Actor: caller.Identity,
			Trigger:  map[string]any{"source": "api", "rules": caller.Rules()},
			Metadata: map[string]any{"permission": string(perm), "project": project, "reason": "no matched rule covers the project"}})
	}
	return wq.Errorf(wq.EFORBIDDEN, "%s may not %s on project %q: no rule that matched grants it there", caller.Identity, perm, project)
}

// authorizeItem authorizes perm on the item's project.
func (s *Items) authorizeItem(ctx context.Context, caller *auth.Caller, perm auth.Permission, it *wq.Item) error {
	project, err := s.projectOf(ctx, it)
	if err != nil {
		return err
	}
	return s.authorize(ctx, caller, perm, project)
}

// projectOf is the project an item changes ("" for types without one).
func (s *Items) projectOf(ctx context.Context, it *wq.Item) (string, error) {
	if it.ItemType != mr.ItemType {
		return "", nil
	}
	d, err := s.Store.GetMRDetail(ctx, it.ID)
	if err != nil {
		return "", err
	}
	return d.Project, nil
}

// List returns a page of items, newest first, and the cursor of the next
// page ("" on the last).
func (s *Items) List(ctx context.Context, caller *auth.Caller, f wq.ItemFilter) ([]*Item, string, error) {
	if f.Limit <= 0 || f.Limit > wq.MaxListLimit {
		f.Limit = 50
	}
	items, err := s.Store.ListItems(ctx, f)
	if err != nil {
		return nil, "", err
	}
	views := make([]*Item, 0, len(items))
	// Items of projects the caller may not read are left out; the cursor
	// still moves past them. Most callers read everywhere: no lookups.
	everywhere := caller.CanEverywhere(auth.Read)
	for _, it := range items {
		if !everywhere {
			project, err := s.projectOf(ctx, it)
			if err != nil {
				return nil, "", err
			}
			if !caller.CanOn(auth.Read, project) {
				continue
			}
		}
		views = append(views, render(it, nil))
	}
	next := ""
	if len(items) == f.Limit {
		next = items[len(items)-1].ID.String()
	}
	return views, next, nil
}

// Retry makes a failed or cancelled item active again; for an mr item the
// merge request is ensured anew (reopened or recreated) and reconciled.
func (s *Items) Retry(ctx context.Context, caller *auth.Caller, id wq.ItemID) (*Item, error) {
	now := s.now()
	var dims []wq.DimensionUpdate
	if it, err := s.Store.GetItem(ctx, id); err != nil {
		return nil, err
	} else if err := s.authorizeItem(ctx, caller, auth.Retry, it); err != nil {
		return nil, err
	} else if it.ItemType == mr.ItemType {
		dims = []wq.DimensionUpdate{
			{DimensionKey: wq.DimensionKey{Dimension: mr.DimMR}, Status: wq.StatusTrue},
			{DimensionKey: wq.DimensionKey{Dimension: mr.DimReconcile}, Status: wq.StatusTrue},
		}
	}
	it, err := s.Store.RetryItem(ctx, id, dims, now)
	if err != nil {
		return nil, err
	}
	s.notify(it)
	s.audit(ctx, now, "item_retried", it, caller, nil)
	return s.view(ctx, it)
}

// Cancel cancels an active or failed item. The merge request, if any, is
// left as it is.
func (s *Items) Cancel(ctx context.Context, caller *auth.Caller, id wq.ItemID) (*Item, error) {
	now := s.now()
	if it, err := s.Store.GetItem(ctx, id); err != nil {
		return nil, err
	} else if err := s.authorizeItem(ctx, caller, auth.Retry, it); err != nil {
		return nil, err
	}
	it, err := s.Store.CancelItem(ctx, id, "cancelled by "+caller.Identity, now)
	if err != nil {
		return nil, err
	}
	s.audit(ctx, now, "item_cancelled", it, caller, nil)
	return s.view(ctx, it)
}

func (s *Items) audit(ctx context.Context, now time.Time, event string, it *wq.Item, caller *auth.Caller, meta map[string]any) {
	if s.Audit == nil {
		return
	}
	s.Audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: event, ItemID: it.ID.String(), ItemType: it.ItemType,
		Actor: caller.Identity, NewState: map[string]any{"phase": it.Phase},
		Trigger: map[string]any{"source": "api", "rules": caller.Rules()}, Metadata: meta})
}

func (s *Items) view(ctx context.Context, it *wq.Item) (*Item, error) {
	var d *mr.Detail
	if it.ItemType == mr.ItemType {
		var err error
		if d, err = s.Store.GetMRDetail(ctx, it.ID); err != nil {
			return nil, err
		}
	}
	return render(it, d), nil
}

// ParseID parses an item id from a path or a cursor, naming the field.
func ParseID(field, s string) (wq.ItemID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return wq.ItemID{}, wq.Errorf(wq.EINVALID, "%s: want an item id, got %q", field, s)
	}
	return id, nil
}
