package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/client"
)

// clientFlags are the flags of every command that talks to a server.
//
// Neither flag has a default value in the flag set: help prints a
// flag's default, and the token's is a secret (issue 29). The values
// are resolved when a command runs (resolve).
type clientFlags struct {
	server, token, output string
	quiet                 bool
	// faces are what the item types this program links show of their
	// items (their registrations'), by type name.
	faces map[string]wq.ItemFace
}

// linkColumn is the list's column of the items' links: the faces'
// columns ("MR"), or LINK where they have none or several.
func (f *clientFlags) linkColumn() string {
	var cols []string
	for _, face := range f.faces {
		if face.Column != "" && !slices.Contains(cols, face.Column) {
			cols = append(cols, face.Column)
		}
	}
	if len(cols) != 1 {
		return "LINK"
	}
	return cols[0]
}

// view is what people see of it beyond the generic fields, by its type's
// face; the zero view for a type this program does not know.
func (f *clientFlags) view(it *api.Item) wq.ItemView {
	if face, ok := f.faces[it.ItemType]; ok && face.View != nil {
		return face.View(it.Summary, it.Detail)
	}
	return wq.ItemView{}
}

// defaultServer is the server a client command talks to when nothing
// names one.
const defaultServer = "http://127.0.0.1:8080"

func (f *clientFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&f.server, "server", "",
		"workqueue server URL (default $WORKQUEUE_URL, else the server of 'workqueue login', else "+defaultServer+")")
	cmd.PersistentFlags().StringVar(&f.token, "token", "",
		"API token (default $WORKQUEUE_TOKEN, else the token 'workqueue login' saved for the server)")
	addOutputFlag(cmd.PersistentFlags(), &f.output)
}

// registerQuiet adds --quiet to a command whose answers have ids.
func (f *clientFlags) registerQuiet(cmd *cobra.Command, usage string) {
	cmd.PersistentFlags().BoolVarP(&f.quiet, "quiet", "q", false, usage)
}

// resolve returns the server and token a command uses: each flag, else
// its environment variable, else what 'workqueue login' saved.
func (f *clientFlags) resolve() (server, token string, err error) {
	server, token = f.server, f.token
	if server == "" {
		server = os.Getenv("WORKQUEUE_URL")
	}
	var saved savedLogins
	if server == "" || (token == "" && os.Getenv("WORKQUEUE_TOKEN") == "") {
		if saved, err = loadLogins(); err != nil {
			return "", "", err
		}
	}
	if server == "" {
		server = cmp.Or(saved.Default, defaultServer)
	}
	if token == "" {
		token = cmp.Or(os.Getenv("WORKQUEUE_TOKEN"), saved.Servers[normalServer(server)].Token)
	}
	return server, token, nil
}

func (f *clientFlags) client() (*client.Client, error) {
	if err := checkOutput(&f.output); err != nil {
		return nil, err
	}
	server, token, err := f.resolve()
	if err != nil {
		return nil, err
	}
	if token == "" {
		return nil, transportError{errors.New("no API token: run 'workqueue login', set WORKQUEUE_TOKEN or pass --token")}
	}
	c, err := client.New(server, token)
	if err != nil {
		return nil, usageError{fmt.Errorf("--server: %w", err)}
	}
	return c, nil
}

// print prints v as -o asks, or with --quiet only the ids, or for people
// what table writes.
func (f *clientFlags) print(w io.Writer, v any, ids []string, table func(io.Writer)) error {
	if f.quiet && ids != nil {
		for _, id := range ids {
			fmt.Fprintln(w, id)
		}
		return nil
	}
	return printOutput(w, f.output, v, table)
}

func newItemsCommand(w *world) *cobra.Command {
	flags := clientFlags{faces: map[string]wq.ItemFace{}}
	for _, f := range w.types.Faces() {
		flags.faces[f.Type] = f
	}
	items := &cobra.Command{
		Use:   "items",
		Short: "Submit and follow work items on a workqueue server",
		Long: `Submit and follow work items on a workqueue server.

The server and token come from $WORKQUEUE_URL and $WORKQUEUE_TOKEN, or
--server and --token. Output is for people by default; -o json prints
the API's JSON for scripts.`,
	}
	flags.register(items)
	flags.registerQuiet(items, "print only the items' ids, one a line")
	items.AddCommand(newSubmitCommand(&flags), newListCommand(&flags), withItemCompletion(&flags, newShowCommand(&flags), ""),
		withItemCompletion(&flags, newWatchCommand(&flags), "active"),
		withItemCompletion(&flags, newItemActionCommand(&flags, "retry", "Retry a failed or cancelled item", (*client.Client).Retry), "failed"),
		withItemCompletion(&flags, newItemActionCommand(&flags, "cancel", "Cancel an active or failed item", (*client.Client).Cancel), "active"))
	return items
}

func newSubmitCommand(flags *clientFlags) *cobra.Command {
	var file, dir, action, itemType string
	var wait bool
	var interval time.Duration
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
				return usageErrorf("give exactly one of --file and --dir")
			case file != "":
				if doc, err = readSubmission(cmd.InOrStdin(), file); err != nil {
					return err
				}
			default:
				if action != "create" && action != "update" {
					return usageErrorf("--action: want create or update, got %q", action)
				}
				face, err := flags.filesFace(itemType)
				if err != nil {
					return err
				}
				actions, err := dirActions(dir, action)
				if err != nil {
					return err
				}
				doc = map[string]any{"item_type": face.Type, face.Files: actions}
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
			if wait {
				if !flags.quiet && flags.output == "table" {
					fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s); waiting\n", res.Result, res.ID, res.Phase)
				}
				return waitItem(cmd, flags, c, res.ID, interval, flags.output == "table" && !flags.quiet)
			}
			return flags.print(cmd.OutOrStdout(), res, []string{res.ID}, func(w io.Writer) {
				fmt.Fprintf(w, "%s %s (%s)\n", res.Result, res.ID, res.Phase)
			})
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the item until it is completed (exit 0), failed or cancelled (exit 1)")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "with --wait: how often to look")
	cmd.Flags().StringVarP(&file, "file", "f", "", `JSON or YAML file describing the item ("-" for standard input)`)
	cmd.Flags().StringVar(&dir, "dir", "", "directory whose files become the file actions (with the fields as flags)")
	cmd.Flags().StringVar(&action, "action", "create", "with --dir: create (new files) or update (existing files)")
	cmd.Flags().StringVar(&itemType, "type", "", "with --dir: the item type whose submission takes the files (default: the one type that takes files)")
	// The fields the item types let people give as flags, over a file's.
	for _, face := range flags.faces {
		for _, field := range face.Fields {
			if _, ok := overrides[field]; !ok {
				overrides[field] = cmd.Flags().String(strings.ReplaceAll(field, "_", "-"), "", "override the file's "+field)
			}
		}
	}
	return cmd
}

// filesFace is the face of the item type a directory's files are
// submitted as: name's, or the one type that takes files.
func (f *clientFlags) filesFace(name string) (wq.ItemFace, error) {
	var takers []string
	for _, face := range f.faces {
		if face.Files != "" {
			takers = append(takers, face.Type)
		}
	}
	slices.Sort(takers)
	if name == "" && len(takers) == 1 {
		name = takers[0]
	}
	face, ok := f.faces[name]
	if !ok || face.Files == "" {
		return wq.ItemFace{}, usageErrorf("--type: want the item type whose submission takes the files (%s), got %q", strings.Join(takers, ", "), name)
	}
	return face, nil
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
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("--file %s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if v == nil {
		return nil, fmt.Errorf("--file %s: empty", file)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		// Said in the file's terms, not the decoder's (which names Go types).
		return nil, fmt.Errorf("--file %s: want an object of fields (item_type: …), got %s", file, yamlKindOf(v))
	}
	return doc, nil
}

// yamlKindOf names a decoded YAML value's kind for people.
func yamlKindOf(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("the value %q", fmt.Sprint(v))
}

func newListCommand(flags *clientFlags) *cobra.Command {
	var itemType, phase, forge, project, title, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List items, newest first",
		Long: `List items, newest first, a page at a time (--cursor continues).

--project and --title take globs (* within a path segment, ** across
them; --project exact is filtered by the server). With a glob the
command reads pages of the server's list and keeps the items that match,
up to --limit of them, reading at most 5000 items: the next cursor it
prints continues from where it stopped.`,
		Example: `  workqueue items list --phase active
  workqueue items list --project 'team/**' --title '*deps*' -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := flags.client()
			if err != nil {
				return err
			}
			for name, g := range map[string]string{"--project": project, "--title": title} {
				if !doublestar.ValidatePattern(g) {
					return usageErrorf("%s: not a valid glob: %q", name, g)
				}
			}
			projectGlob := strings.ContainsAny(project, "*?[{")
			q := url.Values{}
			for k, v := range map[string]string{"item_type": itemType, "phase": phase, "forge": forge, "cursor": cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if project != "" && !projectGlob {
				q.Set("project", project)
			}
			if limit > 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			var items []*api.Item
			var next string
			if projectGlob || title != "" {
				want := 50 // the server's default page
				if limit > 0 {
					want = limit
				}
				items, next, err = listMatching(cmd.Context(), c, q, want, func(page []*api.Item) []*api.Item {
					page = slices.DeleteFunc(page, func(it *api.Item) bool {
						ok, _ := doublestar.Match(project, it.Project)
						return project != "" && !ok
					})
					if title == "" {
						return page
					}
					return slices.DeleteFunc(page, func(it *api.Item) bool {
						v := flags.view(it)
						if v.Title == "" {
							return true
						}
						ok, _ := doublestar.Match(title, v.Title)
						return !ok
					})
				})
			} else {
				items, next, err = c.List(cmd.Context(), q)
			}
			if err != nil {
				return err
			}
			ids := make([]string, len(items))
			for i, it := range items {
				ids[i] = it.ID
			}
			return flags.print(cmd.OutOrStdout(), map[string]any{"items": items, "next_cursor": next}, ids, func(w io.Writer) {
				if len(items) == 0 {
					emptyItemsHint(w, itemType != "" || phase != "" || forge != "" || project != "" || title != "", cursor != "", next)
					return
				}
				printItemTable(w, flags, items, next)
			})
		},
	}
	cmd.Flags().StringVar(&itemType, "type", "", "only items of this type")
	cmd.Flags().StringVar(&phase, "phase", "", "only items in this phase: active, completed, failed or cancelled")
	cmd.RegisterFlagCompletionFunc("phase", cobra.FixedCompletions([]string{"active", "completed", "failed", "cancelled"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().StringVar(&forge, "forge", "", "only mr items on this forge")
	cmd.Flags().StringVar(&project, "project", "", "only mr items of this project, or of projects this glob matches")
	cmd.Flags().StringVar(&title, "title", "", "only mr items whose title this glob matches")
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
			return flags.print(cmd.OutOrStdout(), it, []string{it.ID}, func(w io.Writer) { printItem(w, flags, it) })
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
when the item completed, 1 when it failed or was cancelled. A server that
does not answer (restarting, or unavailable) is tried again, less and
less often up to every 30s; a refused token ends it (exit 3).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := flags.client()
			if err != nil {
				return err
			}
			return waitItem(cmd, flags, c, args[0], interval, true)
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "how often to look")
	return cmd
}

func newItemActionCommand(flags *clientFlags, name, short string, act func(*client.Client, context.Context, string) (*api.Item, error)) *cobra.Command {
	var all, yes bool
	var itemType, phase, forge, project string
	// The phases an item can be retried or cancelled from.
	eligible := map[string][]wq.Phase{"retry": {wq.PhaseFailed, wq.PhaseCancelled}, "cancel": {wq.PhaseActive, wq.PhaseFailed}}[name]
	cmd := &cobra.Command{
		Use:   name + " (ID | --all [--phase P] [--type T] [--forge F] [--project GLOB] [--yes])",
		Short: short,
		Long: short + `.

ID is the item's id or a unique prefix of it. With --all instead, every
item the filters match that can be ` + map[string]string{"retry": "retried (failed or cancelled)", "cancel": "cancelled (active or failed)"}[name] + `:
the command counts them, asks for a confirmation on standard input
(--yes answers it), then ` + name + `s each and says how many it did. It
reads at most 5000 items.`,
		Example: fmt.Sprintf(`  workqueue items %[1]s 01a236de
  workqueue items %[1]s --all --phase failed --project 'team/**'
  workqueue items %[1]s --all --phase failed --yes`, name),
		Args: func(cmd *cobra.Command, args []string) error {
			if all != (len(args) == 0) || len(args) > 1 {
				return errors.New("give one item ID, or --all with filters")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := flags.client()
			if err != nil {
				return err
			}
			if all {
				return bulkItemAction(cmd, flags, c, name, eligible, act, yes, itemType, phase, forge, project)
			}
			it, err := act(c, cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return flags.print(cmd.OutOrStdout(), it, []string{it.ID}, func(w io.Writer) {
				if name == "cancel" && it.Phase == "active" {
					fmt.Fprintf(w, "%s: cancel requested; it closes what it opened on the forge, then is cancelled (follow it with watch)\n", it.ID)
					return
				}
				fmt.Fprintf(w, "%s is %s\n", it.ID, it.Phase)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every item the filters match, instead of one ID (asks to confirm)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "with --all: do not ask to confirm")
	cmd.Flags().StringVar(&itemType, "type", "", "with --all: only items of this type")
	cmd.Flags().StringVar(&phase, "phase", "", "with --all: only items in this phase")
	cmd.Flags().StringVar(&forge, "forge", "", "with --all: only items on this forge")
	cmd.Flags().StringVar(&project, "project", "", "with --all: only items of this project, or of projects this glob matches")
	return cmd
}

// bulkItemAction retries or cancels every item the filters match that
// is in an eligible phase, once the count is confirmed (issue 29: as
// River UI and asynqmon do for a filtered list). Any item refused makes
// it exit 1, after the others were done.
func bulkItemAction(cmd *cobra.Command, flags *clientFlags, c *client.Client, name string, eligible []wq.Phase,
	act func(*client.Client, context.Context, string) (*api.Item, error), yes bool, itemType, phase, forge, project string) error {
	if phase != "" && !slices.Contains(eligible, wq.Phase(phase)) {
		return usageErrorf("--phase: only items %v can be %s, not %s", eligible, map[string]string{"retry": "retried", "cancel": "cancelled"}[name], phase)
	}
	if !doublestar.ValidatePattern(project) {
		return usageErrorf("--project: not a valid glob: %q", project)
	}
	q := url.Values{}
	for k, v := range map[string]string{"item_type": itemType, "phase": phase, "forge": forge} {
		if v != "" {
			q.Set(k, v)
		}
	}
	targets, _, err := listMatching(cmd.Context(), c, q, maxListScan, func(page []*api.Item) []*api.Item {
		return slices.DeleteFunc(page, func(it *api.Item) bool {
			ok, _ := doublestar.Match(project, it.Project)
			return (project != "" && !ok) || !slices.Contains(eligible, it.Phase)
		})
	})
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	if len(targets) == 0 {
		fmt.Fprintf(stderr, "no item to %s matches\n", name)
		return nil
	}
	if !yes {
		fmt.Fprintf(stderr, "%s %s? [y/N] ", name, countOf(len(targets), "item"))
		answer, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stderr, "not confirmed: nothing done")
			return exitError{code: exitFailed}
		}
	}
	var done []*api.Item
	var failed []error
	for _, it := range targets {
		got, err := act(c, cmd.Context(), it.ID)
		if err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", it.ID, err))
			continue
		}
		done = append(done, got)
	}
	ids := make([]string, len(done))
	for i, it := range done {
		ids[i] = it.ID
	}
	verb := map[string]string{"retry": "retried", "cancel": "cancelled or asked to cancel"}[name]
	err = flags.print(cmd.OutOrStdout(), map[string]any{"items": done, "failed": len(failed)}, ids, func(w io.Writer) {
		fmt.Fprintf(w, "%s %s of %d\n", verb, countOf(len(done), "item"), len(targets))
	})
	if err != nil || len(failed) == 0 {
		return err
	}
	return fmt.Errorf("%d of %d items refused: %w", len(failed), len(targets), errors.Join(failed...))
}

// waitItem follows an item until it reaches a terminal phase. With
// progress, each change is printed as it is seen (a line for people, or
// one JSON or YAML document per change); without, only the last state
// is printed. A failed or cancelled item is an itemFailedError (exit 1).
func waitItem(cmd *cobra.Command, flags *clientFlags, c *client.Client, id string, interval time.Duration, progress bool) error {
	if interval < 100*time.Millisecond {
		return usageErrorf("--interval: at least 100ms")
	}
	out := cmd.OutOrStdout()
	last := ""
	backoff := interval
	for {
		it, err := c.Get(cmd.Context(), id)
		if err != nil {
			if !retryable(err) {
				return err
			}
			// The server restarting, or a proxy before it: keep
			// following, less often, until it answers again.
			fmt.Fprintf(cmd.ErrOrStderr(), "workqueue: %v; retrying in %s\n", asUnreachable(cmd, err), backoff)
			select {
			case <-cmd.Context().Done():
				return cmd.Context().Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxWatchBackoff)
			continue
		}
		backoff = interval
		terminal := it.Phase == "completed" || it.Phase == "failed" || it.Phase == "cancelled"
		if line := progressLine(flags, it); line != last && (progress || terminal) {
			switch {
			case flags.quiet:
				if terminal {
					fmt.Fprintln(out, it.ID)
				}
			case flags.output == "json":
				b, _ := json.Marshal(it)
				fmt.Fprintln(out, string(b))
			case flags.output == "yaml":
				fmt.Fprintln(out, "---")
				printYAML(out, it)
			case terminal && it.Error != "":
				// The error is said once, by the itemFailedError
				// returned below (issue 55: it was printed twice).
				quiet := *it
				quiet.Error = ""
				fmt.Fprintf(out, "%s  %s\n", time.Now().Format("15:04:05"), progressLine(flags, &quiet))
			default:
				fmt.Fprintf(out, "%s  %s\n", time.Now().Format("15:04:05"), line)
			}
			last = line
		}
		switch it.Phase {
		case "completed":
			return nil
		case "failed", "cancelled":
			return itemFailedError{it}
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(interval):
		}
	}
}

// maxListScan bounds the items a filtered list reads from the server.
const maxListScan = 5000

// listMatching reads the server's list from q's cursor, a page of 500 at
// a time, and keeps the items keep accepts until it has want of them or
// has read maxListScan items. The cursor it returns continues after the
// last item it read ("" at the end of the list).
func listMatching(ctx context.Context, c *client.Client, q url.Values, want int, keep func([]*api.Item) []*api.Item) ([]*api.Item, string, error) {
	q.Set("limit", "500")
	var out []*api.Item
	for read := 0; read < maxListScan; {
		page, next, err := c.List(ctx, q)
		if err != nil {
			return nil, "", err
		}
		read += len(page)
		last := ""
		if len(page) > 0 {
			last = page[len(page)-1].ID
		}
		for _, it := range keep(slices.Clone(page)) {
			out = append(out, it)
			if len(out) == want {
				if it.ID == last {
					return out, next, nil
				}
				return out, it.ID, nil
			}
		}
		if next == "" {
			return out, "", nil
		}
		q.Set("cursor", next)
	}
	return out, q.Get("cursor"), nil
}

// withItemCompletion completes cmd's ID argument with the newest items'
// ids (of phase, when not ""), each described by its type, phase and
// title, from the server the flags name. Without a token or a server it
// completes nothing.
func withItemCompletion(flags *clientFlags, cmd *cobra.Command, phase string) *cobra.Command {
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := flags.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		q := url.Values{"limit": {"100"}}
		if phase != "" {
			q.Set("phase", phase)
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
		defer cancel()
		items, _, err := c.List(ctx, q)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, it := range items {
			if strings.HasPrefix(it.ID, toComplete) {
				desc := string(it.ItemType) + " " + string(it.Phase)
				if v := flags.view(it); v.Title != "" {
					desc += " " + it.Project + ": " + v.Title
				}
				out = append(out, it.ID+"\t"+desc)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	return cmd
}

// maxWatchBackoff bounds the wait between two tries of a server that
// does not answer.
const maxWatchBackoff = 30 * time.Second

// retryable reports whether a failed request may succeed if tried again:
// the server unreachable or unavailable, not a refusal or a bad token.
func retryable(err error) bool {
	var cerr *client.Error
	if errors.As(err, &cerr) {
		return cerr.Problem.Code == wq.EUNAVAILABLE
	}
	return exitCode(err) == exitTransport
}

// printItemTable lists items with what people look for first: the
// project, the title and what the item made on the forge (its type's
// view: a merge request's page).
func printItemTable(w io.Writer, flags *clientFlags, items []*api.Item, next string) {
	printTable(w, "ID\tTYPE\tPHASE\tPROJECT\tTITLE\t"+flags.linkColumn()+"\tATTEMPTS\tCREATED", len(items), func(i int) []any {
		it := items[i]
		phase := string(it.Phase)
		if it.Reason != "" {
			phase += " (" + it.Reason + ")"
		}
		project, title, link := "-", "-", "-"
		if it.Project != "" {
			project = it.Forge + ":" + it.Project
		}
		if v := flags.view(it); v.Title != "" {
			title = truncate(v.Title, 50)
			if v.Link != "" {
				link = v.Link
			}
		}
		return []any{it.ID, it.ItemType, phase, project, title, link, it.Attempts, it.CreatedAt.Format(time.RFC3339)}
	})
	if next != "" {
		fmt.Fprintf(w, "\nmore: --cursor %s\n", next)
	}
}

// truncate shortens s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// progressLine summarises what watch reports.
func progressLine(flags *clientFlags, it *api.Item) string {
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
	if v := flags.view(it); v.Link != "" {
		name := cmp.Or(strings.ToLower(flags.faces[it.ItemType].Column), "link")
		fmt.Fprintf(&b, " %s=%s", name, v.Link)
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

func printItem(w io.Writer, flags *clientFlags, it *api.Item) {
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
	v := flags.view(it)
	for _, l := range v.Lines {
		fmt.Fprintf(tw, "%s\t%s\n", l.Label, l.Value)
	}
	if v.Link != "" {
		fmt.Fprintf(tw, "%s\t%s\n", v.LinkName, v.Link)
	}
	// What is still to do, only while the item is active: a finished
	// item's needs_* rows keep the values they had when it stopped
	// (issue 29); a failed one's are what a retry resumes.
	switch it.Phase {
	case wq.PhaseActive:
		for _, d := range it.Dimensions {
			state := d.Status
			if d.PendingUntil != nil {
				state += " from " + d.PendingUntil.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\n", d.Dimension, state)
		}
	case wq.PhaseFailed:
		var undone []string
		for _, d := range it.Dimensions {
			if d.Status != "false" {
				undone = append(undone, d.Dimension)
			}
		}
		if len(undone) > 0 {
			fmt.Fprintf(tw, "undone\t%s (a retry resumes them)\n", strings.Join(undone, ", "))
		}
	}
	for _, warning := range it.Warnings {
		fmt.Fprintf(tw, "warning\t%s\n", warning)
	}
	tw.Flush()
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printTable prints a header and n rows, aligned in columns.
// emptyHint says, in place of an empty table, why it is empty and what
// to do next (issue 55).
func emptyHint(w io.Writer, why, next string) {
	fmt.Fprintf(w, "%s.\nnext: %s.\n", why, next)
}

// emptyItemsHint is items list's empty answer: with filters, that none
// matched (and where to read on when the scan stopped); without, that
// nothing was submitted yet.
func emptyItemsHint(w io.Writer, filtered, cursor bool, next string) {
	switch {
	case cursor && next == "":
		emptyHint(w, "no more items after that cursor", "'workqueue items list' starts from the newest")
	case next != "":
		emptyHint(w, "no items match these filters among those read", "read on with --cursor "+next)
	case filtered:
		emptyHint(w, "no items match these filters", "'workqueue items list' lists every item")
	default:
		emptyHint(w, "no items: nothing has been submitted to this server yet",
			"submit a change with 'workqueue items submit' (see its --help), or have an agent or a CI job submit one; "+
				"the server processes it only if its handled_types include the item's type")
	}
}

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
