package mcpserver

import (
	"context"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/cptype/incidenttype"
)

// tools are every tool the server offers, on every transport. Each makes
// one REST call; its description is written for a model: what it is for,
// when to call it, what the answer means.
var tools = []func(*mcp.Server, Clients){
	// Items (each type's submit tool comes from its registration: New).
	tool("get_item", `Read one item by id: its phase (active, completed, failed, cancelled), the reason and error when it stopped, and the item type's detail (for a change: the merge request's number, URL and head). Call it to follow a submission to completion.`,
		true, func(ctx context.Context, c *client.Client, in itemRef) (*api.Item, error) {
			return c.Get(ctx, in.ID)
		}),
	tool("list_items", `List items, newest first, that you may read; filter by type, phase, forge or project. A page holds at most limit items; pass next_cursor as cursor to read on (it is empty on the last page).`,
		true, func(ctx context.Context, c *client.Client, in itemQuery) (*api.ItemPage, error) {
			items, next, err := c.List(ctx, queryOf(in))
			if err != nil {
				return nil, err
			}
			return &api.ItemPage{Items: items, NextCursor: next}, nil
		}),

	// Sessions.
	tool("start_session", `Start an agent session: the identity everything else you do in the control plane acts for. Call it once when you begin, with your role. Keep the answer's id: every other coordination tool takes it as session_id. A session without a heartbeat for the configured time turns stale and gets no work.`,
		false, func(ctx context.Context, c *client.Client, in api.SessionRequest) (*cptype.SessionView, error) {
			return c.RegisterSession(ctx, in.Role, in.Name, in.Capabilities)
		}),
	tool("heartbeat_session", `Keep your session active. Call it regularly while you work (well within the session TTL); the answer's status says whether it is active, stale or ended.`,
		false, func(ctx context.Context, c *client.Client, in sessionRef) (*cptype.SessionView, error) {
			return c.HeartbeatSession(ctx, in.SessionID)
		}),
	tool("end_session", `End your session when you stop working: its leases are released so that others can take the work. An ended session cannot be used again; start a new one.`,
		false, func(ctx context.Context, c *client.Client, in sessionRef) (*cptype.SessionView, error) {
			return c.EndSession(ctx, in.SessionID)
		}),

	// Allocation and the gate.
	tool("allocate_work", `Ask for your session's next safe issue or pull request. With apply false (a dry run) nothing is written: the answer says what would be assigned and why every other candidate was passed over. With apply true the work is assigned to your session under an exclusive lease: the answer's lease.id and assignment.id are what the gate and the lease tools take, and assignment.allowed_actions what you may do. Outcome "wait" means the work you could take is held by other sessions (try again later); "no_safe_work" that there is nothing your session may take. Two sessions racing for the same work never both get it.`,
		false, func(ctx context.Context, c *client.Client, in api.AllocationRequest) (*cptype.Allocation, error) {
			return c.Allocate(ctx, in.SessionID, in.Repo, in.Apply)
		}),
	tool("check_gate", `Ask whether a mutation on the forge may pass, immediately before making it: comment, push, open_pr, review, merge or close. It is allowed only under a live lease your session holds, for an action your assignment allows, on work still open, at the head the assignment pinned. When allowed is false, do not make the mutation: reason says why (no_assignment, lease_expired, not_owner, action_not_allowed, work_terminal, head_moved); head_moved means someone pushed, so inspect the work again first.`,
		false, func(ctx context.Context, c *client.Client, in api.GateRequest) (*cptype.Decision, error) {
			return c.Gate(ctx, in.SessionID, in.AssignmentID, in.Action, in.LiveHeadSHA)
		}),

	// Gated actions: the writes an assignment allows besides a change,
	// made by the service (an agent holds no forge token), each after the
	// gate.
	tool("comment", `Comment on the issue or pull request of your assignment: a question, progress, why you stop. The service writes it on the forge for you, after checking the gate itself (no check_gate call is needed): your lease must be live, the work open, and comment among your assignment's allowed_actions. The answer's comment_id is the forge's comment; your lease is kept (released is false), so go on working. A refusal is a tool error naming the gate's reason (lease_expired, not_owner, action_not_allowed, work_terminal).`,
		false, func(ctx context.Context, c *client.Client, in commentAction) (*cptype.ActionResult, error) {
			req := in.request(cptype.ActComment)
			req.Body = in.Body
			return c.Act(ctx, req)
		}),
	tool("review_pull_request", `Give your verdict on the pull request of your reviewer assignment: approve, or request_changes with a body saying what to change. The service records it on the forge (as its review account), pinned to the head your assignment pinned: if someone pushed since, it is refused with reason head_moved and nothing is recorded (look at the new head before judging it). A session never reviews a pull request it wrote (reason own_pull_request). On success the answer's head_sha is the head you judged, and your lease is released (released true): the pull request is handed on, to a merger session when approved and back to its author when changes are requested. Do not act on it again; allocate_work for your next work.`,
		false, func(ctx context.Context, c *client.Client, in reviewAction) (*cptype.ActionResult, error) {
			req := in.request(cptype.ActReview)
			req.Verdict, req.Body = in.Verdict, in.Body
			return c.Act(ctx, req)
		}),
	tool("merge_pull_request", `Merge the pull request of your merger assignment (allocate_work hands mergers approved, mergeable pull requests). The service merges it on the forge, pinned to the head your assignment pinned: if someone pushed to the branch since, it is refused with reason head_moved and nothing is merged; release_lease and leave it: it comes round again once the service has seen the new head. Reason forge_refused means the forge would not merge it now (a conflict, a check, mergeability not computed yet): release_lease and let it come round again. On success the answer's work is merged, the forge closes the issues its description closes, and your lease is released (released true): the work is done.`,
		false, func(ctx context.Context, c *client.Client, in assignedWork) (*cptype.ActionResult, error) {
			return c.Act(ctx, in.request(cptype.ActMerge))
		}),
	tool("close_issue", `Close the issue of your assignment without a change, when your assignment's allowed_actions include close: it is done already, a duplicate, or will not be done (say why with comment first). Only an issue (a pull request is reason wrong_kind); the gate is checked for you. On success the answer's work is closed and your lease is released (released true): the work ends and is handed to nobody.`,
		false, func(ctx context.Context, c *client.Client, in assignedWork) (*cptype.ActionResult, error) {
			return c.Act(ctx, in.request(cptype.ActClose))
		}),

	// The inventory.
	tool("list_work", `List the inventory: the issues and pull requests of the configured repositories the control plane hands out, with state, labels, review verdict, head and the session that authored a pull request. For orientation; allocate_work decides what you work on.`,
		true, func(ctx context.Context, c *client.Client, in workQuery) (*api.WorkList, error) {
			work, err := c.Work(ctx, queryOf(in))
			return &api.WorkList{Work: work}, err
		}),

	// Leases.
	tool("list_leases", `List your sessions' active leases (every session's for an admin token), or with all true the ended ones too. A lease is a session's exclusive hold on one work item until expires_at.`,
		true, func(ctx context.Context, c *client.Client, in leaseQuery) (*api.LeaseList, error) {
			leases, err := c.Leases(ctx, queryOf(in))
			return &api.LeaseList{Leases: leases}, err
		}),
	tool("inspect_lease", `Read one lease: its state, its freshness (live, nanoseconds until it expires and since its last heartbeat) and, for the session you name, the safe next action: continue, heartbeat (now), adopt (your identity held it in another session), reclaim (expired), allocate (ended: ask for work) or wait_foreign_active (another's live lease: never take it). Call it when unsure whether you still hold your work.`,
		true, func(ctx context.Context, c *client.Client, in leaseInspection) (*cptype.LeaseView, error) {
			return c.InspectLease(ctx, in.LeaseID, in.SessionID)
		}),
	tool("heartbeat_lease", `Extend a live lease your session holds, before it expires (within a third of its TTL is safe). head_sha, if you give it, is checked, never declared: the head your lease is pinned to comes from the forge (and the service's own pushes for you), so a head_sha that is not it is refused with reason head_moved; someone else pushed, and the work goes back to the allocator.`,
		false, func(ctx context.Context, c *client.Client, in leaseHeartbeat) (*cptype.LeaseView, error) {
			return c.HeartbeatLease(ctx, in.LeaseID, api.LeaseRequest{SessionID: in.SessionID, HeadSHA: in.HeadSHA})
		}),
	tool("release_lease", `End a lease your session holds, when you are done with its work or give it up. Only the holding session may release it (otherwise reason not_owner).`,
		false, func(ctx context.Context, c *client.Client, in leaseAct) (*cptype.LeaseView, error) {
			return c.ReleaseLease(ctx, in.LeaseID, api.LeaseRequest{SessionID: in.SessionID})
		}),
	tool("adopt_lease", `Resume a lease after a restart: your own session's (the same session_id), or, once its holder has gone quiet for the session TTL, another session of your identity's; or take over one that expired. A live lease whose holder still heartbeats is never taken (reason wait_foreign_active). Taking over another session's lease follows the allocator's routing for your role (reasons wrong_role, own_pr, not_author) at the head the assignment pinned (reason head_moved if it moved). Give the worktree you resume in and its head: both are recorded as your report, the pinned head does not change.`,
		false, func(ctx context.Context, c *client.Client, in leaseAdoption) (*cptype.LeaseView, error) {
			return c.AdoptLease(ctx, in.LeaseID, api.LeaseRequest{SessionID: in.SessionID, WorktreePath: in.WorktreePath, HeadSHA: in.HeadSHA})
		}),
	tool("abandon_lease", `End a lease whose holder is gone, with proof: dead_process or missing_worktree, and no_live_mutation_risk. Another session's lease also needs operator_authorized (admin tokens only) or all of dead_process, missing_worktree and no_open_pr, and its holder must have gone quiet (no heartbeat for the session TTL). no_open_pr is checked against the inventory, and every proof is recorded in the lease's events. Refused without enough proof (reason insufficient_proof).`,
		false, func(ctx context.Context, c *client.Client, in leaseAbandonment) (*cptype.LeaseView, error) {
			return c.AbandonLease(ctx, in.LeaseID, api.LeaseRequest{SessionID: in.SessionID, Proof: &in.Proof})
		}),
	tool("reclaim_lease", `Assign the work of an expired lease to your session under a new lease; the answer is an allocation, as allocate_work's. A live lease is never reclaimed (reason wait_foreign_active). The allocator's routing for your role applies (reasons wrong_role, own_pr, not_author), and the new assignment keeps the old one's pinned head: if the pull request moved, there is nothing to reclaim (reason head_moved); allocate instead.`,
		false, func(ctx context.Context, c *client.Client, in leaseAct) (*cptype.Allocation, error) {
			return c.ReclaimLease(ctx, in.LeaseID, api.LeaseRequest{SessionID: in.SessionID})
		}),
	tool("expire_leases", `Mark exactly the active leases past their expiry as expired, and list them. Housekeeping: allocation and the gate already treat an expired lease as not holding its work.`,
		false, func(ctx context.Context, c *client.Client, _ struct{}) (*api.ExpiredLeases, error) {
			expired, err := c.ExpireLeases(ctx)
			return &api.ExpiredLeases{Expired: expired}, err
		}),

	// Checkpoints.
	tool("write_checkpoint", `Write your session's resume state for one work unit (an issue, a pull request, or none for the session itself), replacing the previous one: where in your workflow you are, the lease, branch and head, and the next valid action. Write one at each step a restarted session would need, and before you stop. Secrets in text and JSON are redacted before anything is stored; text is bounded to 4 KiB a field and JSON to 16 KiB (resume state, not transcripts). require_complete refuses a checkpoint a resumed session could not act on, naming the missing fields.`,
		false, func(ctx context.Context, c *client.Client, in checkpointWrite) (*cptype.Checkpoint, error) {
			checkpoint, err := convert[cptype.Checkpoint](in)
			if err != nil {
				return nil, err
			}
			return c.WriteCheckpoint(ctx, checkpoint, in.RequireComplete)
		}),
	tool("get_checkpoint", `Read one checkpoint by its key: session, forge, repository and work unit (work_kind and work_number; leave both out for the session's own). found is false when there is none. Do not act on it blindly: reconcile_checkpoint says whether it still holds.`,
		true, func(ctx context.Context, c *client.Client, in cptype.CheckpointKey) (*checkpointFound, error) {
			q := queryOf(in)
			q.Set("work_number", strconv.FormatInt(in.WorkNumber, 10)) // 0 names the session's own
			list, err := c.Checkpoints(ctx, q)
			if err != nil || len(list) == 0 {
				return &checkpointFound{}, err
			}
			return &checkpointFound{Found: true, Checkpoint: &list[0]}, nil
		}),
	tool("list_checkpoints", `List your sessions' checkpoints, newest first: a session's, or a work unit's across sessions (to see who worked on it and how far they got).`,
		true, func(ctx context.Context, c *client.Client, in checkpointQuery) (*api.CheckpointList, error) {
			list, err := c.Checkpoints(ctx, queryOf(in))
			return &api.CheckpointList{Checkpoints: list}, err
		}),
	tool("reconcile_checkpoint", `After a restart, compare a stored checkpoint with what is live before acting on it: the lease it names as the service has it now, and the head (yours as head_sha, else a pull request's from the inventory). reconcile_action says what to do: resume (continue from next_valid_action), reinspect (the head moved: inspect the work again before any mutation), reacquire (the lease is gone, ended or another's: allocate or adopt first) or nothing_to_do. Nothing is changed.`,
		true, func(ctx context.Context, c *client.Client, in api.CheckpointReconcileRequest) (*cptype.CheckpointReconcile, error) {
			return c.ReconcileCheckpoint(ctx, in.CheckpointKey, in.HeadSHA)
		}),

	// Incidents.
	tool("reconcile_incident", `Turn a monitoring observation (an error tracker's issue) into a forge issue of the repository configured for its project, once per provider issue, and keep their link current. With apply false (a dry run) nothing is written and no forge is called: the answer says what would happen. Needs a token with permission incidents. The forge issue then becomes work like any other; an observation is never work itself.`,
		false, func(ctx context.Context, c *client.Client, in incidentReconcile) (*incidenttype.Result, error) {
			obs, err := convert[api.Observation](in.Observation)
			if err != nil {
				return nil, err
			}
			return c.ReconcileIncident(ctx, obs, in.Apply)
		}),
}
