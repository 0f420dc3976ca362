package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

func newHooksCommand() *cobra.Command {
	hooks := &cobra.Command{Use: "hooks", Short: "Manage the forge webhooks that drive items in seconds"}
	var output string
	ensure := &cobra.Command{
		Use:   "ensure",
		Short: "Make every configured project deliver its webhooks to this service",
		Long: `For every forge with a webhook secret, find the projects its token can
reach that a projects[] entry covers, and make each deliver merge request
and CI events to public_url/webhooks/<forge>, signed with the forge's
webhook secret. Running it again changes nothing: it reports each hook as
created, found, or updated when it was repaired (an event missing, or
subscribed but never read, or a GitLab hook disabled after failing
deliveries, which is replaced).`,
		Example: `  workqueue hooks ensure --config /etc/workqueue.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(&output); err != nil {
				return err
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if cfg.PublicURL == "" {
				return errors.New("config: public_url: required, it is where the forges deliver")
			}
			forges, err := openForges(cfg)
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
					fmt.Fprintf(out, "%s: no webhook secret configured; skipped\n", fc.Name)
					outcomes = append(outcomes, hookOutcome{Forge: fc.Name, Outcome: "skipped"})
					continue
				}
				projects, err := forges[fc.Name].ListProjects(cmd.Context())
				if err != nil {
					return fmt.Errorf("%s: %w", fc.Name, err)
				}
				url := strings.TrimRight(cfg.PublicURL, "/") + "/webhooks/" + fc.Name
				for _, p := range projects {
					if _, ok := cfg.ProjectFor(fc.Name, p); !ok {
						continue
					}
					outcome, err := forges[fc.Name].EnsureWebhook(cmd.Context(), p, url, secret)
					if err != nil {
						return fmt.Errorf("%s %s: %w", fc.Name, p, err)
					}
					fmt.Fprintf(out, "%s %s: %s → %s\n", outcome, p, fc.Name, url)
					outcomes = append(outcomes, hookOutcome{Forge: fc.Name, Project: p, Outcome: fmt.Sprint(outcome), URL: url})
				}
			}
			if output != "table" {
				return printOutput(cmd.OutOrStdout(), output, map[string]any{"hooks": outcomes}, nil)
			}
			return nil
		},
	}
	registerConfigFlags(ensure)
	addOutputFlag(ensure.Flags(), &output)
	hooks.AddCommand(ensure)
	return hooks
}
