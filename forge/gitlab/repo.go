package gitlab

import (
	"context"

	gl "gitlab.com/gitlab-org/api/client-go/v2"
)

// DefaultBranch reads the project's default branch (wq.DefaultBrancher):
// GET /projects/:id, one call.
func (f *Forge) DefaultBranch(ctx context.Context, project string) (string, error) {
	var branch string
	err := f.call(ctx, "project "+project, func(o gl.RequestOptionFunc) error {
		p, _, err := f.client.Projects.GetProject(project, nil, o)
		if err == nil && p != nil {
			branch = p.DefaultBranch
		}
		return err
	})
	return branch, err
}

// MinServerVersion is the oldest GitLab the adapter supports: it reads
// detailed_merge_status (15.6) with the values of 17.x (requested_changes),
// and the hooks' alert_status and disabled_until. It is tested against
// gitlabtest, which follows GitLab 17.x.
const MinServerVersion = "17.0.0"
