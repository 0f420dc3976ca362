package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/spf13/cobra"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/policy"
)

func newConfigCommand(w *world) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check a configuration file",
	}
	var output string
	var online bool
	check := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a configuration file and print what it resolves to",
		Long: `Validate a configuration file and print it as the service resolves it:
every default filled in, passwords in URLs redacted. Secrets are never
printed: for each, it says which environment variable or file it comes
from and whether that is set.

Every problem is reported at once, before anything touches a database,
each naming its field and the line of the file: unknown keys (with the
key you probably meant), values of the wrong shape, invalid values,
secrets that are unset or unreadable, handled_types this build cannot
process, projects whose forge is not configured. It also says what the
file allows: whether agent-only tokens may submit changes without an
assignment (control_plane.require_assignment: false), and how failed
authentications are limited, and each project's protected paths (its
mode and the effective list: the built-in one and its additions).
Warnings (items the API
takes that no instance here processes) do not fail the check. With
--online it also calls each forge: whether it answers, whether the
token is accepted, whether the token can reach a project each
projects[] entry covers, the forge's version (below the oldest supported
one is a problem, as serve refuses to start), and the project settings
the service's safety relies on (approvals reset on push, pipelines must
succeed, branch protection: warnings; docs/forge-checks.md). With any problem it exits 1. serve runs the
same checks (all but --online) before it starts.

FILE defaults to $WORKQUEUE_CONFIG.`,
		Example: `  workqueue config check /etc/workqueue.yaml
  workqueue config check --online -o json /etc/workqueue.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(&output); err != nil {
				return err
			}
			file := os.Getenv("WORKQUEUE_CONFIG")
			if len(args) == 1 {
				file = args[0]
			}
			if file == "" {
				return usageErrorf("no configuration file: give FILE or set WORKQUEUE_CONFIG")
			}
			cfg, problems := config.Check(file, w.known())
			var checked []string // what --online checked, said even when it passes
			if online && len(cfg.Listen) > 0 && len(problems.Errors()) == 0 {
				var found config.Problems
				found, checked = checkForgesOnline(cmd.Context(), w, cfg)
				problems = append(problems, found...)
			}
			out := cmd.OutOrStdout()
			if output != "table" {
				secrets := map[string]string{}
				for _, r := range cfg.Secrets() {
					secrets[r.Field], _ = r.Status()
				}
				if problems == nil {
					problems = config.Problems{}
				}
				report := map[string]any{"file": file, "ok": len(problems.Errors()) == 0,
					"problems": problems, "secrets": secrets}
				if len(cfg.Listen) > 0 {
					report["notes"] = cfg.Notes()
				}
				if online {
					report["online"] = checked
				}
				if len(cfg.Listen) > 0 {
					report["protected_paths"] = protectedPaths(cfg)
				}
				err := printOutput(out, output, report, nil)
				if err == nil && len(problems.Errors()) > 0 {
					err = exitError{code: exitFailed}
				}
				return err
			}
			if len(cfg.Listen) > 0 { // decoded: show what it resolved
				fmt.Fprintf(out, "# %s, resolved (defaults filled in; secret values never shown)\n", file)
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
				if pp := protectedPaths(cfg); len(pp) > 0 {
					fmt.Fprintln(out, "\n# protected paths (docs/policy.md): what a change touching them gets, and the effective list")
					for _, p := range pp {
						fmt.Fprintf(out, "#   %s (%s): %s\n", p.Field, p.Match, p.Mode)
						for _, e := range p.Paths {
							fmt.Fprintf(out, "#     %-40s %s\n", e.Glob, e.Reader)
						}
					}
				}
				fmt.Fprintln(out, "\n# what it allows")
				for _, n := range cfg.Notes() {
					fmt.Fprintf(out, "#   %s\n", n)
				}
				if len(checked) > 0 {
					fmt.Fprintln(out, "\n# online")
					for _, c := range checked {
						fmt.Fprintf(out, "#   %s\n", c)
					}
				}
			}
			if warnings := problems.Warnings(); len(warnings) > 0 {
				fmt.Fprintf(out, "\n%s: %s:\n", file, countOf(len(warnings), "warning"))
				config.FormatProblems(out, warnings)
			}
			errs := problems.Errors()
			if len(errs) == 0 {
				fmt.Fprintf(out, "\n%s: ok\n", file)
				return nil
			}
			fmt.Fprintf(out, "\n%s: %s:\n", file, countOf(len(errs), "problem"))
			config.FormatProblems(out, errs)
			return exitError{code: exitFailed}
		},
	}
	addOutputFlag(check.Flags(), &output)
	check.Flags().BoolVar(&online, "online", false, "also call each forge: reachable, token accepted, projects reachable")
	cmd.AddCommand(check)
	return cmd
}

// checkForgesOnline calls each configured forge once: it answers, takes
// the token, and the token reaches at least one project of every
// projects[] entry on it (a literal match must be among them).
//
// checked says, one line each, what it found that was right, so that a
// passing check says what it checked.
func checkForgesOnline(ctx context.Context, w *world, cfg config.Config) (problems config.Problems, checked []string) {
	forges, err := w.openForges(cfg)
	if err != nil {
		return config.Problems{{Field: "forges", Message: err.Error()}}, nil
	}
	for _, fc := range cfg.Forges {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		projects, err := forges[fc.Name].ListProjects(cctx)
		cancel()
		if err != nil {
			problems = append(problems, &config.Problem{Field: "forges[" + fc.Name + "]",
				Message: fmt.Sprintf("%s does not answer, or refuses the token: %v", fc.URL, err)})
			continue
		}
		checked = append(checked, fmt.Sprintf("forges[%s]: %s answers and takes the token, which reaches %s", fc.Name, fc.URL, countOf(len(projects), "project")))
		for i, p := range cfg.Projects {
			if p.Forge != fc.Name {
				continue
			}
			reached := 0
			for _, name := range projects {
				if ok, _ := doublestar.Match(p.Match, name); ok {
					reached++
				}
			}
			if reached > 0 {
				checked = append(checked, fmt.Sprintf("projects[%d].match: %q matches %s the token reaches", i, p.Match, countOf(reached, "project")))
			} else {
				problems = append(problems, &config.Problem{Field: fmt.Sprintf("projects[%d].match", i),
					Message: fmt.Sprintf("the token of forge %s reaches no project matching %q: the repository is missing or the token has no access to it", fc.Name, p.Match)})
			}
		}
		// The forge's version against its kind's minimum (an error below
		// it, as serve refuses it) and the settings of the projects that
		// the service's safety relies on (warnings; docs/forge-checks.md).
		cctx, cancel = context.WithTimeout(ctx, time.Minute)
		found, ok := forgeProblems(inspectListed(cctx, cfg, fc, forges[fc.Name], projects))
		cancel()
		problems = append(problems, found...)
		checked = append(checked, ok...)
	}
	return problems, checked
}

// projectProtected is one project entry's protected paths, resolved.
type projectProtected struct {
	Field string                  `json:"field"`
	Match string                  `json:"match"`
	Mode  string                  `json:"mode"`
	Paths []policy.ProtectedEntry `json:"paths"`
}

// protectedPaths is what config check says of each project entry's
// protected paths: its mode and its effective list (the built-in one and
// its additions).
func protectedPaths(cfg config.Config) []projectProtected {
	out := []projectProtected{}
	for i, p := range cfg.Projects {
		mode := p.ProtectedPaths.Mode
		if mode == "" {
			mode = config.ProtectedRefuse
		}
		out = append(out, projectProtected{Field: fmt.Sprintf("projects[%d]", i), Match: p.Match, Mode: mode,
			Paths: policy.EffectiveProtected(policy.Protected{Mode: policy.ProtectedMode(mode), Add: p.ProtectedPaths.Add})})
	}
	return out
}

// countOf is n nouns, in the singular for one ("1 problem", "2 problems").
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
