package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/service"
)

// Bulk retry and cancel of a filtered list (issue 29, as River UI and
// asynqmon have them): the items page posts its filters to
// /ui/bulk/{action}, which answers a confirmation page naming the count
// and the items; confirming posts exactly those ids back, and each goes
// through the service as a single retry or cancel does, so its
// permission is checked per item. No script: two forms.

// MaxBulkItems bounds the items one bulk retry or cancel acts on: the
// most a confirmation page lists (wq.MaxListLimit, what one list reads).
// A confirmation posting more ids is refused whole, naming the bound, so
// that one request cannot fan out into any number of writes (issue 49).
const MaxBulkItems = searchScan

// bulkEligible are the phases an item can be retried or cancelled from.
var bulkEligible = map[string][]wq.Phase{
	"retry":  {wq.PhaseFailed, wq.PhaseCancelled},
	"cancel": {wq.PhaseActive, wq.PhaseFailed},
}

type bulkPage struct {
	Action  string
	IDs     []string
	Back    string     // the filtered list
	Filters url.Values // its filters, posted again with the confirmation
}

func (d *Dashboard) bulkAction(w http.ResponseWriter, r *http.Request, s *session) {
	action := r.PathValue("action")
	eligible, ok := bulkEligible[action]
	if !ok {
		d.fail(w, r, s, wq.Errorf(wq.ENOTFOUND, "no bulk action %q", action))
		return
	}
	if !s.caller.Can(auth.Retry) {
		d.refuse(r, s.caller, "no matched rule grants retry")
		d.fail(w, r, s, wq.Errorf(wq.EFORBIDDEN, "%s may not %s items: the %q permission is required", s.caller.Identity, action, auth.Retry))
		return
	}
	filters := url.Values{}
	for _, k := range []string{"type", "phase", "forge", "project", "q"} {
		if v := strings.TrimSpace(r.PostFormValue(k)); v != "" {
			filters.Set(k, v)
		}
	}
	back := "/ui/items?" + filters.Encode()
	if r.PostFormValue("confirm") != "yes" {
		ids, err := d.bulkTargets(r.Context(), s.caller, filters, eligible)
		if err != nil {
			d.fail(w, r, s, err)
			return
		}
		d.render(w, r, s, http.StatusOK, "bulk", bulkPage{Action: action, IDs: ids, Back: back, Filters: filters})
		return
	}
	act := map[string]func(context.Context, *auth.Caller, wq.ItemID) (*api.Item, error){"retry": d.o.Items.Retry, "cancel": d.o.Items.Cancel}[action]
	ids := r.PostForm["id"]
	if len(ids) > MaxBulkItems {
		d.fail(w, r, s, wq.Errorf(wq.EINVALID, "a bulk %s acts on at most %d items at once, got %d: narrow the filters", action, MaxBulkItems, len(ids)))
		return
	}
	done := 0
	for _, text := range ids {
		id, err := service.ParseID("id", text)
		if err != nil {
			continue
		}
		if _, err := act(r.Context(), s.caller, id); err == nil {
			done++
		}
	}
	filters.Set("done", fmt.Sprintf("%s %d of %d items", map[string]string{"retry": "retried", "cancel": "cancelled or asked to cancel"}[action], done, len(ids)))
	http.Redirect(w, r, "/ui/items?"+filters.Encode(), http.StatusSeeOther)
}

// bulkCounts are how many items a bulk retry and a bulk cancel of the
// filters would act on, from one read of the list: the items page offers
// each only when it would act on something.
func (d *Dashboard) bulkCounts(ctx context.Context, caller *auth.Caller, filters url.Values) (retry, cancel int, err error) {
	items, err := d.bulkCandidates(ctx, caller, filters)
	if err != nil {
		return 0, 0, err
	}
	for _, it := range items {
		if slices.Contains(bulkEligible["retry"], it.Phase) {
			retry++
		}
		if slices.Contains(bulkEligible["cancel"], it.Phase) {
			cancel++
		}
	}
	return retry, cancel, nil
}

// bulkTargets are the ids of the items the list's filters match (the
// newest searchScan of them, as a search reads) that are in an eligible
// phase and that the caller may retry.
func (d *Dashboard) bulkTargets(ctx context.Context, caller *auth.Caller, filters url.Values, eligible []wq.Phase) ([]string, error) {
	items, err := d.bulkCandidates(ctx, caller, filters)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, it := range items {
		if slices.Contains(eligible, it.Phase) {
			ids = append(ids, it.ID)
		}
	}
	return ids, nil
}

// bulkCandidates are the items the list's filters match (the newest
// searchScan of them, as a search reads) that the caller may retry or
// cancel.
func (d *Dashboard) bulkCandidates(ctx context.Context, caller *auth.Caller, filters url.Values) ([]*api.Item, error) {
	f := wq.ItemFilter{ItemType: filters.Get("type"), Phase: wq.Phase(filters.Get("phase")), Forge: filters.Get("forge"),
		Project: filters.Get("project"), Limit: searchScan}
	if f.Phase != "" && !f.Phase.Valid() {
		return nil, wq.Errorf(wq.EINVALID, "phase: want active, completed, failed or cancelled, got %q", f.Phase)
	}
	items, _, err := d.o.Items.List(ctx, caller, f)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(items, func(it *api.Item) bool {
		if !caller.CanOn(auth.Retry, it.Project) {
			return true
		}
		q := filters.Get("q")
		return q != "" && !matchesSearch(it, summaryTitle(it), q)
	}), nil
}
