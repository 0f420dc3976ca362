package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/client"
	cp "github.com/workqueue-dev/workqueue/controlplane"
)

// clientFlags are the flags of every command that talks to a server.
type clientFlags struct {
	server, token, output string
}

func (f *clientFlags) register(cmd *cobra.Command) {
	server := os.Getenv("WORKQUEUE_URL")
	if server == "" {
		server = "http://127.0.0.1:8080"
	}
	cmd.PersistentFlags().StringVar(&f.server, "server", server, "workqueue server URL (default $WORKQUEUE_URL or http://127.0.0.1:8080)")
	cmd.PersistentFlags().StringVar(&f.token, "token", os.Getenv("WORKQUEUE_TOKEN"), "API token (default $WORKQUEUE_TOKEN)")
	cmd.PersistentFlags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
}

func (f *clientFlags) client() (*client.Client, error) {
	if f.output != "text" && f.output != "json" {
		return nil, fmt.Errorf("--output: want text or json, got %q", f.output)
	}
	if f.token == "" {
		return nil, errors.New("no API token: set WORKQUEUE_TOKEN or pass --token")
	}
	return client.New(f.server, f.token)
}

func newItemsCommand() *cobra.Command {
	var flags clientFlags
	items := &cobra.Command{
		Use:   "items",
		Short: "Submit and follow work items on a workqueue server",
		Long: `Submit and follow work items on a workqueue server.

The server and token come from $WORKQUEUE_URL and $WORKQUEUE_TOKEN, or
--server and --token. Output is for people by default; -o json prints
the API's JSON for scripts.`,
	}
	flags.register(items)
	items.AddCommand(newSubmitCommand(&flags), newListCommand(&flags), newShowCommand(&flags), newWatchCommand(&flags),
		newItemActionCommand(&flags, "retry", "Retry a failed or cancelled item", (*client.Client).Retry),
		newItemActionCommand(&flags, "cancel", "Cancel an active or failed item", (*client.Client).Cancel))
	return items
}

func newSubmitCommand(flags *clientFlags) *cobra.Command {
	var file, dir, action string
	overrides := map[string]*string{}
	cmd := &cobra.Command{
		Use:   "submit (-f FILE | --dir DIR --forge F --project P --source-branch B --target-branch T --title TITLE)",
		Short: "Submit desired state: an item from a JSON or YAML file, or from flags and a directory of files",
		Long: `Submit desired state: a JSON or YAML file describing one item, such as

  item_type: mr
  forge: gitea
  project: demo/hello
  source_branch: workqueue/greeting
  target_branch: main
  title: Add a greeting
  file_actions:
    - {action: create, file_path: hello.txt, content: "hello\n"}

Or give the fields as flags and --dir: every regular file under the
directory becomes one file action at its relative path, "create" unless
--action update says the files exist already. Text files go as text,
others as base64 (the project decides whether binary content is allowed).

Flags override the file's fields. Submitting the same content again is
"unchanged"; new content for the same branch updates the same merge
request.`,
		Example: `  workqueue items submit -f change.yaml
  workqueue items submit -f change.json --source-branch workqueue/other --title "Other change"
  workqueue items submit --dir ./generated --forge gitea --project team/app \
      --source-branch workqueue/generated --target-branch main --title "Regenerate" --action update`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := flags.client()
			if err != nil {
				return err
			}
			var doc map[string]any
			switch {
			case (file == "") == (dir == ""):
				return errors.New("give exactly one of --file and --dir")
			case file != "":
				if doc, err = readSubmission(cmd.InOrStdin(), file); err != nil {
					return err
				}
			default:
				if action != "create" && action != "update" {
					return fmt.Errorf("--action: want create or update, got %q", action)
				}
				actions, err := dirActions(dir, action)
				if err != nil {
					return err
				}
				doc = map[string]any{"item_type": "mr", "file_actions": actions}
			}
			for field, v := range overrides {
				if cmd.Flags().Changed(strings.ReplaceAll(field, "_", "-")) {
					doc[field] = *v
				}
			}
			body, err := json.Marshal(doc)
			if err != nil {
				return err
			}
			res, err := c.Submit(cmd.Context(), body)
			if err != nil {
				return err
			}
			if flags.output == "json" {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s)\n", res.Result, res.ID, res.Phase)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", `JSON or YAML file describing the item ("-" for standard input)`)
	cmd.Flags().StringVar(&dir, "dir", "", "directory whose files become the file actions (with the fields as flags)")
	cmd.Flags().StringVar(&action, "action", "create", "with --dir: create (new files) or update (existing files)")
	for _, field := range []string{"forge", "project", "source_branch", "target_branch", "title", "description"} {
		overrides[field] = cmd.Flags().String(strings.ReplaceAll(field, "_", "-"), "", "override the file's "+field)
	}
	return cmd
}

// dirActions turns every regular file under dir into a file action.
// Anything else (a symlink, a device) is refused rather than skipped.
func dirActions(dir, action string) ([]map[string]any, error) {
	var actions []map[string]any
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("--dir: %s is not a regular file", path)
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		a := map[string]any{"action": action, "file_path": filepath.ToSlash(rel)}
		if utf8.Valid(content) && !bytes.ContainsRune(content, 0) {
			a["content"] = string(content)
		} else {
			a["content"], a["encoding"] = base64.StdEncoding.EncodeToString(content), "base64"
		}
		actions = append(actions, a)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(actions) == 0 {
		return nil, fmt.Errorf("--dir: no files under %s", dir)
	}
	return actions, nil
}

// readSubmission reads a JSON or YAML object (JSON is YAML).
func readSubmission(stdin io.Reader, file string) (map[string]any, error) {
	var r io.Reader = stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("--file %s: %w", file, err)
	}
	if doc == nil {
		return nil, fmt.Errorf("--file %s: empty", file)
	}
	return doc, nil
}

func newListCommand(flags *clientFlags) *cobra.Command {
	var itemType, phase, forge, project, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List items, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := flags.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			for k, v := range map[string]string{"item_type": itemType, "phase": phase, "forge": forge, "project": project, "cursor": cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if limit > 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			items, next, err := c.List(cmd.Context(), q)
			if err != nil {
				return err
			}
			if flags.output == "json" {
				return printJSON(cmd.OutOrStdout(), map[string]any{"items": items, "next_cursor": next})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTYPE\tPHASE\tREASON\tATTEMPTS\tCREATED")
			for _, it := range items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", it.ID, it.ItemType, it.Phase, it.Reason, it.Attempts, it.CreatedAt.Format(time.RFC3339))
			}
			if next != "" {
				fmt.Fprintf(tw, "\nmore: --cursor %s\n", next)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&itemType, "type", "", "only items of this type")
	cmd.Flags().StringVar(&phase, "phase", "", "only items in this phase: active, completed, failed or cancelled")
	cmd.Flags().StringVar(&forge, "forge", "", "only mr items on this forge")
	cmd.Flags().StringVar(&project, "project", "", "only mr items of this project")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue after this item (from a previous page)")
	cmd.Flags().IntVar(&limit, "limit", 0, "items per page (default 50, at most 500)")
	return cmd
}

func newShowCommand(flags *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one item: phase, merge request, dimensions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := flags.client()
			if err != nil {
				return err
			}
			it, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if flags.output == "json" {
				return printJSON(cmd.OutOrStdout(), it)
			}
			printItem(cmd.OutOrStdout(), it)
			return nil
		},
	}
}

func newWatchCommand(flags *clientFlags) *cobra.Command {
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow an item until it is completed, failed or cancelled",
		Long: `Follow an item, printing each change of its phase, attempts, error,
merge request and dimensions, until it reaches a terminal phase. Exits 0
when the item completed, 1 when it failed or was cancelled.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := flags.client()
			if err != nil {
				return err
			}
			if interval < 100*time.Millisecond {
				return fmt.Errorf("--interval: at least 100ms")
			}
			last := ""
			for {
				it, err := c.Get(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if line := progressLine(it); line != last {
					if flags.output == "json" {
						b, _ := json.Marshal(it)
						fmt.Fprintln(cmd.OutOrStdout(), string(b))
					} else {
						fmt.Fprintf(cmd.OutOrStdout(), "%s  %s\n", time.Now().Format("15:04:05"), line)
					}
					last = line
				}
				switch it.Phase {
				case "completed":
					return nil
				case "failed", "cancelled":
					return fmt.Errorf("item %s %s: %s%s", it.ID, it.Phase, it.Reason, it.Error)
				}
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "how often to look")
	return cmd
}

func newItemActionCommand(flags *clientFlags, name, short string, act func(*client.Client, context.Context, string) (*api.Item, error)) *cobra.Command {
	return &cobra.Command{
		Use:   name + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := flags.client()
			if err != nil {
				return err
			}
			it, err := act(c, cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if flags.output == "json" {
				return printJSON(cmd.OutOrStdout(), it)
			}
			if name == "cancel" && it.Phase == "active" {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: cancel requested; it closes what it opened on the forge, then is cancelled (follow it with watch)\n", it.ID)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is %s\n", it.ID, it.Phase)
			return nil
		},
	}
}

// progressLine summarises what watch reports.
func progressLine(it *api.Item) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", it.Phase)
	if it.Reason != "" {
		fmt.Fprintf(&b, " (%s)", it.Reason)
	}
	if it.Attempts > 0 {
		fmt.Fprintf(&b, " attempts=%d", it.Attempts)
	}
	if it.Error != "" {
		fmt.Fprintf(&b, " error=%q", it.Error)
	}
	if d := mrDetail(it); d != nil && d.MRURL != "" {
		fmt.Fprintf(&b, " mr=%s", d.MRURL)
	}
	var needs []string
	for _, d := range it.Dimensions {
		if it.Phase == "active" && d.Status == "true" && d.PendingUntil == nil {
			needs = append(needs, d.Dimension)
		}
	}
	if len(needs) > 0 {
		fmt.Fprintf(&b, " needs=%s", strings.Join(needs, ","))
	}
	return b.String()
}

func printItem(w io.Writer, it *api.Item) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\ntype\t%s\nphase\t%s\n", it.ID, it.ItemType, it.Phase)
	if it.Reason != "" {
		fmt.Fprintf(tw, "reason\t%s\n", it.Reason)
	}
	fmt.Fprintf(tw, "attempts\t%d\n", it.Attempts)
	if it.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", it.Error)
	}
	if it.RetryAfter != nil {
		fmt.Fprintf(tw, "retry after\t%s\n", it.RetryAfter.Format(time.RFC3339))
	}
	if d := mrDetail(it); d != nil {
		fmt.Fprintf(tw, "project\t%s on %s\nbranches\t%s → %s\ntitle\t%s\nfiles\t%d\n", d.Project, d.Forge, d.SourceBranch, d.TargetBranch, d.Title, len(d.Files))
		if d.MRURL != "" {
			fmt.Fprintf(tw, "merge request\t%s\n", d.MRURL)
		}
	}
	for _, d := range it.Dimensions {
		state := d.Status
		if d.PendingUntil != nil {
			state += " from " + d.PendingUntil.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\n", d.Dimension, state)
	}
	tw.Flush()
}

// mrDetail is the detail of an mr item, nil for other types.
func mrDetail(it *api.Item) *api.MRDetail {
	var d api.MRDetail
	if it.ItemType != "mr" || json.Unmarshal(it.Detail, &d) != nil {
		return nil
	}
	return &d
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

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

// printTable prints a header and n rows, aligned in columns.
func printTable(w io.Writer, header string, n int, row func(i int) []any) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for i := range n {
		cells := row(i)
		for j, c := range cells {
			sep := "\t"
			if j == len(cells)-1 {
				sep = "\n"
			}
			fmt.Fprint(tw, c, sep)
		}
	}
	tw.Flush()
}
