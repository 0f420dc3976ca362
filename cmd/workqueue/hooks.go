package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

func newHooksCommand(w *world) *cobra.Command {
	hooks := &cobra.Command{Use: "hooks", Short: "Manage the forge webhooks that drive items in seconds"}
	var output string
	var strict bool
	ensure := &cobra.Command{
		Use:   "ensure",
		Short: "Make every configured project deliver its webhooks to this service",
		Long: `For every forge with a webhook secret, find the projects its token can
reach that a projects[] entry covers, and make each deliver merge request
and CI events to public_url/webhooks/<forge>, signed with the forge's
webhook secret. Running it again changes nothing: it reports each hook as
created, found, or updated when it was repaired (an event missing, or
subscribed but never read, a GitLab hook disabled after failing
deliveries, which is replaced, a hook pointed at another host, or
duplicates, which are deleted). serve does the same at start and every
hooks.check_interval (docs/forge-checks.md).

A forge without a webhook secret gets no hooks: that is a warning on
standard error, and with --strict a failure (exit 1). When no forge has
one, nothing was ensured, and that is a failure (exit 1) either way.`,
		Example: `  workqueue hooks ensure --config /etc/workqueue.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadOutputConfig(cmd, w, &output)
			if err != nil {
				return err
			}
			if cfg.PublicURL == "" {
				return errors.New("config: public_url: required, it is where the forges deliver")
			}
			forges, err := w.openForges(cfg)
			if err != nil {
				return err
			}
			type hookOutcome struct {
				Forge   string `json:"forge"`
				Project string `json:"project,omitempty"`
				Outcome string `json:"outcome"`
				URL     string `json:"url,omitempty"`
			}
			var outcomes []hookOutcome
			skipped := 0
			out := cmd.OutOrStdout()
			if output != "table" {
				out = io.Discard // the list is printed at the end
			}
			for _, fc := range cfg.Forges {
				secret, err := fc.WebhookSecret()
				if err != nil {
					return fmt.Errorf("config: %w", err)
				}
				if secret == "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "workqueue: warning: forge %s has no webhook secret (forges[%s].webhook_secret_env or _file): its projects' hooks were not ensured\n", fc.Name, fc.Name)
					outcomes = append(outcomes, hookOutcome{Forge: fc.Name, Outcome: "skipped"})
					skipped++
					continue
				}
				projects, err := configuredProjects(cmd.Context(), cfg, fc.Name, forges[fc.Name])
				if err != nil {
					return fmt.Errorf("%s: %w", fc.Name, err)
				}
				url := strings.TrimRight(cfg.PublicURL, "/") + "/webhooks/" + fc.Name
				for _, p := range projects {
					outcome, err := forges[fc.Name].EnsureWebhook(cmd.Context(), p, url, secret)
					if err != nil {
						return fmt.Errorf("%s %s: %w", fc.Name, p, err)
					}
					fmt.Fprintf(out, "%s %s: %s → %s\n", outcome, p, fc.Name, url)
					outcomes = append(outcomes, hookOutcome{Forge: fc.Name, Project: p, Outcome: fmt.Sprint(outcome), URL: url})
				}
			}
			if output != "table" {
				if err := printOutput(cmd.OutOrStdout(), output, map[string]any{"hooks": outcomes}, nil); err != nil {
					return err
				}
			}
			// A run that ensured nothing did not do what was asked
			// (issue 29): exit 1, not a quiet "skipped" and 0.
			switch {
			case skipped > 0 && skipped == len(cfg.Forges):
				return errors.New("no forge has a webhook secret: no hook was ensured")
			case skipped > 0 && strict:
				return fmt.Errorf("--strict: %d of %d forges have no webhook secret", skipped, len(cfg.Forges))
			}
			return nil
		},
	}
	ensure.Flags().BoolVar(&strict, "strict", false, "fail (exit 1) when any forge has no webhook secret, not only when none has")
	registerConfigFlags(ensure)
	addOutputFlag(ensure.Flags(), &output)
	hooks.AddCommand(ensure)
	return hooks
}
