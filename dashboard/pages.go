package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/identity"
	"github.com/workqueue-dev/workqueue/service"
)

// pageSize is how many rows a list page shows.
const pageSize = 50

var funcs = template.FuncMap{
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return ""
			}
			return v.UTC().Format("2006-01-02\u00a015:04:05Z")
		case *time.Time:
			if v == nil || v.IsZero() {
				return ""
			}
			return v.UTC().Format("2006-01-02\u00a015:04:05Z")
		}
		return ""
	},
	"ago":      timeElement,
	"duration": duration,
	"absolute": absolute,
	"pretty":   prettyJSON,
	"list":     func(v ...string) []string { return v },
	"short": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return s[:n] + "…"
	},
	// idtail is the end of an id: UUIDv7s made in the same millisecond
	// share their beginning, so the end tells them apart.
	"idtail": func(id string) string {
		if len(id) <= 12 {
			return id
		}
		return "…" + id[len(id)-12:]
	},
	"join": strings.Join,
	// place is a 0-based index as people count: 1 is first.
	"place": func(i int) int { return i + 1 },
	"slice_states": func() []string {
		return []string{string(controlplane.StateOpen), string(controlplane.StateMerged), string(controlplane.StateClosed)}
	},
	"pretty_map": func(m map[string]any) string {
		if len(m) == 0 {
			return ""
		}
		b, _ := json.Marshal(m)
		return string(b)
	},
}

// prettyJSON indents a JSON document for a <pre>; "" for none.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

type itemsPage struct {
	Items                       []*api.Item
	Titles                      map[string]string // by item id: the title its type's summary gives, if any
	Types                       []string
	Phases                      []wq.Phase
	Type, Phase, Project, Forge string
	Search                      string // text every item shown contains (q)
	Searched                    int    // how many items the search read
	Next                        string // URL of the next (older) page; "" on the last
	First                       string // URL of the first page; "" on it
	Filtered                    bool
	// CanRetry: the person may retry and cancel. The bulk forms are
	// shown only for what the filters match: Retryable and Cancellable
	// count the items (of the newest MaxBulkItems) each would act on.
	CanRetry               bool
	Retryable, Cancellable int
	// Done says what a bulk action just did, after its redirect.
	Done string
	// Refresh is how often, in seconds, the page reloads itself: while
	// it shows an active item, so that a person sees it move; 0: never.
	Refresh int
}

// RefreshSeconds is the layout's refresh interval for this page.
func (p itemsPage) RefreshSeconds() int { return p.Refresh }

// refreshActive is how often a page showing active items reloads.
const refreshActive = 10

// searchScan bounds what a text search reads: the newest items that
// match the other filters, one list page of the store's largest.
const searchScan = wq.MaxListLimit

// summaryTitle is the "title" member of an item type's summary or
// detail, whichever has one: a merge request's, with no type named.
func summaryTitle(it *api.Item) string {
	for _, raw := range []json.RawMessage{it.Summary, it.Detail} {
		var v struct {
			Title string `json:"title"`
		}
		if json.Unmarshal(raw, &v) == nil && v.Title != "" {
			return v.Title
		}
	}
	return ""
}

// matchesSearch reports whether the item's id, project, title, reason
// or error contains text, in any case.
func matchesSearch(it *api.Item, title, text string) bool {
	text = strings.ToLower(text)
	for _, field := range []string{it.ID, it.Forge + ":" + it.Project, title, it.Reason, it.Error, it.ItemType} {
		if strings.Contains(strings.ToLower(field), text) {
			return true
		}
	}
	return false
}

func (d *Dashboard) itemsPage(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	p := itemsPage{Phases: []wq.Phase{wq.PhaseActive, wq.PhaseCompleted, wq.PhaseFailed, wq.PhaseCancelled},
		Type: q.Get("type"), Phase: q.Get("phase"), Project: strings.TrimSpace(q.Get("project")), Forge: strings.TrimSpace(q.Get("forge")),
		Search: strings.TrimSpace(q.Get("q")), Titles: map[string]string{}, CanRetry: s.caller.Can(auth.Retry), Done: q.Get("done")}
	for _, t := range d.o.Items.Types() {
		p.Types = append(p.Types, t.Type())
	}
	if !s.caller.Can(auth.Read) && !s.caller.Can(auth.Agent) {
		d.fail(w, r, s, wq.Errorf(wq.EFORBIDDEN, "%s may not list items: the %q or %q permission is required", s.caller.Identity, auth.Read, auth.Agent))
		return
	}
	f := wq.ItemFilter{ItemType: p.Type, Phase: wq.Phase(p.Phase), Project: p.Project, Forge: p.Forge, Limit: pageSize}
	if f.Phase != "" && !f.Phase.Valid() {
		d.fail(w, r, s, wq.Errorf(wq.EINVALID, "phase: want active, completed, failed or cancelled, got %q", f.Phase))
		return
	}
	if c := q.Get("cursor"); c != "" {
		id, err := service.ParseID("cursor", c)
		if err != nil {
			d.fail(w, r, s, err)
			return
		}
		f.Before = id
		p.First = "/ui/items?" + filterQuery(p, "")
	}
	if p.Search != "" {
		// A search reads the newest items the filters match, at most
		// searchScan of them, and shows those containing the text: no
		// store indexes an item type's titles.
		f.Limit = searchScan
	}
	items, next, err := d.o.Items.List(r.Context(), s.caller, f)
	if err != nil {
		d.fail(w, r, s, err)
		return
	}
	for _, it := range items {
		p.Titles[it.ID] = summaryTitle(it)
	}
	if p.Search != "" {
		p.Searched = len(items)
		items = slices.DeleteFunc(items, func(it *api.Item) bool { return !matchesSearch(it, p.Titles[it.ID], p.Search) })
	}
	p.Items, p.Filtered = items, p.Type != "" || p.Phase != "" || p.Project != "" || p.Forge != "" || p.Search != ""
	if next != "" {
		p.Next = "/ui/items?" + filterQuery(p, next)
	}
	if slices.ContainsFunc(items, func(it *api.Item) bool { return it.Phase == wq.PhaseActive }) {
		p.Refresh = refreshActive
	}
	if p.CanRetry {
		filters := url.Values{}
		for k, v := range map[string]string{"type": p.Type, "phase": p.Phase, "forge": p.Forge, "project": p.Project, "q": p.Search} {
			if v != "" {
				filters.Set(k, v)
			}
		}
		if p.Retryable, p.Cancellable, err = d.bulkCounts(r.Context(), s.caller, filters); err != nil {
			d.fail(w, r, s, err)
			return
		}
	}
	d.render(w, r, s, http.StatusOK, "items", p)
}

// filterQuery is the list's filters as a query, with a cursor.
func filterQuery(p itemsPage, cursor string) string {
	v := url.Values{}
	for k, val := range map[string]string{"type": p.Type, "phase": p.Phase, "project": p.Project, "forge": p.Forge, "q": p.Search, "cursor": cursor} {
		if val != "" {
			v.Set(k, val)
		}
	}
	return v.Encode()
}

type link struct{ Name, URL string }

type itemPage struct {
	Item  *api.Item
	Title string // the title the type's detail gives, if any
	// Links are the web links the detail carries; the first is shown
	// under the title (a merge request's).
	Links   []link
	Detail  string
	Waiting []string // what the item waits for, in words
	// Timeline is the audit trail in words, oldest first.
	Timeline []moment
	HasTrail bool
	// SharedTrail: the trail is the item's history in the database,
	// the same on every instance and across restarts.
	SharedTrail bool
	CanRetry    bool
	Done        string // what the last action did, after a redirect
}

func (d *Dashboard) itemPage(w http.ResponseWriter, r *http.Request, s *session) {
	id, err := d.o.Items.ResolveID(r.Context(), s.caller, "id", r.PathValue("id"))
	if wq.ErrorCode(err) == wq.EINVALID {
		err = wq.Errorf(wq.ENOTFOUND, "no item %q", r.PathValue("id"))
	}
	if err != nil {
		d.fail(w, r, s, err)
		return
	}
	if r.PathValue("id") != id.String() {
		// A short id: the page's own address is the full one.
		http.Redirect(w, r, "/ui/items/"+id.String(), http.StatusFound)
		return
	}
	it, err := d.o.Items.Get(r.Context(), s.caller, id)
	if err != nil {
		d.fail(w, r, s, err)
		return
	}
	title, links := d.titleAndLinks(it)
	p := itemPage{Item: it, Title: title, Detail: prettyJSON(it.Detail), Links: links,
		Waiting:  waiting(it, d.o.Clock.Now()),
		CanRetry: s.caller.CanOn(auth.Retry, it.Project), HasTrail: d.o.Trail != nil, Done: r.URL.Query().Get("done")}
	if d.o.Trail != nil {
		shared, ok := d.o.Trail.(interface{ Shared() bool })
		p.SharedTrail = ok && shared.Shared()
		p.Timeline = timeline(d.o.Trail.ItemAudit(r.Context(), it.ID))
	}
	d.render(w, r, s, http.StatusOK, "item", p)
}

// titleAndLinks are an item's title and web links as its type's
// registration shows them (wq.ItemFace.View: a merge request's title and
// page); for a type that has no view, what its detail carries (a "title"
// member, members named *_url).
func (d *Dashboard) titleAndLinks(it *api.Item) (string, []link) {
	for _, f := range d.o.Items.Faces() {
		if f.Type != it.ItemType || f.View == nil {
			continue
		}
		v := f.View(it.Summary, it.Detail)
		if v.Title == "" && v.Link == "" {
			break
		}
		var links []link
		if v.Link != "" {
			links = []link{{Name: cmp.Or(v.LinkName, "page"), URL: v.Link}}
		}
		return v.Title, links
	}
	return summaryTitle(it), detailLinks(it.Detail)
}

// detailLinks are the web links an item type's detail carries: members
// named *_url holding an http(s) URL (a merge request's link), so that the
// dashboard links a merge request without naming the type.
func detailLinks(raw json.RawMessage) []link {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var out []link
	for k, v := range m {
		s, ok := v.(string)
		if !ok || !strings.HasSuffix(k, "_url") {
			continue
		}
		if u, err := url.Parse(s); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
			out = append(out, link{Name: linkName(strings.TrimSuffix(k, "_url")), URL: s})
		}
	}
	slices.SortFunc(out, func(a, b link) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// linkName is how a detail's link is named: its member's name in words,
// a short one (three letters at most) taken for an abbreviation and
// written in capitals ("mr_url" is the MR's link).
func linkName(member string) string {
	if len(member) <= 3 {
		return strings.ToUpper(member)
	}
	return strings.ReplaceAll(member, "_", " ")
}

// itemAction posts retry or cancel through the service, which checks the
// retry permission on the item's project exactly as the API does.
func (d *Dashboard) itemAction(act func(context.Context, *auth.Caller, wq.ItemID) (*api.Item, error)) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		id, err := service.ParseID("id", r.PathValue("id"))
		if err != nil {
			d.fail(w, r, s, wq.Errorf(wq.ENOTFOUND, "no item %q", r.PathValue("id")))
			return
		}
		if !s.caller.Can(auth.Retry) {
			d.refuse(r, s.caller, "no matched rule grants retry")
			d.fail(w, r, s, wq.Errorf(wq.EFORBIDDEN, "%s may not %s items: the %q permission is required",
				s.caller.Identity, actionName(r), auth.Retry))
			return
		}
		it, err := act(r.Context(), s.caller, id)
		if err != nil {
			d.fail(w, r, s, err)
			return
		}
		http.Redirect(w, r, "/ui/items/"+it.ID+"?done="+url.QueryEscape(actionName(r)), http.StatusSeeOther)
	}
}

// actionName is the last segment of an action's path: retry or cancel.
func actionName(r *http.Request) string {
	return r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
}

// controlPage guards the control plane's pages as the API guards its
// routes: permission agent (an admin sees everyone's, others their own).
func (d *Dashboard) controlPage(h func(http.ResponseWriter, *http.Request, *session, controlplane.Caller)) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		if d.o.ControlPlane == nil {
			d.fail(w, r, s, wq.Errorf(wq.ENOTFOUND, "this instance runs no control plane"))
			return
		}
		if !s.caller.Can(auth.Agent) {
			d.refuse(r, s.caller, "no matched rule grants agent")
			d.fail(w, r, s, wq.Errorf(wq.EFORBIDDEN, "%s may not see the control plane: the %q permission is required (admin sees every session)",
				s.caller.Identity, auth.Agent))
			return
		}
		// As the API sees the caller (httpapi.ControlCaller): an admin
		// of every project, and the projects where it holds agent.
		h(w, r, s, controlplane.Caller{Identity: s.caller.Identity, Admin: s.caller.CanEverywhere(auth.Admin), Projects: s.caller.Scope(auth.Agent),
			MaySubmit: func(repo string) bool { return s.caller.CanOn(auth.Submit, repo) }})
	}
}

type sessionsPage struct {
	Sessions []controlplane.SessionView
	Admin    bool
	// Freezer says the person may freeze identities (admin of every
	// project, on an instance with identities); Frozen are the frozen
	// ones, and Done, Identity what the last form did.
	Freezer        bool
	Frozen         []identity.Freeze
	FrozenIdentity map[string]bool
	Done, Identity string
}

func (d *Dashboard) sessionsPage(w http.ResponseWriter, r *http.Request, s *session, c controlplane.Caller) {
	list, err := d.o.ControlPlane.Sessions(r.Context(), c, pageSize*2)
	if err != nil {
		d.fail(w, r, s, err)
		return
	}
	p := sessionsPage{Sessions: list, Admin: c.Admin, FrozenIdentity: map[string]bool{}}
	if d.o.Identities != nil && s.caller.CanEverywhere(auth.Admin) {
		p.Freezer = true
		if p.Frozen, err = d.o.Identities.Frozen(r.Context()); err != nil {
			d.fail(w, r, s, err)
			return
		}
		for _, f := range p.Frozen {
			p.FrozenIdentity[f.Identity] = true
		}
		q := r.URL.Query()
		p.Done, p.Identity = q.Get("done"), q.Get("identity")
	}
	d.render(w, r, s, http.StatusOK, "sessions", p)
}

type workPage struct {
	Work              []workRow
	Repo, Kind, State string
	Next, First       string
	Filtered          bool
}

// workRow is one row of the work inventory.
type workRow struct {
	controlplane.Work
	Name workName
}

func (d *Dashboard) workPage(w http.ResponseWriter, r *http.Request, s *session, c controlplane.Caller) {
	q := r.URL.Query()
	p := workPage{Repo: strings.TrimSpace(q.Get("repo")), Kind: q.Get("kind"), State: q.Get("state")}
	p.Filtered = p.Repo != "" || p.Kind != "" || p.State != ""
	f := controlplane.WorkFilter{Repo: p.Repo, Kind: controlplane.Kind(p.Kind), State: controlplane.State(p.State),
		Limit: pageSize, After: q.Get("after")}
	list, err := d.o.ControlPlane.Work(r.Context(), c, f)
	if err != nil {
		d.fail(w, r, s, err)
		return
	}
	for i := range list {
		p.Work = append(p.Work, workRow{Work: list[i], Name: d.nameWork(&list[i])})
	}
	page := func(after string) string {
		v := url.Values{}
		for k, val := range map[string]string{"repo": p.Repo, "kind": p.Kind, "state": p.State, "after": after} {
			if val != "" {
				v.Set(k, val)
			}
		}
		return "/ui/work?" + v.Encode()
	}
	if len(list) == pageSize {
		p.Next = page(list[len(list)-1].ID)
	}
	if f.After != "" {
		p.First = page("")
	}
	d.render(w, r, s, http.StatusOK, "work", p)
}

type leasesPage struct {
	Leases []leaseRow
	All    bool
}

// leaseRow is one lease with the work it holds and its holder named.
type leaseRow struct {
	controlplane.Lease
	Work        workName
	Holder      sessionName
	AdoptedFrom sessionName
	HeldFor     time.Duration // from its creation to its end, or to now
}

func (d *Dashboard) leasesPage(w http.ResponseWriter, r *http.Request, s *session, c controlplane.Caller) {
	all, _ := strconv.ParseBool(r.URL.Query().Get("all"))
	list, err := d.o.ControlPlane.Leases(r.Context(), c, controlplane.LeaseFilter{All: all, Limit: pageSize * 2})
	if err != nil {
		d.fail(w, r, s, err)
		return
	}
	names, now := d.namer(), d.o.Clock.Now()
	p := leasesPage{All: all}
	for _, l := range list {
		end := now
		if !l.EndedAt.IsZero() {
			end = l.EndedAt
		}
		p.Leases = append(p.Leases, leaseRow{Lease: l, Work: names.workOf(r.Context(), l.WorkID),
			Holder: names.sessionOf(r.Context(), l.SessionID), AdoptedFrom: names.sessionOf(r.Context(), l.AdoptedFromSessionID),
			HeldFor: end.Sub(l.CreatedAt)})
	}
	d.render(w, r, s, http.StatusOK, "leases", p)
}

type allocationsPage struct {
	Events  []eventRow
	Session sessionName // the session the log is narrowed to, if any
}

// eventRow is one event of the control plane's log, its work and
// session named.
type eventRow struct {
	controlplane.Event
	Work    workName
	Session sessionName
}

func (d *Dashboard) allocationsPage(w http.ResponseWriter, r *http.Request, s *session, c controlplane.Caller) {
	session := strings.TrimSpace(r.URL.Query().Get("session"))
	list, err := d.o.ControlPlane.Events(r.Context(), c, controlplane.EventFilter{SessionID: session, Limit: pageSize * 2})
	if err != nil {
		d.fail(w, r, s, err)
		return
	}
	names := d.namer()
	p := allocationsPage{}
	if session != "" {
		p.Session = sessionName{ID: session}
	}
	for _, e := range list {
		row := eventRow{Event: e, Work: names.workOf(r.Context(), e.WorkID), Session: names.sessionOf(r.Context(), e.SessionID)}
		if session != "" && e.SessionID == session {
			p.Session = row.Session
		}
		p.Events = append(p.Events, row)
	}
	d.render(w, r, s, http.StatusOK, "allocations", p)
}
