package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	cp "github.com/workqueue-dev/workqueue/controlplane"
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
// text made by human from the decoded answer.
func call[T any](cmd *cobra.Command, flags *clientFlags, method, path string, query url.Values, body any, human func(io.Writer, *T)) error {
	c, err := flags.client()
	if err != nil {
		return err
	}
	var out T
	if err := c.Call(cmd.Context(), method, path, query, body, &out); err != nil {
		return err
	}
	if flags.output == "json" {
		return printJSON(cmd.OutOrStdout(), out)
	}
	human(cmd.OutOrStdout(), &out)
	return nil
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
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tROLE\tSTATUS\tNAME\tHEARTBEAT")
					for _, s := range out.Sessions {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.Role, s.Status, s.Name, s.HeartbeatAt.Format(time.RFC3339))
					}
					tw.Flush()
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
the head the assignment pinned. It exits 0 when allowed and 3 when refused,
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
				return exitError{code: 3}
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
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tSTATE\tSESSION\tWORK\tEXPIRES")
					for _, l := range out.Leases {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.ID, l.State, l.SessionID, l.WorkID, l.ExpiresAt.Format(time.RFC3339))
					}
					tw.Flush()
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
		return []*cobra.Command{list, show, expire, leaseVerb(f, "heartbeat", "Extend your live lease"), leaseVerb(f, "adopt", "Resume a lease of your identity, or take an expired one"),
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
		cmd.Flags().StringVar(&head, "head", "", "the head you pushed yourself, so that the gate expects it")
	case "adopt":
		cmd.Flags().StringVar(&head, "head", "", "the head of your worktree")
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
						tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
						fmt.Fprintln(tw, "KIND\tREPO\tNUMBER\tSTATE\tREVIEW\tTITLE")
						for _, x := range out.Work {
							fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", x.Kind, x.Repo, x.Number, x.State, x.ReviewState, x.Title)
						}
						tw.Flush()
					})
				}}
			list.Flags().StringVar(&forge, "forge", "", "only this forge's")
			list.Flags().StringVar(&repo, "repo", "", "only this repository's")
			list.Flags().StringVar(&kind, "kind", "", "issue or pr")
			list.Flags().StringVar(&state, "state", "", "open, merged or closed")
			return []*cobra.Command{list}
		})
}
