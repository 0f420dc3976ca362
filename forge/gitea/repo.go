package gitea

import (
	"context"

	sdk "code.gitea.io/sdk/gitea"
)

// DefaultBranch reads the repository's default branch
// (wq.DefaultBrancher): GET /repos/{owner}/{repo}, one call.
func (f *Forge) DefaultBranch(ctx context.Context, project string) (string, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return "", err
	}
	var branch string
	err = f.call(ctx, "repository "+project, func(c *sdk.Client) (*sdk.Response, error) {
		r, resp, err := c.GetRepo(owner, repo)
		if err == nil && r != nil {
			branch = r.DefaultBranch
		}
		return resp, err
	})
	return branch, err
}
