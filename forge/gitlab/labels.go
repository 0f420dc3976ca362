package gitlab

import (
	"context"
	"fmt"
	"slices"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
)

// labelsExist refuses (Permanent) a label of labels that existingOnly
// names and the project lacks: GitLab makes a label it is given, and the
// outbound policy lets the service make only its own unless the project
// says create_labels. One call per such label (GET
// /projects/:id/labels/:name); none when existingOnly is empty.
func (f *Forge) labelsExist(ctx context.Context, project string, labels, existingOnly []string) error {
	for _, name := range labels {
		if !slices.Contains(existingOnly, name) {
			continue
		}
		err := f.call(ctx, "label "+name+" of "+project, func(o gl.RequestOptionFunc) error {
			_, _, err := f.client.Labels.GetLabel(project, name, o)
			return err
		})
		if wq.IsForgeError(err, wq.ForgeNotFound) {
			return &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitlab: labels of " + project,
				Message: fmt.Sprintf("label %q does not exist on the project, and the project does not let the service make it (create_labels)", name)}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
