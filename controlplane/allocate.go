package controlplane

import (
	"cmp"
	"slices"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Reasons a candidate is passed over. They are stable: callers and tests
// match on them.
const (
	SkipTerminal     = "terminal"       // merged or closed (hard rule 3)
	SkipForeignLease = "foreign_lease"  // another session's live lease holds it
	SkipOwnLease     = "own_lease"      // this session already holds it
	SkipTerminalLock = "terminal_lock"  // another session is merging it
	SkipWrongRole    = "wrong_role"     // its route is another role's
	SkipNotAuthor    = "not_author"     // changes were requested of the session that wrote it
	SkipOwnPR        = "own_pr"         // a session never reviews or merges its own pull request
	SkipBlockedLabel = "blocked_label"  // it carries a label the configuration blocks
	SkipHasOpenPR    = "has_open_pr"    // an open pull request already works this issue
	SkipNotMergeable = "not_mergeable"  // approved, but the forge says it cannot merge now
	SkipLost         = "lost_race"      // another session took it while this one was assigning
	SkipLower        = "lower_priority" // eligible, but another came first in the order
	// SkipAwaitsPerson: its protected paths wait for the approval of an
	// identity that may submit to the repository itself (package policy).
	SkipAwaitsPerson = "awaits_person"
)

// Policy is the allocator's configuration.
type Policy struct {
	// BlockedLabels are never handed out.
	BlockedLabels []string
	// PriorityLabels order the work of one route: work carrying an
	// earlier label comes first. Within the same priority, the oldest
	// (by the forge's updated time) comes first, then by forge, repo,
	// kind and number, so that the order is deterministic.
	PriorityLabels []string
}

// Route is the path a work item is on, which decides which role may take
// it, in the order routes are served (ADR 5.3): the terminal path first.
type Route int

// Routes, in the order they are served.
const (
	RouteMerge           Route = iota // approved and mergeable pull requests: mergers, under a terminal lock
	RouteChangesAnswered              // pull requests with changes requested: their author session
	RouteReview                       // pull requests awaiting review: reviewers (never their author)
	RouteIssue                        // open issues without an open pull request: authors
	routeNone
)

// String names the route in the event log.
func (r Route) String() string {
	switch r {
	case RouteMerge:
		return "merge"
	case RouteChangesAnswered:
		return "changes_requested"
	case RouteReview:
		return "review"
	case RouteIssue:
		return "issue"
	}
	return "none"
}

// Pick is one candidate considered for a session: a pointer into the
// candidates Choose was given, so that thousands of them cost no copies.
type Pick struct {
	Work   *Work  `json:"work"`
	Reason string `json:"reason,omitempty"` // why it was passed over; "" for the choice
	route  Route
}

// Choice is the allocator's decision for one session.
type Choice struct {
	Outcome  Outcome
	Work     *Work // the chosen work, nil for wait and no_safe_work
	Route    Route
	Actions  []Action
	Head     string // the pull request head pinned in the assignment
	Terminal bool   // take a terminal lock with the lease
	// Skipped lists every candidate passed over, with its reason, in the
	// order the candidates came (the store's: by key).
	Skipped []Pick
}

// Choose picks the next safe work for session s among cands (the open
// inventory with who holds what, Store.Candidates), restricted to repos
// matching repoGlob ("" for all), by routing rule and then by p's
// deterministic order. It is pure: it reads its arguments only. The
// outcome is OutcomePreview when something was chosen (the caller applies
// it), OutcomeWait when the only work this session's role could take is
// held by others, and OutcomeNoSafeWork otherwise.
func Choose(s *Session, cands []Candidate, repoGlob string, p Policy, now time.Time) Choice {
	c := Choice{Skipped: make([]Pick, 0, len(cands))}
	var eligible []Pick
	openPRFor := map[WorkKey]bool{}     // issues an open pull request works on
	issueHolder := map[WorkKey]string{} // the identity holding each leased issue
	for _, cand := range cands {
		switch {
		case cand.Kind == KindPR && cand.State == StateOpen:
			for _, n := range cand.LinkedIssues {
				openPRFor[WorkKey{Forge: cand.Forge, Repo: cand.Repo, Kind: KindIssue, Number: n}] = true
			}
		case cand.Kind == KindIssue && cand.LeaseSession != "":
			issueHolder[cand.WorkKey] = cand.LeaseIdentity
		}
	}
	waiting := false
	for i := range cands {
		cand := &cands[i]
		if repoGlob != "" {
			if ok, _ := doublestar.Match(repoGlob, cand.Repo); !ok {
				continue
			}
		}
		route, reason := routeFor(s, cand, authoredBy(s, cand), !mayJudge(s, cand, issueHolder), openPRFor, p)
		switch {
		case reason != "":
		case cand.LeaseSession == s.ID:
			reason = SkipOwnLease
		case cand.LeaseSession != "":
			reason, waiting = SkipForeignLease, true
		case cand.LockSession != "" && cand.LockSession != s.ID:
			reason, waiting = SkipTerminalLock, true
		}
		if reason != "" {
			c.Skipped = append(c.Skipped, Pick{Work: cand.Work, Reason: reason, route: route})
			continue
		}
		eligible = append(eligible, Pick{Work: cand.Work, route: route})
	}
	if len(eligible) == 0 {
		c.Outcome = OutcomeNoSafeWork
		if waiting {
			c.Outcome = OutcomeWait
		}
		return c
	}
	besti := 0
	for i := 1; i < len(eligible); i++ {
		if comparePicks(eligible[i], eligible[besti], p) < 0 {
			besti = i
		}
	}
	best := eligible[besti]
	c.Outcome, c.Work, c.Route = OutcomePreview, best.Work, best.route
	c.Actions, c.Terminal = ActionsFor(best.route), best.route == RouteMerge
	if best.Work.Kind == KindPR {
		c.Head = best.Work.HeadSHA
	}
	for i, e := range eligible {
		if i != besti {
			c.Skipped = append(c.Skipped, Pick{Work: e.Work, Reason: SkipLower, route: e.route})
		}
	}
	return c
}

// authoredBy reports whether session s's identity wrote pull request
// cand, for routing: the inventory names the session that opened it
// under an assignment (AuthorSession, with its identity), and the
// sessions of one identity are one actor. A "Closes #N" line is never
// authorship; but while a pull request's author is unknown, one that
// closes an issue a session of s's identity holds is not s's to review
// or merge (see mayJudge), since its author may be that session.
func authoredBy(s *Session, cand *Candidate) bool {
	if cand.Kind != KindPR || cand.AuthorSession == "" {
		return false
	}
	return cand.AuthorSession == s.ID || cand.AuthorIdentity != "" && cand.AuthorIdentity == s.Identity
}

// mayJudge reports whether s may review or merge pull request cand: it
// did not write it, and, while its author is unknown, no session of its
// identity holds an issue it closes.
func mayJudge(s *Session, cand *Candidate, issueHolder map[WorkKey]string) bool {
	if authoredBy(s, cand) {
		return false
	}
	if cand.AuthorSession != "" {
		return true
	}
	for _, n := range cand.LinkedIssues {
		if issueHolder[WorkKey{Forge: cand.Forge, Repo: cand.Repo, Kind: KindIssue, Number: n}] == s.Identity {
			return false
		}
	}
	return true
}

// routeFor is the route cand is on and whether s's role may take it; a
// non-empty reason says why not. own says s's identity wrote it;
// mayBeOwn that it may have (it may review or merge it only if not).
func routeFor(s *Session, cand *Candidate, own, mayBeOwn bool, openPRFor map[WorkKey]bool, p Policy) (Route, string) {
	if cand.State.Terminal() {
		return routeNone, SkipTerminal
	}
	for _, l := range cand.Labels {
		if slices.Contains(p.BlockedLabels, l) {
			return routeNone, SkipBlockedLabel
		}
	}
	if cand.Kind == KindIssue {
		switch {
		case openPRFor[cand.WorkKey]:
			return RouteIssue, SkipHasOpenPR
		case s.Role != RoleAuthor:
			return RouteIssue, SkipWrongRole
		}
		return RouteIssue, ""
	}
	state := cand.ReviewState
	if cand.AwaitsPerson {
		state = ReviewNone // reviewed again, by a person
	}
	switch state {
	case ReviewApproved:
		switch {
		case s.Role != RoleMerger:
			return RouteMerge, SkipWrongRole
		case mayBeOwn:
			return RouteMerge, SkipOwnPR
		case !cand.Mergeable:
			return RouteMerge, SkipNotMergeable
		}
		return RouteMerge, ""
	case ReviewChangesRequested:
		switch {
		case s.Role != RoleAuthor:
			return RouteChangesAnswered, SkipWrongRole
		case !own:
			return RouteChangesAnswered, SkipNotAuthor
		}
		return RouteChangesAnswered, ""
	}
	switch {
	case s.Role != RoleReviewer:
		return RouteReview, SkipWrongRole
	case mayBeOwn:
		return RouteReview, SkipOwnPR
	}
	return RouteReview, ""
}

// Role is the role whose sessions take work on the route.
func (r Route) Role() Role {
	switch r {
	case RouteMerge:
		return RoleMerger
	case RouteReview:
		return RoleReviewer
	}
	return RoleAuthor
}

// RouteOf is the route an assignment allowing actions was made on (the
// inverse of ActionsFor).
func RouteOf(actions []Action) Route {
	switch {
	case slices.Contains(actions, ActMerge):
		return RouteMerge
	case slices.Contains(actions, ActReview):
		return RouteReview
	case slices.Contains(actions, ActOpenPR):
		return RouteIssue
	case slices.Contains(actions, ActPush):
		return RouteChangesAnswered
	}
	return routeNone
}

// ActionsFor is what an assignment on route allows.
func ActionsFor(r Route) []Action {
	switch r {
	case RouteMerge:
		return []Action{ActMerge, ActComment}
	case RouteChangesAnswered:
		return []Action{ActPush, ActComment}
	case RouteReview:
		return []Action{ActReview, ActComment}
	case RouteIssue:
		// An author may also close the issue it holds: already fixed, a
		// duplicate, or not to be done (say why with a comment first).
		return []Action{ActPush, ActOpenPR, ActComment, ActClose}
	}
	return nil
}

// priority is the rank of w's most important priority label; len(labels)
// when it carries none.
func priority(w *Work, p Policy) int {
	rank := len(p.PriorityLabels)
	for _, l := range w.Labels {
		if i := slices.Index(p.PriorityLabels, l); i >= 0 && i < rank {
			rank = i
		}
	}
	return rank
}

// comparePicks orders eligible work: by route (the terminal path first),
// priority label, age, then key.
func comparePicks(a, b Pick, p Policy) int {
	return cmp.Or(
		cmp.Compare(a.route, b.route),
		cmp.Compare(priority(a.Work, p), priority(b.Work, p)),
		a.Work.UpdatedAt.Compare(b.Work.UpdatedAt),
		compareKeys(a.Work.WorkKey, b.Work.WorkKey),
	)
}

func compareKeys(a, b WorkKey) int {
	return cmp.Or(cmp.Compare(a.Forge, b.Forge), cmp.Compare(a.Repo, b.Repo), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Number, b.Number))
}
