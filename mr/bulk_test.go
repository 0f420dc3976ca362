package mr_test

import (
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

// The bulk reconciliation costs one listing per project per sweep,
// whatever the number of items, wakes only the items whose merge request
// left the open list or moved, and stores one event per item per window
// however many instances sweep it (issue 28, defect 10).
func TestTheBulkReconciliationListsEachProjectOnce(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.forge.setBlocker(wq.MergeCI)
	var items []*wq.Item
	var details []*mr.Detail
	for _, branch := range []string{"wq/a", "wq/b", "wq/c", "wq/d"} {
		sub := fakeSubmission(branch)
		sub.SourceBranch = branch
		it, d := h.openMR(sub)
		items, details = append(items, it), append(details, d)
	}
	b := &mr.BulkReconciler{Store: h.store, Forges: map[string]wq.Forge{"fake": h.forge}, Events: h.store,
		Interval: time.Minute, Clock: h.clock}
	lists := h.forge.count("OpenMergeRequestsFrom")
	if woken, err := b.Sweep(h.ctx); err != nil || woken != 0 {
		t.Fatalf("a sweep with nothing changed woke %d, %v", woken, err)
	}
	if n := h.forge.count("OpenMergeRequestsFrom") - lists; n != 1 {
		t.Errorf("a sweep over %d items of one project listed it %d times, want once", len(items), n)
	}
	h.forge.mergeByPerson(details[1].MRNumber)
	for range 2 { // a second instance, in the same window
		if woken, err := b.Sweep(h.ctx); err != nil || woken > 1 {
			t.Fatalf("a sweep after one merge woke %d, %v", woken, err)
		}
	}
	if ev, _ := h.store.NextEvent(h.ctx, items[1].ID); ev == nil || ev.EventType != mr.EventBulkReconcile {
		t.Fatalf("the merged item has no bulk_reconcile event: %+v", ev)
	}
	h.settle()
	got, _ := h.get(items[1].ID)
	wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
	for _, i := range []int{0, 2, 3} {
		if got, _ := h.get(items[i].ID); got.Phase != wq.PhaseActive {
			t.Errorf("item %d, whose merge request did not change: %s", i, got.Phase)
		}
	}
}
