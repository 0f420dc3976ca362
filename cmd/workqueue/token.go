package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/spf13/cobra"

	"github.com/workqueue-dev/workqueue/auth"
)

func newTokenCommand() *cobra.Command {
	token := &cobra.Command{Use: "token", Short: "Manage static API tokens"}
	var permissions, projects []string
	var output string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Print a new random API token and the config entry that accepts it",
		Long: `Print a new random API token and the auth.tokens entry that accepts it.

The service stores only the token's SHA-256: add the printed entry to the
configuration file's auth.tokens list, and hand the token to its user.
The token is shown once; it cannot be recovered from the entry. serve
reads auth.tokens when it starts: restart every instance (a rolling
restart will do) for the new entry to be accepted.`,
		Example: `  workqueue token create ci-bot --permissions read,submit
  workqueue token create app-ci --permissions submit --projects 'group/app,group/libs/**'
  workqueue token create alice --permissions admin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(&output); err != nil {
				return err
			}
			for _, p := range permissions {
				if !auth.Permission(p).Valid() {
					return usageErrorf("--permissions: want some of %v, got %q", auth.Permissions, p)
				}
			}
			tok, hash, err := auth.NewToken()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, p := range projects {
				if !doublestar.ValidatePattern(p) {
					return usageErrorf("--projects: not a valid glob: %q", p)
				}
			}
			if output != "table" {
				entry := map[string]any{"name": args[0], "sha256": hash, "permissions": permissions}
				if len(projects) > 0 {
					entry["projects"] = projects
				}
				return printOutput(out, output, map[string]any{"token": tok, "entry": entry}, nil)
			}
			fmt.Fprintf(out, "token: %s\n\n# add under auth.tokens in the configuration file:\n", tok)
			scope := ""
			if len(projects) > 0 {
				quoted := make([]string, len(projects))
				for i, p := range projects {
					quoted[i] = strconv.Quote(p)
				}
				scope = ", projects: [" + strings.Join(quoted, ", ") + "]"
			}
			fmt.Fprintf(out, "- {name: %q, sha256: %s, permissions: [%s]%s}\n", args[0], hash, strings.Join(permissions, ", "), scope)
			fmt.Fprintln(out, "# then restart serve (every instance): it reads auth.tokens when it starts")
			return nil
		},
	}
	create.Flags().StringSliceVar(&permissions, "permissions", []string{string(auth.Read)},
		fmt.Sprintf("comma-separated permissions: %v", auth.Permissions))
	create.Flags().StringSliceVar(&projects, "projects", nil,
		"comma-separated project globs the token is narrowed to (default: every project)")
	addOutputFlag(create.Flags(), &output)
	token.AddCommand(create)
	return token
}
