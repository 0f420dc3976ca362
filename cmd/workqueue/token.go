package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/workqueue-dev/workqueue/auth"
)

func newTokenCommand() *cobra.Command {
	token := &cobra.Command{Use: "token", Short: "Manage static API tokens"}
	var permissions []string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Print a new random API token and the config entry that accepts it",
		Long: `Print a new random API token and the auth.tokens entry that accepts it.

The service stores only the token's SHA-256: add the printed entry to the
configuration file's auth.tokens list, and hand the token to its user.
The token is shown once; it cannot be recovered from the entry.`,
		Example: `  workqueue token create ci-bot --permissions read,submit
  workqueue token create alice --permissions admin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range permissions {
				if !auth.Permission(p).Valid() {
					return fmt.Errorf("--permissions: want some of %v, got %q", auth.Permissions, p)
				}
			}
			tok, hash, err := auth.NewToken()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "token: %s\n\n# add under auth.tokens in the configuration file:\n", tok)
			fmt.Fprintf(out, "- {name: %q, sha256: %s, permissions: [%s]}\n", args[0], hash, strings.Join(permissions, ", "))
			return nil
		},
	}
	create.Flags().StringSliceVar(&permissions, "permissions", []string{string(auth.Read)},
		fmt.Sprintf("comma-separated permissions: %v", auth.Permissions))
	token.AddCommand(create)
	return token
}
