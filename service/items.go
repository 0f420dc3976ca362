package service

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/internal/keylock"
	"github.com/workqueue-dev/workqueue/internal/strictjson"
)

// SubmitRaceWait bounds how long a submission waits for concurrent
// submissions of the same key in this process before it answers
// EUNAVAILABLE.
const SubmitRaceWait = 10 * time.Second

// Items is the item service.
type Items struct {
	Store  wq.Store
	Notify func(itemType string, id wq.ItemID) // the engine's; may be nil
	Audit  wq.AuditSink
	Clock  clockwork.Clock // nil: the real clock
	// RequireAssignment makes a caller who may submit only through its
	// permission agent name an assignment in every submission
	// (control_plane.require_assignment).
	RequireAssignment bool
	// HandledHere are the types this instance's engine handles. An item of
	// another type is flagged (api.Item.Warnings) when Handlers, the
	// store's registry, has no instance recording it within HandlerWindow:
	// it would wait without a word otherwise. Nil Handlers flags nothing.
	HandledHere   []string
	Handlers      wq.HandlerRegistry
	HandlerWindow time.Duration // 0: DefaultHandlerWindow
	// Identities keeps the per-identity write budgets: every authorized
	// submission spends one of the submitter's submissions budget, and
	// one made for an assignment, a gated forge write, one of its
	// actions budget too. nil: unbounded.
	Identities *identity.Guard

	types map[string]registered
	faces []wq.ItemFace // what the API's document shows of the types (Describe)
	// keys serialises submissions for one key (one branch) in this
	// process, so that a burst of them queues instead of racing (and
	// losing) on the store's guards.
	keys keylock.Set

	// lastHandled keeps each type's LastHandled answer for
	// lastHandledFor: a burst of submissions of a type no instance here
	// handles read the registry once each (a statement per submission).
	lastHandledMu sync.Mutex
	lastHandled   map[string]handledRead
}

// lastHandledFor is how long a LastHandled answer stands: a tiny part of
// the window it is compared with.
const lastHandledFor = 2 * time.Second

type handledRead struct {
	last, read time.Time
}

type registered struct {
	api             wq.ItemAPI
	cancelDimension string
}

// Register makes an item type submittable, viewable and retryable over
// the API: t is its engine registration (for CancelDimension), a its face.
func (s *Items) Register(t wq.ItemType, a wq.ItemAPI) {
	if s.types == nil {
		s.types = map[string]registered{}
	}
	if t.Name != a.Type() {
		panic(fmt.Sprintf("service: registering item type %q with the API of %q", t.Name, a.Type()))
	}
	s.types[t.Name] = registered{api: a, cancelDimension: t.CancelDimension}
}

// Describe adds what the API's document shows of a registered type (its
// registration's face); a type without one is the generic item only.
func (s *Items) Describe(f wq.ItemFace) {
	s.faces = append(s.faces, f)
	slices.SortFunc(s.faces, func(a, b wq.ItemFace) int { return strings.Compare(a.Type, b.Type) })
}

// Faces are the faces Describe added, by type name.
func (s *Items) Faces() []wq.ItemFace { return slices.Clone(s.faces) }

// Types lists the registered item types' APIs.
func (s *Items) Types() []wq.ItemAPI {
	out := make([]wq.ItemAPI, 0, len(s.types))
	for _, name := range s.typeNames() {
		out = append(out, s.types[name].api)
	}
	return out
}

func (s *Items) typeNames() []string { return slices.Sorted(maps.Keys(s.types)) }

func (s *Items) now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}

func (s *Items) notify(it *wq.Item) {
	if s.Notify != nil {
		s.Notify(it.ItemType, it.ID)
	}
}

// Submit reads item_type from the body, has that type decode the body
// strictly, checks that the caller may submit on the submission's project,
// and has the type inspect and upsert it. It returns the item, the result,
// and nothing stored on any error.
func (s *Items) Submit(ctx context.Context, caller *auth.Caller, body []byte) (*api.Item, wq.SubmitResult, error) {
	name, err := strictjson.TopLevelString(body, "item_type")
	if err != nil {
		return nil, "", err
	}
	t, ok := s.types[name]
	if name == "" || !ok {
		return nil, "", wq.Errorf(wq.EINVALID, "item_type: want one of %s, got %q", strings.Join(s.typeNames(), ", "), name)
	}
	sub, err := t.api.Decode(body)
	if err != nil {
		return nil, "", err
	}
	scope := sub.Scope()
	if err := s.authorizeSubmit(ctx, caller, sub); err != nil {
		return nil, "", err
	}
	if err := s.spend(ctx, caller, sub, name); err != nil {
		return nil, "", err
	}
	if key := sub.Key(); key != "" {
		waitCtx, cancel := context.WithTimeout(ctx, SubmitRaceWait)
		unlock, err := s.keys.Lock(waitCtx, name+"\x00"+key)
		cancel()
		if err != nil {
			return nil, "", wq.Errorf(wq.EUNAVAILABLE, "too many concurrent submissions for the same %s item; try again", name)
		}
		defer unlock()
	}
	now := s.now()
	by := wq.Submitter{Identity: caller.Identity, Admin: caller.CanOn(auth.Admin, scope.Project),
		AgentOnly: !caller.CanOn(auth.Submit, scope.Project) && caller.CanOn(auth.Agent, scope.Project)}
	var (
		it     *wq.Item
		detail any
		result wq.SubmitResult
	)
	if sd, ok := t.api.(wq.SubmitDetailer); ok {
		it, detail, result, err = sd.SubmitDetail(ctx, sub, by, now)
	} else {
		it, result, err = t.api.Submit(ctx, sub, by, now)
	}
	if wq.ErrorReason(err) == wq.ReasonOwnerConflict && s.Audit != nil {
		s.Audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: wq.AuditSubmitRefused, Actor: caller.Identity, ItemType: name,
			Trigger:  map[string]any{"source": "api", "rules": caller.Rules()},
			Metadata: map[string]any{"forge": scope.Forge, "project": scope.Project, "key": sub.Key(), "reason": wq.ReasonOwnerConflict, "message": wq.ErrorMessage(err)}})
	}
	if err != nil {
		return nil, "", err
	}
	if result != wq.SubmitUnchanged {
		s.notify(it)
	}
	meta := map[string]any{"forge": scope.Forge, "project": scope.Project}
	if a, ok := sub.(interface{ AuditFields() map[string]any }); ok {
		for k, v := range a.AuditFields() {
			meta[k] = v
		}
	}
	// What a submission changed: an update changes an active item's
	// content, a retry makes a failed item active; a creation has no old
	// state (DDR-28), and an unchanged one changes nothing.
	var old map[string]any
	switch result {
	case wq.SubmitUpdated:
		old = map[string]any{"phase": wq.PhaseActive}
	case wq.SubmitRetried:
		old = map[string]any{"phase": wq.PhaseFailed}
	}
	s.audit(ctx, now, wq.AuditSubmitted(result), old, it, caller, meta)
	var view *api.Item
	if detail != nil {
		view, err = s.render(it, detail)
	} else {
		view, err = s.view(ctx, it)
	}
	if err != nil {
		return nil, "", err
	}
	view.Warnings = s.warnings(ctx, it)
	return view, result, nil
}

// DefaultHandlerWindow is how long since an instance last recorded a type
// (its engine records it at its sweeps, at most every half sweep
// interval: every minute by default when idle) before items of the type
// are flagged as unhandled.
const DefaultHandlerWindow = 5 * time.Minute

// warnings says why an active item may not progress: no instance handles
// its type. Without a registry (Handlers), or when it fails to answer,
// flags nothing.
func (s *Items) warnings(ctx context.Context, it *wq.Item) []string {
	if it.Phase != wq.PhaseActive || slices.Contains(s.HandledHere, it.ItemType) {
		return nil
	}
	if s.Handlers == nil {
		return nil
	}
	last, err := s.lastHandledOf(ctx, it.ItemType)
	if err != nil {
		return nil
	}
	window := s.HandlerWindow
	if window <= 0 {
		window = DefaultHandlerWindow
	}
	now := s.now()
	switch {
	case last.IsZero():
		return []string{fmt.Sprintf("no instance handles %s items: none has had %s in its handled_types; this item waits until one does", it.ItemType, it.ItemType)}
	case now.Sub(last) > window:
		return []string{fmt.Sprintf("no instance handles %s items now: the last one that did swept %s ago (at %s); this item waits until one runs again",
			it.ItemType, now.Sub(last).Round(time.Second), last.UTC().Format(time.RFC3339))}
	}
	return nil
}

// lastHandledOf is Handlers.LastHandled, read at most once per
// lastHandledFor for each type.
func (s *Items) lastHandledOf(ctx context.Context, itemType string) (time.Time, error) {
	now := s.now()
	s.lastHandledMu.Lock()
	r, ok := s.lastHandled[itemType]
	s.lastHandledMu.Unlock()
	if ok && now.Sub(r.read) < lastHandledFor && !now.Before(r.read) {
		return r.last, nil
	}
	last, err := s.Handlers.LastHandled(ctx, itemType)
	if err != nil {
		return time.Time{}, err
	}
	s.lastHandledMu.Lock()
	if s.lastHandled == nil {
		s.lastHandled = map[string]handledRead{}
	}
	s.lastHandled[itemType] = handledRead{last: last, read: now}
	s.lastHandledMu.Unlock()
	return last, nil
}

// Get returns one item with its detail and dimensions, if the caller may
// read its project.
func (s *Items) Get(ctx context.Context, caller *auth.Caller, id wq.ItemID) (*api.Item, error) {
	it, err := s.itemFor(ctx, caller, auth.Read, id)
	if err != nil {
		return nil, err
	}
	view, err := s.view(ctx, it)
	if err != nil {
		return nil, err
	}
	view.Warnings = s.warnings(ctx, it)
	return view, nil
}

// spend counts an authorized submission against the caller's budgets
// (Identities), before the type inspects it: a loop of refused
// submissions is bounded as a loop of accepted ones is.
func (s *Items) spend(ctx context.Context, caller *auth.Caller, sub wq.Submission, itemType string) error {
	trigger := map[string]any{"source": "api", "item_type": itemType, "project": sub.Scope().Project}
	if err := s.Identities.Spend(ctx, caller.Identity, identity.Submissions, trigger); err != nil {
		return err
	}
	if a, ok := sub.(wq.Assigned); ok && a.AssignmentID() != "" {
		return s.Identities.Spend(ctx, caller.Identity, identity.Actions, trigger)
	}
	return nil
}

// authorizeSubmit lets a caller submit with permission submit, or with
// permission agent: agents are the control plane's callers, and a change
// they make for an assignment passes its gate in the item type. With
// RequireAssignment, a caller without submit must name an assignment.
func (s *Items) authorizeSubmit(ctx context.Context, caller *auth.Caller, sub wq.Submission) error {
	project := sub.Scope().Project
	if caller.CanOn(auth.Submit, project) || !caller.CanOn(auth.Agent, project) {
		return s.authorize(ctx, caller, auth.Submit, project)
	}
	if a, ok := sub.(wq.Assigned); s.RequireAssignment && (!ok || a.AssignmentID() == "") {
		return &wq.Error{Code: wq.EFORBIDDEN, Reason: "assignment_required", Message: fmt.Sprintf(
			"assignment_required: %s may submit changes to %q only for an assignment (control_plane.require_assignment): allocate work, then submit with its assignment_id",
			caller.Identity, project)}
	}
	return nil
}

// authorize refuses, with EFORBIDDEN, a caller whose grants do not give
// perm on project (read is also given by agent: mayRead), and audits the
// refusal (allowed requests are audited by what they do).
func (s *Items) authorize(ctx context.Context, caller *auth.Caller, perm auth.Permission, project string) error {
	if caller.CanOn(perm, project) || perm == auth.Read && mayRead(caller, project) {
		return nil
	}
	s.refused(ctx, caller, perm, project)
	return wq.Errorf(wq.EFORBIDDEN, "%s may not %s on project %q: no rule that matched grants it there", caller.Identity, perm, project)
}

// refused audits a refusal of perm on project.
func (s *Items) refused(ctx context.Context, caller *auth.Caller, perm auth.Permission, project string) {
	if s.Audit != nil {
		s.Audit.WriteAudit(ctx, wq.AuditEntry{Time: s.now(), EventType: wq.AuditAuthRefused, Actor: caller.Identity,
			Trigger:  map[string]any{"source": "api", "rules": caller.Rules()},
			Metadata: map[string]any{"permission": string(perm), "project": project, "reason": "no matched rule covers the project"}})
	}
}

// mayRead reports whether caller may read the items of project: with
// permission read, or with permission agent, since an agent follows the
// changes it submits (as authorizeSubmit lets it submit them).
func mayRead(caller *auth.Caller, project string) bool {
	return caller.CanOn(auth.Read, project) || caller.CanOn(auth.Agent, project)
}

// List returns a page of items the caller may read, newest first, and
// the cursor of the next page ("" on the last). Items of projects the
// caller may not read are not on any page, and the page is filled from
// the others (the store is read on past them): its length and its
// cursor, the id of its last item, are what a store holding only the
// caller's projects would answer (issue 48).
func (s *Items) List(ctx context.Context, caller *auth.Caller, f wq.ItemFilter) ([]*api.Item, string, error) {
	if f.Limit <= 0 || f.Limit > wq.MaxListLimit {
		f.Limit = 50
	}
	want := f.Limit
	var visible []*wq.Item
	if f.Project != "" && !mayRead(caller, f.Project) {
		return []*api.Item{}, "", nil
	}
	everywhere := caller.CanEverywhere(auth.Read) || caller.CanEverywhere(auth.Agent)
	if !everywhere {
		f.Limit = wq.MaxListLimit // a narrowed reader's page may need many rows read
	}
	for {
		items, err := s.Store.ListItems(ctx, f)
		if err != nil {
			return nil, "", err
		}
		for _, it := range items {
			if mayRead(caller, it.Project) {
				visible = append(visible, it)
			}
		}
		if len(visible) >= want || len(items) < f.Limit {
			break
		}
		f.Before = items[len(items)-1].ID
	}
	// A full page has a next one, as it always had: its cursor is the
	// page's last item, one the caller may read.
	next := ""
	if len(visible) >= want {
		visible = visible[:want]
		next = visible[want-1].ID.String()
	}
	views := make([]*api.Item, 0, len(visible))
	byType := map[string][]*wq.Item{}
	for _, it := range visible {
		views = append(views, render(it, nil))
		byType[it.ItemType] = append(byType[it.ItemType], it)
	}
	if err := s.summarize(ctx, byType, views); err != nil {
		return nil, "", err
	}
	return views, next, nil
}

// summarize sets the summary of each view whose type keeps one
// (wq.Summarizer): one call per type for the whole page.
func (s *Items) summarize(ctx context.Context, byType map[string][]*wq.Item, views []*api.Item) error {
	sums := map[string]json.RawMessage{}
	for name, items := range byType {
		sz, ok := s.types[name].api.(wq.Summarizer)
		if !ok {
			continue
		}
		got, err := sz.Summaries(ctx, items)
		if err != nil {
			return err
		}
		for id, v := range got {
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("render the summary of %s: %w", id, err)
			}
			sums[id.String()] = b
		}
	}
	for _, v := range views {
		v.Summary = sums[v.ID]
	}
	return nil
}

// itemFor loads an item and authorises perm on its project. An item the
// caller may not read is, to it, one that does not exist: the same
// ENOTFOUND, word for word (issue 48); one it may read but not change is
// EFORBIDDEN.
func (s *Items) itemFor(ctx context.Context, caller *auth.Caller, perm auth.Permission, id wq.ItemID) (*wq.Item, error) {
	it, err := s.Store.GetItem(ctx, id)
	if wq.ErrorCode(err) == wq.ENOTFOUND {
		return nil, itemNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	if !mayRead(caller, it.Project) {
		s.refused(ctx, caller, auth.Read, it.Project)
		return nil, itemNotFound(id)
	}
	if err := s.authorize(ctx, caller, perm, it.Project); err != nil {
		return nil, err
	}
	return it, nil
}

// itemNotFound is the answer for an item that does not exist, or that
// the caller may not read.
func itemNotFound(id wq.ItemID) error { return wq.Errorf(wq.ENOTFOUND, "item %s not found", id) }

// Retry makes a failed or cancelled item active again, with the rows its
// type resets on retry.
func (s *Items) Retry(ctx context.Context, caller *auth.Caller, id wq.ItemID) (*api.Item, error) {
	it, err := s.itemFor(ctx, caller, auth.Retry, id)
	if err != nil {
		return nil, err
	}
	old := stateOf(it)
	var dims []wq.DimensionUpdate
	if t, ok := s.types[it.ItemType]; ok {
		dims = t.api.RetryDimensions(it)
	}
	now := s.now()
	if it, err = s.Store.RetryItem(ctx, id, dims, now); err != nil {
		return nil, err
	}
	s.notify(it)
	s.audit(ctx, now, wq.AuditItemRetried, old, it, caller, nil)
	return s.view(ctx, it)
}

// Cancel cancels an active or failed item. A type that winds its items
// down itself (wq.ItemType.CancelDimension) is asked to: the item stays
// active until its executor has closed what it opened.
func (s *Items) Cancel(ctx context.Context, caller *auth.Caller, id wq.ItemID) (*api.Item, error) {
	it, err := s.itemFor(ctx, caller, auth.Retry, id)
	if err != nil {
		return nil, err
	}
	old := stateOf(it)
	now := s.now()
	reason := "cancelled by " + caller.Identity
	if dim := s.types[it.ItemType].cancelDimension; dim != "" {
		detail, _ := json.Marshal(wq.CancelRequest{Reason: reason})
		it, err = s.Store.RequestCancel(ctx, id, []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: dim},
			Status: wq.StatusTrue, Detail: detail}}, now)
		if err != nil {
			return nil, err
		}
		s.notify(it)
		s.audit(ctx, now, wq.AuditItemCancelRequested, old, it, caller, nil)
		return s.view(ctx, it)
	}
	if it, err = s.Store.CancelItem(ctx, id, reason, now); err != nil {
		return nil, err
	}
	s.audit(ctx, now, wq.AuditItemCancelled, old, it, caller, nil)
	return s.view(ctx, it)
}

// audit writes what a caller did to it: old is its state before (nil for
// a creation), the new is it's.
func (s *Items) audit(ctx context.Context, now time.Time, event string, old map[string]any, it *wq.Item, caller *auth.Caller, meta map[string]any) {
	if s.Audit == nil {
		return
	}
	s.Audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: event, ItemID: it.ID.String(), ItemType: it.ItemType,
		Actor: caller.Identity, OldState: old, NewState: stateOf(it),
		Trigger: map[string]any{"source": "api", "rules": caller.Rules()}, Metadata: meta})
}

// stateOf is an item's state as its audit entries say it: its phase, and
// why it stopped where it did.
func stateOf(it *wq.Item) map[string]any {
	st := map[string]any{"phase": it.Phase}
	if it.Reason != "" {
		st["reason"] = it.Reason
	}
	return st
}

// view renders an item with its type's detail.
func (s *Items) view(ctx context.Context, it *wq.Item) (*api.Item, error) {
	t, ok := s.types[it.ItemType]
	if !ok {
		return render(it, nil), nil
	}
	d, err := t.api.Detail(ctx, it)
	if err != nil {
		return nil, err
	}
	return s.render(it, d)
}

// render renders an item with d, its type's detail (nil for none).
func (s *Items) render(it *wq.Item, d any) (*api.Item, error) {
	var detail json.RawMessage
	if d != nil {
		var err error
		if detail, err = json.Marshal(d); err != nil {
			return nil, fmt.Errorf("render the detail of %s: %w", it.ID, err)
		}
	}
	return render(it, detail), nil
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func render(it *wq.Item, detail json.RawMessage) *api.Item {
	v := &api.Item{ID: it.ID.String(), ItemType: it.ItemType, Phase: it.Phase, Reason: it.Reason, Forge: it.Forge,
		Project: it.Project, Attempts: it.Attempts, Error: it.Error, RetryAfter: optTime(it.RetryAfter), Generation: it.Generation,
		CallerIdentity: it.CallerIdentity, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, FinishedAt: optTime(it.FinishedAt),
		LastEventAt: optTime(it.LastEventAt), Detail: detail}
	for k, dim := range it.Dimensions {
		v.Dimensions = append(v.Dimensions, api.Dimension{Dimension: k.Dimension, Variant: k.Variant, Status: dim.Status,
			PendingUntil: optTime(dim.PendingUntil), Detail: dim.Detail})
	}
	slices.SortFunc(v.Dimensions, func(a, b api.Dimension) int {
		return strings.Compare(a.Dimension+"\x00"+a.Variant, b.Dimension+"\x00"+b.Variant)
	})
	return v
}

// ParseID parses an item id from a path or a cursor, naming the field.
func ParseID(field, s string) (wq.ItemID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return wq.ItemID{}, wq.Errorf(wq.EINVALID, "%s: want an item id, got %q", field, s)
	}
	return id, nil
}

// Queues lists the queues of every type that has them (wq.QueueLister),
// only those of projects the caller may read, and how many it left out.
func (s *Items) Queues(ctx context.Context, caller *auth.Caller) ([]wq.ItemQueue, int, error) {
	var out []wq.ItemQueue
	hidden := 0
	for _, name := range slices.Sorted(maps.Keys(s.types)) {
		l, ok := s.types[name].api.(wq.QueueLister)
		if !ok {
			continue
		}
		qs, err := l.Queues(ctx)
		if err != nil {
			return nil, 0, err
		}
		for _, q := range qs {
			if mayRead(caller, q.Project) {
				out = append(out, q)
			} else {
				hidden++
			}
		}
	}
	return out, hidden, nil
}
