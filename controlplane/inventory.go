package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/budget"
)

// DefaultSyncInterval is how often Run syncs when Inventory.Interval is
// not set.
const DefaultSyncInterval = 10 * time.Minute

// RepoMatch names the repositories of one configured forge whose work is
// inventoried: every project the forge's token reaches (ListProjects)
// whose path Match covers (a doublestar glob; ** crosses groups).
type RepoMatch struct {
	Forge string // a key of Inventory.Forges
	Match string
}

// Inventory keeps the Store's work current with the forges: the open
// issues and pull requests of the configured repositories (Repos). Two
// paths feed it. A webhook delivery (Apply) carries one issue's or pull
// request's new state within seconds; the periodic sync (Sync, Run) lists
// every repository again, so that what a lost delivery missed is caught
// up within an interval.
//
// Ordering is the Store's: UpsertWork never moves a row back to an older
// forge updated time, so a late delivery or a sync's page read before a
// change cannot undo it.
type Inventory struct {
	Store  Store
	Forges map[string]wq.Forge // by configured forge name
	Repos  []RepoMatch
	Clock  clockwork.Clock // nil: the real clock
	Log    *slog.Logger    // nil: no logging
	// Interval is Run's time between the starts of two syncs;
	// DefaultSyncInterval when 0.
	Interval time.Duration
	// SettleInterval is Run's time between two Settle passes;
	// DefaultSettleInterval when 0.
	SettleInterval time.Duration
}

// DefaultSettleInterval is how often Run settles approved pull requests
// that cannot merge yet, when Inventory.SettleInterval is not set.
const DefaultSettleInterval = 10 * time.Second

// maxSettle bounds the pull requests one Settle pass reads.
const maxSettle = 50

func (inv *Inventory) now() time.Time {
	if inv.Clock != nil {
		return inv.Clock.Now()
	}
	return time.Now()
}

func (inv *Inventory) log() *slog.Logger {
	if inv.Log != nil {
		return inv.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Covers reports whether the configuration inventories project on the
// named forge.
func (inv *Inventory) Covers(forge, project string) bool {
	for _, r := range inv.Repos {
		if r.Forge != forge {
			continue
		}
		if ok, _ := doublestar.Match(r.Match, project); ok {
			return true
		}
	}
	return false
}

// repoKey names one repository of one forge.
type repoKey struct{ forge, repo string }

// Sync lists every configured repository and writes what it finds: every
// open issue and pull request the forge lists is upserted. Work the
// inventory holds as open but the forge no longer lists is read back one
// by one with Forge.GetWork and written as it now is (merged, closed, or
// still open when a page boundary moved under the listing); one the forge
// no longer has (NotFound: deleted, moved, made confidential, not work
// any more) is marked closed. Work that a webhook delivered since the
// sync started is left to that delivery. Work of a repository that the
// configuration no longer covers, or that the forge's token no longer
// lists, is marked closed: the inventory offers only configured work.
//
// A forge whose projects cannot be listed, or a repository whose work
// cannot be, is reported and left as it is (nothing is closed on a
// failed listing), and the sync goes on with the rest; the error returned
// joins those failures. Store errors end the sync.
//
// Marking closed keeps the row's forge updated time, so that a later
// listing of the same, still open item (a repository configured again)
// opens it again.
func (inv *Inventory) Sync(ctx context.Context) (SyncReport, error) {
	rep := SyncReport{Started: inv.now()}
	stored, err := inv.Store.Candidates(ctx, rep.Started)
	if err != nil {
		return rep, fmt.Errorf("inventory sync: %w", err)
	}
	open := map[repoKey][]Work{}
	for _, c := range stored {
		k := repoKey{c.Forge, c.Repo}
		open[k] = append(open[k], *c.Work)
	}
	var failures []error
	failed := map[string]bool{} // forges whose projects could not be listed
	synced := map[repoKey]bool{}
	for _, forge := range inv.forgeNames() {
		f := inv.Forges[forge]
		if f == nil {
			failed[forge] = true
			rep.Repos = append(rep.Repos, RepoSync{Forge: forge, Err: "no such forge is configured"})
			failures = append(failures, fmt.Errorf("forge %s: no such forge is configured", forge))
			continue
		}
		projects, err := f.ListProjects(ctx)
		if err != nil {
			failed[forge] = true
			rep.Repos = append(rep.Repos, RepoSync{Forge: forge, Err: err.Error()})
			failures = append(failures, fmt.Errorf("forge %s: list projects: %w", forge, err))
			continue
		}
		slices.Sort(projects)
		for _, project := range slices.Compact(projects) {
			if !inv.Covers(forge, project) {
				continue
			}
			k := repoKey{forge, project}
			synced[k] = true
			rs, err := inv.syncRepo(ctx, f, k, open[k], rep.Started)
			rep.Repos = append(rep.Repos, rs)
			if err != nil {
				if ctx.Err() != nil || !isForgeError(err) {
					rep.Finished = inv.now()
					return rep, fmt.Errorf("inventory sync of %s %s: %w", forge, project, err)
				}
				failures = append(failures, fmt.Errorf("%s %s: %w", forge, project, err))
			}
		}
	}
	var dropped []repoKey
	for k := range open {
		if !synced[k] && !failed[k.forge] {
			dropped = append(dropped, k)
		}
	}
	slices.SortFunc(dropped, func(a, b repoKey) int { return cmp.Or(cmp.Compare(a.forge, b.forge), cmp.Compare(a.repo, b.repo)) })
	for _, k := range dropped {
		rs := RepoSync{Forge: k.forge, Repo: k.repo, Dropped: true}
		var closed []Work
		for _, w := range open[k] {
			if w.SyncedAt.Before(rep.Started) {
				w.State = StateClosed
				closed = append(closed, w)
			}
		}
		if err := inv.upsert(ctx, closed); err != nil {
			rep.Finished = inv.now()
			return rep, fmt.Errorf("inventory sync: close the work of %s %s: %w", k.forge, k.repo, err)
		}
		rs.Closed = len(closed)
		inv.log().Info("inventory: repository no longer inventoried, its open work closed", "forge", k.forge, "repo", k.repo, "closed", rs.Closed)
		rep.Repos = append(rep.Repos, rs)
	}
	rep.Finished = inv.now()
	return rep, errors.Join(failures...)
}

// forgeNames are the configured forges of Repos, in their first order.
func (inv *Inventory) forgeNames() []string {
	var out []string
	for _, r := range inv.Repos {
		if !slices.Contains(out, r.Forge) {
			out = append(out, r.Forge)
		}
	}
	return out
}

func isForgeError(err error) bool {
	_, ok := wq.ForgeErrorOf(err)
	return ok
}

// syncRepo syncs one repository: stored is its work the Store holds as
// open, started when the sync began.
func (inv *Inventory) syncRepo(ctx context.Context, f wq.Forge, k repoKey, stored []Work, started time.Time) (RepoSync, error) {
	rs := RepoSync{Forge: k.forge, Repo: k.repo}
	listed, err := f.ListOpenWork(ctx, k.repo)
	if err != nil {
		rs.Err = err.Error()
		return rs, err
	}
	byKey := map[WorkKey]Work{}
	for _, w := range stored {
		byKey[w.WorkKey] = w
	}
	var batch []Work
	seen := map[WorkKey]bool{}
	for _, info := range listed {
		w, err := toWork(k.forge, k.repo, info)
		if err != nil {
			inv.log().Warn("inventory: the forge listed something that is not work", "forge", k.forge, "repo", k.repo, "error", err)
			continue
		}
		seen[w.WorkKey] = true
		batch = append(batch, withIdentity(w, byKey))
	}
	rs.Open = len(batch)
	if err := inv.upsert(ctx, batch); err != nil {
		return rs, err
	}
	var reread []Work
	var failures []error
	for _, w := range stored {
		if seen[w.WorkKey] || !w.SyncedAt.Before(started) {
			continue
		}
		rs.Reread++
		info, err := f.GetWork(ctx, k.repo, string(w.Kind), w.Number)
		switch {
		case wq.IsForgeError(err, wq.ForgeNotFound):
			w.State = StateClosed
		case err != nil:
			failures = append(failures, fmt.Errorf("read %s %d back: %w", w.Kind, w.Number, err))
			continue
		default:
			fresh, err := toWork(k.forge, k.repo, *info)
			if err != nil || fresh.WorkKey != w.WorkKey {
				failures = append(failures, fmt.Errorf("read %s %d back: the forge answered %+v", w.Kind, w.Number, info))
				continue
			}
			w = withIdentity(fresh, byKey)
		}
		if w.State.Terminal() {
			rs.Closed++
		}
		reread = append(reread, w)
	}
	if err := inv.upsert(ctx, reread); err != nil {
		return rs, err
	}
	if err := errors.Join(failures...); err != nil {
		rs.Err = err.Error()
		return rs, &wq.ForgeError{Kind: wq.ForgeTransient, Op: "inventory: " + k.forge + " " + k.repo, Err: err}
	}
	return rs, nil
}

// upsert writes ws, if any, at the clock's now.
func (inv *Inventory) upsert(ctx context.Context, ws []Work) error {
	if len(ws) == 0 {
		return nil
	}
	return inv.Store.UpsertWork(ctx, ws, inv.now())
}

// withIdentity gives w the ID and author session of the stored row of its
// key, or a new ID.
func withIdentity(w Work, stored map[WorkKey]Work) Work {
	if s, ok := stored[w.WorkKey]; ok {
		w.ID, w.AuthorSession = s.ID, s.AuthorSession
	} else {
		w.ID = wq.NewItemID().String()
	}
	return w
}

// toWork is info, of repo on the named forge, as inventory work.
func toWork(forge, repo string, info wq.WorkInfo) (Work, error) {
	w := Work{WorkKey: WorkKey{Forge: forge, Repo: repo, Kind: Kind(info.Kind), Number: info.Number}, State: State(info.State),
		Title: info.Title, Labels: info.Labels, Author: info.Author, HeadSHA: info.HeadSHA, ReviewState: ReviewState(info.ReviewState),
		Mergeable: info.Mergeable, LinkedIssues: info.LinkedIssues, UpdatedAt: info.UpdatedAt.UTC()}
	switch {
	case !w.Kind.Valid():
		return Work{}, wq.Errorf(wq.EINVALID, "%s %s: kind %q is not work", forge, repo, info.Kind)
	case w.State != StateOpen && !w.State.Terminal():
		return Work{}, wq.Errorf(wq.EINVALID, "%s %s %s %d: unknown state %q", forge, repo, info.Kind, info.Number, info.State)
	case w.Number <= 0:
		return Work{}, wq.Errorf(wq.EINVALID, "%s %s: %s without a number", forge, repo, info.Kind)
	}
	if w.Labels == nil {
		w.Labels = []string{}
	}
	return w, nil
}

// Apply writes the work a webhook delivery to the named forge carries
// (d.Work), if the configuration inventories its repository; it reports
// whether it wrote anything. The payload's state is written over the
// stored row, except what the payload does not know:
//
//   - An empty Author keeps the stored one (GitLab's hooks name the author
//     by id only).
//   - An empty ReviewState keeps the stored verdict, unless the delivery
//     says the verdict may have changed in a way its payload cannot settle
//     (d.RecheckReview: an approval while another reviewer may still
//     request changes, a withdrawn approval, a push): then the pull
//     request is read from the forge (Forge.GetWork, one or two calls) and
//     written as the forge has it.
//   - Work the inventory does not hold yet is read from the forge when
//     the payload lacks its author or verdict.
//
// A failed read is logged, and what the payload says is written with the
// gaps filled from the stored row (a pull request new to the inventory
// then has verdict none); the next sync settles it. Errors are the
// Store's, and EINVALID for work that is not an issue or pull request.
func (inv *Inventory) Apply(ctx context.Context, forge string, d *forge.Delivery) (bool, error) {
	if d != nil && d.Push != nil && inv.Covers(forge, d.Project) {
		return inv.applyPush(ctx, forge, d.Project, d.Push)
	}
	if d == nil || d.Work == nil || !inv.Covers(forge, d.Project) {
		return false, nil
	}
	w, err := toWork(forge, d.Project, *d.Work)
	if err != nil {
		return false, err
	}
	stored, err := inv.Store.FindWork(ctx, w.WorkKey)
	switch {
	case wq.ErrorCode(err) == wq.ENOTFOUND:
		stored = nil
	case err != nil:
		return false, fmt.Errorf("inventory apply %s %s %s %d: %w", forge, d.Project, w.Kind, w.Number, err)
	}
	unknownVerdict := w.Kind == KindPR && w.ReviewState == ""
	read := (unknownVerdict && d.RecheckReview) || w.UpdatedAt.IsZero() ||
		(stored == nil && (w.Author == "" || unknownVerdict))
	if read {
		if fresh, ok := inv.read(ctx, forge, w.WorkKey); ok {
			w = fresh
		}
	}
	if stored != nil {
		w.ID, w.AuthorSession = stored.ID, stored.AuthorSession
		if w.Author == "" {
			w.Author = stored.Author
		}
		if w.Kind == KindPR && w.ReviewState == "" && (w.HeadSHA == "" || w.HeadSHA == stored.HeadSHA) {
			// A verdict counts for the commit it was given on: a new head
			// the payload does not judge has none.
			w.ReviewState = stored.ReviewState
		}
		if w.UpdatedAt.IsZero() {
			w.UpdatedAt = stored.UpdatedAt
		}
	} else {
		w.ID = wq.NewItemID().String()
	}
	if w.Kind == KindPR && w.ReviewState == "" {
		w.ReviewState = ReviewNone
	}
	if w.UpdatedAt.IsZero() {
		inv.log().Warn("inventory: a delivery without the forge's updated time, not applied", "forge", forge, "repo", d.Project,
			"kind", w.Kind, "number", w.Number, "delivery", d.DeliveryID)
		return false, nil
	}
	if err := inv.upsert(ctx, []Work{w}); err != nil {
		return false, fmt.Errorf("inventory apply %s %s %s %d: %w", forge, d.Project, w.Kind, w.Number, err)
	}
	return true, nil
}

// read reads one work item from its forge for Apply; false (logged) if
// it cannot.
func (inv *Inventory) read(ctx context.Context, forge string, k WorkKey) (Work, bool) {
	f := inv.Forges[forge]
	if f == nil {
		return Work{}, false
	}
	info, err := f.GetWork(ctx, k.Repo, string(k.Kind), k.Number)
	if err == nil {
		var w Work
		if w, err = toWork(forge, k.Repo, *info); err == nil && w.WorkKey == k {
			return w, true
		}
	}
	inv.log().Warn("inventory: could not read work the delivery leaves unsettled; the next sync will", "forge", forge,
		"repo", k.Repo, "kind", k.Kind, "number", k.Number, "error", err)
	return Work{}, false
}

// Run syncs at once and then every Interval, and settles every
// SettleInterval, until ctx is done, logging each sync's outcome; it
// returns nil when ctx is done. A sync that fails is tried again at the
// next interval. Its reads are a periodic sweep's: under the forge's
// budget they wait behind the reads agents and events are waiting for.
func (inv *Inventory) Run(ctx context.Context) error {
	sweep := budget.InBackground(ctx)
	interval := cmp.Or(inv.Interval, DefaultSyncInterval)
	clock := inv.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	ticker := clock.NewTicker(interval)
	defer ticker.Stop()
	settle := clock.NewTicker(cmp.Or(inv.SettleInterval, DefaultSettleInterval))
	defer settle.Stop()
	for {
		rep, err := inv.Sync(sweep)
		if ctx.Err() != nil {
			return nil
		}
		open, closed := 0, 0
		for _, r := range rep.Repos {
			open, closed = open+r.Open, closed+r.Closed
		}
		attrs := []any{"repos", len(rep.Repos), "open", open, "closed", closed, "took", rep.Finished.Sub(rep.Started)}
		if err != nil {
			inv.log().Error("inventory sync failed in part", append(attrs, "error", err)...)
		} else {
			inv.log().Info("inventory synced", attrs...)
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-ticker.Chan():
				break wait
			case <-settle.Chan():
				if n, err := inv.Settle(sweep); err != nil && ctx.Err() == nil {
					inv.log().Warn("inventory settle failed in part", "changed", n, "error", err)
				}
			}
		}
	}
}

// Settle reads again, from their forge, the open approved pull requests
// the inventory holds as not mergeable (at most maxSettle a pass), and
// writes what the forge says; it returns how many changed. A forge checks
// mergeability after a push, to the pull request or to its target, and
// Gitea says nothing when the check ends: without this, a pull request
// read while "checking" would wait for the next sync before a merger is
// given it. A forge that cannot be read is skipped until the next pass.
func (inv *Inventory) Settle(ctx context.Context) (int, error) {
	cands, err := inv.Store.Candidates(ctx, inv.now())
	if err != nil {
		return 0, fmt.Errorf("inventory settle: %w", err)
	}
	var failures []error
	changed, read := 0, 0
	for _, c := range cands {
		if c.Kind != KindPR || c.ReviewState != ReviewApproved || c.Mergeable {
			continue
		}
		if read++; read > maxSettle {
			break
		}
		f := inv.Forges[c.Forge]
		if f == nil {
			continue
		}
		info, err := f.GetWork(ctx, c.Repo, string(c.Kind), c.Number)
		if err != nil {
			failures = append(failures, fmt.Errorf("%s %s#%d: %w", c.Forge, c.Repo, c.Number, err))
			continue
		}
		fresh, err := toWork(c.Forge, c.Repo, *info)
		if err != nil || fresh.WorkKey != c.WorkKey {
			failures = append(failures, fmt.Errorf("%s %s#%d: the forge answered %+v", c.Forge, c.Repo, c.Number, info))
			continue
		}
		// The forge's updated time does not move when a check ends, and
		// the row's may be past it by the service's own writes: the
		// verdict on the head the forge read is what is written.
		got, err := inv.Store.ReviseWork(ctx, c.WorkKey, func(w *Work) bool {
			if fresh.UpdatedAt.After(w.UpdatedAt) || fresh.State != w.State {
				id, author := w.ID, w.AuthorSession
				*w = fresh
				w.ID, w.AuthorSession = id, author
				return true
			}
			if w.HeadSHA != fresh.HeadSHA || w.Mergeable == fresh.Mergeable {
				return false
			}
			w.Mergeable = fresh.Mergeable
			return true
		}, inv.now())
		if err != nil {
			return changed, fmt.Errorf("inventory settle: %w", err)
		}
		if got.Mergeable != c.Mergeable || got.State != c.State {
			changed++
		}
	}
	return changed, errors.Join(failures...)
}

// applyPush moves the head of every open pull request of repo whose head
// was the push's Before to its After: a push reaches the service at once,
// where the pull request's own event waits for the forge's checks, and the
// gate must refuse a mutation on a head that moved (hard rule 4). The
// forge's own event, when it comes, carries the same head. The row's
// updated time moves by a microsecond, the least the store keeps, so that
// the forge's next real change still applies.
func (inv *Inventory) applyPush(ctx context.Context, forge, repo string, p *forge.BranchPush) (bool, error) {
	if strings.Trim(p.Before, "0") == "" || p.Before == p.After {
		return false, nil // a new branch heads no pull request yet
	}
	open, err := inv.Store.ListWork(ctx, WorkFilter{Forge: forge, Repo: repo, Kind: KindPR, State: StateOpen, Limit: maxPushScan})
	if err != nil {
		return false, fmt.Errorf("inventory push %s %s: %w", forge, repo, err)
	}
	var moved []Work
	for _, w := range open {
		if w.HeadSHA == p.Before {
			// A verdict counts for the commit it was given on: the new
			// head has none until the forge says otherwise.
			w.HeadSHA, w.ReviewState = p.After, ReviewNone
			w.UpdatedAt = w.UpdatedAt.Add(time.Microsecond)
			moved = append(moved, w)
		}
	}
	if len(moved) == 0 {
		return false, nil
	}
	if err := inv.Store.UpsertWork(ctx, moved, inv.now()); err != nil {
		return false, fmt.Errorf("inventory push %s %s: %w", forge, repo, err)
	}
	return true, nil
}

// maxPushScan bounds the open pull requests of one repository a push is
// matched against (the store's list cap).
const maxPushScan = 500
