package config

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Incidents configures the incident bridge (DESIGN section 9): alerts of
// the monitoring projects listed here become ordinary issues of a forge
// repository, which the control plane then hands out like any other.
type Incidents struct {
	// Projects map a provider's organization and project to the
	// repository its incidents are filed in.
	Projects []IncidentProject `yaml:"projects"`
	// ProjectsFile is a YAML or JSON file holding more such projects (a
	// list), read at start.
	ProjectsFile string `yaml:"projects_file"`
	// Sentry is the Sentry integration whose signed webhooks are taken at
	// /webhooks/incidents/sentry; unset, that receiver is off.
	Sentry IncidentSecret `yaml:"sentry"`
	// GlitchTip is the shared secret GlitchTip's alert webhooks carry (in
	// ?secret= or the X-Workqueue-Secret header) at
	// /webhooks/incidents/glitchtip; unset, that receiver is off.
	GlitchTip IncidentSecret `yaml:"glitchtip"`
}

// IncidentProject is one monitored project and where its issues go.
type IncidentProject struct {
	Provider     string   `yaml:"provider" json:"provider"` // sentry or glitchtip
	Organization string   `yaml:"organization" json:"organization"`
	Project      string   `yaml:"project" json:"project"`
	Forge        string   `yaml:"forge" json:"forge"`
	Repo         string   `yaml:"repo" json:"repo"`
	Labels       []string `yaml:"labels" json:"labels"`
}

// IncidentSecret is a webhook secret, from the environment or a file,
// never inline.
type IncidentSecret struct {
	SecretEnv  string `yaml:"secret_env"`
	SecretFile string `yaml:"secret_file"`
}

// Configured reports whether a secret is set.
func (s IncidentSecret) Configured() bool { return s.SecretEnv != "" || s.SecretFile != "" }

// Secret reads it; field names it in errors.
func (s IncidentSecret) Secret(field string) (string, error) {
	return secret(s.SecretEnv, s.SecretFile, field+".secret")
}

// maxIncidentProjects bounds the projects file's entries.
const maxIncidentProjects = 10000

// IncidentProjects returns the inline projects and those of
// projects_file, validated.
func (c Config) IncidentProjects() ([]IncidentProject, error) {
	out := append([]IncidentProject(nil), c.Incidents.Projects...)
	if c.Incidents.ProjectsFile != "" {
		more, err := readIncidentProjects(c.Incidents.ProjectsFile)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	var errs []string
	c.validateIncidentProjects(out, func(field, format string, args ...any) {
		errs = append(errs, field+": "+fmt.Sprintf(format, args...))
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

func readIncidentProjects(path string) ([]IncidentProject, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("incidents.projects_file: %w", err)
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil || len(body) > maxFileSize {
		return nil, fmt.Errorf("incidents.projects_file %s: unreadable or larger than %d bytes (%v)", path, maxFileSize, err)
	}
	var list []IncidentProject
	if problems := decodeYAML(body, &list); len(problems) > 0 {
		return nil, fmt.Errorf("incidents.projects_file %s: want a list of {provider, organization, project, forge, repo, labels}: %w", path, problems.Err())
	}
	if len(list) > maxIncidentProjects {
		return nil, fmt.Errorf("incidents.projects_file %s: at most %d projects", path, maxIncidentProjects)
	}
	return list, nil
}

func (c Config) validateIncidents(bad func(field, format string, args ...any)) {
	in := c.Incidents
	c.validateIncidentProjects(in.Projects, bad)
	for _, s := range []struct {
		name string
		IncidentSecret
	}{{"incidents.sentry", in.Sentry}, {"incidents.glitchtip", in.GlitchTip}} {
		if s.SecretEnv != "" && s.SecretFile != "" {
			bad(s.name, "set at most one of secret_env and secret_file")
		}
	}
}

func (c Config) validateIncidentProjects(list []IncidentProject, bad func(field, format string, args ...any)) {
	seen := map[[3]string]int{}
	for i, p := range list {
		field := fmt.Sprintf("incidents.projects[%d]", i)
		if p.Provider != "sentry" && p.Provider != "glitchtip" {
			bad(field+".provider", "want sentry or glitchtip, got %q", p.Provider)
		}
		for _, v := range [][2]string{{"organization", p.Organization}, {"project", p.Project}, {"repo", p.Repo}} {
			if strings.TrimSpace(v[1]) == "" || len(v[1]) > 255 || strings.ContainsAny(v[1], "\x00\r\n") {
				bad(field+"."+v[0], "want a name of at most 255 bytes on one line, got %q", v[1])
			}
		}
		if _, ok := c.ForgeNamed(p.Forge); !ok {
			bad(field+".forge", "%q is not a configured forge", p.Forge)
		}
		for j, l := range p.Labels {
			if strings.TrimSpace(l) == "" || strings.ContainsAny(l, ",\n") || len(l) > 100 {
				bad(fmt.Sprintf("%s.labels[%d]", field, j), "want a label name without commas, got %q", l)
			}
		}
		key := [3]string{p.Provider, p.Organization, p.Project}
		if j, dup := seen[key]; dup {
			bad(field, "%s %s/%s is configured twice (also incidents.projects[%d])", p.Provider, p.Organization, p.Project, j)
		}
		seen[key] = i
	}
}
