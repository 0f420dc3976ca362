package mr_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/mr"
)

// trackedWorld is a harness with a person's merge request, labelled
// workqueue-track, tracked through the type's API as the webhook
// receiver does.
func trackedWorld(t *testing.T, opts mr.Options) (*harness, *mr.TypeAPI, wq.ItemID, *wq.MergeRequest) {
	t.Helper()
	opts.TrackLabel = func(string, string) string { return "workqueue-track" }
	h := newHarness(t, opts)
	h.forge.push("person/feature", map[string]string{"p.txt": "by hand\n"})
	m, err := h.forge.CreateMergeRequest(h.ctx, wq.MergeRequestCreate{Project: "o/r", SourceBranch: "person/feature", TargetBranch: "main",
		Title: "A person's change", Labels: []string{"workqueue-track"}})
	if err != nil {
		t.Fatal(err)
	}
	api := mr.API(mr.APIOptions{Store: h.store, Project: func(string, string) (mr.Project, bool) {
		p := h.project
		p.TrackLabel = "workqueue-track"
		return p, true
	}})
	work := wq.WorkInfo{Kind: wq.WorkPR, Number: m.Number, State: wq.MergeRequestOpen, Title: m.Title, Labels: []string{"workqueue-track"}, HeadSHA: m.HeadSHA}
	id, ok, err := api.TrackWork(h.ctx, "fake", "o/r", work, wq.EventRef{Number: m.Number, SourceBranch: "person/feature", TargetBranch: "main"}, h.clock.Now())
	if err != nil || !ok {
		t.Fatalf("TrackWork: %v, %v", ok, err)
	}
	h.engine.Notify(mr.ItemType, id)
	h.settle()
	return h, api, id, m
}

// writes counts the forge calls that write a branch, a merge request or
// its state.
func writes(f *fakeForge) int {
	return f.count("CommitFiles") + f.count("UpdateMergeRequest") + f.count("MergeMergeRequest") + f.count("DeleteBranch")
}

// A tracked merge request is never written: not when it is mergeable
// and the project auto-merges, not when someone pushes to it, not on a
// retry, not when its item is cancelled; and it gets the status note.
func TestATrackedMergeRequestIsNeverWritten(t *testing.T) {
	h, _, id, m := trackedWorld(t, mr.Options{})
	head := h.forge.head("person/feature")
	if it, d := h.get(id); it.Phase != wq.PhaseActive || !d.Tracked || d.NoteID == 0 {
		t.Fatalf("tracked item %s/%s, detail %+v: want active, tracked, with its note", it.Phase, it.Reason, d)
	}
	h.advance(2*time.Hour, 5*time.Minute) // mergeable all along
	newHead := h.forge.push("person/feature", map[string]string{"p.txt": "again\n"})
	h.event(id, gitlab.EventMergeRequest, fmt.Sprintf(`{"object_kind":"merge_request","object_attributes":{"iid":%d,"action":"update","state":"opened","last_commit":{"id":%q}}}`, m.Number, newHead), "mr1")
	h.advance(time.Hour, 5*time.Minute)
	if n := writes(h.forge); n != 0 {
		t.Fatalf("%d writes to a tracked merge request", n)
	}
	if got := h.forge.head("person/feature"); got != newHead || head == newHead {
		t.Fatalf("the person's branch is at %.12s, want their push %.12s", got, newHead)
	}
	if _, d := h.get(id); d.HeadSHA != newHead {
		t.Errorf("the item follows head %.12s, want the person's %.12s", d.HeadSHA, newHead)
	}
	if owned, err := h.store.OwnsBranchHead(h.ctx, "fake", "o/r", "person/feature", newHead, ""); err != nil || owned {
		t.Errorf("the service owns the person's head: %v, %v", owned, err)
	}

	// A submission to the person's branch is refused, even as the
	// tracked item's own identity.
	sub := submission("take over\n")
	sub.Forge, sub.Project, sub.SourceBranch = "fake", "o/r", "person/feature"
	if _, _, err := mr.Submit(h.ctx, h.store, sub, h.project, mr.TrackedCaller, h.clock.Now()); wq.ErrorCode(err) != wq.ECONFLICT {
		t.Errorf("a submission to the tracked branch: %v, want a conflict", err)
	}

	h.cancel(id, "cancelled by an admin")
	it, _ := h.get(id)
	if it.Phase != wq.PhaseCancelled {
		t.Errorf("item %s/%s after the cancel", it.Phase, it.Reason)
	}
	if n := writes(h.forge); n != 0 {
		t.Errorf("%d writes after the cancel", n)
	}
	if mrNow, _ := h.forge.mergeRequest(m.Number); mrNow.State != wq.MergeRequestOpen {
		t.Errorf("the cancel left the merge request %s", mrNow.State)
	}
}

// Removing the label ends the item as untracked, and its note says so.
func TestRemovingTheTrackLabelStopsTracking(t *testing.T) {
	h, _, id, m := trackedWorld(t, mr.Options{})
	h.forge.setLabels(m.Number, nil)
	h.advance(time.Hour, 5*time.Minute)
	it, d := h.get(id)
	wantEnded(t, it, wq.PhaseCompleted, mr.ReasonUntracked)
	if body := h.forge.noteBody(d.NoteID); !containsAll(body, "tracks this merge request", "stopped: the track label was removed") {
		t.Errorf("the note does not say tracking stopped:\n%s", body)
	}
	if n := writes(h.forge); n != 0 {
		t.Errorf("%d writes to the untracked merge request", n)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
