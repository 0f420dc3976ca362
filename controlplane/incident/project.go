package incident

import (
	"fmt"

	wq "github.com/workqueue-dev/workqueue"
)

// ReasonNoProject refines the EINVALID refusal of an observation no
// configured project maps.
const ReasonNoProject = "no_project"

// Project maps one provider project to the forge repository its issues
// are filed in.
type Project struct {
	Provider     string
	Organization string
	Project      string
	Forge        string // a configured forge's name
	Repo         string // the repository's full path on it
	Labels       []string
}

type projectKey struct{ provider, organization, project string }

func (p Project) key() projectKey { return projectKey{p.Provider, p.Organization, p.Project} }

// Validate checks one mapping, naming the field (as projects[i].field).
func (p Project) Validate(i int) error {
	field := func(name string) string { return fmt.Sprintf("projects[%d].%s", i, name) }
	if p.Provider != ProviderSentry && p.Provider != ProviderGlitchTip {
		return wq.Errorf(wq.EINVALID, "%s is %q, want sentry or glitchtip", field("provider"), p.Provider)
	}
	for _, f := range []struct{ name, value string }{
		{"organization", p.Organization}, {"project", p.Project}, {"forge", p.Forge}, {"repo", p.Repo},
	} {
		if err := checkText(field(f.name), f.value, MaxField); err != nil {
			return err
		}
	}
	if p.Forge == "" || p.Repo == "" {
		return wq.Errorf(wq.EINVALID, "%s and %s are required", field("forge"), field("repo"))
	}
	for j, l := range p.Labels {
		if err := checkText(field(fmt.Sprintf("labels[%d]", j)), l, 255); err != nil {
			return err
		}
		if l == "" {
			return wq.Errorf(wq.EINVALID, "%s is empty", field(fmt.Sprintf("labels[%d]", j)))
		}
	}
	return nil
}

// ValidateProjects checks every mapping and that no provider project is
// mapped twice.
func ValidateProjects(projects []Project) error {
	seen := map[projectKey]int{}
	for i, p := range projects {
		if err := p.Validate(i); err != nil {
			return err
		}
		if j, dup := seen[p.key()]; dup {
			return wq.Errorf(wq.EINVALID, "projects[%d] maps %s %s/%s again (see projects[%d])", i, p.Provider, p.Organization, p.Project, j)
		}
		seen[p.key()] = i
	}
	return nil
}

// route returns the project an observation is filed under: the one of
// the same provider, organization and project. An observation that names
// no organization (Sentry's issue webhooks name only the installation's
// uuid and the project's slug; its documented example has no URL to read
// one from) is filed under the one project configured for its provider
// and project slug, when there is exactly one.
func route(projects map[projectKey]Project, k Key) (Project, error) {
	p, ok := projects[projectKey{k.Provider, k.Organization, k.Project}]
	if !ok && k.Organization == "" {
		var matches []Project
		for key, q := range projects {
			if key.provider == k.Provider && key.project == k.Project {
				matches = append(matches, q)
			}
		}
		if len(matches) == 1 {
			return matches[0], nil
		}
		if len(matches) > 1 {
			return Project{}, &wq.Error{Code: wq.EINVALID, Reason: ReasonNoProject, Message: fmt.Sprintf(
				"%s project %q is configured under %d organizations and the observation names none: configure one, or send the organization",
				k.Provider, k.Project, len(matches))}
		}
	}
	if !ok {
		return Project{}, &wq.Error{Code: wq.EINVALID, Reason: ReasonNoProject, Message: fmt.Sprintf(
			"no project is configured for %s organization %q project %q", k.Provider, k.Organization, k.Project)}
	}
	return p, nil
}
