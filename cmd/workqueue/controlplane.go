package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

// The control plane's client commands: sessions, work, allocate, gate,
// leases. Like items, they talk to a server ($WORKQUEUE_URL,
// $WORKQUEUE_TOKEN with permission agent) and print for people, or the
// API's JSON with -o json.

// clientCommand is a command group with the client flags.
func clientCommand(use, short, long string, sub func(*clientFlags) []*cobra.Command) *cobra.Command {
	var flags clientFlags
	cmd := &cobra.Command{Use: use, Short: short, Long: long + "\n\nThe server and token come from $WORKQUEUE_URL and $WORKQUEUE_TOKEN (a token\nwith permission agent), or --server and --token; -o json prints the API's JSON."}
	flags.register(cmd)
	cmd.AddCommand(sub(&flags)...)
	return cmd
}

// call runs one request and prints its answer: JSON with -o json, else
// text made by human from the decoded answer (-o table), or the JSON as
// YAML (-o yaml).
func call[T any](cmd *cobra.Command, flags *clientFlags, method, path string, query url.Values, body any, human func(io.Writer, *T)) error {
	c, err := flags.client()
	if err != nil {
		return err
	}
	var out T
	if err := c.Call(cmd.Context(), method, path, query, body, &out); err != nil {
		return err
	}
	return printOutput(cmd.OutOrStdout(), flags.output, out, func(w io.Writer) { human(w, &out) })
}

func newSessionsCommand() *cobra.Command {
	return clientCommand("sessions", "Register, heartbeat and end agent sessions", `Register, heartbeat and end agent sessions.

An agent registers a session with a role (author, reviewer or merger),
heartbeats it while it works (a session without a heartbeat for
control_plane.session_ttl is stale and gets no work), and ends it when
done, which releases its leases.`, func(f *clientFlags) []*cobra.Command {
		var role, name, caps string
		register := &cobra.Command{Use: "register --role ROLE [--name NAME]", Short: "Start a session", Args: cobra.NoArgs,
			Example: "  workqueue sessions register --role author --name laptop-1",
			RunE: func(cmd *cobra.Command, _ []string) error {
				body := map[string]any{"role": role, "name": name}
				if caps != "" {
					body["capabilities"] = json.RawMessage(caps)
				}
				return call(cmd, f, http.MethodPost, "/api/v1/sessions", nil, body, printSession)
			}}
		register.Flags().StringVar(&role, "role", "", "author, reviewer or merger (required)")
		register.Flags().StringVar(&name, "name", "", "a name people recognise")
		register.Flags().StringVar(&caps, "capabilities", "", "capabilities, as a JSON object")
		register.MarkFlagRequired("role")
		list := &cobra.Command{Use: "list", Short: "List your sessions (every session for an admin)", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return call(cmd, f, http.MethodGet, "/api/v1/sessions", nil, nil, func(w io.Writer, out *struct {
					Sessions []cp.SessionView `json:"sessions"`
				}) {
					if len(out.Sessions) == 0 {
						emptyHint(w, "no sessions: no agent has registered one with this token (an admin's lists everyone's)",
							"an agent starts one with 'workqueue sessions register --role author' (docs/agents.md)")
						return
					}
					printTable(w, "ID\tROLE\tSTATUS\tNAME\tHEARTBEAT", len(out.Sessions), func(i int) []any {
						s := out.Sessions[i]
						return []any{s.ID, s.Role, s.Status, s.Name, s.HeartbeatAt.Format(time.RFC3339)}
					})
				})
			}}
		action := func(verb, short string) *cobra.Command {
			return &cobra.Command{Use: verb + " SESSION", Short: short, Args: cobra.ExactArgs(1),
				RunE: func(cmd *cobra.Command, args []string) error {
					method, path := http.MethodPost, "/api/v1/sessions/"+url.PathEscape(args[0])+"/"+verb
					if verb == "show" {
						method, path = http.MethodGet, "/api/v1/sessions/"+url.PathEscape(args[0])
					}
					return call(cmd, f, method, path, nil, nil, printSession)
				}}
		}
		return []*cobra.Command{register, list, action("show", "Show a session"), action("heartbeat", "Keep a session active"),
			action("end", "End a session and release its leases")}
	})
}

func printSession(w io.Writer, s *cp.SessionView) {
	fmt.Fprintf(w, "session %s: %s, %s (%s)\n", s.ID, s.Role, s.Status, s.Identity)
}

func newAllocateCommand() *cobra.Command {
	var flags clientFlags
	var session, repo string
	var apply bool
	cmd := &cobra.Command{Use: "allocate --session ID [--repo GLOB] [--apply]", Short: "Ask for a session's next safe issue or pull request",
		Long: `Ask for a session's next safe issue or pull request.

Without --apply this is a dry run: it writes nothing and says what would be
assigned and why every other candidate was passed over. With --apply the
work is assigned under an exclusive lease; two sessions racing for the same
work never both get it (the other is told to wait).`,
		Example: "  workqueue allocate --session $SESSION --repo 'org/*' --apply",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(cmd, &flags, http.MethodPost, "/api/v1/allocations", nil,
				map[string]any{"session_id": session, "repo": repo, "apply": apply}, printAllocation)
		}}
	flags.register(cmd)
	cmd.Flags().StringVar(&session, "session", "", "the session asking (required)")
	cmd.Flags().StringVar(&repo, "repo", "", "only repositories matching this glob")
	cmd.Flags().BoolVar(&apply, "apply", false, "assign it under a lease (default: a dry run)")
	cmd.MarkFlagRequired("session")
	return cmd
}

func printAllocation(w io.Writer, a *cp.Allocation) {
	fmt.Fprintf(w, "%s", a.Outcome)
	if a.Work != nil {
		fmt.Fprintf(w, ": %s %s#%d %q", a.Work.Kind, a.Work.Repo, a.Work.Number, a.Work.Title)
	}
	fmt.Fprintln(w)
	if a.Lease != nil && a.Assignment != nil {
		fmt.Fprintf(w, "lease %s until %s\nassignment %s allows %s\n", a.Lease.ID, a.Lease.ExpiresAt.Format(time.RFC3339),
			a.Assignment.ID, joinActions(a.Assignment.AllowedActions))
	}
	for _, c := range a.Candidates {
		fmt.Fprintf(w, "  passed over %s %s#%d: %s\n", c.Work.Kind, c.Work.Repo, c.Work.Number, c.Reason)
	}
}

func joinActions(as []cp.Action) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

func newGateCommand() *cobra.Command {
	var flags clientFlags
	var session, assignment, action, head string
	cmd := &cobra.Command{Use: "gate --session ID --assignment ID --action ACTION [--head SHA]", Short: "Check a mutation before making it",
		Long: `Check a mutation before making it: allowed only under a live lease the
session holds, for an action its assignment allows, on work still open, at
the head the assignment pinned. It exits 0 when allowed and 1 when refused,
printing the reason (no_assignment, lease_expired, not_owner,
action_not_allowed, work_terminal, head_moved).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var refused string
			err := call(cmd, &flags, http.MethodPost, "/api/v1/gate", nil, map[string]any{"session_id": session, "assignment_id": assignment,
				"action": action, "live_head_sha": head}, func(w io.Writer, d *cp.Decision) {
				if d.Allowed {
					fmt.Fprintln(w, "allowed")
					return
				}
				refused = d.Reason
				fmt.Fprintln(w, "refused:", d.Reason)
			})
			if err == nil && refused != "" {
				return exitError{code: exitFailed} // 3 is for transport and auth
			}
			return err
		}}
	flags.register(cmd)
	cmd.Flags().StringVar(&session, "session", "", "the session (required)")
	cmd.Flags().StringVar(&assignment, "assignment", "", "the assignment (required)")
	cmd.Flags().StringVar(&action, "action", "", "comment, push, open_pr, review, merge or close (required)")
	cmd.Flags().StringVar(&head, "head", "", "the pull request head you see now")
	for _, f := range []string{"session", "assignment", "action"} {
		cmd.MarkFlagRequired(f)
	}
	return cmd
}

func newLeasesCommand() *cobra.Command {
	return clientCommand("leases", "List, inspect and move leases through their lifecycle", `List, inspect and move leases through their lifecycle.

A live lease of another identity is never taken: adopt and reclaim answer
wait_foreign_active. Abandon needs proof (--dead-process or
--missing-worktree, and --no-live-mutation-risk; another session's lease
also --operator-authorized as an admin, or --dead-process,
--missing-worktree and --no-open-pr).`, func(f *clientFlags) []*cobra.Command {
		var session, work string
		var all bool
		list := &cobra.Command{Use: "list", Short: "List active leases (--all for ended ones too)", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				q := url.Values{}
				for k, v := range map[string]string{"session_id": session, "work_id": work} {
					if v != "" {
						q.Set(k, v)
					}
				}
				if all {
					q.Set("all", "true")
				}
				return call(cmd, f, http.MethodGet, "/api/v1/leases", q, nil, func(w io.Writer, out *struct {
					Leases []cp.Lease `json:"leases"`
				}) {
					if len(out.Leases) == 0 {
						switch {
						case session != "" || work != "":
							emptyHint(w, "no leases match --session or --work", "'workqueue leases list --all' lists every lease, ended ones too")
						case all:
							emptyHint(w, "no leases: no session has held work yet",
								"a session takes work with 'workqueue allocate --session ID --apply'")
						default:
							emptyHint(w, "no active leases: no session holds work now (--all shows ended ones)",
								"a session takes work with 'workqueue allocate --session ID --apply'")
						}
						return
					}
					printTable(w, "ID\tSTATE\tSESSION\tWORK\tEXPIRES", len(out.Leases), func(i int) []any {
						l := out.Leases[i]
						return []any{l.ID, l.State, l.SessionID, l.WorkID, l.ExpiresAt.Format(time.RFC3339)}
					})
				})
			}}
		list.Flags().StringVar(&session, "session", "", "only this session's")
		list.Flags().StringVar(&work, "work", "", "only this work item's")
		list.Flags().BoolVar(&all, "all", false, "ended leases too")
		show := &cobra.Command{Use: "show LEASE", Short: "A lease's freshness and the safe next action", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				q := url.Values{}
				if session != "" {
					q.Set("session_id", session)
				}
				return call(cmd, f, http.MethodGet, "/api/v1/leases/"+url.PathEscape(args[0]), q, nil, printLease)
			}}
		show.Flags().StringVar(&session, "session", "", "the session asking (for the safe next action)")
		expire := &cobra.Command{Use: "expire", Short: "Mark exactly the leases past their expiry as expired", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return call(cmd, f, http.MethodPost, "/api/v1/leases/expire", nil, nil, func(w io.Writer, out *struct {
					Expired []cp.Lease `json:"expired"`
				}) {
					fmt.Fprintf(w, "%d leases expired\n", len(out.Expired))
				})
			}}
		return []*cobra.Command{list, show, expire, leaseVerb(f, "heartbeat", "Extend your live lease"), leaseVerb(f, "adopt", "Resume your session's lease, a quiet sibling session's, or take an expired one"),
			leaseVerb(f, "release", "End your lease"), leaseVerb(f, "abandon", "End a lease whose holder is gone, with proof"),
			leaseVerb(f, "reclaim", "Reassign an expired lease's work to your session")}
	})
}

// leaseVerb is one POST /api/v1/leases/{id}/VERB command.
func leaseVerb(f *clientFlags, verb, short string) *cobra.Command {
	var session, head, worktree string
	var proof cp.AbandonProof
	cmd := &cobra.Command{Use: verb + " LEASE --session ID", Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"session_id": session, "head_sha": head, "worktree_path": worktree}
			if verb == "abandon" {
				body["proof"] = proof
			}
			path := "/api/v1/leases/" + url.PathEscape(args[0]) + "/" + verb
			if verb == "reclaim" {
				return call(cmd, f, http.MethodPost, path, nil, body, printAllocation)
			}
			return call(cmd, f, http.MethodPost, path, nil, body, printLease)
		}}
	cmd.Flags().StringVar(&session, "session", "", "your session (required)")
	cmd.MarkFlagRequired("session")
	switch verb {
	case "heartbeat":
		cmd.Flags().StringVar(&head, "head", "", "the head you believe the lease is pinned to, checked (refused head_moved if it is not)")
	case "adopt":
		cmd.Flags().StringVar(&head, "head", "", "the head of your worktree, recorded as your report")
		cmd.Flags().StringVar(&worktree, "worktree", "", "the worktree you resume in")
	case "abandon":
		cmd.Flags().BoolVar(&proof.DeadProcess, "dead-process", false, "the holder's process is gone")
		cmd.Flags().BoolVar(&proof.MissingWorktree, "missing-worktree", false, "the holder's worktree is gone")
		cmd.Flags().BoolVar(&proof.NoLiveMutationRisk, "no-live-mutation-risk", false, "nothing can still write for the holder")
		cmd.Flags().BoolVar(&proof.NoOpenPR, "no-open-pr", false, "no open pull request carries the holder's work")
		cmd.Flags().BoolVar(&proof.OperatorAuthorized, "operator-authorized", false, "an operator authorized it (admin tokens only)")
	}
	return cmd
}

func printLease(w io.Writer, l *cp.LeaseView) {
	fmt.Fprintf(w, "lease %s: %s, session %s, work %s, expires %s; next: %s\n", l.ID, l.State, l.SessionID, l.WorkID,
		l.ExpiresAt.Format(time.RFC3339), l.SafeNextAction)
	if l.AdoptedFromSessionID != "" {
		fmt.Fprintf(w, "adopted from session %s by %s\n", l.AdoptedFromSessionID, l.AdoptedBySessionID)
	}
}

func newWorkCommand() *cobra.Command {
	return clientCommand("work", "List the inventory of issues and pull requests", `List the inventory of issues and pull requests the control plane hands out.`,
		func(f *clientFlags) []*cobra.Command {
			var forge, repo, kind, state string
			list := &cobra.Command{Use: "list", Short: "List work", Args: cobra.NoArgs,
				RunE: func(cmd *cobra.Command, _ []string) error {
					q := url.Values{}
					for k, v := range map[string]string{"forge": forge, "repo": repo, "kind": kind, "state": state} {
						if v != "" {
							q.Set(k, v)
						}
					}
					return call(cmd, f, http.MethodGet, "/api/v1/work", q, nil, func(w io.Writer, out *struct {
						Work []cp.Work `json:"work"`
					}) {
						if len(out.Work) == 0 {
							if len(q) > 0 {
								emptyHint(w, "no work matches these filters", "'workqueue work list' lists the whole inventory")
							} else {
								emptyHint(w, "no work: the inventory is empty; it holds the open issues and pull requests of the repositories control_plane.repos names",
									"configure control_plane.repos (workqueue.example.yaml shows how) and restart serve; the inventory syncs at start and every control_plane.sync_interval")
							}
							return
						}
						printTable(w, "KIND\tREPO\tNUMBER\tSTATE\tREVIEW\tTITLE", len(out.Work), func(i int) []any {
							x := out.Work[i]
							return []any{x.Kind, x.Repo, x.Number, x.State, x.ReviewState, x.Title}
						})
					})
				}}
			list.Flags().StringVar(&forge, "forge", "", "only this forge's")
			list.Flags().StringVar(&repo, "repo", "", "only this repository's")
			list.Flags().StringVar(&kind, "kind", "", "issue or pr")
			list.Flags().StringVar(&state, "state", "", "open, merged or closed")
			return []*cobra.Command{list}
		})
}

func newCheckpointsCommand() *cobra.Command {
	return clientCommand("checkpoints", "Write, read and reconcile sessions' resume state", `Write, read and reconcile sessions' resume state.

A checkpoint is what a session needs to resume after a restart: who it
was, which work unit it held (an issue, a pull request, or none for the
session itself), its lease, where in its workflow it was, and the next
valid action. One row per session and work unit; a write replaces it.
Secrets in free text and JSON are redacted before anything is stored.

A resumed session never trusts a checkpoint blindly: "reconcile" compares
it with the live lease and head and says whether to resume, re-inspect
or re-acquire.`, func(f *clientFlags) []*cobra.Command {
		var file string
		var complete bool
		write := &cobra.Command{Use: "write [-f FILE]", Short: "Write (upsert) a checkpoint from a JSON or YAML object", Args: cobra.NoArgs,
			Long: `Write (upsert) a checkpoint. The object's members are the checkpoint's
fields: session_id, forge, repo, work_kind (issue, pr or empty),
work_number (0 for the session itself), worktree_path, branch, head_sha,
lease_id, assignment_id, workflow_stage, last_completed_action,
current_operation, pending_mutation (JSON), evidence (JSON), blocker,
next_valid_action, recovery_instructions, status, capabilities (JSON),
provider_identity, role (default: the session's).

--require-complete refuses a checkpoint that could not resume the work
(session_id, role, workflow_stage, next_valid_action and
recovery_instructions are required), as a drain must.`,
			RunE: func(cmd *cobra.Command, _ []string) error {
				doc, err := readSubmission(cmd.InOrStdin(), file)
				if err != nil {
					return err
				}
				q := url.Values{}
				if complete {
					q.Set("require_complete", "true")
				}
				return call(cmd, f, http.MethodPut, "/api/v1/checkpoints", q, doc, printCheckpoint)
			}}
		write.Flags().StringVarP(&file, "file", "f", "-", `JSON or YAML file ("-" for standard input)`)
		write.Flags().BoolVar(&complete, "require-complete", false, "refuse a checkpoint a resumed session could not act on")

		var key checkpointKeyFlags
		list := &cobra.Command{Use: "list", Short: "List checkpoints of a session or of a work unit, newest first", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return call(cmd, f, http.MethodGet, "/api/v1/checkpoints", key.query(cmd), nil, func(w io.Writer, out *checkpointList) {
					printTable(w, "SESSION\tFORGE\tREPO\tWORK\tSTAGE\tNEXT\tUPDATED", len(out.Checkpoints), func(i int) []any {
						c := out.Checkpoints[i]
						return []any{c.SessionID, c.Forge, c.Repo, workUnit(c), c.WorkflowStage, c.NextValidAction, c.UpdatedAt.Format(time.RFC3339)}
					})
				})
			}}
		key.register(list, false)

		var showKey checkpointKeyFlags
		show := &cobra.Command{Use: "show --session ID --forge NAME --repo REPO [--work-kind KIND --work-number N]", Short: "Show one checkpoint", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				q := showKey.query(cmd)
				q.Set("work_number", strconv.FormatInt(max(showKey.number, 0), 10))
				return call(cmd, f, http.MethodGet, "/api/v1/checkpoints", q, nil, func(w io.Writer, out *checkpointList) {
					if len(out.Checkpoints) == 0 {
						fmt.Fprintln(w, "no checkpoint")
						return
					}
					printCheckpoint(w, &out.Checkpoints[0])
				})
			}}
		showKey.register(show, true)

		var recKey checkpointKeyFlags
		var head string
		reconcile := &cobra.Command{Use: "reconcile --session ID --forge NAME --repo REPO [--work-kind KIND --work-number N] [--head SHA]",
			Short: "Compare a checkpoint with the live lease and head: resume, re-inspect or re-acquire", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				body := map[string]any{"session_id": recKey.session, "forge": recKey.forge, "repo": recKey.repo,
					"work_kind": recKey.kind, "work_number": max(recKey.number, 0)}
				if head != "" {
					body["head_sha"] = head
				}
				return call(cmd, f, http.MethodPost, "/api/v1/checkpoints/reconcile", nil, body, func(w io.Writer, out *cp.CheckpointReconcile) {
					fmt.Fprintf(w, "%s: stale %t (head mismatch %t, checked %t; lease mismatch %t, checked %t)\n",
						out.ReconcileAction, out.Stale, out.HeadMismatch, out.HeadChecked, out.LeaseMismatch, out.LeaseChecked)
					if out.Reason != "" {
						fmt.Fprintln(w, out.Reason)
					}
					if out.Checkpoint != nil {
						fmt.Fprintf(w, "next valid action: %s\n", out.Checkpoint.NextValidAction)
					}
				})
			}}
		recKey.register(reconcile, true)
		reconcile.Flags().StringVar(&head, "head", "", "the live head SHA of your worktree (default: a pull request's head from the inventory)")
		return []*cobra.Command{write, list, show, reconcile}
	})
}

type checkpointList struct {
	Checkpoints []cp.Checkpoint `json:"checkpoints"`
}

// checkpointKeyFlags are the flags naming checkpoints.
type checkpointKeyFlags struct {
	session, forge, repo, kind string
	number                     int64
}

func (k *checkpointKeyFlags) register(cmd *cobra.Command, one bool) {
	cmd.Flags().StringVar(&k.session, "session", "", "the session's id")
	cmd.Flags().StringVar(&k.forge, "forge", "", "the forge's name")
	cmd.Flags().StringVar(&k.repo, "repo", "", "the repository")
	cmd.Flags().StringVar(&k.kind, "work-kind", "", "issue or pr (empty: the session's own checkpoint)")
	cmd.Flags().Int64Var(&k.number, "work-number", -1, "the issue or pull request number (0: the session's own)")
	if one {
		for _, name := range []string{"session", "forge", "repo"} {
			_ = cmd.MarkFlagRequired(name)
		}
	}
}

func (k *checkpointKeyFlags) query(cmd *cobra.Command) url.Values {
	q := url.Values{}
	for name, v := range map[string]string{"session_id": k.session, "forge": k.forge, "repo": k.repo, "work_kind": k.kind} {
		if v != "" {
			q.Set(name, v)
		}
	}
	if cmd.Flags().Changed("work-number") {
		q.Set("work_number", strconv.FormatInt(k.number, 10))
	}
	return q
}

func workUnit(c cp.Checkpoint) string {
	if c.WorkKind == "" {
		return "session"
	}
	return fmt.Sprintf("%s #%d", c.WorkKind, c.WorkNumber)
}

func printCheckpoint(w io.Writer, c *cp.Checkpoint) {
	fmt.Fprintf(w, "session %s (%s) on %s %s, %s, updated %s\n", c.SessionID, c.Role, c.Forge, c.Repo, workUnit(*c), c.UpdatedAt.Format(time.RFC3339))
	for _, f := range [][2]string{{"stage", c.WorkflowStage}, {"last completed", c.LastCompletedAction}, {"current operation", c.CurrentOperation},
		{"lease", c.LeaseID}, {"head", c.HeadSHA}, {"branch", c.Branch}, {"worktree", c.WorktreePath}, {"blocker", c.Blocker},
		{"next valid action", c.NextValidAction}, {"recovery", c.RecoveryInstructions}, {"status", c.Status}} {
		if f[1] != "" {
			fmt.Fprintf(w, "%s: %s\n", f[0], f[1])
		}
	}
	for _, d := range []struct {
		name string
		doc  json.RawMessage
	}{{"pending mutation", c.PendingMutation}, {"evidence", c.Evidence}} {
		if len(d.doc) > 0 {
			fmt.Fprintf(w, "%s: %s\n", d.name, strings.TrimSpace(string(d.doc)))
		}
	}
}

func newIncidentsCommand() *cobra.Command {
	return clientCommand("incidents", "Turn monitoring observations into forge issues (token permission incidents)", `Turn monitoring observations into forge issues.

An observation is what Sentry or GlitchTip says of one of its issues:
provider, organization, project, fingerprint (the provider's issue id),
and optionally environment, title, culprit, level, status, event_count,
permalink, first_seen, last_seen, linked_prs. The service files one
forge issue per provider issue in the repository incidents.projects maps
it to, and links them; the control plane then hands the issue out like
any other. The token needs permission incidents.`, func(f *clientFlags) []*cobra.Command {
		var file string
		var apply bool
		reconcile := &cobra.Command{Use: "reconcile [-f FILE] [--apply]", Short: "Say what an observation would do, or with --apply do it", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				obs, err := readSubmission(cmd.InOrStdin(), file)
				if err != nil {
					return err
				}
				return call(cmd, f, http.MethodPost, "/api/v1/incidents/reconcile", nil, map[string]any{"observation": obs, "apply": apply},
					func(w io.Writer, out *incident.Result) {
						fmt.Fprintf(w, "%s: %s %s", out.Outcome, out.Forge, out.Repo)
						if out.Link != nil && out.Link.IssueNumber > 0 {
							fmt.Fprintf(w, "#%d %s", out.Link.IssueNumber, out.Link.IssueURL)
						}
						fmt.Fprintln(w)
						if out.Issue != nil {
							fmt.Fprintf(w, "issue: %s\n", out.Issue.Title)
						}
						if out.Reason != "" {
							fmt.Fprintln(w, out.Reason)
						}
					})
			}}
		reconcile.Flags().StringVarP(&file, "file", "f", "-", `the observation, a JSON or YAML object ("-" for standard input)`)
		reconcile.Flags().BoolVar(&apply, "apply", false, "file the issue or update the link (default: a dry run, no forge call, nothing written)")
		return []*cobra.Command{reconcile}
	})
}
