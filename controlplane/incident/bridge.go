package incident

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/cptype/incidenttype"
	"github.com/workqueue-dev/workqueue/secrets"
)

// ClaimTimeout is how old a claim without an issue must be before
// another bridge call may take it over. The claimer's forge call is cut
// at half of it, so a live claimer has given up on the forge before its
// claim can be taken.
const ClaimTimeout = 2 * time.Minute

// finishTimeout bounds the write that records a filed issue; it runs
// even when the caller's context ended meanwhile, since an issue filed
// and not recorded is the duplicate this package exists to prevent.
const finishTimeout = 10 * time.Second

// IssueForge is what the bridge needs of a forge.
type IssueForge interface {
	CreateIssue(ctx context.Context, req wq.IssueCreate) (*wq.WorkInfo, error)
}

// Reconcile's answer and its outcomes are declared once, for the bridge
// and the wire, in package incidenttype.
type (
	Outcome = incidenttype.Outcome
	Result  = incidenttype.Result
)

// Outcomes of Reconcile.
const (
	OutcomeWouldCreate = incidenttype.OutcomeWouldCreate
	OutcomeWouldUpdate = incidenttype.OutcomeWouldUpdate
	OutcomeCreated     = incidenttype.OutcomeCreated
	OutcomeLinked      = incidenttype.OutcomeLinked
	OutcomePending     = incidenttype.OutcomePending
	OutcomeSkipped     = incidenttype.OutcomeSkipped
)

// Bridge turns observations into forge issues and links.
type Bridge struct {
	store    Store
	forges   func(name string) (IssueForge, bool)
	projects map[projectKey]Project
	clock    clockwork.Clock
	log      *slog.Logger
}

// New returns a bridge filing issues of the configured projects through
// forges (a forge by its configured name). It refuses projects that do
// not validate or name a forge forges does not know.
func New(store Store, forges func(name string) (IssueForge, bool), projects []Project, clock clockwork.Clock, log *slog.Logger) (*Bridge, error) {
	if err := ValidateProjects(projects); err != nil {
		return nil, err
	}
	b := &Bridge{store: store, forges: forges, projects: map[projectKey]Project{}, clock: clock, log: log.With("component", "incident")}
	for i, p := range projects {
		if _, ok := forges(p.Forge); !ok {
			return nil, wq.Errorf(wq.EINVALID, "projects[%d].forge %q is not a configured forge", i, p.Forge)
		}
		b.projects[p.key()] = p
	}
	return b, nil
}

// now is the clock's time as the store keeps it.
func (b *Bridge) now() time.Time { return storedTime(b.clock.Now()) }

// Reconcile takes one observation in.
//
// A dry run (apply false) reads the link and says what applying would
// do; it calls no forge and writes nothing.
//
// Applied, it takes the observation into the existing link of the same
// provider, scope and fingerprint (outcome linked), or files exactly one
// forge issue for it (created): it first claims the link (a unique-key
// insert in state creating); only the claimer calls the forge, and then
// finishes its claim with the issue, if its claim token is still the
// link's. A call that finds a claim in progress answers pending. A claim
// older than ClaimTimeout without an issue is taken over by a
// compare-and-set on its token, and the taker files the issue.
//
// What remains: a claimer that filed the issue and then could not record
// it (it died, or its database write failed, between the forge's answer
// and FinishClaim), or whose forge call timed out after the forge had
// created the issue, leaves a claim that is taken over after
// ClaimTimeout, and a second issue is filed. A claimer whose claim was
// taken over while it filed learns it from FinishClaim and reports the
// duplicate (ECONFLICT, logged with the issue's number); the marker line
// of both bodies names the provider issue. Claims are aged by the
// bridges' clocks, so processes sharing a database must keep their
// clocks within a small fraction of ClaimTimeout.
//
// Errors: EINVALID for an observation that does not validate or that no
// project maps (Reason ReasonNoProject); the forge's error, wrapped, when
// filing fails (the claim is left to go stale, since the forge may have
// filed the issue after all); ECONFLICT as above.
func (b *Bridge) Reconcile(ctx context.Context, obs Observation, apply bool) (*Result, error) {
	return b.ReconcileWithin(ctx, obs, apply, nil)
}

// ReconcileWithin is Reconcile for a caller that may file issues only in
// the repositories covers reports true for (nil: every one): a mapping
// to any other repository is, to it, one that is not configured, with
// the very refusal an unmapped observation gets (issue 48).
func (b *Bridge) ReconcileWithin(ctx context.Context, obs Observation, apply bool, covers func(forge, repo string) bool) (*Result, error) {
	if err := obs.Validate(); err != nil {
		return nil, err
	}
	obs, err := obs.redacted()
	if err != nil {
		return nil, err
	}
	projects := b.projects
	if covers != nil {
		projects = map[projectKey]Project{}
		for k, p := range b.projects {
			if covers(p.Forge, p.Repo) {
				projects[k] = p
			}
		}
	}
	p, err := route(projects, obs.Key)
	if err != nil {
		return nil, err
	}
	if obs.Organization == "" {
		obs.Organization = p.Organization // one link per configured scope, whichever way it was named
	}
	link, err := b.getLink(ctx, obs.Key)
	if err != nil {
		return nil, err
	}
	plan := planIssue(obs, p)
	if !apply {
		return b.dryRun(obs, p, plan, link), nil
	}
	// Each round acts on the link as read; a compare-and-set that lost
	// re-reads it. Three rounds are enough: a link only moves forward
	// (none, creating, linked), and a linked one changes only by merges.
	for range 3 {
		if res := b.waiting(obs, p, link); res != nil {
			return res, nil
		}
		var res *Result
		switch {
		case link == nil:
			token := uuid.NewString()
			got, claimed, err := b.store.ClaimLink(ctx, newClaim(obs, p, token, b.now()))
			if err != nil {
				return nil, fmt.Errorf("claim incident link %s: %w", obs.Key, err)
			}
			if claimed {
				return b.file(ctx, obs, p, plan, got, token)
			}
			link = got
			continue
		case link.State == LinkLinked:
			res, err = b.update(ctx, obs, p, *link)
		default: // a stale claim
			token := uuid.NewString()
			var got *Link
			got, err = b.store.TakeOverClaim(ctx, obs.Key, link.ClaimToken, token, b.now())
			if err == nil {
				b.log.Warn("took over a stale incident claim", "key", obs.Key.String(), "claimed_at", link.ClaimedAt)
				return b.file(ctx, obs, p, plan, got, token)
			}
		}
		if wq.ErrorCode(err) != wq.ECONFLICT {
			return res, err
		}
		if link, err = b.getLink(ctx, obs.Key); err != nil {
			return nil, err
		}
	}
	return nil, wq.Errorf(wq.ECONFLICT, "incident link %s changed under every attempt; try again", obs.Key)
}

// getLink is the link of key; nil when there is none.
func (b *Bridge) getLink(ctx context.Context, key Key) (*Link, error) {
	l, err := b.store.GetLink(ctx, key)
	if wq.ErrorCode(err) == wq.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read incident link %s: %w", key, err)
	}
	return l, nil
}

func (b *Bridge) result(o Outcome, p Project, plan *IssuePlan, l *Link, reason string) *Result {
	return &Result{Outcome: o, Forge: p.Forge, Repo: p.Repo, Issue: plan, Link: l, Reason: reason}
}

// waiting is the answer when there is nothing to do now, the same in a
// dry run as applied: no link and an issue the provider resolved
// (skipped), or a claim in progress (pending); nil otherwise.
func (b *Bridge) waiting(obs Observation, p Project, link *Link) *Result {
	switch {
	case link == nil && resolved(obs.Status):
		return b.result(OutcomeSkipped, p, nil, nil, "the provider says the issue is "+obs.Status)
	case link != nil && link.State == LinkCreating && b.clock.Since(link.ClaimedAt) < ClaimTimeout:
		return b.result(OutcomePending, p, nil, link, "another call is filing the issue since "+timeText(link.ClaimedAt))
	}
	return nil
}

func (b *Bridge) dryRun(obs Observation, p Project, plan IssuePlan, link *Link) *Result {
	if res := b.waiting(obs, p, link); res != nil {
		return res
	}
	switch {
	case link == nil:
		return b.result(OutcomeWouldCreate, p, &plan, nil, "")
	case link.State == LinkLinked:
		return b.result(OutcomeWouldUpdate, p, nil, link, fmt.Sprintf("link %s names issue #%d", link.ID, link.IssueNumber))
	}
	return b.result(OutcomeWouldCreate, p, &plan, link, "would take over the claim made at "+timeText(link.ClaimedAt))
}

// newClaim is the creating link a claim inserts: the observation's key
// and fields, the project's forge repository, no issue yet.
func newClaim(obs Observation, p Project, token string, now time.Time) Link {
	return Link{Key: obs.Key, Forge: p.Forge, Repo: p.Repo, Status: obs.Status, EventCount: obs.EventCount,
		Permalink: obs.Permalink, FirstSeen: obs.FirstSeen, LastSeen: obs.LastSeen, LinkedPRs: obs.LinkedPRs,
		State: LinkCreating, ClaimToken: token, ClaimedAt: now, CreatedAt: now, UpdatedAt: now}
}

// update takes obs into a linked link; ECONFLICT when it changed since
// it was read.
func (b *Bridge) update(ctx context.Context, obs Observation, p Project, l Link) (*Result, error) {
	merged, changed := Merge(l, obs)
	if !changed {
		return b.result(OutcomeLinked, p, nil, &l, ""), nil
	}
	got, err := b.store.UpdateLink(ctx, l, merged, b.now())
	if err != nil {
		return nil, fmt.Errorf("update incident link %s: %w", l.ID, err)
	}
	return b.result(OutcomeLinked, p, nil, got, ""), nil
}

// file calls the forge for the claim this call holds (claim, under
// token) and finishes the claim with the issue it filed.
func (b *Bridge) file(ctx context.Context, obs Observation, p Project, plan IssuePlan, claim *Link, token string) (*Result, error) {
	log := b.log.With("key", obs.Key.String(), "link", claim.ID, "forge", p.Forge, "repo", p.Repo)
	f, ok := b.forges(p.Forge)
	if !ok {
		return nil, wq.Errorf(wq.EINTERNAL, "forge %q of project %s/%s is not configured", p.Forge, p.Organization, p.Project)
	}
	fctx, cancel := context.WithTimeout(ctx, ClaimTimeout/2)
	info, err := f.CreateIssue(fctx, wq.IssueCreate{Project: p.Repo, Title: plan.Title, Body: plan.Body, Labels: plan.Labels})
	cancel()
	if err == nil && (info == nil || info.Number <= 0) {
		err = errors.New("the forge named no issue number")
	}
	if err != nil {
		log.Warn("filing the incident issue failed; the claim stays until it is stale", "err", secrets.Text(err.Error()))
		return nil, fmt.Errorf("file the issue of incident %s in %s %s: %w", obs.Key, p.Forge, p.Repo, err)
	}
	issue := IssueRef{Number: info.Number, URL: secrets.Text(info.URL)}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	link, err := b.store.FinishClaim(wctx, obs.Key, token, issue, b.now())
	if wq.ErrorCode(err) == wq.ECONFLICT {
		log.Error("the claim was taken over while filing: the issue filed is a duplicate", "issue", issue.Number)
		return nil, &wq.Error{Code: wq.ECONFLICT, Message: fmt.Sprintf(
			"incident %s: the claim was taken over while issue #%d was filed in %s %s; that issue is a duplicate", obs.Key, issue.Number, p.Forge, p.Repo)}
	}
	if err != nil {
		log.Error("the issue was filed but not recorded; its claim will be taken over", "issue", issue.Number, "err", err)
		return nil, fmt.Errorf("record issue #%d of incident %s: %w", issue.Number, obs.Key, err)
	}
	// A claim taken over holds what its first caller observed: take in
	// what this one did.
	if merged, changed := Merge(*link, obs); changed {
		if got, err := b.store.UpdateLink(wctx, *link, merged, b.now()); err == nil {
			link = got
		} else {
			log.Warn("taking the observation into the new link failed", "err", err)
		}
	}
	log.Info("filed an incident issue", "issue", issue.Number)
	return b.result(OutcomeCreated, p, &plan, link, ""), nil
}

// ImportLegacy imports the old tool's links (Store.ImportLegacy) and logs
// what it did. Call it at start, before serving observations; an error
// means the legacy links conflict or cannot be read, and nothing was
// imported.
func (b *Bridge) ImportLegacy(ctx context.Context) (ImportReport, error) {
	r, err := b.store.ImportLegacy(ctx, b.now())
	if err != nil {
		return r, fmt.Errorf("import legacy incident links: %w", err)
	}
	if r.Found {
		b.log.Info("imported legacy incident links", "rows", r.Rows, "imported", r.Imported, "collapsed", r.Collapsed, "existing", r.Existing)
	}
	return r, nil
}
