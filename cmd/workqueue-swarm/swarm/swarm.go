package swarm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/workqueue-dev/workqueue/client"
	cp "github.com/workqueue-dev/workqueue/controlplane"
)

// Config is one swarm run.
type Config struct {
	// Service is the workqueue service's base URL; the agents connect to
	// its /mcp.
	Service string
	// AgentTokens are tokens with permission agent only, one per session
	// and each its own identity. The last Hostile of them are the hostile
	// sessions'; the honest sessions use the others round robin when
	// there are fewer.
	AgentTokens []string
	// AdminToken (permission admin) lets the stage read the inventory, sync
	// it when no webhook carried a change, and lets the audit read every
	// session's leases. It is never given to an agent.
	AdminToken string
	// Forge is the configured forge's name; Repo the repository
	// (owner/name) the issues are opened in, which control_plane.repos must
	// cover.
	Forge, Repo string
	// GiteaURL and GiteaToken are the stage's: they open the issues and
	// read the forge for the audit. Agents never see them.
	GiteaURL, GiteaToken string
	// Issues is how many issues to open; Sessions how many agent sessions
	// to run (at least 3 honest ones: see Roles).
	Issues, Sessions int
	// Hostile is how many of the Sessions are hostile (see hostile.go):
	// each with a token of its own, and sessions under an honest author's
	// token too, it tries every way around the gate against the others'
	// work while they work. Every attempt must be refused; one that is
	// not is a violation the report counts.
	Hostile int
	// RunawayToken, when set, runs the runaway (runaway.go) beside the
	// sessions: an agent-only token of an identity of its own that
	// comments in a loop until its budget stops it and the stage freezes
	// it. Its effect on the others' work must be none.
	RunawayToken string
	// Events reads the control plane's event log, which the API does not
	// list (controlplane.Store does it): the audit reads from it which
	// session reviewed and merged what, at which head. Required.
	Events EventLog
	// Timeout bounds the run: what is not merged by then is a failure
	// (default DefaultTimeout).
	Timeout time.Duration
	// Poll is how long a session waits before asking for work again when
	// there was none (default 300ms, with jitter).
	Poll time.Duration
	// Stall is how long the stage waits without any progress before it
	// syncs the inventory itself (default 30s). Webhooks carry every
	// change of state within seconds, but not Gitea's finding that a pull
	// request merges again: a sync re-reads that, so it says the merge
	// route was stuck on a stale mergeable flag or a lost webhook.
	Stall time.Duration
	// Out receives one line per event and the summary; nil discards them.
	Out io.Writer
}

// EventLog reads the control plane's event log, newest first.
type EventLog interface {
	ListEvents(ctx context.Context, f cp.EventFilter) ([]cp.Event, error)
}

// DefaultTimeout is the bound of a run of n issues: generous, because
// merges are bounded by the forge (Gitea checks again whether every open
// pull request merges after each merge, one at a time).
func DefaultTimeout(n int) time.Duration {
	return max(15*time.Minute, 2*time.Minute+time.Duration(n)*30*time.Second)
}

// Split is how many honest sessions of each role a swarm runs, and how
// many hostile ones.
type Split struct {
	Authors, Reviewers, Mergers int
	Hostile                     int
}

// Roles splits n sessions between the roles: one merger for every eight
// sessions (at least one), a reviewer for every four (at least one), the
// rest authors. Authors do the slow part (a change becomes a branch and a
// pull request on the forge), a review or a merge is one forge call, so
// 8 sessions are 5 authors, 2 reviewers and 1 merger. Fewer than 3
// sessions cannot fill the roles.
func Roles(n int) (Split, error) {
	if n < 3 {
		return Split{}, fmt.Errorf("sessions: at least 3 (an author, a reviewer and a merger), got %d", n)
	}
	s := Split{Mergers: max(1, n/8), Reviewers: max(1, n/4)}
	s.Authors = n - s.Mergers - s.Reviewers
	return s, nil
}

// Sessions is how many sessions a run of asked sessions has, and how many
// of them are hostile, when hostile is negative (not given): every run
// shows the gate at work, so two are hostile from 5 sessions on and one
// below, and a run too small for three honest sessions beside its
// hostile one (an author, a reviewer, a merger) gets the sessions it
// needs. note says, in words, what was added; "" when nothing was. A
// hostile count that is given is kept as it is.
func Sessions(asked, hostile int) (sessions, hostileN int, note string) {
	if hostile >= 0 {
		return asked, hostile, ""
	}
	hostile = 1
	if asked >= 5 {
		hostile = 2
	}
	if asked-hostile >= 3 {
		return asked, hostile, ""
	}
	return hostile + 3, hostile, fmt.Sprintf("%d sessions asked for; %d run, so that three honest ones (an author, a reviewer, a merger) work beside the hostile one that shows the gate refusing it (-hostile 0 for none)",
		asked, hostile+3)
}

func (s Split) String() string {
	out := fmt.Sprintf("%d authors, %d reviewers, %d mergers", s.Authors, s.Reviewers, s.Mergers)
	if s.Hostile > 0 {
		out += fmt.Sprintf(", %d hostile", s.Hostile)
	}
	return out
}

// Report is what a run did and what the audit found.
type Report struct {
	Split    Split
	Duration time.Duration
	// Done says every issue was closed and nothing was left open within
	// the timeout.
	Done bool
	// Issues opened and closed; pull requests opened and merged (read
	// from the forge).
	IssuesOpened, IssuesClosed int
	PRsOpened, PRsMerged       int
	// Events counts the agents' events by kind: assigned, submitted,
	// opened, approved, merged, refused.
	Events map[string]int
	// Allocations counts allocate_work's outcomes (assigned, wait,
	// no_safe_work).
	Allocations map[string]int
	// Conflicts counts the candidates allocations passed over because
	// another session took them meanwhile (lost_race): the races the
	// allocator settled.
	Conflicts map[string]int
	// Refusals counts refusals by reason: the gate's answers, tool errors
	// and changes the service cancelled.
	Refusals map[string]int
	// Findings counts what the swarm saw the service do that it should
	// not, although the gate or the engine stopped it before harm.
	Findings map[string]int
	// Attempts counts the hostile sessions' attempts by class (see
	// hostile.go), HostileRefusals their refusals by reason, and
	// NotTried the classes a hostile session could not try, and why (a
	// race it lost to an honest session).
	Attempts, HostileRefusals, NotTried map[string]int
	// Violations are the hostile attempts the service let through: each
	// is a safety violation.
	Violations []string
	// Leases is how many leases the control plane made in the run.
	Leases int
	// LeftBranches are the branches left on the forge besides main.
	LeftBranches []string
	// Syncs counts the inventory syncs the stage asked for because
	// nothing moved (0 when webhooks carried everything).
	Syncs int
	// Checks are the safety checks, in order.
	Checks []Check
	// Runaway is what the runaway did, when one ran.
	Runaway *RunawayReport
}

// Check is one safety check's result.
type Check struct {
	Name   string
	Detail string   // what was checked, in figures
	Failed []string // each violation found; none when it passed
}

// OK reports whether every safety check passed, no hostile attempt got
// through and everything was done.
func (r *Report) OK() bool {
	if !r.Done || len(r.Violations) > 0 {
		return false
	}
	for _, c := range r.Checks {
		if len(c.Failed) > 0 {
			return false
		}
	}
	return true
}

// Run opens cfg.Issues issues, runs cfg.Sessions agent sessions until
// every issue is closed (or cfg.Timeout), ends them, and audits the run.
// An error is a run that could not be made or audited (the service or
// the forge unreachable); a run that was made but failed a check or did
// not finish is a Report whose OK is false.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Hostile < 0 || cfg.Hostile >= cfg.Sessions {
		return nil, fmt.Errorf("hostile: from 0 to fewer than the %d sessions, got %d", cfg.Sessions, cfg.Hostile)
	}
	split, err := Roles(cfg.Sessions - cfg.Hostile)
	if err != nil {
		return nil, fmt.Errorf("%w (%d of the %d are hostile)", err, cfg.Hostile, cfg.Sessions)
	}
	split.Hostile = cfg.Hostile
	if len(cfg.AgentTokens) == 0 || cfg.AdminToken == "" {
		return nil, errors.New("tokens: the agents' (permission agent) and the stage's (permission admin) are required")
	}
	if len(cfg.AgentTokens) <= cfg.Hostile {
		return nil, fmt.Errorf("tokens: %d agent tokens for %d hostile sessions: each needs one of its own, and the honest ones at least one", len(cfg.AgentTokens), cfg.Hostile)
	}
	if cfg.Events == nil {
		return nil, errors.New("events: the audit reads the control plane's event log")
	}
	if cfg.Issues < 1 {
		return nil, fmt.Errorf("issues: at least 1, got %d", cfg.Issues)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 300 * time.Millisecond
	}
	if cfg.Stall <= 0 {
		cfg.Stall = 30 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout(cfg.Issues)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	admin, err := client.New(cfg.Service, cfg.AdminToken)
	if err != nil {
		return nil, err
	}
	gitea, err := sdk.NewClient(cfg.GiteaURL, sdk.SetToken(cfg.GiteaToken), sdk.SetContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("gitea client: %w", err)
	}
	r := &run{cfg: cfg, admin: admin, gitea: gitea, start: time.Now(), report: &Report{Split: split,
		Events: map[string]int{}, Allocations: map[string]int{}, Conflicts: map[string]int{}, Refusals: map[string]int{}, Findings: map[string]int{},
		Attempts: map[string]int{}, HostileRefusals: map[string]int{}, NotTried: map[string]int{}},
		prs: map[int64]int64{}, authors: map[int64]string{}, branches: map[int64]string{}, held: map[string]heldLease{}, sessions: map[string]sessionRecord{}}
	r.progress = r.start
	r.baited = make(chan struct{})
	r.baitsLeft.Store(int32(split.Hostile))
	if split.Hostile == 0 {
		close(r.baited) // no bait: reviewers never wait
	}
	r.printf("swarm: %d issues in %s, %d sessions (%s), at most %v", cfg.Issues, cfg.Repo, cfg.Sessions, split, cfg.Timeout)

	issues, err := r.openIssues(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.awaitInventory(ctx, len(issues)); err != nil {
		return nil, err
	}

	agents, err := r.startAgents(ctx, split)
	if err != nil {
		return nil, err
	}
	hostiles, err := r.startHostiles(ctx, split, agents)
	if err != nil {
		return nil, err
	}
	loose, err := r.startRunaway(ctx)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if loose != nil {
		wg.Go(func() { loose.loop(runCtx) })
	}
	for _, a := range agents {
		wg.Go(func() { a.loop(runCtx) })
	}
	for _, h := range hostiles {
		wg.Go(func() { h.sweep(runCtx) })
		wg.Go(func() { h.campaigns(runCtx) })
		wg.Go(func() { h.baits(runCtx) })
	}
	r.report.Done, err = r.awaitDone(ctx, issues)
	stop()
	wg.Wait()
	for _, a := range agents {
		a.end()
	}
	for _, h := range hostiles {
		h.end()
	}
	if loose != nil {
		rep := loose.end()
		r.report.Runaway = &rep
	}
	r.report.Duration = time.Since(r.start)
	if err != nil {
		return nil, err
	}
	if !r.report.Done {
		r.printf("swarm: not done within %v", cfg.Timeout)
	}
	if err := r.audit(ctx, issues); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return r.report, nil
}

// run is one swarm run's shared state.
type run struct {
	cfg   Config
	admin *client.Client // the stage's and the audit's, never an agent's
	gitea *sdk.Client    // likewise
	start time.Time

	// baited is closed once every hostile bait holds its review lease or
	// gave up (baitsLeft counts those still trying): until then, for at
	// most baitHead, honest reviewers take no work (awaitBait).
	baited    chan struct{}
	baitsLeft atomic.Int32

	mu       sync.Mutex
	report   *Report
	progress time.Time       // the last event's time
	prs      map[int64]int64 // issue → the pull request opened for it

	// What the swarm knows of the others' work, for the hostile sessions
	// to aim at (ids leak, in logs and checkpoints; the hostile sessions
	// are told them all) and for the audit to check the service's record
	// against.
	authors     map[int64]string         // pull request → the identity whose session opened it
	branches    map[int64]string         // pull request → its source branch
	held        map[string]heldLease     // honest sessions' live leases, by id
	pastLeases  []string                 // leases honest sessions held once, the latest last
	sessions    map[string]sessionRecord // every session the swarm started, by id
	submissions []submission             // every submission the service accepted
}

// baitHead is how long after the run starts honest reviewers leave the
// pull requests to the hostile baits at most: the bait waits a minute for
// one of its shadow's, then takes any.
const baitHead = 90 * time.Second

// awaitBait holds an honest reviewer back until the baits hold their
// review leases, or baitHead passed. A reviewer polling faster than a
// bait took every pull request first in some runs, and the bait's
// takeovers of an expired review lease went untried.
func (r *run) awaitBait(ctx context.Context) {
	select {
	case <-r.baited:
		return
	default:
	}
	t := time.NewTimer(time.Until(r.start.Add(baitHead)))
	defer t.Stop()
	select {
	case <-r.baited:
	case <-t.C:
	case <-ctx.Done():
	}
}

// baitSettled says one bait holds its lease or gave up.
func (r *run) baitSettled() {
	if r.baitsLeft.Add(-1) == 0 {
		close(r.baited)
	}
}

// sessionRecord is a session the swarm started.
type sessionRecord struct {
	cp.Session
	Agent   string // who in the progress lines
	Hostile bool   // started by a hostile session (under any token)
}

// heldLease is a lease an honest session holds now.
type heldLease struct {
	Lease      cp.LeaseRef
	Assignment cp.AssignmentRef
	Work       cp.Work
	Session    string
	Identity   string
	Role       cp.Role
}

// submission is a change the service accepted, and for whom.
type submission struct {
	ItemID   string
	Identity string
	Agent    string
	Branch   string
	Hostile  bool
}

// addSession records a session the swarm started.
func (r *run) addSession(s cp.Session, agent string, hostile bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions[s.ID] = sessionRecord{Session: s, Agent: agent, Hostile: hostile}
}

// hold records the lease an honest agent was given; unhold its end.
func (r *run) hold(a *agent, alloc *cp.Allocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held[alloc.Lease.ID] = heldLease{Lease: *alloc.Lease, Assignment: *alloc.Assignment, Work: *alloc.Work,
		Session: a.id, Identity: a.identity, Role: a.role}
}

func (r *run) unhold(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, id)
	r.pastLeases = append(r.pastLeases, id)
	if len(r.pastLeases) > 64 {
		r.pastLeases = r.pastLeases[1:]
	}
}

// heldLeases are the honest sessions' live leases now, matching keep.
func (r *run) heldLeases(keep func(heldLease) bool) []heldLease {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []heldLease
	for _, l := range r.held {
		if keep(l) {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b heldLease) int { return strings.Compare(a.Lease.ID, b.Lease.ID) })
	return out
}

// submitted records a submission the service accepted.
func (r *run) submitted(s submission) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.submissions = append(r.submissions, s)
}

// itemOf is the item identity's accepted submission for branch made,
// "" when none did.
func (r *run) itemOf(branch, identity string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.itemOfLocked(branch, identity)
}

func (r *run) itemOfLocked(branch, identity string) string {
	for _, s := range slices.Backward(r.submissions) {
		if s.Branch == branch && s.Identity == identity {
			return s.ItemID
		}
	}
	return ""
}

// authorOf is the identity that opened pull request pr, as the swarm
// saw it, and its branch.
func (r *run) authorOf(pr int64) (identity, branch string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.authors[pr], r.branches[pr]
}

// prOf is the pull request an author opened for issue, if any.
func (r *run) prOf(issue int64) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pr, ok := r.prs[issue]
	return pr, ok
}

// recordPR records the pull request identity opened for issue from
// branch, and reports whether it is new.
func (r *run) recordPR(issue, pr int64, identity, branch string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prs[issue] == pr {
		return false
	}
	r.prs[issue] = pr
	r.authors[pr], r.branches[pr] = identity, branch
	return true
}

// printf writes one progress line, stamped with the time since start.
func (r *run) printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.cfg.Out, "%7.1fs  %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// event records an agent's event, and prints it when print is true. A
// pull request opened, approved or merged is progress; an assignment or
// a submission alone is not (the same work may come round again and
// again).
func (r *run) event(who, kind string, print bool, format string, args ...any) {
	r.mu.Lock()
	r.report.Events[kind]++
	if kind == "opened" || kind == "approved" || kind == "merged" {
		r.progress = time.Now()
	}
	r.mu.Unlock()
	if print {
		r.printf("%-11s %-9s %s", who, kind, fmt.Sprintf(format, args...))
	}
}

// refused records a refusal by reason, and prints it when print is true.
func (r *run) refused(who, reason string, print bool, format string, args ...any) {
	r.mu.Lock()
	r.report.Refusals[reason]++
	r.mu.Unlock()
	r.event(who, "refused", print, "%s: %s", reason, fmt.Sprintf(format, args...))
}

// count adds n to m[key] under the lock.
func (r *run) count(m map[string]int, key string, n int) {
	r.mu.Lock()
	m[key] += n
	r.mu.Unlock()
}

// openIssues opens the issues on the forge, as whoever files work would.
func (r *run) openIssues(ctx context.Context) ([]int64, error) {
	owner, name, _ := strings.Cut(r.cfg.Repo, "/")
	var numbers []int64
	for i := 1; i <= r.cfg.Issues; i++ {
		issue, _, err := r.gitea.CreateIssue(owner, name, sdk.CreateIssueOption{
			Title: fmt.Sprintf("Swarm task %d", i),
			Body:  fmt.Sprintf("Write issues/<this issue's number>.md saying the task is done (task %d of %d).", i, r.cfg.Issues),
		})
		if err != nil {
			return nil, fmt.Errorf("open issue %d of %s: %w", i, r.cfg.Repo, err)
		}
		numbers = append(numbers, issue.Index)
	}
	r.printf("stage      opened %d issues (#%d to #%d)", len(numbers), numbers[0], numbers[len(numbers)-1])
	return numbers, nil
}

// awaitInventory waits until the control plane's inventory holds n open
// issues of the repository: webhooks bring them within seconds; after
// Stall the stage syncs.
func (r *run) awaitInventory(ctx context.Context, n int) error {
	since := time.Now()
	synced := false
	for {
		work, err := r.admin.Work(ctx, map[string][]string{"repo": {r.cfg.Repo}, "kind": {"issue"}, "state": {"open"}, "limit": {"500"}})
		if err != nil {
			return fmt.Errorf("read the inventory: %w", err)
		}
		if len(work) >= n {
			r.printf("stage      the inventory holds the %d issues after %v", n, time.Since(since).Round(time.Millisecond))
			return nil
		}
		if time.Since(since) > r.cfg.Stall && !synced {
			if err := r.sync(ctx, fmt.Sprintf("the inventory holds %d of %d issues", len(work), n)); err != nil {
				return err
			}
			synced = true
		}
		if time.Since(since) > 3*r.cfg.Stall {
			return fmt.Errorf("the inventory holds %d of the %d issues after %v: is %s in control_plane.repos?", len(work), n, time.Since(since).Round(time.Second), r.cfg.Repo)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// sync asks the service to list the repositories again, and says why.
func (r *run) sync(ctx context.Context, why string) error {
	r.printf("stage      %s: syncing the inventory", why)
	r.mu.Lock()
	r.report.Syncs++
	r.mu.Unlock()
	if err := r.admin.Call(ctx, "POST", "/api/v1/work/sync", nil, nil, nil); err != nil {
		return fmt.Errorf("sync the inventory: %w", err)
	}
	return nil
}

// awaitDone watches the forge until every issue is closed and no pull
// request is open, syncing the inventory when nothing moved for Stall
// (then for twice as long before the next sync, up to 8 times Stall,
// while nothing moves). It reports false when the timeout came first,
// and says what was left open.
func (r *run) awaitDone(ctx context.Context, issues []int64) (bool, error) {
	owner, name, _ := strings.Cut(r.cfg.Repo, "/")
	deadline := time.Now().Add(r.cfg.Timeout)
	ours := map[int64]bool{}
	for _, n := range issues {
		ours[n] = true
	}
	stall := r.cfg.Stall
	var synced time.Time // the stage's last sync
	var left []string
	for time.Now().Before(deadline) {
		if err := sleep(ctx, time.Second); err != nil {
			return false, err
		}
		open, err := listAll(func(page int) ([]*sdk.Issue, error) {
			list, _, err := r.gitea.ListRepoIssues(owner, name, sdk.ListIssueOption{ListOptions: sdk.ListOptions{Page: page, PageSize: 50},
				State: sdk.StateOpen})
			return list, err
		})
		if err != nil {
			return false, fmt.Errorf("list the open issues and pull requests of %s: %w", r.cfg.Repo, err)
		}
		left = left[:0]
		for _, i := range open {
			switch {
			case i.PullRequest != nil:
				left = append(left, fmt.Sprintf("pr #%d", i.Index))
			case ours[i.Index]:
				left = append(left, fmt.Sprintf("issue #%d", i.Index))
			}
		}
		if len(left) == 0 {
			r.printf("stage      every issue is closed and no pull request is open")
			return true, nil
		}
		r.mu.Lock()
		since := time.Since(r.progress)
		r.mu.Unlock()
		if since < r.cfg.Stall {
			stall = r.cfg.Stall
		}
		if since > stall && time.Since(synced) > stall {
			if err := r.sync(ctx, fmt.Sprintf("no progress for %v, %d open (%s)", since.Round(time.Second), len(left), cut(left, 5))); err != nil {
				return false, err
			}
			synced, stall = time.Now(), min(2*stall, 8*r.cfg.Stall)
		}
	}
	r.printf("stage      left open: %s", cut(left, 20))
	for _, l := range left {
		var n int64
		if _, err := fmt.Sscanf(l, "pr #%d", &n); err != nil {
			continue
		}
		if pr, _, err := r.gitea.GetPullRequest(owner, name, n); err == nil && !pr.Mergeable {
			r.printf("stage      %s: the forge says it cannot be merged now", l)
		}
	}
	return false, nil
}

// cut is list joined, at most n of them.
func cut(list []string, n int) string {
	if len(list) > n {
		return strings.Join(list[:n], ", ") + fmt.Sprintf(" and %d more", len(list)-n)
	}
	return strings.Join(list, ", ")
}

// listAll reads every page of a forge listing.
func listAll[T any](page func(n int) ([]T, error)) ([]T, error) {
	var all []T
	for n := 1; ; n++ {
		list, err := page(n)
		if err != nil {
			return nil, err
		}
		all = append(all, list...)
		if len(list) == 0 {
			return all, nil
		}
	}
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// jitter is d give or take a quarter, so that idle sessions do not ask
// in step.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + time.Duration(rand.Int64N(int64(d)/2+1))
}

// Summary writes the report as people read it.
func (r *Report) Summary(w io.Writer) {
	fmt.Fprintf(w, "\nsummary\n")
	fmt.Fprintf(w, "  sessions        %s\n", r.Split)
	fmt.Fprintf(w, "  wall time       %v\n", r.Duration.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  issues closed   %d of %d\n", r.IssuesClosed, r.IssuesOpened)
	fmt.Fprintf(w, "  PRs merged      %d of %d opened\n", r.PRsMerged, r.PRsOpened)
	fmt.Fprintf(w, "  leases          %d\n", r.Leases)
	// Every line counts what it names, and the totals agree: the honest
	// sessions' refusals are theirs alone (each is also one of their
	// "refused" events), the hostile sessions' are counted apart, and
	// each hostile try was either refused or got through.
	honest := maps.Clone(r.Events)
	delete(honest, "refused")
	fmt.Fprintf(w, "  honest events   %s\n", counts(honest))
	fmt.Fprintf(w, "  allocations     %s\n", counts(r.Allocations))
	fmt.Fprintf(w, "  conflicts       %s\n", counts(r.Conflicts))
	fmt.Fprintf(w, "  honest refused  %s\n", totalCounts(r.Refusals))
	fmt.Fprintf(w, "  findings        %s\n", counts(r.Findings))
	if r.Split.Hostile > 0 {
		tries, refused := total(r.Attempts), total(r.HostileRefusals)
		fmt.Fprintf(w, "  hostile tries   %d in %d classes: %d refused, %d got through\n", tries, len(r.Attempts), refused, tries-refused)
		fmt.Fprintf(w, "                  %s\n", counts(r.Attempts))
		fmt.Fprintf(w, "  hostile refused %s\n", totalCounts(r.HostileRefusals))
		if len(r.NotTried) > 0 {
			fmt.Fprintf(w, "  not tried       %s\n", counts(r.NotTried))
		}
		fmt.Fprintf(w, "  violations      %d\n", len(r.Violations))
		for i, v := range r.Violations {
			if i == 10 {
				fmt.Fprintf(w, "         ... and %d more\n", len(r.Violations)-i)
				break
			}
			fmt.Fprintf(w, "         %s\n", v)
		}
	} else {
		fmt.Fprintf(w, "  hostile         none ran: nothing tried to get around the gate\n")
	}
	if w2 := r.Runaway; w2 != nil {
		fmt.Fprintf(w, "  runaway         %d calls, %d written; frozen %v (%d leases ended), stopped %v: %s\n",
			w2.Calls, w2.Written, w2.Frozen, w2.LeasesEnded, w2.Stopped, counts(w2.Refusals))
	}
	if len(r.LeftBranches) > 0 {
		fmt.Fprintf(w, "  branches left   %s\n", strings.Join(r.LeftBranches, ", "))
	}
	fmt.Fprintf(w, "  inventory syncs %d (the rest came by webhook)\n", r.Syncs)
	fmt.Fprintf(w, "safety (violations found)\n")
	for _, c := range r.Checks {
		status := "ok  "
		if len(c.Failed) > 0 {
			status = "FAIL"
		}
		fmt.Fprintf(w, "  %s %d  %s: %s\n", status, len(c.Failed), c.Name, c.Detail)
		for i, f := range c.Failed {
			if i == 10 {
				fmt.Fprintf(w, "           ... and %d more\n", len(c.Failed)-i)
				break
			}
			fmt.Fprintf(w, "           %s\n", f)
		}
	}
	switch {
	case !r.Done:
		fmt.Fprintf(w, "FAILED: not everything was merged within the bound\n")
	case len(r.Violations) > 0:
		fmt.Fprintf(w, "FAILED: a hostile attempt got through\n")
	case !r.OK():
		fmt.Fprintf(w, "FAILED: a safety check failed\n")
	default:
		fmt.Fprintf(w, "OK\n")
	}
}

// total is the sum of m's counts.
func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// totalCounts is "4: a 3, b 1", or "0" for none.
func totalCounts(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d: %s", total(m), counts(m))
}

// counts is "a 3, b 1" by key, or "none".
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// roleOf names a role's sessions in the progress lines.
func roleOf(role cp.Role, i int) string { return fmt.Sprintf("%s-%d", role, i) }
