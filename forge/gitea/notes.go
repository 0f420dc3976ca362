package gitea

import (
	"context"
	"fmt"
	"strings"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
)

var _ wq.WorkCommentEditor = (*Forge)(nil)

// selfName is the name of the service's own user, read once.
func (f *Forge) selfName(ctx context.Context) (string, error) {
	f.self.Lock()
	defer f.self.Unlock()
	if f.self.name != "" {
		return f.self.name, nil
	}
	err := f.call(ctx, "read the service's user", func(c *sdk.Client) (*sdk.Response, error) {
		u, resp, err := c.GetMyUserInfo()
		if err == nil {
			f.self.name = u.UserName
		}
		return resp, err
	})
	return f.self.name, err
}

// FindOwnWorkComment lists the thread's comments (GET
// /repos/{o}/{r}/issues/{index}/comments, one call: Gitea answers them
// all) and returns the newest of the service's user holding marker.
func (f *Forge) FindOwnWorkComment(ctx context.Context, project, kind string, number int64, marker string) (int64, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return 0, err
	}
	self, err := f.selfName(ctx)
	if err != nil {
		return 0, err
	}
	var comments []*sdk.Comment
	err = f.call(ctx, fmt.Sprintf("comments of %s %s#%d", kind, project, number), func(c *sdk.Client) (resp *sdk.Response, err error) {
		comments, resp, err = c.ListIssueComments(owner, repo, number, sdk.ListIssueCommentOptions{})
		return resp, err
	})
	if err != nil {
		return 0, err
	}
	var found int64
	for _, c := range comments {
		if c.Poster != nil && c.Poster.UserName == self && strings.Contains(c.Body, marker) && c.ID > found {
			found = c.ID
		}
	}
	return found, nil
}

// EditWorkComment edits the comment (PATCH
// /repos/{o}/{r}/issues/comments/{id}), as UpdateNote does.
func (f *Forge) EditWorkComment(ctx context.Context, project, kind string, number, id int64, body string) error {
	return f.UpdateNote(ctx, project, number, id, body)
}
