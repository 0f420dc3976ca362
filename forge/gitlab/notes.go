package gitlab

import (
	"context"
	"fmt"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
)

var _ wq.WorkCommentEditor = (*Forge)(nil)

// FindOwnWorkComment lists the notes of the issue or merge request (100
// a page, to the end) and returns the newest of the token's user that
// holds marker.
func (f *Forge) FindOwnWorkComment(ctx context.Context, project, kind string, number int64, marker string) (int64, error) {
	var self *gl.User
	err := f.call(ctx, "read the service's user", func(o gl.RequestOptionFunc) (err error) {
		self, _, err = f.client.Users.CurrentUser(o)
		return err
	})
	if err != nil {
		return 0, err
	}
	var found int64
	err = f.call(ctx, fmt.Sprintf("notes of %s %s#%d", kind, project, number), func(o gl.RequestOptionFunc) error {
		for page := int64(1); ; page++ {
			var notes []*gl.Note
			var resp *gl.Response
			var err error
			lo := gl.ListOptions{Page: page, PerPage: 100}
			if kind == wq.WorkPR {
				notes, resp, err = f.client.Notes.ListMergeRequestNotes(project, number, &gl.ListMergeRequestNotesOptions{ListOptions: lo}, o)
			} else {
				notes, resp, err = f.client.Notes.ListIssueNotes(project, number, &gl.ListIssueNotesOptions{ListOptions: lo}, o)
			}
			if err != nil {
				return err
			}
			for _, n := range notes {
				if n.Author.Username == self.Username && strings.Contains(n.Body, marker) && n.ID > found {
					found = n.ID
				}
			}
			if resp == nil || resp.NextPage == 0 {
				return nil
			}
		}
	})
	return found, err
}

// EditWorkComment edits the note, made inert as CommentOnWork makes it.
func (f *Forge) EditWorkComment(ctx context.Context, project, kind string, number, id int64, body string) error {
	if kind == wq.WorkPR {
		return f.UpdateNote(ctx, project, number, id, body)
	}
	body = Inert(body)
	return f.call(ctx, fmt.Sprintf("edit note %d on %s#%d", id, project, number), func(o gl.RequestOptionFunc) error {
		_, _, err := f.client.Notes.UpdateIssueNote(project, number, id, &gl.UpdateIssueNoteOptions{Body: &body}, o)
		return err
	})
}
