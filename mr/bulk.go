package mr

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/budget"
)

// The bulk reconciliation (seed 000, "Webhooks are hints"): a lost
// webhook used to cost up to reconcile_interval (30 minutes) before the
// item's own reconcile_mr looked. Every BulkInterval, for each project
// with active items that have a merge request, one listing of the
// project's open merge requests (paged) is compared with the items: an
// item whose merge request is no longer open, or whose head is not the
// one recorded, gets an event that has its reconcile_mr run now, as the
// lost webhook would have. Its cost grows with projects, not items.
//
// The projects' listings are spread over the interval (issue 53): with
// hundreds of projects, reading them all at once each interval is a
// burst on a forge whose rate limit every caller shares. They are read
// in the background under the forge's budget (forge/budget), behind
// writes and the reads events ask for, and a rate limit the forge
// answers makes the sweep wait as long as it asked, then go on.

// EventBulkReconcile is the event type the bulk reconciliation stores: it
// is what a merge request event would have said, from the listing.
const EventBulkReconcile = "bulk_reconcile"

// bulkSource is the source of the bulk reconciliation's events.
const bulkSource = "bulk-reconcile"

// EventBulkCI is the event type the bulk reconciliation stores for a
// failed CI job of an open item's head (issue 50): what the job's event
// would have said had its webhook arrived, so that the herder sees the
// failure.
const EventBulkCI = "bulk_ci"

// bulkCIEvent is the body of an EventBulkCI event.
type bulkCIEvent struct {
	HeadSHA string   `json:"head_sha"`
	Job     wq.CIJob `json:"job"`
}

// BulkReconciler runs the bulk reconciliation for the forges it is given.
type BulkReconciler struct {
	Store  Store
	Forges map[string]wq.Forge
	// Events stores the events (the engine's store: InsertDelivery).
	Events interface {
		InsertDelivery(ctx context.Context, source, deliveryID string, events []wq.Event, now time.Time) (wq.Delivery, error)
	}
	// Notify, when set, wakes the engine for an item with a new event.
	Notify func(itemType string, id wq.ItemID)
	// Interval between two sweeps (mr.bulk_reconcile_interval; default 2m).
	Interval time.Duration
	// CI reads the CI state of each open item's head on a forge that has
	// CI jobs (wq.CIJobs), and tells the item of each failed job, once per
	// run of it: serve sets it when the herder is configured. It costs two
	// calls per open item per sweep (the head's newest pipeline, its
	// jobs): unlike the listing, it grows with the items.
	CI    bool
	Clock clockwork.Clock
	Log   *slog.Logger
}

// bulkEvent is the body of an EventBulkReconcile event.
type bulkEvent struct {
	Open    bool   `json:"open"`     // the merge request is in the listing of open ones
	HeadSHA string `json:"head_sha"` // its head there ("" when not open)
}

// Run sweeps every Interval until ctx ends, each sweep's listings
// spread over the interval.
func (b *BulkReconciler) Run(ctx context.Context) {
	if b.Interval <= 0 {
		b.Interval = 2 * time.Minute
	}
	if b.Clock == nil {
		b.Clock = clockwork.NewRealClock()
	}
	if b.Log == nil {
		b.Log = slog.Default()
	}
	t := b.Clock.NewTicker(b.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
			if _, err := b.sweep(ctx, b.Interval); err != nil && ctx.Err() == nil {
				b.Log.Warn("bulk reconciliation", "err", err)
			}
		}
	}
}

// Sweep compares every forge's projects once, without spreading them,
// and returns how many items it woke. A project the forge cannot list is
// skipped (and reported) so that one missing project does not stop the
// others.
func (b *BulkReconciler) Sweep(ctx context.Context) (int, error) {
	return b.sweep(ctx, 0)
}

// bulkProject is one project's items on one forge: what one listing
// serves.
type bulkProject struct {
	forge string
	items []OpenMR // of one project, ordered by number
}

// sweep is Sweep with the projects' listings spread evenly over over (0:
// one after the other): the i-th of n is read at over·i/n after the
// start, or as soon after as the forge's budget lets it. The items
// compared are read at the start: one that changed since gets at most
// an extra look, as its event handler compares with what it holds then.
func (b *BulkReconciler) sweep(ctx context.Context, over time.Duration) (int, error) {
	ctx = budget.InBackground(ctx)
	clock := b.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	start := clock.Now()
	var projects []bulkProject
	for _, name := range slices.Sorted(maps.Keys(b.Forges)) {
		open, err := b.Store.OpenMRs(ctx, name)
		if err != nil {
			return 0, err
		}
		for first := 0; first < len(open); {
			end := first
			for end < len(open) && open[end].Project == open[first].Project {
				end++
			}
			projects = append(projects, bulkProject{forge: name, items: open[first:end]})
			first = end
		}
	}
	woken := 0
	var firstErr error
	for i, p := range projects {
		if over > 0 && i > 0 {
			if err := sleepUntil(ctx, clock, start.Add(over*time.Duration(i)/time.Duration(len(projects)))); err != nil {
				return woken, err
			}
		}
		n, err := b.project(ctx, p.forge, b.Forges[p.forge], p.items, clock, start)
		woken += n
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return woken, firstErr
}

// sleepUntil waits on clock until at, or until ctx ends.
func sleepUntil(ctx context.Context, clock clockwork.Clock, at time.Time) error {
	d := at.Sub(clock.Now())
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// project compares one project's items with its one listing. A rate
// limit the forge answers (or its budget, for it) makes it wait as long
// as the forge asked and list again: the sweep goes on after the pause
// rather than skipping every project during it.
func (b *BulkReconciler) project(ctx context.Context, forgeName string, f wq.Forge, items []OpenMR, clock clockwork.Clock, started time.Time) (int, error) {
	project := items[0].Project
	listed, err := f.OpenMergeRequestsFrom(ctx, project, "")
	for wq.IsForgeError(err, wq.ForgeRateLimited) && wq.RetryAfterOf(err) > 0 {
		if err := sleepUntil(ctx, clock, clock.Now().Add(wq.RetryAfterOf(err))); err != nil {
			return 0, err
		}
		listed, err = f.OpenMergeRequestsFrom(ctx, project, "")
	}
	if err != nil {
		return 0, fmt.Errorf("list the open merge requests of %s on %s: %w", project, forgeName, err)
	}
	now := clock.Now()
	heads := make(map[int64]string, len(listed))
	for _, m := range listed {
		heads[m.Number] = m.HeadSHA
	}
	// One delivery id per item and window (of the sweep's start):
	// instances sharing a database, sweeping the same window, store the
	// event once.
	window := started.Truncate(b.Interval).Unix()
	woken := 0
	ci, readsCI := f.(wq.CIJobs)
	for _, it := range items {
		head, isOpen := heads[it.Number]
		if isOpen && (head == "" || head == it.HeadSHA) {
			if b.CI && readsCI && it.HeadSHA != "" {
				n, err := b.failedJobs(ctx, forgeName, ci, it, now)
				woken += n
				if err != nil {
					return woken, err
				}
			}
			continue
		}
		body, _ := json.Marshal(bulkEvent{Open: isOpen, HeadSHA: head})
		id := bulkSource + "/" + it.ItemID.String() + "/" + strconv.FormatInt(window, 10)
		d, err := b.Events.InsertDelivery(ctx, bulkSource, id,
			[]wq.Event{{ItemID: it.ItemID, EventType: EventBulkReconcile, Body: body, EventTS: now}}, now)
		if err != nil {
			return woken, err
		}
		if d.Stored > 0 {
			woken++
			if b.Notify != nil {
				b.Notify(ItemType, it.ItemID)
			}
		}
	}
	return woken, nil
}

// failedJobs tells an item of every failed job (the latest run of each
// name, not allowed to fail) of its head's newest pipeline, each run once:
// its delivery id names the item, the job and its run, so a job already
// told (by this sweep or another instance's) is not told again, and a
// rerun that fails again is a new run. A forge that cannot say is logged
// and skipped: the item's own reconcile still runs.
func (b *BulkReconciler) failedJobs(ctx context.Context, forgeName string, ci wq.CIJobs, it OpenMR, now time.Time) (int, error) {
	log := b.Log
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "bulk", "forge", forgeName, "item", it.ItemID.String())
	pipeline, err := ci.LatestPipeline(ctx, it.Project, it.HeadSHA)
	if err != nil || pipeline == 0 {
		if err != nil && ctx.Err() == nil {
			log.Warn("bulk reconciliation: the head's pipeline could not be read", "err", err)
		}
		return 0, nil
	}
	jobs, err := ci.PipelineJobs(ctx, it.Project, pipeline)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("bulk reconciliation: the pipeline's jobs could not be read", "pipeline", pipeline, "err", err)
		}
		return 0, nil
	}
	woken := 0
	seen := map[string]bool{}
	for _, j := range jobs { // newest first: the first of a name is its latest run
		if seen[j.Name] {
			continue
		}
		seen[j.Name] = true
		if j.Status != wq.CIJobFailed || j.AllowFailure {
			continue
		}
		body, _ := json.Marshal(bulkCIEvent{HeadSHA: it.HeadSHA, Job: j})
		id := fmt.Sprintf("%s/%s/ci/%d/%d", bulkSource, it.ItemID, j.ID, j.Retries)
		d, err := b.Events.InsertDelivery(ctx, bulkSource, id,
			[]wq.Event{{ItemID: it.ItemID, EventType: EventBulkCI, Body: body, EventTS: now}}, now)
		if err != nil {
			return woken, err
		}
		if d.Stored > 0 {
			woken++
			log.Info("bulk reconciliation: a failed job no webhook told of", "job", j.ID, "name", j.Name, "pipeline", pipeline)
			if b.Notify != nil {
				b.Notify(ItemType, it.ItemID)
			}
		}
	}
	return woken, nil
}

// onBulkCI reads the bulk reconciliation's failed job as the job's event:
// the herder records it, as from a webhook.
func (x *executors) onBulkCI(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var p bulkCIEvent
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		return wq.EventResult{}, fmt.Errorf("%w: bulk CI event: %w", wq.ErrPermanent, err)
	}
	job := p.Job
	r, err := x.onCIEvent(ctx, item, forge.CIEvent{Source: forge.CIJob, PipelineID: job.PipelineID, SHA: p.HeadSHA,
		Status: job.Status, Failed: true, Job: &job}, ev.ReceivedAt)
	if r.Trigger != nil {
		r.Trigger["source"] = bulkSource
	}
	return r, err
}

// onBulkReconcile reads the bulk reconciliation's event as a merge
// request event: reconcile_mr runs now, and a head the service did not
// push is a foreign push, as from a webhook.
func (x *executors) onBulkReconcile(ctx context.Context, item *wq.Item, ev *wq.Event) (wq.EventResult, error) {
	var p bulkEvent
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		return wq.EventResult{}, fmt.Errorf("%w: bulk reconcile event: %w", wq.ErrPermanent, err)
	}
	e := prEvent{action: "bulk_reconcile", headSHA: p.HeadSHA}
	if !p.Open {
		e.headSHA = "" // merged or closed: reconcile_mr reads which
	}
	return x.onMergeRequestEvent(ctx, item, e)
}
