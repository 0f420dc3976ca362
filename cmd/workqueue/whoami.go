package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

func newWhoamiCommand() *cobra.Command {
	var flags clientFlags
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Say who the server takes your token for, and what it may do",
		Long: `Ask the server (GET /me) who the token belongs to: its identity, how it
was recognised (a static token, a JWT, an introspected token), the rules
that matched and the permissions they grant, on which projects. A token
the server refuses exits 3.`,
		Example: `  WORKQUEUE_TOKEN=... workqueue whoami
  workqueue whoami -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := flags.client()
			if err != nil {
				return err
			}
			me, err := c.Me(cmd.Context())
			if err != nil {
				return err
			}
			return flags.print(cmd.OutOrStdout(), me, []string{me.Identity}, func(w io.Writer) {
				fmt.Fprintf(w, "%s (%s", me.Identity, me.Kind)
				if me.Issuer != "" {
					fmt.Fprintf(w, " from %s", me.Issuer)
				}
				fmt.Fprintf(w, ")\npermissions: %s\n", strings.Join(me.Permissions, ", "))
				for _, g := range me.Grants {
					projects := "every project"
					if len(g.Projects) > 0 {
						projects = strings.Join(g.Projects, ", ")
					}
					fmt.Fprintf(w, "  rule %s: %s on %s\n", g.Rule, strings.Join(g.Permissions, ", "), projects)
				}
			})
		},
	}
	flags.register(cmd)
	flags.registerQuiet(cmd, "print only the identity")
	return cmd
}
