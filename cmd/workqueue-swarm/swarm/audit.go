package swarm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/mr/mrapi"
)

// maxList is the most a control-plane list answers (wq.MaxListLimit);
// a list that long may have been cut, and the audit says so rather than
// judge half the record.
const maxList = 500

// audit reads the forge and the control plane's record and fills the
// report's figures and safety checks.
func (r *run) audit(ctx context.Context, issues []int64) error {
	owner, name, _ := strings.Cut(r.cfg.Repo, "/")
	rep := r.report
	rep.IssuesOpened = len(issues)

	// The forge: what was closed, opened, reviewed and merged, and when.
	states := map[int64]bool{} // issue number → closed
	all, err := listAll(func(page int) ([]*sdk.Issue, error) {
		list, _, err := r.gitea.ListRepoIssues(owner, name, sdk.ListIssueOption{ListOptions: sdk.ListOptions{Page: page, PageSize: 50},
			State: sdk.StateAll, Type: sdk.IssueTypeIssue})
		return list, err
	})
	if err != nil {
		return fmt.Errorf("list the issues of %s: %w", r.cfg.Repo, err)
	}
	for _, i := range all {
		states[i.Index] = i.State == sdk.StateClosed
	}
	prs, err := listAll(func(page int) ([]*sdk.PullRequest, error) {
		list, _, err := r.gitea.ListRepoPullRequests(owner, name, sdk.ListPullRequestsOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: 50},
			State: sdk.StateAll})
		return list, err
	})
	if err != nil {
		return fmt.Errorf("list the pull requests of %s: %w", r.cfg.Repo, err)
	}
	var pulls []pull
	for _, pr := range prs {
		p := pull{number: pr.Index, closes: forge.ClosingIssues(pr.Body), merged: pr.HasMerged, approved: map[string]bool{}}
		if pr.Head != nil {
			p.head = pr.Head.Sha
		}
		if pr.Created != nil {
			p.opened = *pr.Created
		}
		if pr.Merged != nil {
			p.mergedAt = *pr.Merged
		}
		reviews, _, err := r.gitea.ListPullReviews(owner, name, pr.Index, sdk.ListPullReviewsOptions{ListOptions: sdk.ListOptions{PageSize: 50}})
		if err != nil {
			return fmt.Errorf("list the reviews of pull request %d: %w", pr.Index, err)
		}
		for _, rv := range reviews {
			if rv.State == sdk.ReviewStateApproved || rv.State == sdk.ReviewStateRequestChanges {
				p.reviews = append(p.reviews, rv.Submitted)
			}
			if rv.State == sdk.ReviewStateApproved && !rv.Dismissed && rv.CommitID != "" {
				p.approved[rv.CommitID] = true
			}
		}
		if p.files, err = r.headFiles(owner, name, pr.Index, p.head); err != nil {
			return err
		}
		pulls = append(pulls, p)
	}
	for _, n := range issues {
		if states[n] {
			rep.IssuesClosed++
		}
	}
	rep.PRsOpened = len(pulls)
	for _, p := range pulls {
		if p.merged {
			rep.PRsMerged++
		}
	}
	rep.Checks = append(rep.Checks, closedOnce(issues, states, pulls))
	// The service deletes a branch once its pull request merged (soon
	// after: a branch still at a merged head is on its way out): a branch
	// left elsewhere is a write that led to no merge, such as one made
	// for an issue that was done already.
	mergedHeads := map[string]bool{}
	for _, pr := range prs {
		if pr.HasMerged && pr.Head != nil {
			mergedHeads[pr.Head.Sha] = true
		}
	}
	branches, err := listAll(func(page int) ([]*sdk.Branch, error) {
		list, _, err := r.gitea.ListRepoBranches(owner, name, sdk.ListRepoBranchesOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: 50}})
		return list, err
	})
	if err != nil {
		return fmt.Errorf("list the branches of %s: %w", r.cfg.Repo, err)
	}
	for _, b := range branches {
		if b.Name != "main" && (b.Commit == nil || !mergedHeads[b.Commit.ID]) {
			rep.Findings["branch left without a merged pull request"]++
			rep.LeftBranches = append(rep.LeftBranches, b.Name)
		}
	}

	// The control plane: the work it holds of the repository, every
	// lease of each (ended ones too), and each session's role.
	work := map[string]cp.Work{}
	for _, state := range []cp.State{cp.StateOpen, cp.StateMerged, cp.StateClosed} {
		list, err := controlList[cp.Work](ctx, r, "/api/v1/work", "work", map[string][]string{"repo": {r.cfg.Repo}, "state": {string(state)}, "limit": {fmt.Sprint(maxList)}})
		if err != nil {
			return fmt.Errorf("list the inventory: %w", err)
		}
		if len(list) == maxList {
			return fmt.Errorf("%d %s work items or more: the audit would read only some", maxList, state)
		}
		for _, w := range list {
			work[w.ID] = w
		}
	}
	var leases []cp.Lease
	for _, id := range slices.Sorted(maps.Keys(work)) {
		list, err := controlList[cp.Lease](ctx, r, "/api/v1/leases", "leases", map[string][]string{"work_id": {id}, "all": {"true"}, "limit": {fmt.Sprint(maxList)}})
		if err != nil {
			return fmt.Errorf("list the leases of work %s: %w", id, err)
		}
		if len(list) == maxList {
			return fmt.Errorf("%s holds %d leases or more: the audit would read only some", workName(work, id), maxList)
		}
		leases = append(leases, list...)
	}
	var sessions struct {
		Sessions []cp.SessionView `json:"sessions"`
	}
	if err := r.admin.Call(ctx, "GET", "/api/v1/sessions", map[string][]string{"limit": {fmt.Sprint(maxList)}}, nil, &sessions); err != nil {
		return fmt.Errorf("list the sessions: %w", err)
	}
	if len(sessions.Sessions) == maxList {
		return fmt.Errorf("%d sessions or more: the audit would read only some", maxList)
	}
	roles := map[string]cp.Role{}
	identities := map[string]string{}
	for _, s := range sessions.Sessions {
		roles[s.ID], identities[s.ID] = s.Role, s.Identity
	}
	rep.Leases = len(leases)
	rep.Checks = append(rep.Checks, heldOnce(leases, work), underLeases(pulls, leases, work, roles))

	// Who wrote each pull request, and who judged and merged it, at
	// which head: the inventory names the session that opened it for an
	// assignment, the event log every review and merge the service made
	// (the forge names only the service's accounts).
	judgments, err := r.judgments(ctx, leases, work, identities)
	if err != nil {
		return err
	}
	inventory := map[int64]string{}
	for _, w := range work {
		if w.Kind == cp.KindPR && w.AuthorSession != "" {
			inventory[w.Number] = cmp.Or(identities[w.AuthorSession], "session "+w.AuthorSession)
		}
	}
	r.mu.Lock()
	recorded := maps.Clone(r.authors)
	subs := slices.Clone(r.submissions)
	r.mu.Unlock()
	authors, disputes := authorship(pulls, inventory, recorded)
	for _, p := range pulls {
		for i, f := range p.files {
			p.files[i].writtenBy = identities[f.session]
		}
	}
	items, err := r.items(ctx)
	if err != nil {
		return err
	}
	rep.Checks = append(rep.Checks, mergedApproved(pulls, judgments, authors), ownJudgments(judgments, authors, disputes),
		ownWrites(items, subs, pulls, authors))
	return nil
}

// writtenBy starts the line of every file the swarm writes that names
// the session that wrote it, so that the audit can read from the forge
// whose content a pull request holds (the identity is the session's, as
// the service lists it). Not the identity itself, and no "name: value":
// push protection takes "token:NAME", as static tokens' identities read,
// in any encoding, and any name ending in "session" followed by a colon,
// for a secret assignment.
const writtenBy = "Written by session "

// markWriter is that line for session.
func markWriter(session string) string { return writtenBy + session }

// headFiles reads the files pull request number changes, at its head,
// and whom each says wrote it.
func (r *run) headFiles(owner, name string, number int64, head string) ([]headFile, error) {
	changed, err := listAll(func(page int) ([]*sdk.ChangedFile, error) {
		list, _, err := r.gitea.ListPullRequestFiles(owner, name, number, sdk.ListPullRequestFilesOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: 50}})
		return list, err
	})
	if err != nil {
		return nil, fmt.Errorf("list the files of pull request %d: %w", number, err)
	}
	var out []headFile
	for _, f := range changed {
		if f.Status == "removed" || f.Status == "deleted" {
			continue
		}
		content, _, err := r.gitea.GetFile(owner, name, head, f.Filename)
		if err != nil {
			return nil, fmt.Errorf("read %s of pull request %d at %s: %w", f.Filename, number, head, err)
		}
		hf := headFile{path: f.Filename}
		for line := range strings.Lines(string(content)) {
			if by, ok := strings.CutPrefix(strings.TrimSpace(line), writtenBy); ok {
				hf.session = by
			}
		}
		out = append(out, hf)
	}
	return out, nil
}

// judgments reads the reviews and merges of pull requests from the event
// log: the action events of every lease of a pull request.
func (r *run) judgments(ctx context.Context, leases []cp.Lease, work map[string]cp.Work, identities map[string]string) ([]judgment, error) {
	var out []judgment
	for _, l := range leases {
		w, ok := work[l.WorkID]
		if !ok || w.Kind != cp.KindPR {
			continue
		}
		events, err := r.cfg.Events.ListEvents(ctx, cp.EventFilter{LeaseID: l.ID, Limit: maxList})
		if err != nil {
			return nil, fmt.Errorf("read the events of lease %s: %w", l.ID, err)
		}
		if len(events) == maxList {
			return nil, fmt.Errorf("lease %s has %d events or more: the audit would read only some", l.ID, maxList)
		}
		for _, e := range events {
			if e.Type != cp.EventAction || (e.Reason != string(cp.ActReview) && e.Reason != string(cp.ActMerge)) {
				continue
			}
			var d struct {
				Verdict string `json:"verdict"`
				HeadSHA string `json:"head_sha"`
			}
			if err := json.Unmarshal(e.Detail, &d); err != nil {
				return nil, fmt.Errorf("event %d: decode its detail: %w", e.ID, err)
			}
			out = append(out, judgment{pr: w.Number, action: cp.Action(e.Reason), verdict: d.Verdict, head: d.HeadSHA,
				session: e.SessionID, identity: identities[e.SessionID], actor: e.Actor})
		}
	}
	return out, nil
}

// items reads every mr item of the repository: whose each is, and its
// branch.
func (r *run) items(ctx context.Context) ([]itemOwner, error) {
	var out []itemOwner
	for cursor := ""; ; {
		q := map[string][]string{"item_type": {"mr"}, "project": {r.cfg.Repo}, "limit": {fmt.Sprint(maxList)}}
		if cursor != "" {
			q["cursor"] = []string{cursor}
		}
		page, next, err := r.admin.List(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list the items of %s: %w", r.cfg.Repo, err)
		}
		for _, it := range page {
			item, err := r.admin.Get(ctx, it.ID)
			if err != nil {
				return nil, fmt.Errorf("read item %s: %w", it.ID, err)
			}
			var d mrapi.Detail
			if len(item.Detail) > 0 {
				if err := json.Unmarshal(item.Detail, &d); err != nil {
					return nil, fmt.Errorf("item %s: decode its detail: %w", it.ID, err)
				}
			}
			out = append(out, itemOwner{id: item.ID, caller: item.CallerIdentity, branch: d.SourceBranch, pr: d.MRIID})
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

// pull is a pull request as the forge has it.
type pull struct {
	number   int64
	closes   []int64 // the issues its description closes
	merged   bool
	head     string // its head commit (the one merged, once merged)
	opened   time.Time
	mergedAt time.Time
	reviews  []time.Time     // when each verdict was given
	approved map[string]bool // the commits an approval (not dismissed) was given on
	files    []headFile      // what it changes, at its head
}

// headFile is a file a pull request changes, and whom its content says
// wrote it: a session, and its identity ("" when it does not say, or the
// service lists no such session).
type headFile struct {
	path      string
	session   string
	writtenBy string
}

// judgment is a review or merge the service made for a session, as the
// event log has it.
type judgment struct {
	pr       int64
	action   cp.Action // review or merge
	verdict  string    // a review's: approve or request_changes
	head     string    // the head it was made at
	session  string
	identity string // the session's identity
	actor    string // the caller identity the event names
}

// itemOwner is an mr item: whose it is, its branch and its pull request.
type itemOwner struct {
	id, caller, branch string
	pr                 int64
}

// authorship is the identity that wrote each pull request: the one the
// inventory names (whose session opened it for an assignment), which
// must be the one the swarm saw open it. A pull request the inventory
// names no author of, or another than the swarm saw, is disputed.
func authorship(pulls []pull, inventory, recorded map[int64]string) (map[int64]string, []string) {
	authors := map[int64]string{}
	var disputes []string
	for _, p := range pulls {
		inv, rec := inventory[p.number], recorded[p.number]
		switch {
		case inv == "" && rec == "":
			disputes = append(disputes, fmt.Sprintf("pr #%d: nobody is known to have written it", p.number))
		case inv != "" && rec != "" && inv != rec:
			disputes = append(disputes, fmt.Sprintf("pr #%d: the inventory says %s wrote it, the swarm saw %s open it", p.number, inv, rec))
			authors[p.number] = inv // the service's, by which it routed
		case inv == "":
			disputes = append(disputes, fmt.Sprintf("pr #%d: the inventory names no author (the swarm saw %s open it)", p.number, rec))
		default:
			authors[p.number] = inv
		}
	}
	return authors, disputes
}

// mergedApproved checks that every pull request was merged at a head
// that an identity other than its author approved: the event log has
// the merge at the head the forge merged and an approval at that head
// by another identity, and the forge holds an approval of that commit.
func mergedApproved(pulls []pull, judgments []judgment, authors map[int64]string) Check {
	c := Check{Name: "no pull request merged at a head no other identity approved (the event log, and the forge's reviews)"}
	merges := 0
	for _, p := range pulls {
		if !p.merged {
			continue
		}
		merges++
		var merged, approvedBy []string
		for _, j := range judgments {
			switch {
			case j.pr != p.number:
			case j.action == cp.ActMerge:
				merged = append(merged, j.head)
			case j.action == cp.ActReview && j.verdict == cp.VerdictApprove && j.head == p.head && j.identity != "" && j.identity != authors[p.number]:
				approvedBy = append(approvedBy, j.identity)
			}
		}
		switch {
		case len(merged) == 0:
			c.Failed = append(c.Failed, fmt.Sprintf("pr #%d was merged on the forge at %s, by no merge in the event log", p.number, short(p.head)))
		case slices.ContainsFunc(merged, func(h string) bool { return h != p.head }):
			c.Failed = append(c.Failed, fmt.Sprintf("pr #%d: the event log merged it at %v, the forge at %s", p.number, merged, short(p.head)))
		case len(approvedBy) == 0:
			c.Failed = append(c.Failed, fmt.Sprintf("pr #%d was merged at %s, which no identity but its author (%s) approved", p.number, short(p.head), authors[p.number]))
		case !p.approved[p.head]:
			c.Failed = append(c.Failed, fmt.Sprintf("pr #%d was merged at %s, and the forge holds no approval of that commit", p.number, short(p.head)))
		}
	}
	c.Detail = fmt.Sprintf("%d merges, %d reviews and merges in the event log", merges, len(judgments))
	return c
}

// ownJudgments checks that no identity reviewed or merged a pull
// request it wrote, whichever of its sessions acted, and that every
// pull request's author is known and undisputed.
func ownJudgments(judgments []judgment, authors map[int64]string, disputes []string) Check {
	c := Check{Name: "no identity approved or merged its own pull request", Failed: slices.Clone(disputes)}
	for _, j := range judgments {
		author := authors[j.pr]
		switch {
		case j.identity == "":
			c.Failed = append(c.Failed, fmt.Sprintf("pr #%d: %s by session %s, which the service does not list", j.pr, j.action, j.session))
		case j.actor != j.identity:
			c.Failed = append(c.Failed, fmt.Sprintf("pr #%d: %s by %s for session %s of %s", j.pr, j.action, j.actor, j.session, j.identity))
		case author != "" && j.identity == author:
			c.Failed = append(c.Failed, fmt.Sprintf("pr #%d: %s by %s (session %s), which wrote it", j.pr, j.action, j.identity, j.session))
		}
	}
	c.Detail = fmt.Sprintf("%d reviews and merges of %d pull requests with known authors", len(judgments), len(authors))
	return c
}

// ownWrites checks that no identity wrote onto another's item: every mr
// item is its creator's (the identity of the first submission the
// service accepted for it, as the swarm saw it), no other identity's
// submission was accepted for it, and every file a pull request holds at
// its head was written by the pull request's author.
func ownWrites(items []itemOwner, subs []submission, pulls []pull, authors map[int64]string) Check {
	c := Check{Name: "no write by one identity on another's item (the items, the submissions, the forge's heads)"}
	byItem := map[string][]submission{}
	for _, s := range subs {
		byItem[s.ItemID] = append(byItem[s.ItemID], s)
	}
	for _, it := range items {
		list := byItem[it.id]
		if len(list) == 0 {
			c.Failed = append(c.Failed, fmt.Sprintf("item %s (branch %s) of %s: no submission the swarm saw accepted made it", it.id, it.branch, it.caller))
			continue
		}
		creator := list[0].Identity
		for _, s := range list[1:] {
			if s.Identity != creator {
				c.Failed = append(c.Failed, fmt.Sprintf("item %s (branch %s) of %s: %s's submission was accepted too (%s)", it.id, it.branch, creator, s.Identity, s.Agent))
			}
		}
		if it.caller != creator {
			c.Failed = append(c.Failed, fmt.Sprintf("item %s (branch %s) names %s, but %s created it", it.id, it.branch, it.caller, creator))
		}
	}
	files := 0
	for _, p := range pulls {
		for _, f := range p.files {
			files++
			switch author := authors[p.number]; {
			case f.writtenBy == "":
				c.Failed = append(c.Failed, fmt.Sprintf("pr #%d holds %s at %s, which names no session the service lists (%q)", p.number, f.path, short(p.head), f.session))
			case author != "" && f.writtenBy != author:
				c.Failed = append(c.Failed, fmt.Sprintf("pr #%d, %s's, holds %s at %s, written by %s", p.number, author, f.path, short(p.head), f.writtenBy))
			}
		}
	}
	c.Detail = fmt.Sprintf("%d items, %d accepted submissions, %d files at the heads of %d pull requests", len(items), len(subs), files, len(pulls))
	return c
}

// closedOnce checks that every issue was closed by exactly one pull
// request, merged, and that no pull request worked anything else.
func closedOnce(issues []int64, closed map[int64]bool, pulls []pull) Check {
	c := Check{Name: "each issue closed by exactly one merged pull request (read from the forge)"}
	by := map[int64][]pull{}
	for _, p := range pulls {
		if len(p.closes) == 0 {
			c.Failed = append(c.Failed, fmt.Sprintf("pr #%d closes no issue", p.number))
		}
		for _, n := range p.closes {
			by[n] = append(by[n], p)
		}
	}
	ours := map[int64]bool{}
	for _, n := range issues {
		ours[n] = true
		ps := by[n]
		switch {
		case !closed[n]:
			c.Failed = append(c.Failed, fmt.Sprintf("issue #%d is open", n))
		case len(ps) == 0:
			c.Failed = append(c.Failed, fmt.Sprintf("issue #%d was closed, by no pull request", n))
		case len(ps) > 1:
			var numbers []string
			for _, p := range ps {
				numbers = append(numbers, fmt.Sprintf("#%d", p.number))
			}
			c.Failed = append(c.Failed, fmt.Sprintf("issue #%d has %d pull requests: %s", n, len(ps), strings.Join(numbers, ", ")))
		case !ps[0].merged:
			c.Failed = append(c.Failed, fmt.Sprintf("issue #%d: its pull request #%d is not merged", n, ps[0].number))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(by)) {
		if !ours[n] {
			c.Failed = append(c.Failed, fmt.Sprintf("pull requests %v close #%d, not a swarm issue", numbersOf(by[n]), n))
		}
	}
	c.Detail = fmt.Sprintf("%d issues, %d pull requests", len(issues), len(pulls))
	return c
}

// held is the time a lease held its work: from its creation to its end,
// or to its expiry when that came first (an expired lease is marked
// ended later, but held nothing after expires_at).
func held(l cp.Lease) (from, to time.Time) {
	from, to = l.CreatedAt, l.ExpiresAt
	if !l.EndedAt.IsZero() && l.EndedAt.Before(to) {
		to = l.EndedAt
	}
	return from, to
}

// heldOnce checks that no two leases of one work item overlap in time:
// no work was ever held by two sessions at once.
func heldOnce(leases []cp.Lease, work map[string]cp.Work) Check {
	c := Check{Name: "no work item held by two sessions at once (the leases, ended ones too)"}
	by := map[string][]cp.Lease{}
	for _, l := range leases {
		by[l.WorkID] = append(by[l.WorkID], l)
	}
	handedOn := 0
	for _, id := range slices.Sorted(maps.Keys(by)) {
		list := by[id]
		slices.SortFunc(list, func(a, b cp.Lease) int { return a.CreatedAt.Compare(b.CreatedAt) })
		if len(list) > 1 {
			handedOn++
		}
		var last cp.Lease // of the leases before l, the one holding longest
		var lastTo time.Time
		for _, l := range list {
			from, to := held(l)
			if from.Before(lastTo) {
				c.Failed = append(c.Failed, fmt.Sprintf("%s: lease %s (session %s) from %s, while lease %s (session %s) held it until %s",
					workName(work, id), l.ID, l.SessionID, from.Format(time.RFC3339Nano), last.ID, last.SessionID, lastTo.Format(time.RFC3339Nano)))
			}
			if to.After(lastTo) {
				last, lastTo = l, to
			}
		}
	}
	c.Detail = fmt.Sprintf("%d leases of %d work items, %d of them held in turn by several sessions", len(leases), len(by), handedOn)
	return c
}

// underLeases checks, from the forge's record, that every write the
// swarm made there fell inside a lease of its work held by a session of
// the role the write needs: each pull request opened under its issue's
// author lease, each verdict under a reviewer's lease of the pull
// request, each merge under a merger's. A write outside any lease would
// be a mutation no gate decision allowed. The forge keeps whole seconds,
// so a lease is taken to start at the start of its second.
func underLeases(pulls []pull, leases []cp.Lease, work map[string]cp.Work, roles map[string]cp.Role) Check {
	c := Check{Name: "every forge write made under a lease of its work, by a session of its role"}
	type key struct {
		kind   cp.Kind
		number int64
		role   cp.Role
	}
	by := map[key][]cp.Lease{}
	for _, l := range leases {
		w, ok := work[l.WorkID]
		if !ok {
			c.Failed = append(c.Failed, fmt.Sprintf("lease %s holds work %s, which the inventory does not list", l.ID, l.WorkID))
			continue
		}
		k := key{w.Kind, w.Number, roles[l.SessionID]}
		by[k] = append(by[k], l)
	}
	inside := func(k key, at time.Time) bool {
		return slices.ContainsFunc(by[k], func(l cp.Lease) bool {
			from, to := held(l)
			return !at.Before(from.Truncate(time.Second)) && !at.After(to)
		})
	}
	var opened, reviewed, merged int
	for _, p := range pulls {
		for _, n := range p.closes {
			opened++
			if !inside(key{cp.KindIssue, n, cp.RoleAuthor}, p.opened) {
				c.Failed = append(c.Failed, fmt.Sprintf("pr #%d was opened at %s, under no author's lease of issue #%d", p.number, p.opened.Format(time.RFC3339), n))
			}
		}
		for _, at := range p.reviews {
			reviewed++
			if !inside(key{cp.KindPR, p.number, cp.RoleReviewer}, at) {
				c.Failed = append(c.Failed, fmt.Sprintf("pr #%d was reviewed at %s, under no reviewer's lease", p.number, at.Format(time.RFC3339)))
			}
		}
		if p.merged {
			merged++
			if !inside(key{cp.KindPR, p.number, cp.RoleMerger}, p.mergedAt) {
				c.Failed = append(c.Failed, fmt.Sprintf("pr #%d was merged at %s, under no merger's lease", p.number, p.mergedAt.Format(time.RFC3339)))
			}
		}
	}
	c.Detail = fmt.Sprintf("%d pull requests opened, %d verdicts, %d merges, each checked against %d leases", opened, reviewed, merged, len(leases))
	return c
}

// controlList reads a list of the control plane's REST API, the member
// of the answer that holds it, as the domain's values the audit judges.
func controlList[T any](ctx context.Context, r *run, path, member string, query map[string][]string) ([]T, error) {
	var out map[string][]T
	if err := r.admin.Call(ctx, "GET", path, query, nil, &out); err != nil {
		return nil, err
	}
	return out[member], nil
}

// workName names a work item for people.
func workName(work map[string]cp.Work, id string) string {
	if w, ok := work[id]; ok {
		return fmt.Sprintf("%s #%d", w.Kind, w.Number)
	}
	return "work " + id
}

func numbersOf(pulls []pull) []int64 {
	var out []int64
	for _, p := range pulls {
		out = append(out, p.number)
	}
	return out
}
