package mr

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	wq "github.com/workqueue-dev/workqueue"
)

// Required checks (issue 51; seed 000, "Event-driven dimension updates"):
// a project's required_checks are commit status or check contexts, globs
// allowed, that must have succeeded on the merge request's current head
// before the service merges it. Each is a needs_check dimension of the
// item, its glob the variant, so that the item shows which check it waits
// for and the status note names a failed one:
//
//   - a push writes every row anew for the new head: not succeeded yet;
//   - the forges' status and job events update the rows of the checks
//     they name at once, without a forge call (a payload is a claim, so
//     nothing is merged on it);
//   - reconcile_mr, about to merge, reads the head's checks from the
//     forge and merges only when every required check succeeded there;
//     otherwise it writes what it read to the rows and waits;
//   - a row not decided when its wait is over is read again (read_checks).
//
// A glob is met when at least one check matches it and every check that
// matches it succeeded; a failed one fails it, and only a new run of the
// check (a new status) or a new head changes that.

// ActReadChecks reads the head's checks into the needs_check rows.
const ActReadChecks = "read_checks"

// DimCheck is a required check that has not succeeded on the current
// head (status true), or has (false); its variant is the check's glob.
const DimCheck = "needs_check"

// blockerChecks is ReconcileDetail.Blocker while a required check keeps a
// mergeable merge request waiting.
const blockerChecks = "required_checks"

// CheckDetail is a needs_check row's detail: the glob's state on a head,
// and the checks that matched it there.
type CheckDetail struct {
	SHA    string      `json:"sha"`   // the head it is about
	State  string      `json:"state"` // wq.CheckPending, CheckSuccess or CheckFailed; "not_required" once unconfigured
	Checks []CheckSeen `json:"checks,omitempty"`
}

// CheckSeen is one check that matched a glob, as last seen.
type CheckSeen struct {
	Context    string `json:"context"`
	State      string `json:"state"`
	ForgeState string `json:"forge_state,omitempty"`
	URL        string `json:"url,omitempty"`
}

// checkNotRequired is CheckDetail.State of a row whose glob is no longer
// configured.
const checkNotRequired = "not_required"

// checksDue reports whether a needs_check row waits to be read. A missing
// row means nothing: only configured checks have rows.
func checksDue(dims wq.Dimensions, now time.Time) bool {
	for k := range dims {
		if k.Dimension == DimCheck && dims.Needs(DimCheck, k.Variant, now) {
			return true
		}
	}
	return false
}

// checkRows returns the item's needs_check rows' details by glob.
func checkRows(item *wq.Item) map[string]CheckDetail {
	out := map[string]CheckDetail{}
	for k, row := range item.Dimensions {
		if k.Dimension != DimCheck {
			continue
		}
		var d CheckDetail
		_ = json.Unmarshal(row.Detail, &d) // a detail that does not parse says nothing
		out[k.Variant] = d
	}
	return out
}

// matchesCheck reports whether glob names context.
func matchesCheck(glob, context string) bool {
	ok, err := doublestar.Match(glob, context)
	return err == nil && ok
}

// judge is glob's state on head from the checks seen there.
func judge(glob, head string, seen []wq.CommitStatus) CheckDetail {
	d := CheckDetail{SHA: head, State: wq.CheckPending}
	for _, s := range seen {
		if matchesCheck(glob, s.Context) {
			d.Checks = append(d.Checks, CheckSeen{Context: s.Context, State: s.State, ForgeState: s.ForgeState, URL: s.URL})
		}
	}
	slices.SortFunc(d.Checks, func(a, b CheckSeen) int { return cmp.Compare(a.Context, b.Context) })
	succeeded := len(d.Checks) > 0
	for _, c := range d.Checks {
		if c.State == wq.CheckFailed {
			d.State = wq.CheckFailed
			return d
		}
		succeeded = succeeded && c.State == wq.CheckSuccess
	}
	if succeeded {
		d.State = wq.CheckSuccess
	}
	return d
}

// checkRow is the row update of a glob's detail: done when it succeeded,
// otherwise waiting until wait, when read_checks reads it again (a
// status event comes sooner).
func checkRow(glob string, d CheckDetail, wait time.Time) wq.DimensionUpdate {
	raw, _ := json.Marshal(d)
	u := wq.DimensionUpdate{DimensionKey: wq.DimensionKey{Dimension: DimCheck, Variant: glob}, Status: wq.StatusTrue,
		PendingUntil: wait, Detail: raw}
	if d.State == wq.CheckSuccess || d.State == checkNotRequired {
		u.Status, u.PendingUntil = wq.StatusFalse, time.Time{}
	}
	return u
}

// requiredChecks are the project's required checks.
func (x *executors) requiredChecks(d *Detail) []string {
	if x.RequiredChecks == nil {
		return nil
	}
	return x.RequiredChecks(d.Forge, d.Project)
}

// newHeadChecks are the rows of a head just pushed: every required check
// waits for it, and is read again after ReconcileInterval unless an
// event or reconcile_mr reads it first. A row whose glob is no longer
// configured is closed.
func (x *executors) newHeadChecks(item *wq.Item, d *Detail, now time.Time) []wq.DimensionUpdate {
	var out []wq.DimensionUpdate
	required := x.requiredChecks(d)
	for _, glob := range required {
		out = append(out, checkRow(glob, CheckDetail{SHA: d.HeadSHA, State: wq.CheckPending}, now.Add(x.ReconcileInterval)))
	}
	for glob := range checkRows(item) {
		if !slices.Contains(required, glob) {
			out = append(out, checkRow(glob, CheckDetail{SHA: d.HeadSHA, State: checkNotRequired}, time.Time{}))
		}
	}
	return out
}

// readChecks reads the head's checks from the forge and judges every
// required check on them: the rows, and whether all succeeded. A forge
// that cannot read checks fails the item: its project requires what
// cannot be seen.
func (x *executors) readChecks(ctx context.Context, item *wq.Item, d *Detail, f wq.Forge, now time.Time) ([]wq.DimensionUpdate, bool, error) {
	required := x.requiredChecks(d)
	if len(required) == 0 && len(checkRows(item)) == 0 {
		return nil, true, nil
	}
	var seen []wq.CommitStatus
	if len(required) > 0 {
		r, ok := f.(wq.CommitStatusReader)
		if !ok {
			return nil, false, fmt.Errorf("%w: project %s requires checks, and the %s forge cannot read them", wq.ErrPermanent, d.Project, f.Kind())
		}
		var err error
		if seen, err = r.CommitStatuses(ctx, d.Project, d.HeadSHA); err != nil {
			return nil, false, forgeFailure("read the head's checks", err)
		}
	}
	all := true
	var out []wq.DimensionUpdate
	for _, glob := range required {
		j := judge(glob, d.HeadSHA, seen)
		all = all && j.State == wq.CheckSuccess
		wait := x.ReconcileInterval // a failed check waits for a new run, which a status event tells
		if j.State == wq.CheckPending {
			wait = x.checkWait(item, glob)
		}
		out = append(out, checkRow(glob, j, now.Add(wait)))
	}
	for glob := range checkRows(item) {
		if !slices.Contains(required, glob) {
			out = append(out, checkRow(glob, CheckDetail{SHA: d.HeadSHA, State: checkNotRequired}, time.Time{}))
		}
	}
	return out, all, nil
}

// checkWait is how long a pending check waits before it is read again:
// double its last wait, from MergeRecheckInterval up to
// ReconcileInterval, as reconcile_mr backs off from CI.
func (x *executors) checkWait(item *wq.Item, glob string) time.Duration {
	wait := x.MergeRecheckInterval
	if row, ok := item.Dimensions[wq.DimensionKey{Dimension: DimCheck, Variant: glob}]; ok && !row.PendingUntil.IsZero() &&
		!row.UpdatedAt.IsZero() && row.PendingUntil.After(row.UpdatedAt) {
		wait = 2 * row.PendingUntil.Sub(row.UpdatedAt)
	}
	return min(wait, x.ReconcileInterval)
}

// readChecksAction (read_checks) reads the head's checks when a row's
// wait is over, and has reconcile_mr look at once when every required
// check succeeded.
func (x *executors) readChecksAction(ctx context.Context, ex *wq.Execution) error {
	d, f, err := x.load(ctx, ex.Item)
	if err != nil {
		return err
	}
	if d.HeadSHA == "" {
		// Nothing pushed yet: ensure_mr writes the rows of its head.
		return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: x.newHeadChecks(ex.Item, d, ex.Now)})
	}
	rows, all, err := x.readChecks(ctx, ex.Item, d, f, ex.Now)
	if err != nil {
		return err
	}
	if all {
		rows = append(rows, dim(DimReconcile, wq.StatusTrue, time.Time{}))
	}
	return ex.Writer.Apply(ctx, wq.Change{Last: true, Dimensions: rows})
}

// checkEvent updates the rows of the globs a status or job event's check
// matches, for the item's current head, without a forge call; when every
// required check then succeeded, reconcile_mr looks at once (and reads
// them from the forge before it merges).
func checkEvent(item *wq.Item, head string, check wq.CommitStatus, reconcileInterval time.Duration, now time.Time) []wq.DimensionUpdate {
	rows := checkRows(item)
	var out []wq.DimensionUpdate
	all := len(rows) > 0
	for glob, d := range rows {
		if d.State == checkNotRequired {
			continue
		}
		if !matchesCheck(glob, check.Context) {
			all = all && d.SHA == head && d.State == wq.CheckSuccess
			continue
		}
		if d.SHA != head {
			d = CheckDetail{SHA: head}
		}
		seen := make([]wq.CommitStatus, 0, len(d.Checks)+1)
		for _, c := range d.Checks {
			if c.Context != check.Context {
				seen = append(seen, wq.CommitStatus{Context: c.Context, State: c.State, ForgeState: c.ForgeState, URL: c.URL})
			}
		}
		j := judge(glob, head, append(seen, check))
		all = all && j.State == wq.CheckSuccess
		out = append(out, checkRow(glob, j, now.Add(reconcileInterval)))
	}
	if all && len(out) > 0 {
		out = append(out, dim(DimReconcile, wq.StatusTrue, time.Time{}))
	}
	return out
}

// checksBehind reports whether a needs_check row is about another head
// than head: the head moved since they were written.
func checksBehind(item *wq.Item, head string) bool {
	for _, d := range checkRows(item) {
		if d.State != checkNotRequired && d.SHA != head {
			return true
		}
	}
	return false
}
