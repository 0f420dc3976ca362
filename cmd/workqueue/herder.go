package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/herder"
)

func newHerderCommand(w *world) *cobra.Command {
	h := &cobra.Command{Use: "herder", Short: "Check what the CI retry herder would do with a failed job"}
	var (
		jobURL, forgeName, project, output string
		jobID                              int64
	)
	check := &cobra.Command{
		Use:   "check",
		Short: "Dry run: which matcher fires for a job, why, and what would be done",
		Long: `Read one CI job from its forge and run the configuration's herder
matchers over it, as retry_ci_jobs would: the job's name and failure
reason first, its log only if a matcher that passed those needs it.
Nothing is retried. It prints the job, the matcher that fired (or why
none did), and what the service would do: retry it after a delay, or
leave it.

Name the job by the URL of its page (GitLab .../-/jobs/ID; Gitea
.../actions/runs/RUN/jobs/JOB) or by --forge, --project and --job (the
forge's job id). The forge's token comes from the configuration.`,
		Example: `  workqueue herder check --config /etc/workqueue.yaml --job-url https://gitlab.example.com/group/app/-/jobs/4242
  workqueue herder check --config wq.yaml --forge gitea --project team/app --job 17 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadOutputConfig(cmd, w, &output)
			if err != nil {
				return err
			}
			if !cfg.Herder.Enabled() {
				return errors.New("config: herder: no matchers are configured (herder.matchers or herder.matchers_file): nothing would be retried")
			}
			hd, err := cfg.Herder.Compile()
			if err != nil {
				return fmt.Errorf("config: %w", err)
			}
			if jobURL != "" {
				if forgeName != "" || project != "" || jobID != 0 {
					return errors.New("give --job-url, or --forge, --project and --job, not both")
				}
			} else if forgeName == "" || project == "" || jobID <= 0 {
				return errors.New("give --job-url, or --forge, --project and --job")
			}
			forges, err := w.openForges(cfg)
			if err != nil {
				return err
			}
			ref, err := resolveJob(w.kinds, cfg, jobURL, forgeName, project, jobID)
			if err != nil {
				return err
			}
			ci, ok := forges[ref.forge].(wq.CIJobs)
			if !ok {
				return fmt.Errorf("forge %s: its CI jobs cannot be read or retried", ref.forge)
			}
			ctx := cmd.Context()
			job, err := ref.read(cmd, ci)
			if err != nil {
				return err
			}
			v, err := hd.Match(*job, func() (string, error) {
				b, err := ci.JobTrace(ctx, ref.project, job.ID, 512<<10)
				return string(b), err
			})
			if err != nil {
				return err
			}
			report := herderReport{Forge: ref.forge, Project: ref.project, Job: *job, Verdict: v, Would: would(*job, v)}
			return printOutput(cmd.OutOrStdout(), output, report, report.print)
		},
	}
	check.Flags().StringVar(&jobURL, "job-url", "", "the job's page on its forge")
	check.Flags().StringVar(&forgeName, "forge", "", "the configured forge's name (with --project and --job)")
	check.Flags().StringVar(&project, "project", "", "the project's full path (group/name, owner/name)")
	check.Flags().Int64Var(&jobID, "job", 0, "the job's id on the forge")
	addOutputFlag(check.Flags(), &output)
	registerConfigFlags(check)
	h.AddCommand(check)
	return h
}

// herderReport is what herder check prints.
type herderReport struct {
	Forge   string         `json:"forge"`
	Project string         `json:"project"`
	Job     wq.CIJob       `json:"job"`
	Verdict herder.Verdict `json:"verdict"`
	Would   string         `json:"would"`
}

// would says what retry_ci_jobs would do with job given v.
func would(job wq.CIJob, v herder.Verdict) string {
	switch {
	case job.Status != wq.CIJobFailed:
		return "nothing: the job is " + job.Status + ", not failed"
	case !v.Matched:
		return "leave it failed: no matcher fired"
	case !v.Retry:
		return fmt.Sprintf("leave it failed: retried %d times, the limit is %d", job.Retries, v.RetryLimit)
	case job.FinishedAt.IsZero():
		return fmt.Sprintf("retry it %s after it finished", v.Delay)
	}
	return fmt.Sprintf("retry it %s after it finished, at %s", v.Delay, job.FinishedAt.Add(v.Delay).UTC().Format(time.RFC3339))
}

func (r herderReport) print(w io.Writer) {
	j := r.Job
	fmt.Fprintf(w, "job       %s %s#%d %q (pipeline %d), %s", r.Forge, r.Project, j.ID, j.Name, j.PipelineID, j.Status)
	if j.FailureReason != "" {
		fmt.Fprintf(w, ", failure_reason %s", j.FailureReason)
	}
	fmt.Fprintf(w, ", retried %d times\n", j.Retries)
	if r.Verdict.Matched {
		fmt.Fprintf(w, "matcher   %s", r.Verdict.Matcher)
		if r.Verdict.Description != "" {
			fmt.Fprintf(w, " (%s)", r.Verdict.Description)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "matcher   none")
	}
	fmt.Fprintf(w, "why       %s\n", r.Verdict.Why)
	fmt.Fprintf(w, "log read  %t\n", r.Verdict.TraceRead)
	fmt.Fprintf(w, "would     %s\n", r.Would)
}

// jobRef names one job of a configured forge.
type jobRef struct {
	forge, project string
	id             int64
	// run and url, from a job page that names no API job id (Gitea's:
	// its job number is a position), so the job is found among its
	// run's by its page.
	run int64
	url string
}

// resolveJob finds the configured forge, project and job a job page's URL
// names, or checks the ones given.
func resolveJob(kinds *forge.Registry, cfg config.Config, jobURL, forgeName, project string, jobID int64) (jobRef, error) {
	if jobURL == "" {
		if !slices.ContainsFunc(cfg.Forges, func(f config.Forge) bool { return f.Name == forgeName }) {
			return jobRef{}, fmt.Errorf("--forge: %q is not a configured forge", forgeName)
		}
		return jobRef{forge: forgeName, project: project, id: jobID}, nil
	}
	u, err := url.Parse(jobURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return jobRef{}, fmt.Errorf("--job-url: want the http(s) URL of a job's page, got %q", jobURL)
	}
	for _, f := range cfg.Forges {
		base, err := url.Parse(f.URL)
		if err != nil || !strings.EqualFold(base.Host, u.Host) {
			continue
		}
		rest, ok := strings.CutPrefix(u.Path, strings.TrimRight(base.Path, "/"))
		if !ok {
			continue
		}
		if p, ok := kinds.Lookup(f.Kind); ok && p.JobPage != nil {
			if j, ok := p.JobPage(rest); ok {
				if j.JobID != 0 {
					return jobRef{forge: f.Name, project: j.Project, id: j.JobID}, nil
				}
				return jobRef{forge: f.Name, project: j.Project, run: j.RunID, url: jobURL}, nil
			}
		}
		return jobRef{}, fmt.Errorf("--job-url: %q is not the page of a job on forge %s (%s)", jobURL, f.Name, f.Kind)
	}
	return jobRef{}, fmt.Errorf("--job-url: no configured forge is at %s", u.Host)
}

// read reads the job.
func (r jobRef) read(cmd *cobra.Command, ci wq.CIJobs) (*wq.CIJob, error) {
	if r.id != 0 {
		return ci.Job(cmd.Context(), r.project, r.id)
	}
	jobs, err := ci.PipelineJobs(cmd.Context(), r.project, r.run)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if strings.TrimRight(j.URL, "/") == strings.TrimRight(r.url, "/") {
			return &j, nil
		}
	}
	return nil, fmt.Errorf("--job-url: run %d of %s has no job at %s; give --forge, --project and --job (the API's job id)", r.run, r.project, r.url)
}
