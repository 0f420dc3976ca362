package mr

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/secrets"
)

// The status note (DDR-45, DESIGN section 6): one note on the merge
// request, rendered from the item's live state and edited, never posted
// again, when that state changes, at most once per NoteMinInterval.

// NoteDetail is needs_dashboard's detail: the state the note shows (a
// hash of its item-derived part) and when it may next be edited.
type NoteDetail struct {
	Hash      string    `json:"hash"`
	EditAfter time.Time `json:"edit_after"`
}

// noteDue reports whether post_dashboard should run at now: the note is
// not posted yet (a missing row), the row asks for it, or the item's
// state differs from what the note shows and the note may be edited.
func noteDue(item *wq.Item, now time.Time) bool {
	row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimDashboard}]
	if !ok || item.Dimensions.Needs(DimDashboard, "", now) {
		return true
	}
	var nd NoteDetail
	if len(row.Detail) == 0 || json.Unmarshal(row.Detail, &nd) != nil || nd.Hash == "" {
		return false // a note of before the status note: a link, left as it is
	}
	return nd.Hash != noteHash(item) && !now.Before(nd.EditAfter)
}

// noteState is the part of the note the item alone decides; its hash
// says whether the note shows the current state.
func noteState(item *wq.Item) []string {
	lines := []string{"| Phase | " + cell(string(item.Phase)+reasonSuffix(item.Reason)) + " |"}
	dims := []struct{ name, what string }{
		{DimMR, "Commit and merge request"},
		{DimEmptyCheck, "Check that the target lacks the change"},
		{DimCIRetry, "Failed CI jobs to retry"},
		{DimReconcile, "Merge"},
	}
	if item.CallerIdentity == TrackedCaller {
		// A person's merge request: nothing is pushed or merged for it.
		dims = dims[2:3]
		if item.Reason == ReasonUntracked {
			lines = append(lines, "| Tracking | stopped: the track label was removed; workqueue no longer follows this merge request |")
		} else if !item.Phase.Terminal() {
			lines = append(lines, "| Merge | by a person; workqueue never merges, closes or pushes to a tracked merge request |")
		}
	}
	if item.Phase.Terminal() {
		dims = nil // an ended item has nothing left to do
	}
	for _, dm := range dims {
		lines = append(lines, fmt.Sprintf("| %s | %s |", dm.what, cell(dimensionWords(item, dm.name))))
	}
	if !item.Phase.Terminal() {
		lines = append(lines, checkLines(item)...)
		if td, riding := trainOf(item); riding {
			place := "joined"
			if td.Place > 0 {
				place = fmt.Sprintf("place %d of %d", td.Place, td.Of)
			}
			ci := cmp.Or(td.CI, trainCIPending)
			if len(td.Failed) > 0 {
				ci += ": " + strings.Join(td.Failed, ", ")
			}
			lines = append(lines, fmt.Sprintf("| Merge train | %s; CI of this head on top of the ones ahead: %s |", place, cell(ci)))
		}
	}
	if ci := ciRetryDetail(item); len(ci.Decisions) > 0 {
		retried := 0
		for _, d := range ci.Decisions {
			if d.Outcome == CIOutcomeRetried {
				retried++
			}
		}
		last := ci.Decisions[len(ci.Decisions)-1]
		lines = append(lines, fmt.Sprintf("| CI retries | %d made; last: job %s (%d) %s: %s |", retried, cell(last.Name), last.JobID,
			cell(last.Outcome), cell(last.Why)))
	}
	if item.Error != "" {
		lines = append(lines, "| Last error | "+cell(item.Error)+" |")
	}
	return lines
}

// checkLines are the required checks, one row a glob: succeeded,
// waiting, or failed with the checks that failed by name.
func checkLines(item *wq.Item) []string {
	rows := checkRows(item)
	globs := slices.Sorted(maps.Keys(rows))
	var out []string
	for _, glob := range globs {
		d := rows[glob]
		var words string
		switch d.State {
		case checkNotRequired:
			continue
		case wq.CheckSuccess:
			words = "succeeded"
		case wq.CheckFailed:
			var failed []string
			for _, c := range d.Checks {
				if c.State == wq.CheckFailed {
					failed = append(failed, c.Context+" ("+c.ForgeState+")")
				}
			}
			words = "failed: " + strings.Join(failed, ", ") + "; the merge waits for a new run or a new head"
		default:
			words = "waiting"
			if len(d.Checks) == 0 {
				words = "waiting: no check of this name reported yet"
			}
		}
		out = append(out, fmt.Sprintf("| Required check %s | %s |", cell("`"+glob+"`"), cell(words)))
	}
	return out
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}

// dimensionWords says what one dimension waits for, in words that do not
// change with every look (no times), so that a backoff edits nothing.
func dimensionWords(item *wq.Item, name string) string {
	row, ok := item.Dimensions[wq.DimensionKey{Dimension: name}]
	switch {
	case !ok && (name == DimCIRetry || name == DimClose):
		return "nothing to do"
	case !ok:
		return "to do"
	case name == DimReconcile:
		switch b := reconcileDetail(item).Blocker; b {
		case "", string(wq.MergeChecking), string(wq.MergeMerging), blockerMergeRefused:
			// The forge computing mergeability, merging, or asking to try
			// again: moments that would cost the note an edit each and
			// tell a reader nothing.
			if row.Status == wq.StatusTrue {
				return "to do"
			}
		default:
			return "waiting: " + b
		}
	case name == DimCIRetry && row.Status == wq.StatusTrue:
		return fmt.Sprintf("%d failed job(s) waiting for their retry delay", len(ciRetryDetail(item).Jobs))
	}
	switch {
	case row.Status == wq.StatusFalse:
		return "done"
	case !row.PendingUntil.IsZero():
		return "scheduled"
	}
	return "to do"
}

func noteHash(item *wq.Item) string {
	sum := sha256.Sum256([]byte(strings.Join(noteState(item), "\n")))
	return hex.EncodeToString(sum[:8])
}

// maxCell bounds one table cell: an error can be long.
const maxCell = 300

// cell makes s safe in one markdown table cell: one line, no pipe, no
// secret, bounded.
func cell(s string) string {
	s = secrets.Text(s)
	s = strings.NewReplacer("\r", " ", "\n", " ", "|", "\\|", "<", "&lt;", ">", "&gt;").Replace(s)
	if len(s) > maxCell {
		s = s[:maxCell] + "…"
	}
	return s
}

// RenderNote is the status note's body for item with detail d; link is
// the item's page on the dashboard ("" when the service has no public
// URL).
func RenderNote(item *wq.Item, d *Detail, link string) string {
	var b strings.Builder
	if d.Tracked {
		b.WriteString("**workqueue** tracks this merge request")
	} else {
		b.WriteString("**workqueue** drives this merge request")
	}
	if link != "" {
		fmt.Fprintf(&b, ": [item %s](%s)", item.ID, link)
	} else {
		fmt.Fprintf(&b, " as item `%s`", item.ID)
	}
	b.WriteString(".\n\n| | |\n|---|---|\n")
	if d.HeadSHA != "" {
		head := d.HeadSHA[:min(len(d.HeadSHA), 12)]
		if d.HeadPipelineID != 0 {
			fmt.Fprintf(&b, "| Head | `%s`, pipeline %d |\n", head, d.HeadPipelineID)
		} else {
			fmt.Fprintf(&b, "| Head | `%s` |\n", head)
		}
	}
	for _, l := range noteState(item) {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n<sub>This note is edited as the item moves on.</sub>\n")
	if d.Tracked {
		b.WriteString("\n" + trackedNoteMarker + "\n")
	}
	return b.String()
}

// itemLink is the item's page on the dashboard.
func (x *executors) itemLink(id wq.ItemID) string {
	if x.PublicURL == "" {
		return ""
	}
	return strings.TrimRight(x.PublicURL, "/") + "/ui/items/" + id.String()
}

// postDashboard posts the status note once, then edits it to the item's
// current state: at most once per NoteMinInterval, and only when that
// state changed. A note someone deleted is posted again.
func (x *executors) postDashboard(ctx context.Context, ex *wq.Execution) error {
	d, f, err := x.load(ctx, ex.Item)
	if err != nil {
		return err
	}
	body := RenderNote(ex.Item, d, x.itemLink(ex.Item.ID))
	hash := noteHash(ex.Item)
	var nd NoteDetail
	if row, ok := ex.Item.Dimensions[wq.DimensionKey{Dimension: DimDashboard}]; ok && len(row.Detail) > 0 {
		_ = json.Unmarshal(row.Detail, &nd)
	}
	if d.NoteID != 0 && nd.Hash == hash {
		return x.noteWritten(ctx, ex, nd, false)
	}
	if d.NoteID != 0 {
		err := f.UpdateNote(ctx, d.Project, d.MRNumber, d.NoteID, body)
		if err == nil {
			return x.noteWritten(ctx, ex, NoteDetail{Hash: hash, EditAfter: ex.Now.Add(x.NoteMinInterval)}, true)
		}
		if !wq.IsForgeError(err, wq.ForgeNotFound) {
			return forgeFailure("edit the status note", err)
		}
	}
	id, err := x.adoptTrackedNote(ctx, f, d, body)
	if err != nil {
		return err
	}
	if id == 0 {
		if id, err = f.CreateNote(ctx, d.Project, d.MRNumber, body); err != nil {
			return forgeFailure("post the status note", err)
		}
	}
	state := d.ForgeState()
	state.NoteID = id
	if err := x.recordState(ctx, ex, state); err != nil {
		return err
	}
	return x.noteWritten(ctx, ex, NoteDetail{Hash: hash, EditAfter: ex.Now.Add(x.NoteMinInterval)}, true)
}

// trackedNoteMarker ends the status note of a tracked merge request, so
// that an item tracking it again (the label removed and put back, a
// restore) finds the note and edits it rather than posting a second one.
const trackedNoteMarker = "<!-- workqueue tracked merge request -->"

// adoptTrackedNote finds the status note an earlier item left on a
// tracked merge request and edits it to body: its id, 0 when there is
// none (or the forge cannot find its own comments).
func (x *executors) adoptTrackedNote(ctx context.Context, f wq.Forge, d *Detail, body string) (int64, error) {
	finder, ok := f.(wq.WorkCommentEditor)
	if !d.Tracked || !ok {
		return 0, nil
	}
	id, err := finder.FindOwnWorkComment(ctx, d.Project, wq.WorkPR, d.MRNumber, trackedNoteMarker)
	if err != nil || id == 0 {
		if err != nil && !errors.Is(err, errors.ErrUnsupported) {
			return 0, forgeFailure("find the status note", err)
		}
		return 0, nil
	}
	if err := f.UpdateNote(ctx, d.Project, d.MRNumber, id, body); err != nil {
		if wq.IsForgeError(err, wq.ForgeNotFound) {
			return 0, nil
		}
		return 0, forgeFailure("edit the status note", err)
	}
	return id, nil
}

// noteWritten records what the note shows. After an edit the row looks
// once more when the interval is over, for a change made meanwhile;
// otherwise it rests until the item's state differs from the note
// (noteDue).
func (x *executors) noteWritten(ctx context.Context, ex *wq.Execution, nd NoteDetail, edited bool) error {
	detail, _ := json.Marshal(nd)
	u := wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: DimDashboard}, Status: wq.StatusFalse, Detail: detail}
	if edited {
		u.Status, u.PendingUntil = wq.StatusTrue, nd.EditAfter
	}
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: []wq.DimensionUpdate{u}})
}

// finalNote makes exec leave the status note showing how the item ended:
// once an item is completed, cancelled or failed no action runs for it
// again, so the note would say "active" for good. A terminal change the
// executor applies is preceded by the note's last edit; a transient
// forge failure of that edit is the executor's (the item stays active and
// the action runs again), a note someone deleted is left deleted. A
// permanent failure, which the engine records as failed, edits the note
// on a best-effort basis: the failure is the item's truth whatever the
// forge says.
func (x *executors) finalNote(exec wq.Executor) wq.Executor {
	return func(ctx context.Context, ex *wq.Execution) error {
		w := &finalNoteWriter{ItemWriter: ex.Writer, x: x, ex: ex}
		inner := *ex
		inner.Writer = w
		err := exec(ctx, &inner)
		if err != nil && errors.Is(err, wq.ErrPermanent) && !w.edited {
			end := *ex.Item
			end.Phase, end.Error = wq.PhaseFailed, err.Error()
			if nerr := x.editFinalNote(ctx, &end); nerr != nil {
				x.Log.Warn("the status note could not show the failure", "item", ex.Item.ID, "err", nerr)
			}
		}
		return err
	}
}

type finalNoteWriter struct {
	wq.ItemWriter
	x      *executors
	ex     *wq.Execution
	edited bool
}

func (w *finalNoteWriter) Apply(ctx context.Context, c wq.Change) error {
	if c.Phase.Terminal() && !w.edited {
		end := *w.ex.Item
		end.Phase, end.Reason = c.Phase, c.Reason
		if err := w.x.editFinalNote(ctx, &end); err != nil {
			return err
		}
		w.edited = true
	}
	return w.ItemWriter.Apply(ctx, c)
}

// editFinalNote edits the item's status note, if it has one, to show end:
// the item as it ends.
func (x *executors) editFinalNote(ctx context.Context, end *wq.Item) error {
	d, f, err := x.load(ctx, end)
	if err != nil || d.NoteID == 0 || d.MRNumber == 0 {
		return err
	}
	err = f.UpdateNote(ctx, d.Project, d.MRNumber, d.NoteID, RenderNote(end, d, x.itemLink(end.ID)))
	if kind, ok := wq.ForgeErrorOf(err); ok && (kind == wq.ForgeNotFound || kind == wq.ForgePermanent) {
		return nil // deleted, or the merge request locked: nothing to keep up to date
	}
	if err != nil {
		return forgeFailure("edit the status note", err)
	}
	return nil
}
