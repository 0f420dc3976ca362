package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workqueue-dev/workqueue/api"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/mr/mrapi"
)

// agent is one simulated agent session: an MCP client of the service
// with its own agent-only token, acting in one role. It follows the loop
// of docs/agents.md and nothing else: it never reads the forge.
type agent struct {
	run      *run
	name     string // role-i, in the progress lines
	role     cp.Role
	conn     *mcpConn
	id       string // the control plane's session id
	identity string // its token's caller identity, as the service names it

	heartbeat time.Time // the session's last heartbeat
	// The lease in hand: heartbeated within a third of its TTL while
	// the work takes long (an author following its change).
	lease     *cp.LeaseRef
	leaseTTL  time.Duration
	leaseBeat time.Time

	// The work in hand, and the refusal last printed: the same refusal
	// of the same work again (a merge the forge says to try later) is
	// counted, not printed, and the session backs off before asking
	// again, doubling the pause up to maxBackoff.
	work        *cp.Work
	lastRefusal string // "kind#number: reason"
	repeats     int    // refusals of lastRefusal since it was printed
	backoff     time.Duration
}

// maxBackoff bounds a session's pause after refusals; maxIdle its pause
// between allocations while there is no work.
const (
	maxBackoff = 8 * time.Second
	maxIdle    = 2 * time.Second
)

// startAgents connects one MCP client session per honest agent and
// starts its control-plane session. Honest sessions take the first of
// the agent tokens (round robin when there are fewer), leaving one
// apiece to the hostile sessions.
func (r *run) startAgents(ctx context.Context, split Split) ([]*agent, error) {
	var agents []*agent
	roles := []struct {
		role cp.Role
		n    int
	}{{cp.RoleAuthor, split.Authors}, {cp.RoleReviewer, split.Reviewers}, {cp.RoleMerger, split.Mergers}}
	honest := r.cfg.AgentTokens[:len(r.cfg.AgentTokens)-split.Hostile]
	for _, rr := range roles {
		for i := 1; i <= rr.n; i++ {
			token := honest[len(agents)%len(honest)]
			a := &agent{run: r, name: roleOf(rr.role, i), role: rr.role}
			conn, err := r.connect(ctx, token)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a.name, err)
			}
			a.conn = conn
			s, err := conn.startSession(ctx, rr.role, "swarm "+a.name)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a.name, err)
			}
			a.id, a.identity, a.heartbeat = s.ID, s.Identity, time.Now()
			r.addSession(s.Session, a.name, false)
			agents = append(agents, a)
		}
	}
	r.printf("stage      %d sessions started over MCP", len(agents))
	return agents, nil
}

// mcpConn is one MCP client session of the service's /mcp, with one
// token.
type mcpConn struct {
	cs *mcp.ClientSession
}

// connect opens an MCP client session with token.
func (r *run) connect(ctx context.Context, token string) (*mcpConn, error) {
	transport := &mcp.StreamableClientTransport{Endpoint: strings.TrimRight(r.cfg.Service, "/") + "/mcp",
		HTTPClient: &http.Client{Transport: bearer(token), Timeout: time.Minute}, DisableStandaloneSSE: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "workqueue-swarm", Version: "1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s/mcp: %w", r.cfg.Service, err)
	}
	return &mcpConn{cs: cs}, nil
}

// startSession starts a control-plane session of role.
func (c *mcpConn) startSession(ctx context.Context, role cp.Role, name string) (*cp.SessionView, error) {
	var s cp.SessionView
	if err := c.call(ctx, "start_session", map[string]any{"role": role, "name": name}, &s); err != nil {
		return nil, fmt.Errorf("start_session: %w", err)
	}
	if s.ID == "" || s.Identity == "" {
		return nil, fmt.Errorf("start_session: answered no session id or identity: %+v", s)
	}
	return &s, nil
}

// bearer adds its token to each request.
type bearer string

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(req)
}

// refusal is a tool error: the service refused the call, naming why.
type refusal struct {
	reason string // the problem's reason, else its code
	text   string
}

func (e *refusal) Error() string { return e.text }

// toolReason and toolCode find the reason and the code in a tool
// error's text ("refused: code conflict, reason head_moved (HTTP 409): …").
var (
	toolReason = regexp.MustCompile(`, reason ([a-z_]+)`)
	toolCode   = regexp.MustCompile(`code ([a-z_]+)`)
)

// call calls a tool and decodes its structured answer into out (nil: not
// read). A tool error is a *refusal. A call in flight when the stage ends
// the run finishes (bounded by the client's timeout): cancelled mid-way,
// a merge the forge made would go unrecorded, as an agent killed
// mid-call would leave it; the loop stops between calls instead.
func (c *mcpConn) call(ctx context.Context, tool string, args, out any) error {
	res, err := c.cs.CallTool(context.WithoutCancel(ctx), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		e := &refusal{reason: "tool_error", text: strings.Join(text, "\n")}
		if m := toolReason.FindStringSubmatch(e.text); m != nil {
			e.reason = m[1]
		} else if m := toolCode.FindStringSubmatch(e.text); m != nil {
			e.reason = m[1]
		}
		return e
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		return fmt.Errorf("%s: decode the answer: %w", tool, err)
	}
	return nil
}

// call is the agent's tool call (mcpConn.call).
func (a *agent) call(ctx context.Context, tool string, args, out any) error {
	return a.conn.call(ctx, tool, args, out)
}

// loop allocates work and does it until ctx ends.
func (a *agent) loop(ctx context.Context) {
	idle := time.Duration(0) // the pause while there is no work: Poll, doubling up to maxIdle
	for ctx.Err() == nil {
		a.work = nil
		a.keepAlive(ctx)
		if a.role == cp.RoleReviewer {
			a.run.awaitBait(ctx)
		}
		alloc, err := a.allocate(ctx)
		if err != nil {
			if ctx.Err() == nil {
				a.failed(ctx, "allocate_work", err)
				sleep(ctx, jitter(a.backoff))
			}
			continue
		}
		if alloc == nil {
			idle = min(max(2*idle, a.run.cfg.Poll), max(maxIdle, a.run.cfg.Poll))
			sleep(ctx, jitter(idle))
			continue
		}
		idle = 0
		w := alloc.Work
		a.work = w
		a.lease, a.leaseTTL, a.leaseBeat = alloc.Lease, time.Until(alloc.Lease.ExpiresAt), time.Now()
		a.run.hold(a, alloc)
		done := ""
		if pr, ok := a.run.prOf(w.Number); ok && w.Kind == cp.KindIssue {
			done = fmt.Sprintf(": done already, pr #%d was opened for it", pr)
			a.run.count(a.run.report.Findings, "done issue handed out again", 1)
		}
		a.say("assigned", "%s #%d (lease %s)%s", w.Kind, w.Number, short(alloc.Lease.ID), done)
		switch {
		case a.role == cp.RoleAuthor && w.Kind == cp.KindIssue:
			a.author(ctx, alloc)
		case a.role == cp.RoleReviewer && w.Kind == cp.KindPR:
			a.review(ctx, alloc)
		case a.role == cp.RoleMerger && w.Kind == cp.KindPR:
			a.merge(ctx, alloc)
		default:
			// An author handed its pull request back with changes
			// requested: this swarm's reviewers never request changes,
			// so it is a surprise, said and left.
			a.refuse("unexpected_assignment", "%s #%d with actions %v", w.Kind, w.Number, alloc.Assignment.AllowedActions)
			a.release(ctx, alloc)
		}
		a.run.unhold(alloc.Lease.ID)
		a.lease = nil
		if a.backoff > 0 {
			sleep(ctx, jitter(a.backoff))
		}
	}
}

// workKey names the work in hand.
func (a *agent) workKey() string {
	if a.work == nil {
		return ""
	}
	return fmt.Sprintf("%s#%d", a.work.Kind, a.work.Number)
}

// say prints an event of the work in hand. An assignment of the work
// last refused is not printed again; a success after refusals says how
// many there were.
func (a *agent) say(kind, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	retrying := a.lastRefusal != "" && strings.HasPrefix(a.lastRefusal, a.workKey()+":")
	if kind == "assigned" {
		a.run.event(a.name, kind, !retrying, "%s", line)
		return
	}
	if retrying {
		n := a.repeats + 1
		line += fmt.Sprintf(" (after %d refusal%s:%s)", n, map[bool]string{true: "s"}[n > 1], strings.TrimPrefix(a.lastRefusal, a.workKey()+":"))
	}
	a.lastRefusal, a.repeats, a.backoff = "", 0, 0
	a.run.event(a.name, kind, true, "%s", line)
}

// refuse records a refusal of the work in hand, prints it unless it
// repeats the last one, and lengthens the pause before the next
// allocation.
func (a *agent) refuse(reason, format string, args ...any) {
	key := a.workKey() + ": " + reason
	repeat := key == a.lastRefusal
	if repeat {
		a.repeats++
	} else {
		a.lastRefusal, a.repeats = key, 0
	}
	a.backoff = min(max(2*a.backoff, 500*time.Millisecond), maxBackoff)
	a.run.refused(a.name, reason, !repeat, format, args...)
}

// keepAlive heartbeats the session once a minute (the session TTL is
// minutes; a stale session gets no work).
func (a *agent) keepAlive(ctx context.Context) {
	if time.Since(a.heartbeat) < time.Minute {
		return
	}
	if err := a.call(ctx, "heartbeat_session", map[string]any{"session_id": a.id}, nil); err == nil {
		a.heartbeat = time.Now()
	}
}

// keepLease heartbeats the lease in hand once a third of its TTL has
// passed since the last: an author may follow its change for longer
// than a short lease lasts. A refused heartbeat is said; the work goes
// on, and the gate says whether the lease still holds.
func (a *agent) keepLease(ctx context.Context) {
	if a.lease == nil || time.Since(a.leaseBeat) < a.leaseTTL/3 {
		return
	}
	var v cp.LeaseView
	if err := a.call(ctx, "heartbeat_lease", map[string]any{"lease_id": a.lease.ID, "session_id": a.id}, &v); err != nil {
		a.failed(ctx, "heartbeat_lease", err)
		return
	}
	a.leaseBeat = time.Now()
}

// allocate asks for the next work under a lease: nil when there is none
// now. Candidates lost to another session meanwhile are the conflicts
// the allocator settled.
func (a *agent) allocate(ctx context.Context) (*cp.Allocation, error) {
	var alloc cp.Allocation
	if err := a.call(ctx, "allocate_work", map[string]any{"session_id": a.id, "repo": a.run.cfg.Repo, "apply": true}, &alloc); err != nil {
		return nil, err
	}
	a.run.count(a.run.report.Allocations, string(alloc.Outcome), 1)
	for _, c := range alloc.Candidates {
		if c.Reason == cp.SkipLost {
			a.run.count(a.run.report.Conflicts, c.Reason, 1)
		}
	}
	if alloc.Outcome != cp.OutcomeAssigned {
		return nil, nil
	}
	if alloc.Work == nil || alloc.Lease == nil || alloc.Assignment == nil {
		return nil, fmt.Errorf("allocate_work: assigned without work, lease or assignment: %+v", alloc)
	}
	return &alloc, nil
}

// gate asks whether action may pass now; a refusal is printed and the
// work given up.
func (a *agent) gate(ctx context.Context, alloc *cp.Allocation, action cp.Action) bool {
	var d cp.Decision
	err := a.call(ctx, "check_gate", map[string]any{"session_id": a.id, "assignment_id": alloc.Assignment.ID, "action": action}, &d)
	if err != nil {
		a.failed(ctx, "check_gate", err)
		a.release(ctx, alloc)
		return false
	}
	if !d.Allowed {
		a.refuse(d.Reason, "check_gate %s on %s #%d", action, alloc.Work.Kind, alloc.Work.Number)
		a.release(ctx, alloc)
		return false
	}
	return true
}

// author turns its issue into a pull request through the service: the
// change is submitted for the assignment (the service writes the branch
// and opens the pull request, which closes the issue), followed until
// the pull request exists, and the issue is held until the inventory
// knows the pull request as this session's, so that no other author is
// handed the issue meanwhile.
func (a *agent) author(ctx context.Context, alloc *cp.Allocation) {
	issue := alloc.Work.Number
	branch := fmt.Sprintf("workqueue/swarm-issue-%d", issue)
	a.checkpoint(ctx, alloc, branch, "assigned", "open_pr: submit the change for the assignment")
	if !a.gate(ctx, alloc, cp.ActOpenPR) {
		return
	}
	content := fmt.Sprintf("# Issue %d\n\n%s: done by %s (session %s).\n\n%s\n", issue, alloc.Work.Title, a.name, a.id, markWriter(a.id))
	var sub api.Submitted
	err := a.call(ctx, "submit_change", map[string]any{
		"item_type": "mr", "forge": a.run.cfg.Forge, "project": a.run.cfg.Repo,
		"source_branch": branch, "target_branch": "main",
		"title":         fmt.Sprintf("Swarm: issue #%d", issue),
		"description":   fmt.Sprintf("Written by the swarm's %s for issue #%d.", a.name, issue),
		"file_actions":  []map[string]any{{"action": "create", "file_path": fmt.Sprintf("issues/%d.md", issue), "content": content}},
		"assignment_id": alloc.Assignment.ID,
	}, &sub)
	if err != nil {
		a.failed(ctx, "submit_change", err)
		a.release(ctx, alloc)
		return
	}
	a.run.submitted(submission{ItemID: sub.ID, Identity: a.identity, Agent: a.name, Branch: branch})
	a.say("submitted", "issue #%d as item %s (%s)", issue, short(sub.ID), sub.Result)
	a.checkpoint(ctx, alloc, branch, "submitted", "follow item "+sub.ID+" until its pull request exists")

	pr, err := followItem(ctx, a.conn, sub.ID, a.keepLease)
	if err != nil {
		if ctx.Err() == nil {
			a.failed(ctx, "get_item", err)
		}
		a.release(ctx, alloc)
		return
	}
	if !a.run.recordPR(issue, pr, a.identity, branch) {
		// The item answered the pull request an earlier assignment of
		// the issue opened: the issue was done already.
		a.refuse("pr_exists", "issue #%d: submit_change answers pr #%d, opened for it before", issue, pr)
		a.release(ctx, alloc)
		return
	}
	a.say("opened", "pr #%d for issue #%d", pr, issue)
	if !awaitOwnPR(ctx, a.conn, a.run.cfg.Repo, a.id, pr, a.keepLease) {
		// Keep the issue: released, it could be handed to another author
		// before the inventory knows its pull request. end_session
		// releases it.
		a.refuse("pr_not_in_inventory", "pr #%d is not the session's in the inventory after a minute; the issue is kept", pr)
		return
	}
	a.checkpoint(ctx, alloc, branch, "pr_open", fmt.Sprintf("pr #%d awaits review: answer requested changes when allocate_work hands it back", pr))
	a.release(ctx, alloc)
}

// followItem reads the item until its pull request exists, and returns
// the pull request's number; an item that ended without one is a
// refusal named by its reason. between runs between reads (a lease's
// heartbeat).
func followItem(ctx context.Context, conn *mcpConn, id string, between func(context.Context)) (int64, error) {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		between(ctx)
		var item api.Item
		if err := conn.call(ctx, "get_item", map[string]any{"id": id}, &item); err != nil {
			return 0, err
		}
		var d mrapi.Detail
		if len(item.Detail) > 0 {
			if err := json.Unmarshal(item.Detail, &d); err != nil {
				return 0, fmt.Errorf("item %s: decode its detail: %w", id, err)
			}
		}
		if d.MRIID != 0 {
			return d.MRIID, nil
		}
		if item.Phase != "active" {
			reason := item.Reason
			if reason == "" {
				reason = string(item.Phase)
			}
			return 0, &refusal{reason: "item_" + reason, text: fmt.Sprintf("item %s ended %s without a pull request: %s", id, item.Phase, item.Error)}
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return 0, &refusal{reason: "item_slow", text: fmt.Sprintf("item %s has no pull request after 3 minutes", id)}
}

// awaitOwnPR waits until the inventory lists the pull request as
// session's (from then on it is never handed to that identity to review
// or merge, and requested changes come back to it), or as merged or
// closed already. between runs between reads (a lease's heartbeat).
func awaitOwnPR(ctx context.Context, conn *mcpConn, repo, session string, number int64, between func(context.Context)) bool {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		between(ctx)
		w, err := prWork(ctx, conn, repo, number)
		if err == nil && w != nil && (w.AuthorSession == session || w.State != cp.StateOpen) {
			return true
		}
		if sleep(ctx, 250*time.Millisecond) != nil {
			return false
		}
	}
	return false
}

// prWork is pull request number as the inventory has it (nil when it
// does not list it).
func prWork(ctx context.Context, conn *mcpConn, repo string, number int64) (*cp.Work, error) {
	var list struct {
		Work []cp.Work `json:"work"`
	}
	if err := conn.call(ctx, "list_work", map[string]any{"repo": repo, "kind": cp.KindPR, "limit": 500}, &list); err != nil {
		return nil, err
	}
	for _, w := range list.Work {
		if w.Number == number {
			return &w, nil
		}
	}
	return nil, nil
}

// review approves the pull request (the service gives the verdict with
// its review account; the lease is released with it).
func (a *agent) review(ctx context.Context, alloc *cp.Allocation) {
	if !a.gate(ctx, alloc, cp.ActReview) {
		return
	}
	var res cp.ActionResult
	err := a.call(ctx, "review_pull_request", map[string]any{"session_id": a.id, "assignment_id": alloc.Assignment.ID,
		"verdict": cp.VerdictApprove, "body": "Reviewed by the swarm's " + a.name + ": the change does what its issue asks."}, &res)
	if err != nil {
		a.failed(ctx, "review_pull_request", err)
		a.release(ctx, alloc)
		return
	}
	a.say("approved", "pr #%d at %s", alloc.Work.Number, short(res.HeadSHA))
}

// merge merges the approved pull request (the lease is released with
// it); a forge refusal (mergeability not computed yet) gives it back to
// come round again.
func (a *agent) merge(ctx context.Context, alloc *cp.Allocation) {
	if !a.gate(ctx, alloc, cp.ActMerge) {
		return
	}
	var res cp.ActionResult
	err := a.call(ctx, "merge_pull_request", map[string]any{"session_id": a.id, "assignment_id": alloc.Assignment.ID}, &res)
	if err != nil {
		a.failed(ctx, "merge_pull_request", err)
		a.release(ctx, alloc)
		return
	}
	a.say("merged", "pr #%d at %s", alloc.Work.Number, short(res.HeadSHA))
}

// checkpoint writes the session's resume state for its work. A refused
// checkpoint is said and does not stop the work.
func (a *agent) checkpoint(ctx context.Context, alloc *cp.Allocation, branch, stage, next string) {
	err := a.call(ctx, "write_checkpoint", map[string]any{
		"session_id": a.id, "forge": a.run.cfg.Forge, "repo": a.run.cfg.Repo,
		"work_kind": alloc.Work.Kind, "work_number": alloc.Work.Number,
		"lease_id": alloc.Lease.ID, "assignment_id": alloc.Assignment.ID, "branch": branch,
		"workflow_stage": stage, "next_valid_action": next, "status": "working",
		"recovery_instructions": "reconcile_checkpoint, then continue from next_valid_action",
	}, nil)
	if err != nil {
		a.failed(ctx, "write_checkpoint", err)
	}
}

// release gives the work up. A lease the service already ended (a
// refused action may have released it) is no longer ours to release.
func (a *agent) release(ctx context.Context, alloc *cp.Allocation) {
	err := a.call(context.WithoutCancel(ctx), "release_lease", map[string]any{"lease_id": alloc.Lease.ID, "session_id": a.id}, nil)
	var ref *refusal
	if err != nil && !(errors.As(err, &ref) && ref.reason == cp.RefuseNotActive) {
		a.failed(ctx, "release_lease", err)
	}
}

// failed records a failed call: a refusal by its reason, anything else
// (the service unreachable) as an error, after a pause.
func (a *agent) failed(ctx context.Context, tool string, err error) {
	var ref *refusal
	on := ""
	if a.work != nil {
		on = fmt.Sprintf(" on %s #%d", a.work.Kind, a.work.Number)
	}
	if errors.As(err, &ref) {
		a.refuse(ref.reason, "%s%s (%s)", tool, on, strings.TrimPrefix(detail(ref.text), ref.reason+": "))
		return
	}
	a.refuse("error", "%s%s (%v)", tool, on, err)
}

// end ends the session: its leases are released.
func (a *agent) end() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.call(ctx, "end_session", map[string]any{"session_id": a.id}, nil); err != nil {
		a.run.printf("%-11s end_session: %v", a.name, err)
	}
	a.conn.cs.Close()
}

// short is a commit's first 8 characters, or an id's last 8 (ids are
// time-ordered: their heads are alike).
func short(s string) string {
	if len(s) <= 8 {
		return s
	}
	if strings.Contains(s, "-") {
		return s[len(s)-8:]
	}
	return s[:8]
}

// detail is a tool error's detail: its first line, without the code,
// reason and status the line starts with, at most 120 bytes.
func detail(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	if _, rest, ok := strings.Cut(line, "): "); ok && strings.HasPrefix(line, "refused: ") {
		line = rest
	}
	if len(line) > 120 {
		line = line[:117] + "..."
	}
	return line
}
