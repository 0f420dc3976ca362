package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/workqueue-dev/workqueue/config"
)

func newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check a configuration file",
	}
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a configuration file and print what it resolves to",
		Long: `Validate a configuration file and print it as the service resolves it:
every default filled in, passwords in URLs redacted. Secrets are never
printed: for each, it says which environment variable or file it comes
from and whether that is set. Every problem is reported at once, each
naming its field (a secret that is unset or unreadable is one); with any,
it exits 1.`,
		Example: `  workqueue config check /etc/workqueue.yaml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			cfg, problems := config.Check(args[0])
			if len(cfg.Listen) > 0 { // decoded: show what it resolved
				fmt.Fprintf(out, "# %s, resolved (defaults filled in; secret values never shown)\n", args[0])
				if err := cfg.PrintResolved(out); err != nil {
					return err
				}
				if refs := cfg.Secrets(); len(refs) > 0 {
					fmt.Fprintln(out, "\n# secrets")
					for _, r := range refs {
						status, _ := r.Status()
						fmt.Fprintf(out, "#   %s: %s\n", r.Field, status)
					}
				}
			}
			if len(problems) == 0 {
				fmt.Fprintf(out, "\n%s: ok\n", args[0])
				return nil
			}
			fmt.Fprintf(out, "\n%s: %d problems:\n", args[0], len(problems))
			config.FormatProblems(out, problems)
			return exitError{code: 1}
		},
	}
	cmd.AddCommand(check)
	return cmd
}
