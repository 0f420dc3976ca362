package swarm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/forge"
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
		p := pull{number: pr.Index, closes: forge.ClosingIssues(pr.Body), merged: pr.HasMerged}
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
		list, err := r.admin.Work(ctx, map[string][]string{"repo": {r.cfg.Repo}, "state": {string(state)}, "limit": {fmt.Sprint(maxList)}})
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
		list, err := r.admin.Leases(ctx, map[string][]string{"work_id": {id}, "all": {"true"}, "limit": {fmt.Sprint(maxList)}})
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
	for _, s := range sessions.Sessions {
		roles[s.ID] = s.Role
	}
	rep.Checks = append(rep.Checks, heldOnce(leases, work), underLeases(pulls, leases, work, roles))
	return nil
}

// pull is a pull request as the forge has it.
type pull struct {
	number   int64
	closes   []int64 // the issues its description closes
	merged   bool
	opened   time.Time
	mergedAt time.Time
	reviews  []time.Time // when each verdict was given
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
