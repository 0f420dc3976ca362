package mr_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

// trainCI plays the project's CI on the fake forge: every head of an
// item's merge request gets its ci/build status, failed when fails says
// so of the head's tree.
func trainCI(h *harness, ids []wq.ItemID, fails func(tree map[string]bool) bool) {
	h.t.Helper()
	for _, id := range ids {
		_, d := h.get(id)
		if d.HeadSHA == "" {
			continue
		}
		if got, _ := h.forge.CommitStatuses(context.Background(), "o/r", d.HeadSHA); len(got) > 0 {
			continue
		}
		state := wq.CheckSuccess
		if fails(h.forge.treeOf(d.HeadSHA)) {
			state = wq.CheckFailed
		}
		h.forge.setStatus(d.HeadSHA, "ci/build", state)
	}
}

func trainSubmission(branch, path string) mr.Submission {
	s := submission("change " + path + "\n")
	s.SourceBranch, s.FileActions[0].FilePath = branch, path
	return s
}

// Two changes that each pass alone and fail together, and one more: the
// train merges the first, ejects the second, naming it, and merges the
// third on top of the first; main never holds a tree whose CI fails, and
// each merge is at a head CI passed.
func TestTheTrainMergesOnlyHeadsItsCISawAndEjectsTheChangeThatBreaksIt(t *testing.T) {
	h := newHarness(t, mr.Options{MergeTrain: func(string, string) (bool, int) { return true, 4 }})
	fails := func(tree map[string]bool) bool { return tree["a.txt"] && tree["b.txt"] }
	var ids []wq.ItemID
	for _, p := range []string{"a.txt", "b.txt", "c.txt"} {
		ids = append(ids, h.submit(trainSubmission("wq/"+strings.TrimSuffix(p, ".txt"), p)).ID)
	}
	var mainHeads []string
	for range 200 {
		trainCI(h, ids, fails)
		h.advance(time.Minute, time.Minute)
		if head := h.forge.head("main"); len(mainHeads) == 0 || mainHeads[len(mainHeads)-1] != head {
			mainHeads = append(mainHeads, head)
		}
		done := true
		for _, id := range ids {
			if it, _ := h.get(id); !it.Phase.Terminal() {
				done = false
			}
		}
		if done {
			break
		}
	}
	a, _ := h.get(ids[0])
	b, _ := h.get(ids[1])
	c, _ := h.get(ids[2])
	wantEnded(t, a, wq.PhaseCompleted, mr.ReasonMerged)
	wantEnded(t, c, wq.PhaseCompleted, mr.ReasonMerged)
	if b.Phase != wq.PhaseFailed || !strings.Contains(b.Error, "ejected from the merge train") || !strings.Contains(b.Error, "ci/build") {
		t.Errorf("b is %s (%s), want failed: ejected, naming ci/build", b.Phase, b.Error)
	}
	for _, head := range mainHeads {
		if fails(h.forge.treeOf(head)) {
			t.Errorf("main was at %.12s, whose tree fails CI", head)
		}
	}
	tree := h.forge.treeOf(h.forge.head("main"))
	if !tree["a.txt"] || !tree["c.txt"] || tree["b.txt"] {
		t.Errorf("main holds %v, want a and c", tree)
	}
	for _, id := range []wq.ItemID{ids[0], ids[2]} {
		_, d := h.get(id)
		m, _ := h.forge.mergeRequest(d.MRNumber)
		st, _ := h.forge.CommitStatuses(context.Background(), "o/r", m.HeadSHA)
		if len(st) != 1 || st[0].State != wq.CheckSuccess {
			t.Errorf("!%d merged at %.12s, whose CI is %v", d.MRNumber, m.HeadSHA, st)
		}
	}
	if notes := h.forge.notesOnMR(func() int64 { _, d := h.get(ids[1]); return d.MRNumber }()); !slices.ContainsFunc(notes, func(n string) bool {
		return strings.Contains(n, "out of the merge train")
	}) {
		t.Errorf("the ejected merge request was not told why: %q", notes)
	}
}

// The status note shows a car's place in its train and its CI.
func TestTheNoteShowsACarsPlaceAndItsCI(t *testing.T) {
	raw := detailJSON(t, mr.TrainDetail{Seq: 1, Place: 2, Of: 5, CI: "failed", Failed: []string{"ci/build"}})
	item := &wq.Item{Phase: wq.PhaseActive, Dimensions: wq.Dimensions{{Dimension: mr.DimTrain}: {Status: wq.StatusTrue, Detail: raw}}}
	got := mr.RenderNote(item, &mr.Detail{}, "")
	if !strings.Contains(got, "| Merge train | place 2 of 5; CI of this head on top of the ones ahead: failed: ci/build |") {
		t.Errorf("the note lacks the train's line:\n%s", got)
	}
}

// Every series of the trains' metrics exists from the first scrape, at
// zero, for every configured forge.
func TestTheTrainsSeriesAreOnTheFirstScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	mr.NewTrainMetrics(reg, []string{"gitea", "gitlab"})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, f := range families {
		series[f.GetName()] += len(f.GetMetric())
	}
	want := map[string]int{"workqueue_train_cars_total": 6, "workqueue_train_wait_seconds": 2, "workqueue_train_cars": 2}
	for name, n := range want {
		if series[name] != n {
			t.Errorf("%s has %d series, want %d", name, series[name], n)
		}
	}
}

// A merger's merge of a merge request in a project with a train joins
// the train (the control plane's merge action, wq.MergeQueuer): the
// train merges it once its CI passed; a head that moved, or a project
// without a train, is not queued.
func TestAMergersMergeJoinsTheTrain(t *testing.T) {
	h := newHarness(t, mr.Options{MergeTrain: func(string, string) (bool, int) { return true, 4 }})
	h.project.AutoMerge = false
	it := h.submit(trainSubmission("wq/a", "a.txt"))
	_, d := h.get(it.ID)
	project := func(train bool) func(string, string) (mr.Project, bool) {
		return func(string, string) (mr.Project, bool) { p := h.project; p.MergeTrain = train; return p, true }
	}
	api := mr.API(mr.APIOptions{Store: h.store, Events: h.store, Project: project(false)})
	if queued, err := api.QueueMerge(h.ctx, "fake", "o/r", d.MRNumber, d.HeadSHA, "merger", h.clock.Now()); queued || err != nil {
		t.Fatalf("a project without a train: queued %t, %v; want the merge left to the caller", queued, err)
	}
	api = mr.API(mr.APIOptions{Store: h.store, Events: h.store, Project: project(true), Notify: func(id wq.ItemID) { h.engine.Notify(mr.ItemType, id) }})
	if _, err := api.QueueMerge(h.ctx, "fake", "o/r", d.MRNumber, "not-the-head", "merger", h.clock.Now()); wq.ErrorCode(err) != wq.ECONFLICT {
		t.Errorf("a head that moved: %v, want a conflict", err)
	}
	if queued, err := api.QueueMerge(h.ctx, "fake", "o/r", d.MRNumber, d.HeadSHA, "merger", h.clock.Now()); !queued || err != nil {
		t.Fatalf("queued %t, %v", queued, err)
	}
	h.settle()
	qs, err := api.Queues(h.ctx)
	if err != nil || len(qs) != 1 || qs[0].Project != "o/r" || qs[0].Name != "into main" || len(qs[0].Items) != 1 || qs[0].Items[0].ID != it.ID {
		t.Errorf("the trains people see: %+v, %v; want the item's, into main", qs, err)
	}
	for range 20 {
		trainCI(h, []wq.ItemID{it.ID}, func(map[string]bool) bool { return false })
		h.advance(time.Minute, time.Minute)
	}
	got, _ := h.get(it.ID)
	wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
}

// A car with a higher priority (the control plane's priority labels)
// rides ahead of one that arrived before it.
func TestAPriorityCarRidesAheadOfAnEarlierOne(t *testing.T) {
	h := newHarness(t, mr.Options{MergeTrain: func(string, string) (bool, int) { return true, 4 },
		TrainPriority: func(labels []string) int {
			if slices.Contains(labels, "priority/high") {
				return 1
			}
			return 0
		}})
	h.project.AutoMerge = false // both join at once, by a merger's word
	a := h.submit(trainSubmission("wq/a", "a.txt"))
	sub := trainSubmission("wq/b", "b.txt")
	sub.Labels = []string{"priority/high"}
	b := h.submit(sub)
	api := mr.API(mr.APIOptions{Store: h.store, Events: h.store, Project: func(string, string) (mr.Project, bool) {
		p := h.project
		p.MergeTrain = true
		return p, true
	}})
	for _, id := range []wq.ItemID{a.ID, b.ID} {
		_, d := h.get(id)
		if queued, err := api.QueueMerge(h.ctx, "fake", "o/r", d.MRNumber, d.HeadSHA, "merger", h.clock.Now()); !queued || err != nil {
			t.Fatalf("queue: %t, %v", queued, err)
		}
		h.clock.Advance(time.Second)
	}
	var first wq.ItemID
	for range 30 {
		trainCI(h, []wq.ItemID{a.ID, b.ID}, func(map[string]bool) bool { return false })
		h.advance(time.Minute, time.Minute)
		for _, id := range []wq.ItemID{a.ID, b.ID} {
			if it, _ := h.get(id); it.Phase.Terminal() && first == (wq.ItemID{}) {
				first = id
			}
		}
	}
	if first != b.ID {
		t.Errorf("the first merged is %s, want b (priority/high), which arrived second", first)
	}
	for _, id := range []wq.ItemID{a.ID, b.ID} {
		it, _ := h.get(id)
		wantEnded(t, it, wq.PhaseCompleted, mr.ReasonMerged)
	}
}
