package swarm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/workqueue-dev/workqueue/api"
	cp "github.com/workqueue-dev/workqueue/controlplane"
)

// A hostile session (issue 25) is an agent that tries, while the honest
// ones work, every way around the gate it knows of against the others'
// work. It is an MCP client with an agent-only token of its own (its
// identity), and it registers sessions of every role under it; it also
// holds an honest author's token (a "shadow": several sessions of one
// identity are one actor, and an identity's second session must not
// judge what its first one wrote), and, when there are other hostile
// sessions, the next one's token (a "partner": two identities that
// collude). The swarm tells it every id it knows (lease, assignment,
// session and item ids leak, in logs and checkpoints): it aims at them.
//
// Every attempt must be refused. The report counts attempts by class
// and refusals by reason; an attempt the service lets through is a
// violation, and the run fails.
//
// Two attempts need set-ups, run beside the sweep of the others:
//
//   - A campaign: the hostile author takes an issue of its own, tries
//     to submit onto another identity's branch with that issue's
//     assignment (again every few seconds while it holds the issue, and
//     onto every such branch before it lets the issue go), then opens
//     its own pull request; once an honest
//     reviewer approved it, the partner's merger takes it for merging
//     (pinned at the approved head), the hostile author pushes again,
//     and the partner tries to declare the new head and to merge: a
//     stale approval.
//   - A bait: the hostile reviewer takes a pull request for review and
//     lets the lease expire, then its author and merger sessions try to
//     reclaim and adopt it (another role's), and the shadow's reviewer
//     (its author's identity) too (its own pull request).
type hostile struct {
	run  *run
	name string // hostile-i, in the progress lines

	// The sweep's connections, the campaign's and the bait's (one per
	// goroutine).
	own, shadow, partner *mcpConn
	campOwn, campPartner *mcpConn
	bait, baitShadow     *mcpConn
	identity             string // its own
	shadowIdentity       string // the honest author's whose token it holds
	partnerIdentity      string // the partner's: another hostile's, or the shadow's when alone
	author, reviewer     string // sessions of its own identity
	merger               string
	shadowReviewer       string // sessions under the shadow's token
	shadowMerger         string
	partnerMerger        string // a merger of the partner's identity
	sessions             []ended
	campStarted          bool

	mu      sync.Mutex
	camp    *cp.Allocation  // the campaign's issue lease, while it holds one
	printed map[string]bool // class and reason printed once
}

// ended is a session to end at the end, on its connection.
type ended struct {
	conn *mcpConn
	id   string
}

// Hostile attempt classes: what a hostile session tries, by what it
// would get if the service let it.
const (
	ClassSubmitUnassigned        = "submit_unassigned"         // a change with no assignment
	ClassSubmitForeignUnassigned = "submit_foreign_unassigned" // onto another identity's item, with no assignment
	ClassSubmitForeignIssue      = "submit_foreign_issue"      // onto another identity's open pull request's branch, with an issue assignment of its own
	ClassSubmitForeignReview     = "submit_foreign_review"     // onto a pull request's branch with a review assignment
	ClassHeartbeatForeign        = "heartbeat_foreign"         // heartbeat another session's lease
	ClassHeartbeatMovedHead      = "heartbeat_moved_head"      // re-declare a pull request lease's head
	ClassHeartbeatBadHead        = "heartbeat_bad_head"        // a head that is no commit id
	ClassJudgeOwnAllocate        = "judge_own_allocate"        // be handed its identity's pull request to review or merge
	ClassJudgeOwnAction          = "judge_own_action"          // review or merge its identity's pull request through a second session
	ClassActForeignAssignment    = "act_foreign_assignment"    // review or merge with another session's assignment
	ClassMergeStaleApproval      = "merge_stale_approval"      // merge at a head pushed after the approval
	ClassReclaimLive             = "reclaim_live"              // reclaim another identity's live lease
	ClassAdoptLive               = "adopt_live"                // adopt a live lease of another session
	ClassReclaimOtherRole        = "reclaim_other_role"        // reclaim or adopt an expired lease of another role
	ClassReclaimOwnPR            = "reclaim_own_pr"            // reclaim or adopt the review of its identity's pull request
	ClassAbandonLive             = "abandon_live"              // abandon another session's live lease with the full proof
	ClassReadForeignLease        = "read_foreign_lease"        // GET another identity's lease
	ClassListForeignLeases       = "list_foreign_leases"       // list other identities' leases
	// The outbound policy's classes (issue 48), tried with an issue
	// assignment of its own, so that only the policy stands in the way.
	ClassProtectedPath   = "protected_path"    // a CI workflow, CODEOWNERS or agent instructions in its change
	ClassSecretInField   = "secret_in_field"   // a secret in a title, label, branch name, description, path or comment
	ClassCloseOtherIssue = "close_other_issue" // a description or commit message closing an issue beyond its assignment
	ClassForeignTarget   = "foreign_target"    // a change targeting another identity's branch or a non-default branch
	ClassSteeringLabel   = "steering_label"    // a label that steers the allocator, or the service's own
)

// hostileRound is the pause between a hostile session's sweeps: a sweep
// is a dozen calls, and the honest sessions should still set the pace.
const hostileRound = 1500 * time.Millisecond

// maxBait is the longest a bait lease may take to expire: with the
// service's default lease TTL (30 minutes) there is no bait, and the
// attempts that need an expired lease are not tried.
const maxBait = 3 * time.Minute

// startHostiles connects the hostile sessions and starts their
// control-plane sessions. Hostile i holds the i-th of the last
// split.Hostile tokens, the token of honest author i (round robin), and
// the next hostile's token.
func (r *run) startHostiles(ctx context.Context, split Split, agents []*agent) ([]*hostile, error) {
	if split.Hostile == 0 {
		return nil, nil
	}
	honestTokens := r.cfg.AgentTokens[:len(r.cfg.AgentTokens)-split.Hostile]
	hostileTokens := r.cfg.AgentTokens[len(r.cfg.AgentTokens)-split.Hostile:]
	honest := map[string]bool{}
	for _, a := range agents {
		honest[a.identity] = true
	}
	var hs []*hostile
	for i := range split.Hostile {
		h := &hostile{run: r, name: fmt.Sprintf("hostile-%d", i+1), printed: map[string]bool{}}
		shadowed := agents[i%split.Authors] // authors come first; author k holds honest token k
		shadowToken := honestTokens[(i%split.Authors)%len(honestTokens)]
		partnerToken := shadowToken
		if split.Hostile > 1 {
			partnerToken = hostileTokens[(i+1)%split.Hostile]
		}
		var err error
		for _, c := range []struct {
			conn  **mcpConn
			token string
		}{{&h.own, hostileTokens[i]}, {&h.campOwn, hostileTokens[i]}, {&h.bait, hostileTokens[i]},
			{&h.shadow, shadowToken}, {&h.baitShadow, shadowToken}, {&h.partner, partnerToken}, {&h.campPartner, partnerToken}} {
			if *c.conn, err = r.connect(ctx, c.token); err != nil {
				return nil, fmt.Errorf("%s: %w", h.name, err)
			}
		}
		start := func(conn *mcpConn, role cp.Role, as string) (*cp.SessionView, error) {
			s, err := conn.startSession(ctx, role, fmt.Sprintf("swarm %s %s (%s)", h.name, role, as))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", h.name, err)
			}
			r.addSession(s.Session, h.name, true)
			h.sessions = append(h.sessions, ended{conn, s.ID})
			return s, nil
		}
		for _, s := range []struct {
			conn *mcpConn
			role cp.Role
			as   string
			id   *string
		}{
			{h.own, cp.RoleAuthor, "own", &h.author}, {h.own, cp.RoleReviewer, "own", &h.reviewer}, {h.own, cp.RoleMerger, "own", &h.merger},
			{h.shadow, cp.RoleReviewer, "shadow", &h.shadowReviewer}, {h.shadow, cp.RoleMerger, "shadow", &h.shadowMerger},
		} {
			v, err := start(s.conn, s.role, s.as)
			if err != nil {
				return nil, err
			}
			*s.id = v.ID
			switch {
			case s.as == "own":
				h.identity = v.Identity
			case s.as == "shadow":
				h.shadowIdentity = v.Identity
			}
		}
		h.partnerMerger, h.partnerIdentity = h.shadowMerger, h.shadowIdentity
		if split.Hostile > 1 {
			v, err := start(h.partner, cp.RoleMerger, "partner")
			if err != nil {
				return nil, err
			}
			h.partnerMerger, h.partnerIdentity = v.ID, v.Identity
		}
		if honest[h.identity] {
			return nil, fmt.Errorf("%s: its token's identity %s is an honest session's too: give each hostile session a token of its own", h.name, h.identity)
		}
		if h.shadowIdentity != shadowed.identity {
			return nil, fmt.Errorf("%s: the shadow token is %s's, not %s's", h.name, h.shadowIdentity, shadowed.identity)
		}
		r.printf("%-11s started as %s, with sessions as %s (shadowing %s) and %s (partner)", h.name, h.identity, h.shadowIdentity, shadowed.name, h.partnerIdentity)
		hs = append(hs, h)
	}
	return hs, nil
}

// end ends the hostile's sessions and closes its connections.
func (h *hostile) end() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range h.sessions {
		if err := s.conn.call(ctx, "end_session", map[string]any{"session_id": s.id}, nil); err != nil {
			h.run.printf("%-11s end_session: %v", h.name, err)
		}
	}
	for _, c := range []*mcpConn{h.own, h.campOwn, h.bait, h.shadow, h.baitShadow, h.partner, h.campPartner} {
		c.cs.Close()
	}
}

// attempt records one try of class and the service's answer err: a
// refusal by its reason, nil (the service let it through) as a
// violation. Anything else (the service unreachable) is an error, said
// and counted as such. It reports whether the service refused.
func (h *hostile) attempt(class string, err error, format string, args ...any) bool {
	what := fmt.Sprintf(format, args...)
	var ref *refusal
	switch {
	case err == nil:
		h.violation(class, what)
		return false
	case errors.As(err, &ref):
		h.refused(class, ref.reason, what)
		return true
	default:
		h.refused(class, "error", fmt.Sprintf("%s: %v", what, err))
		return false
	}
}

// refused counts a refusal of class by reason, and prints the first of
// each class and reason.
func (h *hostile) refused(class, reason, what string) {
	r := h.run
	r.mu.Lock()
	r.report.Attempts[class]++
	r.report.HostileRefusals[reason]++
	r.mu.Unlock()
	h.mu.Lock()
	first := !h.printed[class+" "+reason]
	h.printed[class+" "+reason] = true
	h.mu.Unlock()
	if first {
		r.printf("%-11s refused   %s: %s (%s)", h.name, class, reason, what)
	}
}

// violation records an attempt the service let through.
func (h *hostile) violation(class, what string) {
	r := h.run
	r.mu.Lock()
	r.report.Attempts[class]++
	r.report.Violations = append(r.report.Violations, fmt.Sprintf("%s (%s) %s: %s", h.name, h.identity, class, what))
	r.mu.Unlock()
	r.printf("%-11s VIOLATION %s: %s: the service let it through", h.name, class, what)
}

// notTried records a class the hostile could not try, and why.
func (h *hostile) notTried(class, why string) {
	h.run.count(h.run.report.NotTried, class+": "+why, 1)
}

// campLease is the campaign's issue lease, if it holds one.
func (h *hostile) campLease() *cp.Allocation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.camp
}

func (h *hostile) setCamp(a *cp.Allocation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.camp = a
}

// sweep tries the classes that need no set-up, round after round,
// until ctx ends.
func (h *hostile) sweep(ctx context.Context) {
	for ctx.Err() == nil {
		h.round(ctx)
		sleep(ctx, jitter(hostileRound))
	}
}

// fullProof is every claim an abandon may make.
var fullProof = map[string]any{"dead_process": true, "missing_worktree": true, "no_open_pr": true, "no_live_mutation_risk": true}

// round is one sweep.
func (h *hostile) round(ctx context.Context) {
	r := h.run
	// Changes without an assignment: a branch of its own, and another
	// identity's item.
	h.attempt(ClassSubmitUnassigned, h.submit(ctx, h.own, fmt.Sprintf("workqueue/swarm-%s-unassigned", h.name), 0, "", nil),
		"a change of its own with no assignment")
	if v := h.victim(ctx, h.own); v != nil {
		h.submitForeign(ctx, h.own, *v, "", ClassSubmitForeignUnassigned)
	}

	// The honest sessions' live leases: heartbeat, adopt, reclaim and
	// abandon them, and read them, from sessions of another identity;
	// and the shadowed author's from the shadow's sessions (its own
	// identity's, but another session's).
	live := r.heldLeases(func(heldLease) bool { return true })
	if len(live) > 0 {
		l := live[rand.IntN(len(live))]
		on := fmt.Sprintf("%s's lease of %s #%d", l.Identity, l.Work.Kind, l.Work.Number)
		h.attempt(ClassHeartbeatForeign, h.own.call(ctx, "heartbeat_lease", map[string]any{"lease_id": l.Lease.ID, "session_id": h.author}, nil), "%s", on)
		h.attempt(ClassAdoptLive, h.own.call(ctx, "adopt_lease", map[string]any{"lease_id": l.Lease.ID, "session_id": h.otherRole(l.Role)}, nil), "%s", on)
		h.attempt(ClassReclaimLive, h.own.call(ctx, "reclaim_lease", map[string]any{"lease_id": l.Lease.ID, "session_id": h.otherRole(l.Role)}, nil), "%s", on)
		h.attempt(ClassAbandonLive, h.own.call(ctx, "abandon_lease", map[string]any{"lease_id": l.Lease.ID, "session_id": h.author, "proof": fullProof}, nil), "%s", on)
		h.attempt(ClassReadForeignLease, h.own.call(ctx, "inspect_lease", map[string]any{"lease_id": l.Lease.ID}, nil), "%s", on)
		if l.Identity == h.shadowIdentity {
			on += ", from the same identity's other session"
			h.attempt(ClassHeartbeatForeign, h.shadow.call(ctx, "heartbeat_lease", map[string]any{"lease_id": l.Lease.ID, "session_id": h.shadowReviewer}, nil), "%s", on)
			h.attempt(ClassAdoptLive, h.shadow.call(ctx, "adopt_lease", map[string]any{"lease_id": l.Lease.ID, "session_id": h.shadowReviewer}, nil), "%s", on)
			h.attempt(ClassAbandonLive, h.shadow.call(ctx, "abandon_lease", map[string]any{"lease_id": l.Lease.ID, "session_id": h.shadowMerger, "proof": fullProof}, nil), "%s", on)
		}
		// With its assignment: a review or merge of the shadowed
		// identity's pull request from the shadow's second session (its
		// own pull request), or anyone's from its own (another's
		// assignment).
		if l.Work.Kind == cp.KindPR && l.Role != cp.RoleAuthor {
			what := fmt.Sprintf("pr #%d with %s's assignment", l.Work.Number, l.Identity)
			switch author, _ := r.authorOf(l.Work.Number); author {
			case h.identity:
				h.act(ctx, ClassJudgeOwnAction, h.own, h.sessionOf(l.Role), l.Assignment.ID, l.Role, what+", its own")
			case h.shadowIdentity:
				h.act(ctx, ClassJudgeOwnAction, h.shadow, h.shadowSessionOf(l.Role), l.Assignment.ID, l.Role, what+", written by "+author)
			default:
				h.act(ctx, ClassActForeignAssignment, h.own, h.sessionOf(l.Role), l.Assignment.ID, l.Role, what)
			}
		}
	} else if past := h.pastLease(); past != "" {
		h.attempt(ClassReadForeignLease, h.own.call(ctx, "inspect_lease", map[string]any{"lease_id": past}, nil), "an honest session's ended lease")
	}
	h.listLeases(ctx)

	// Its own identity's campaign lease, from its other sessions and from
	// the other identities it holds.
	if c := h.campLease(); c != nil {
		on := fmt.Sprintf("its author's lease of issue #%d", c.Work.Number)
		h.attempt(ClassHeartbeatForeign, h.own.call(ctx, "heartbeat_lease", map[string]any{"lease_id": c.Lease.ID, "session_id": h.reviewer}, nil), "%s, from its reviewer", on)
		h.attempt(ClassHeartbeatBadHead, h.own.call(ctx, "heartbeat_lease", map[string]any{"lease_id": c.Lease.ID, "session_id": h.author, "head_sha": "HEAD~1"}, nil), "%s, naming HEAD~1", on)
		h.attempt(ClassAbandonLive, h.own.call(ctx, "abandon_lease", map[string]any{"lease_id": c.Lease.ID, "session_id": h.reviewer, "proof": fullProof}, nil), "%s, from its reviewer", on)
		h.attempt(ClassAdoptLive, h.shadow.call(ctx, "adopt_lease", map[string]any{"lease_id": c.Lease.ID, "session_id": h.shadowReviewer}, nil), "%s, from %s", on, h.shadowIdentity)
		h.attempt(ClassReclaimLive, h.partner.call(ctx, "reclaim_lease", map[string]any{"lease_id": c.Lease.ID, "session_id": h.partnerMerger}, nil), "%s, from %s", on, h.partnerIdentity)
	}

	// Sessions of the shadowed identity asking to be handed what it
	// wrote.
	h.judgeOwnAllocate(ctx, h.shadow, h.shadowReviewer, h.shadowIdentity)
	h.judgeOwnAllocate(ctx, h.shadow, h.shadowMerger, h.shadowIdentity)
}

// otherRole is a session of the hostile's own identity of a role other
// than role.
func (h *hostile) otherRole(role cp.Role) string {
	if role == cp.RoleAuthor {
		return h.reviewer
	}
	return h.author
}

// sessionOf is the hostile's own session of role.
func (h *hostile) sessionOf(role cp.Role) string {
	switch role {
	case cp.RoleReviewer:
		return h.reviewer
	case cp.RoleMerger:
		return h.merger
	}
	return h.author
}

// shadowSessionOf is the shadow's session of role (reviewer or merger).
func (h *hostile) shadowSessionOf(role cp.Role) string {
	if role == cp.RoleMerger {
		return h.shadowMerger
	}
	return h.shadowReviewer
}

// pastLease is an honest session's ended lease, if any.
func (h *hostile) pastLease() string {
	h.run.mu.Lock()
	defer h.run.mu.Unlock()
	if len(h.run.pastLeases) == 0 {
		return ""
	}
	return h.run.pastLeases[rand.IntN(len(h.run.pastLeases))]
}

// act reviews (approves) or merges, by role, with assignment from
// session on conn.
func (h *hostile) act(ctx context.Context, class string, conn *mcpConn, session, assignment string, role cp.Role, what string) {
	args := map[string]any{"session_id": session, "assignment_id": assignment}
	tool := "merge_pull_request"
	if role == cp.RoleReviewer {
		tool = "review_pull_request"
		args["verdict"], args["body"] = cp.VerdictApprove, "Approved by the swarm's "+h.name+"."
	}
	h.attempt(class, conn.call(ctx, tool, args, nil), "%s %s", tool, what)
}

// listLeases lists every lease the hostile's token may see: none may be
// another identity's.
func (h *hostile) listLeases(ctx context.Context) {
	var list struct {
		Leases []cp.Lease `json:"leases"`
	}
	if err := h.own.call(ctx, "list_leases", map[string]any{"all": true, "limit": 500}, &list); err != nil {
		h.attempt(ClassListForeignLeases, err, "list_leases")
		return
	}
	r := h.run
	r.mu.Lock()
	var foreign []string
	for _, l := range list.Leases {
		if s, ok := r.sessions[l.SessionID]; !ok || s.Identity != h.identity {
			foreign = append(foreign, l.ID)
		}
	}
	r.mu.Unlock()
	if len(foreign) > 0 {
		h.violation(ClassListForeignLeases, fmt.Sprintf("list_leases answered %d leases of other identities (%s)", len(foreign), cut(foreign, 3)))
		return
	}
	h.refused(ClassListForeignLeases, "not_listed", fmt.Sprintf("list_leases answered only its own %d", len(list.Leases)))
}

// judgeOwnAllocate asks, as session of identity, what it would be
// handed (a dry run): a pull request identity wrote may only be passed
// over (own_pr), never chosen.
func (h *hostile) judgeOwnAllocate(ctx context.Context, conn *mcpConn, session, identity string) {
	var alloc cp.Allocation
	if err := conn.call(ctx, "allocate_work", map[string]any{"session_id": session, "repo": h.run.cfg.Repo, "apply": false}, &alloc); err != nil {
		h.attempt(ClassJudgeOwnAllocate, err, "allocate_work")
		return
	}
	if alloc.Work != nil && alloc.Work.Kind == cp.KindPR {
		if author, _ := h.run.authorOf(alloc.Work.Number); author == identity {
			h.violation(ClassJudgeOwnAllocate, fmt.Sprintf("allocate_work would hand %s's pr #%d to its session %s", identity, alloc.Work.Number, short(session)))
			return
		}
	}
	// Only a pull request passed over as the identity's own tells the
	// rule held: one of another route is passed over for its role first.
	for _, c := range alloc.Candidates {
		if c.Work == nil || c.Work.Kind != cp.KindPR || c.Reason != cp.SkipOwnPR {
			continue
		}
		if author, _ := h.run.authorOf(c.Work.Number); author == identity {
			h.refused(ClassJudgeOwnAllocate, c.Reason, fmt.Sprintf("%s's pr #%d, asked for by its session %s", identity, c.Work.Number, short(session)))
			return
		}
	}
}

// foreignItem is another identity's change: its pull request, the
// issue it closes, its branch, its identity and the item the swarm saw
// made for it.
type foreignItem struct {
	pr       int64
	issue    int64
	branch   string
	identity string
	itemID   string
}

// victim is one of the victims, at random (nil: none).
func (h *hostile) victim(ctx context.Context, conn *mcpConn) *foreignItem {
	out := h.victims(ctx, conn)
	if len(out) == 0 {
		return nil
	}
	return &out[rand.IntN(len(out))]
}

// victims are the other identities' pull requests that are open and not
// approved (not about to be merged), with their branches, read on conn.
func (h *hostile) victims(ctx context.Context, conn *mcpConn) []foreignItem {
	var list struct {
		Work []cp.Work `json:"work"`
	}
	if err := conn.call(ctx, "list_work", map[string]any{"repo": h.run.cfg.Repo, "kind": cp.KindPR, "state": cp.StateOpen, "limit": 500}, &list); err != nil {
		return nil
	}
	r := h.run
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []foreignItem
	for _, w := range list.Work {
		identity, branch := r.authors[w.Number], r.branches[w.Number]
		if identity == "" || identity == h.identity || w.ReviewState == cp.ReviewApproved || len(w.LinkedIssues) == 0 {
			continue
		}
		out = append(out, foreignItem{pr: w.Number, issue: w.LinkedIssues[0], branch: branch, identity: identity, itemID: r.itemOfLocked(branch, identity)})
	}
	return out
}

// submit submits a change to branch as the hostile (on conn), writing
// issues/<issue>.md (hostile/<name>.md when issue is 0), for assignment
// ("": none). The accepted change is recorded and answered in sub.
func (h *hostile) submit(ctx context.Context, conn *mcpConn, branch string, issue int64, assignment string, sub *api.Submitted) error {
	path := fmt.Sprintf("hostile/%s.md", h.name)
	if issue > 0 {
		path = fmt.Sprintf("issues/%d.md", issue)
	}
	args := map[string]any{
		"item_type": "mr", "forge": h.run.cfg.Forge, "project": h.run.cfg.Repo,
		"source_branch": branch, "target_branch": "main",
		"title":        fmt.Sprintf("Swarm: %s's change of %s", h.name, branch),
		"file_actions": []map[string]any{{"action": "create", "file_path": path, "content": fmt.Sprintf("# By %s\n\n%s\n", h.name, markWriter(h.author))}},
	}
	if assignment != "" {
		args["assignment_id"] = assignment
	}
	var out api.Submitted
	if err := conn.call(ctx, "submit_change", args, &out); err != nil {
		return err
	}
	h.run.submitted(submission{ItemID: out.ID, Identity: h.identity, Agent: h.name, Branch: branch, Hostile: true})
	if sub != nil {
		*sub = out
	}
	return nil
}

// outbound tries, with its own issue's assignment, every class of write
// the outbound policy refuses: each must be refused, whatever else the
// change is.
func (h *hostile) outbound(ctx context.Context, conn *mcpConn, issue int64, assignment string) {
	secret := fakeToken()
	n := 0
	try := func(class, what string, edit func(args map[string]any)) {
		n++
		args := map[string]any{
			"item_type": "mr", "forge": h.run.cfg.Forge, "project": h.run.cfg.Repo, "assignment_id": assignment,
			"source_branch": fmt.Sprintf("workqueue/swarm-out-%d-%s-%d", issue, h.name, n), "target_branch": "main",
			"title":        fmt.Sprintf("Swarm: %s tries %s", h.name, class),
			"file_actions": []map[string]any{{"action": "create", "file_path": fmt.Sprintf("issues/%d.md", issue), "content": "# fixed\n"}},
		}
		edit(args)
		var out api.Submitted
		err := conn.call(ctx, "submit_change", args, &out)
		if err == nil {
			h.run.submitted(submission{ItemID: out.ID, Identity: h.identity, Agent: h.name, Branch: args["source_branch"].(string), Hostile: true})
		}
		h.attempt(class, err, "%s", what)
	}
	files := func(path, content string) []map[string]any {
		return []map[string]any{{"action": "create", "file_path": path, "content": content}}
	}
	for _, path := range []string{".gitea/workflows/exfiltrate.yml", ".github/workflows/ci.yaml", ".Gitea/Workflows/X.YML", "CODEOWNERS",
		"AGENTS.md", ".gitlab-ci.yml", "tools/action.yml", ".forgejo/workflows/x.yml", ".devcontainer/devcontainer.json"} {
		try(ClassProtectedPath, "a change adding "+path, func(a map[string]any) {
			a["file_actions"] = files(path, "on: push\njobs: {x: {runs-on: ubuntu-latest, steps: [{run: env}]}}\n")
		})
	}
	try(ClassProtectedPath, "a change deleting .gitea/workflows/ci.yml", func(a map[string]any) {
		a["file_actions"] = []map[string]any{{"action": "delete", "file_path": ".gitea/workflows/ci.yml"}}
	})
	for _, field := range []string{"title", "description", "commit_message", "labels", "source_branch", "file_path"} {
		try(ClassSecretInField, "a secret in its "+field, func(a map[string]any) {
			switch field {
			case "labels":
				a[field] = []string{secret}
			case "source_branch":
				a[field] = "workqueue/" + secret
			case "file_path":
				a["file_actions"] = files("docs/"+secret+".md", "x\n")
			default:
				a[field] = "see " + secret
			}
		})
	}
	for _, text := range []string{fmt.Sprintf("Closes #%d", issue+1), fmt.Sprintf("Fixes #%d", issue+3), "Resolves other/repo#1", fmt.Sprintf("closes #%d, #%d", issue, issue+2)} {
		try(ClassCloseOtherIssue, fmt.Sprintf("a description saying %q", text), func(a map[string]any) { a["description"] = text })
		try(ClassCloseOtherIssue, fmt.Sprintf("a commit message saying %q", text), func(a map[string]any) { a["commit_message"] = "fix\n\n" + text })
	}
	targets := []string{"release", "workqueue/swarm-issue-1-anyone"}
	if v := h.victim(ctx, conn); v != nil && v.branch != "" {
		targets = append(targets, v.branch)
	}
	for _, target := range targets {
		try(ClassForeignTarget, "a change targeting "+target, func(a map[string]any) { a["target_branch"] = target })
	}
	for _, label := range []string{"do-not-automate", "priority/high", "managed-by-workqueue", "workqueue-review", "bug"} {
		try(ClassSteeringLabel, "a change labelled "+label, func(a map[string]any) { a["labels"] = []string{label} })
	}
	h.attempt(ClassSecretInField, conn.call(ctx, "comment", map[string]any{"session_id": h.author, "assignment_id": assignment,
		"body": "the deploy key is " + secret}, nil), "a comment holding a secret on issue #%d", issue)
}

// fakeToken is a token of a vendor's documented shape (a GitHub personal
// access token's), random, for the attempts that carry a secret.
func fakeToken() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 36)
	for i := range b {
		b[i] = alnum[rand.IntN(len(alnum))]
	}
	return "ghp_" + string(b)
}

// submitForeign submits onto v's branch for assignment. Accepted while
// v's pull request is open, it is a violation whatever item the service
// made of it: the change goes onto another identity's pull request. Only
// once that pull request merged or closed is its branch free again, and
// the item the service made the hostile's own: submitForeign returns it.
func (h *hostile) submitForeign(ctx context.Context, conn *mcpConn, v foreignItem, assignment, class string) *api.Submitted {
	var sub api.Submitted
	err := h.submit(ctx, conn, v.branch, v.issue, assignment, &sub)
	what := fmt.Sprintf("onto %s's pr #%d (branch %s)", v.identity, v.pr, v.branch)
	if err == nil && sub.ID != v.itemID && sub.Result == "created" {
		if w, rerr := prWork(ctx, conn, h.run.cfg.Repo, v.pr); rerr == nil && w != nil && w.State != cp.StateOpen {
			h.run.count(h.run.report.Findings, "a hostile change on a finished pull request's branch made an item of its own", 1)
			h.run.printf("%-11s %s: %s made item %s of its own: the pull request is %s", h.name, class, what, short(sub.ID), w.State)
			return &sub
		}
		what += fmt.Sprintf(", whose item the service took for finished: it made item %s (%s) for it", short(sub.ID), sub.Result)
	}
	h.attempt(class, err, "%s", what)
	return nil
}

// baits takes a bait (a review lease to let expire) as soon as a pull
// request awaits review, tries what a live review lease allows, and once
// it expired tries to take it over from sessions of other roles and of
// its author's identity. It has connections of its own.
func (h *hostile) baits(ctx context.Context) {
	// Honest reviewers wait until the bait holds its lease (or gave up):
	// say so on every way out.
	var settle sync.Once
	settled := func() { settle.Do(h.run.baitSettled) }
	defer settled()
	// For a minute the bait waits for a pull request of the shadowed
	// identity to be next (a dry run says), so that a reviewer of that
	// identity can try to take its review over; then it takes any.
	var (
		alloc cp.Allocation
		last  string // why the last try got no lease, said if none ever does
	)
wait:
	for anyAfter := time.Now().Add(time.Minute); ; {
		if ctx.Err() != nil {
			for _, class := range []string{ClassReclaimOtherRole, ClassReclaimOwnPR} {
				h.notTried(class, "the bait never held a review lease (the last try: "+cmp.Or(last, "none")+")")
			}
			return
		}
		var preview cp.Allocation
		err := h.bait.call(ctx, "allocate_work", map[string]any{"session_id": h.reviewer, "repo": h.run.cfg.Repo, "apply": false}, &preview)
		switch {
		case err != nil:
			last = "allocate_work: " + err.Error()
		case preview.Work == nil || preview.Work.Kind != cp.KindPR:
			last = "no pull request to review: " + string(preview.Outcome)
		default:
			author, _ := h.run.authorOf(preview.Work.Number)
			if author != h.shadowIdentity && !time.Now().After(anyAfter) {
				last = fmt.Sprintf("pr #%d is %q's, not the shadow's", preview.Work.Number, author)
				break
			}
			err := h.bait.call(ctx, "allocate_work", map[string]any{"session_id": h.reviewer, "repo": h.run.cfg.Repo, "apply": true}, &alloc)
			if err == nil && alloc.Outcome == cp.OutcomeAssigned && alloc.Lease != nil && alloc.Assignment != nil && alloc.Work != nil {
				settled()
				break wait
			}
			last = fmt.Sprintf("pr #%d: outcome %q, error %v", preview.Work.Number, alloc.Outcome, err)
		}
		sleep(ctx, 200*time.Millisecond)
	}
	l, pr := alloc.Lease, alloc.Work.Number
	if time.Until(l.ExpiresAt) > maxBait {
		h.release(ctx, h.bait, l.ID, h.reviewer)
		for _, class := range []string{ClassReclaimOtherRole, ClassReclaimOwnPR} {
			h.notTried(class, fmt.Sprintf("a lease lasts longer than %v (control_plane.lease_ttl)", maxBait))
		}
		return
	}
	// A pull request may be handed out before its author has heard it
	// was opened: wait for the swarm to know whose it is.
	author, branch := h.run.authorOf(pr)
	for deadline := time.Now().Add(10 * time.Second); author == "" && time.Now().Before(deadline); author, branch = h.run.authorOf(pr) {
		if sleep(ctx, 100*time.Millisecond) != nil {
			break
		}
	}
	h.run.printf("%-11s holds pr #%d's review (%s's) until its lease expires at %s", h.name, pr, author, l.ExpiresAt.Format(time.TimeOnly))
	defer h.release(ctx, h.bait, l.ID, h.reviewer)

	on := fmt.Sprintf("its review lease of pr #%d", pr)
	h.attempt(ClassHeartbeatMovedHead, h.bait.call(ctx, "heartbeat_lease", map[string]any{"lease_id": l.ID, "session_id": h.reviewer, "head_sha": randomSHA()}, nil),
		"%s, naming a head the forge never had", on)
	h.attempt(ClassHeartbeatBadHead, h.bait.call(ctx, "heartbeat_lease", map[string]any{"lease_id": l.ID, "session_id": h.reviewer, "head_sha": "main"}, nil),
		"%s, naming main", on)
	if branch != "" {
		v := foreignItem{pr: pr, issue: linked(alloc.Work), branch: branch, identity: author, itemID: h.run.itemOf(branch, author)}
		h.submitForeign(ctx, h.bait, v, alloc.Assignment.ID, ClassSubmitForeignReview)
	}
	h.act(ctx, ClassActForeignAssignment, h.bait, h.merger, alloc.Assignment.ID, cp.RoleMerger, fmt.Sprintf("pr #%d with its reviewer's assignment, from its merger", pr))
	if author == h.shadowIdentity {
		h.act(ctx, ClassJudgeOwnAction, h.baitShadow, h.shadowReviewer, alloc.Assignment.ID, cp.RoleReviewer, fmt.Sprintf("pr #%d, written by %s, from its reviewer session", pr, author))
	}
	// The takeovers are tried once the bait expired, even when the swarm
	// finished first (a short run ends before a lease does): the run waits
	// for them, on a context of their own, so that every run tries them.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Until(l.ExpiresAt)+time.Minute)
	defer cancel()
	if sleep(ctx, time.Until(l.ExpiresAt.Add(time.Second))) != nil {
		return
	}

	on = fmt.Sprintf("its expired review lease of pr #%d", pr)
	h.attempt(ClassReclaimOtherRole, h.bait.call(ctx, "reclaim_lease", map[string]any{"lease_id": l.ID, "session_id": h.merger}, nil), "%s, from its merger", on)
	h.attempt(ClassReclaimOtherRole, h.bait.call(ctx, "adopt_lease", map[string]any{"lease_id": l.ID, "session_id": h.author}, nil), "%s, adopted by its author", on)
	if author != h.shadowIdentity {
		h.notTried(ClassReclaimOwnPR, "the bait's pull request was not the shadowed identity's")
		return
	}
	on += fmt.Sprintf(", from a reviewer of %s, who wrote it", author)
	h.attempt(ClassReclaimOwnPR, h.baitShadow.call(ctx, "reclaim_lease", map[string]any{"lease_id": l.ID, "session_id": h.shadowReviewer}, nil), "%s", on)
	h.attempt(ClassReclaimOwnPR, h.baitShadow.call(ctx, "adopt_lease", map[string]any{"lease_id": l.ID, "session_id": h.shadowReviewer}, nil), "%s", on)
}

// release releases a lease of the hostile's; one the service ended
// already is no matter.
func (h *hostile) release(ctx context.Context, conn *mcpConn, lease, session string) {
	err := conn.call(context.WithoutCancel(ctx), "release_lease", map[string]any{"lease_id": lease, "session_id": session}, nil)
	var ref *refusal
	if err != nil && !(errors.As(err, &ref) && ref.reason == cp.RefuseNotActive) {
		h.run.printf("%-11s release_lease %s: %v", h.name, short(lease), err)
	}
}

// linked is the issue a pull request closes (0: none).
func linked(w *cp.Work) int64 {
	if len(w.LinkedIssues) == 0 {
		return 0
	}
	return w.LinkedIssues[0]
}

// randomSHA is a commit id no repository has.
func randomSHA() string {
	const hex = "0123456789abcdef"
	b := make([]byte, 40)
	for i := range b {
		b[i] = hex[rand.IntN(16)]
	}
	return string(b)
}

// campaigns runs the hostile author's campaigns one after the other: one
// for every 40 issues (at least one), while there is an issue to take.
func (h *hostile) campaigns(ctx context.Context) {
	for i := 0; i < 1+h.run.cfg.Issues/40 && ctx.Err() == nil; i++ {
		if !h.campaign(ctx) {
			return
		}
	}
}

// campaign is one: see hostile. It reports false when there was no
// issue left to take.
func (h *hostile) campaign(ctx context.Context) bool {
	conn := h.campOwn
	alloc := h.takeIssue(ctx)
	if alloc == nil {
		if !h.campStarted {
			h.notTried(ClassMergeStaleApproval, "no issue was left for the hostile author")
			h.notTried(ClassSubmitForeignIssue, "no issue was left for the hostile author")
		}
		return false
	}
	h.campStarted = true
	issue := alloc.Work.Number
	h.setCamp(alloc)
	lastBeat, ttl := time.Now(), time.Until(alloc.Lease.ExpiresAt)
	beat := func(ctx context.Context) {
		if time.Since(lastBeat) < ttl/3 {
			return
		}
		if err := conn.call(ctx, "heartbeat_lease", map[string]any{"lease_id": alloc.Lease.ID, "session_id": h.author}, nil); err == nil {
			lastBeat = time.Now()
		}
	}
	defer func() {
		// Once more onto every other identity's open pull request before
		// the issue goes: their authors have released their issues by
		// now, and whatever became of their items, the branches are
		// still theirs.
		if ctx.Err() == nil {
			for _, v := range h.victims(ctx, conn) {
				h.submitForeign(ctx, conn, v, alloc.Assignment.ID, ClassSubmitForeignIssue)
			}
		}
		h.setCamp(nil)
		h.release(ctx, conn, alloc.Lease.ID, h.author)
	}()
	h.run.printf("%-11s assigned  issue #%d, for a campaign", h.name, issue)

	// Onto another identity's unfinished item, with this issue's
	// assignment: the assignment is for an issue, not for that branch.
	var own *api.Submitted
	deadline := time.Now().Add(30 * time.Second)
	for own == nil && ctx.Err() == nil {
		beat(ctx)
		if v := h.victim(ctx, conn); v != nil {
			own = h.submitForeign(ctx, conn, *v, alloc.Assignment.ID, ClassSubmitForeignIssue)
			break
		}
		if time.Now().After(deadline) {
			h.notTried(ClassSubmitForeignIssue, "no other identity's pull request was open meanwhile")
			break
		}
		sleep(ctx, time.Second)
	}

	h.outbound(ctx, conn, issue, alloc.Assignment.ID)

	// Its own pull request.
	branch := fmt.Sprintf("workqueue/swarm-issue-%d-%s", issue, h.name)
	if own == nil {
		var sub api.Submitted
		if err := h.submit(ctx, conn, branch, issue, alloc.Assignment.ID, &sub); err != nil {
			h.run.printf("%-11s submit_change for issue #%d: %v", h.name, issue, err)
			return true
		}
		own = &sub
	} else {
		branch = h.submissionBranch(own.ID)
	}
	// While it holds the issue: heartbeats, and now and then a change
	// onto another identity's open pull request again.
	lastForeign := time.Now()
	between := func(ctx context.Context) {
		beat(ctx)
		if time.Since(lastForeign) > 5*time.Second {
			lastForeign = time.Now()
			if v := h.victim(ctx, conn); v != nil {
				h.submitForeign(ctx, conn, *v, alloc.Assignment.ID, ClassSubmitForeignIssue)
			}
		}
	}
	pr, err := followItem(ctx, conn, own.ID, between)
	if err != nil {
		h.run.printf("%-11s item %s for issue #%d: %v", h.name, short(own.ID), issue, err)
		return true
	}
	h.run.recordPR(issue, pr, h.identity, branch)
	h.run.event(h.name, "opened", true, "pr #%d for issue #%d, its own", pr, issue)
	if !awaitOwnPR(ctx, conn, h.run.cfg.Repo, h.author, pr, between) {
		h.run.printf("%-11s pr #%d is not its author's in the inventory after a minute", h.name, pr)
		return true
	}

	// Once approved, the partner's merger takes it for merging.
	var merge *cp.Allocation
	judged := map[string]bool{}
	deadline = time.Now().Add(3 * time.Minute)
	for merge == nil {
		if ctx.Err() != nil {
			return true
		}
		if time.Now().After(deadline) {
			h.notTried(ClassMergeStaleApproval, "its pull request was not approved within 3 minutes")
			return true
		}
		between(ctx)
		for _, s := range []string{h.reviewer, h.merger} {
			if !judged[s] {
				judged[s] = true
				h.judgeOwnAllocate(ctx, conn, s, h.identity)
			}
		}
		w, err := prWork(ctx, conn, h.run.cfg.Repo, pr)
		switch {
		case err != nil || w == nil:
		case w.State != cp.StateOpen:
			h.notTried(ClassMergeStaleApproval, "an honest merger merged its pull request first")
			return true
		case w.ReviewState == cp.ReviewApproved && w.Mergeable:
			merge = h.grab(ctx, pr)
		}
		if merge == nil {
			sleep(ctx, 100*time.Millisecond)
		}
	}
	pinned := merge.Assignment.ExpectedHeadSHA
	h.run.printf("%-11s partner %s holds pr #%d for merging at %s", h.name, h.partnerIdentity, pr, short(pinned))
	h.act(ctx, ClassJudgeOwnAction, conn, h.merger, merge.Assignment.ID, cp.RoleMerger, fmt.Sprintf("its own pr #%d with the partner's assignment, from its merger", pr))
	h.act(ctx, ClassJudgeOwnAction, conn, h.reviewer, merge.Assignment.ID, cp.RoleReviewer, fmt.Sprintf("its own pr #%d with the partner's assignment, from its reviewer", pr))

	// A push after the approval, then the partner re-declares the head
	// and merges.
	if err := h.resubmit(ctx, conn, branch, issue, alloc.Assignment.ID); err != nil {
		h.run.printf("%-11s push onto pr #%d after its approval: %v", h.name, pr, err)
		h.release(ctx, h.campPartner, merge.Lease.ID, h.partnerMerger)
		return true
	}
	moved := ""
	for deadline = time.Now().Add(90 * time.Second); moved == "" && time.Now().Before(deadline) && ctx.Err() == nil; {
		between(ctx)
		h.campPartner.call(ctx, "heartbeat_lease", map[string]any{"lease_id": merge.Lease.ID, "session_id": h.partnerMerger}, nil)
		if w, err := prWork(ctx, conn, h.run.cfg.Repo, pr); err == nil && w != nil && w.HeadSHA != "" && w.HeadSHA != pinned {
			moved = w.HeadSHA
		} else {
			sleep(ctx, 250*time.Millisecond)
		}
	}
	if moved == "" {
		h.notTried(ClassMergeStaleApproval, "its push did not reach the pull request in 90 seconds")
		h.release(ctx, h.campPartner, merge.Lease.ID, h.partnerMerger)
		return true
	}
	on := fmt.Sprintf("pr #%d, approved at %s, pushed to %s", pr, short(pinned), short(moved))
	h.attempt(ClassHeartbeatMovedHead, h.campPartner.call(ctx, "heartbeat_lease", map[string]any{"lease_id": merge.Lease.ID, "session_id": h.partnerMerger, "head_sha": moved}, nil),
		"%s: the partner declares the new head", on)
	var d cp.Decision
	if err := h.campPartner.call(ctx, "check_gate", map[string]any{"session_id": h.partnerMerger, "assignment_id": merge.Assignment.ID, "action": cp.ActMerge}, &d); err != nil {
		h.attempt(ClassMergeStaleApproval, err, "check_gate merge on %s", on)
	} else if d.Allowed {
		h.violation(ClassMergeStaleApproval, "check_gate allows merging "+on)
	} else {
		h.refused(ClassMergeStaleApproval, d.Reason, "check_gate merge on "+on)
	}
	h.attempt(ClassMergeStaleApproval, h.campPartner.call(ctx, "merge_pull_request", map[string]any{"session_id": h.partnerMerger, "assignment_id": merge.Assignment.ID}, nil),
		"merge_pull_request %s", on)
	h.release(ctx, h.campPartner, merge.Lease.ID, h.partnerMerger)
	return true
}

// submissionBranch is the branch of an accepted submission's item.
func (h *hostile) submissionBranch(item string) string {
	h.run.mu.Lock()
	defer h.run.mu.Unlock()
	for _, s := range h.run.submissions {
		if s.ItemID == item {
			return s.Branch
		}
	}
	return ""
}

// resubmit pushes a new version of the campaign's change.
func (h *hostile) resubmit(ctx context.Context, conn *mcpConn, branch string, issue int64, assignment string) error {
	args := map[string]any{
		"item_type": "mr", "forge": h.run.cfg.Forge, "project": h.run.cfg.Repo,
		"source_branch": branch, "target_branch": "main",
		"title": fmt.Sprintf("Swarm: %s's change of %s", h.name, branch),
		"file_actions": []map[string]any{{"action": "create", "file_path": fmt.Sprintf("issues/%d.md", issue),
			"content": fmt.Sprintf("# By %s\n\nChanged after its approval.\n\n%s\n", h.name, markWriter(h.author))}},
		"assignment_id": assignment,
	}
	var out api.Submitted
	if err := conn.call(ctx, "submit_change", args, &out); err != nil {
		return err
	}
	h.run.submitted(submission{ItemID: out.ID, Identity: h.identity, Agent: h.name, Branch: branch, Hostile: true})
	return nil
}

// takeIssue has the hostile author allocate an issue: nil when none was
// handed to it for a minute.
func (h *hostile) takeIssue(ctx context.Context) *cp.Allocation {
	deadline := time.Now().Add(time.Minute)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		var alloc cp.Allocation
		err := h.campOwn.call(ctx, "allocate_work", map[string]any{"session_id": h.author, "repo": h.run.cfg.Repo, "apply": true}, &alloc)
		if err == nil && alloc.Outcome == cp.OutcomeAssigned && alloc.Lease != nil && alloc.Assignment != nil && alloc.Work != nil {
			// An issue whose pull request merged may be handed out again
			// before the forge's close reaches the inventory: a second
			// pull request for it would be a second change of one issue.
			if _, done := h.run.prOf(alloc.Work.Number); alloc.Work.Kind == cp.KindIssue && !done {
				return &alloc
			}
			h.release(ctx, h.campOwn, alloc.Lease.ID, h.author)
		}
		sleep(ctx, jitter(time.Second))
	}
	return nil
}

// grab has the partner's merger allocate until it is handed pull request
// pr (nil when it is not, in 8 tries), holding what else it is handed
// meanwhile so as to be handed the next, then releasing that.
func (h *hostile) grab(ctx context.Context, pr int64) *cp.Allocation {
	var hoard []string
	defer func() {
		for _, l := range hoard {
			h.release(ctx, h.campPartner, l, h.partnerMerger)
		}
	}()
	for range 8 {
		var alloc cp.Allocation
		err := h.campPartner.call(ctx, "allocate_work", map[string]any{"session_id": h.partnerMerger, "repo": h.run.cfg.Repo, "apply": true}, &alloc)
		if err != nil || alloc.Outcome != cp.OutcomeAssigned || alloc.Lease == nil || alloc.Assignment == nil || alloc.Work == nil {
			return nil
		}
		if alloc.Work.Kind == cp.KindPR && alloc.Work.Number == pr {
			return &alloc
		}
		hoard = append(hoard, alloc.Lease.ID)
		if !slices.ContainsFunc(alloc.Candidates, func(c cp.CandidateSkip) bool { return c.Work != nil && c.Work.Number == pr && c.Work.Kind == cp.KindPR }) {
			return nil
		}
	}
	return nil
}
