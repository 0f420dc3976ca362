package mr_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from what is rendered now:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func detailJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The note shows the phase, what each dimension waits for, the head and
// its pipeline, the retries made and the last error, with any secret in
// that error redacted and nothing that would break the table.
func TestTheStatusNoteRendersTheItemsLiveState(t *testing.T) {
	id := wq.ItemID(uuid.MustParse("0192f0e4-7b1a-7c3d-9e4f-a1b2c3d4e5f6"))
	key := func(d string) wq.DimensionKey { return wq.DimensionKey{Dimension: d} }
	item := &wq.Item{ID: id, Phase: wq.PhaseActive,
		Error: "reconcile_mr: GET https://ci:glpat-abcdefghijklmnopqrst@gitlab.example.com/api: 502 | bad\ngateway",
		Dimensions: wq.Dimensions{
			key(mr.DimMR):         {Status: wq.StatusFalse},
			key(mr.DimEmptyCheck): {Status: wq.StatusTrue, PendingUntil: t0.Add(30 * time.Minute)},
			key(mr.DimCIRetry): {Status: wq.StatusFalse, Detail: detailJSON(t, mr.CIRetryDetail{Decisions: []mr.CIDecision{
				{JobID: 101, Name: "build", PipelineID: 7, At: t0, Outcome: mr.CIOutcomeRetried, Matcher: "infra/runner", Why: "failure_reason is runner_system_failure", NewJobID: 102},
				{JobID: 103, Name: "test", PipelineID: 7, At: t0, Outcome: mr.CIOutcomeNoMatch, Why: "no matcher's failure_reason matches script_failure"},
			}})},
			key(mr.DimReconcile): {Status: wq.StatusTrue, PendingUntil: t0.Add(time.Minute), Detail: detailJSON(t, mr.ReconcileDetail{Blocker: "ci", Wait: "1m0s"})},
		}}
	d := &mr.Detail{HeadSHA: "0123456789abcdef0123456789abcdef01234567", HeadPipelineID: 7}
	got := mr.RenderNote(item, d, "https://wq.example.com/ui/items/"+id.String())
	if strings.Contains(got, "glpat-") || strings.Contains(got, "abcdefghijklmnopqrst") {
		t.Fatalf("a token reached the note:\n%s", got)
	}
	golden(t, "status-note.md", got)
}

// The note is posted once and then edited in place when the item's state
// changes, at most once per note_min_interval: a burst of changes costs
// one edit, and a change within the interval is shown once it is over.
func TestTheStatusNoteIsEditedInPlaceAtMostOncePerInterval(t *testing.T) {
	h, ci := newCIHarness(t, ciRules)
	h.forge.setBlocker(wq.MergeCI)
	it, d := h.openMR(fakeSubmission("a"))
	if n := h.forge.count("CreateNote"); n != 1 || d.NoteID == 0 {
		t.Fatalf("%d notes posted (note %d), want one", n, d.NoteID)
	}
	before := h.forge.noteBody(d.NoteID)
	if !strings.Contains(before, "Phase | active") {
		t.Fatalf("the note does not show the phase:\n%s", before)
	}

	// Within the interval: two failures are recorded, no edit yet.
	a := ci.failJob(7, d.HeadSHA, "build", "runner_system_failure", "", 0, h.clock.Now())
	h.jobEvent(it.ID, d.HeadSHA, a)
	b := ci.failJob(7, d.HeadSHA, "test", "script_failure", "FAIL\n", 0, h.clock.Now())
	h.jobEvent(it.ID, d.HeadSHA, b)
	edits := h.forge.count("UpdateNote")
	h.advance(5*time.Minute, 30*time.Second)
	if n := h.forge.count("CreateNote"); n != 1 {
		t.Errorf("the note was posted %d times, want once", n)
	}
	got := h.forge.count("UpdateNote") - edits
	if got < 1 || got > 5*int(time.Minute/time.Minute)+1 {
		t.Errorf("%d edits in 5 minutes with a 1m interval", got)
	}
	after := h.forge.noteBody(d.NoteID)
	if after == before || !strings.Contains(after, "CI retries | 1 made") {
		t.Errorf("the note was not edited to show the retry:\n%s", after)
	}
	_, d2 := h.get(it.ID)
	if d2.NoteID != d.NoteID {
		t.Errorf("the note's id moved from %d to %d", d.NoteID, d2.NoteID)
	}

	// Nothing changes: no edit at all.
	edits = h.forge.count("UpdateNote")
	h.advance(10*time.Minute, time.Minute)
	if n := h.forge.count("UpdateNote") - edits; n != 0 {
		t.Errorf("%d edits while nothing changed", n)
	}
}

// The note's last edit shows how the item ended (issue 28, defect 7): no
// action runs for an ended item, so a note edited only while it was
// active said "active" after the merge for good. Merged, cancelled and
// failed items each leave the note showing their end, without the
// dimensions an ended item no longer has.
func TestTheStatusNoteShowsHowTheItemEnded(t *testing.T) {
	ended := func(t *testing.T, h *harness, id wq.ItemID, noteID int64, want string) {
		t.Helper()
		body := h.forge.noteBody(noteID)
		if !strings.Contains(body, "Phase | "+want) {
			t.Errorf("the note after the end does not say %q:\n%s", want, body)
		}
		if strings.Contains(body, "Merge |") {
			t.Errorf("the note of an ended item still lists what is to do:\n%s", body)
		}
	}
	t.Run("merged", func(t *testing.T) {
		h, _ := newCIHarness(t, ciRules)
		h.forge.setBlocker(wq.MergeCI)
		it, d := h.openMR(fakeSubmission("a"))
		h.forge.setBlocker(wq.MergeClear)
		h.advance(2*time.Minute, 30*time.Second)
		got, _ := h.get(it.ID)
		wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
		ended(t, h, it.ID, d.NoteID, "completed (merged)")
	})
	t.Run("cancelled", func(t *testing.T) {
		h, _ := newCIHarness(t, ciRules)
		h.forge.setBlocker(wq.MergeCI)
		it, d := h.openMR(fakeSubmission("b"))
		h.cancel(it.ID, "changed my mind")
		got, _ := h.get(it.ID)
		wantEnded(t, got, wq.PhaseCancelled, "changed my mind")
		ended(t, h, it.ID, d.NoteID, "cancelled (changed my mind)")
	})
	t.Run("failed", func(t *testing.T) {
		h, _ := newCIHarness(t, ciRules)
		h.forge.setBlocker(wq.MergeCI)
		it, d := h.openMR(fakeSubmission("c"))
		h.forge.setBlocker(wq.MergeConflict)
		h.advance(2*time.Minute, 30*time.Second)
		got, _ := h.get(it.ID)
		if got.Phase != wq.PhaseFailed {
			t.Fatalf("a conflict on an unmoved target: %s/%s, want failed", got.Phase, got.Reason)
		}
		ended(t, h, it.ID, d.NoteID, "failed")
	})
}
