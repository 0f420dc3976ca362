package gitlab_test

import (
	"context"
	"fmt"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

// GitLab pages a commit's diff (100 files at most a page, X-Next-Page to
// the next): CommitChanges follows the pages to the last file. The test
// server once answered every page without pagination headers, so a commit
// of more than 100 files lost its tail there and nowhere else.
func TestCommitChangesFollowsTheDiffsPages(t *testing.T) {
	_, f := newProject(t)
	var changes []wq.FileChange
	for i := range 150 {
		changes = append(changes, wq.FileChange{Action: "create", Path: fmt.Sprintf("f%03d.txt", i), Content: []byte("x\n")})
	}
	c := commitTo(t, f, "wq/many", changes...)
	got, err := f.CommitChanges(context.Background(), "g/p", c.SHA)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(changes) {
		t.Fatalf("CommitChanges gives %d changes of a commit of %d files", len(got), len(changes))
	}
	for i, ch := range changes {
		if want := (wq.PathChange{Path: ch.Path, Status: wq.PathAdded, Mode: wq.ModeFile}); !hasChange(got, want) {
			t.Errorf("change %d (%s) is missing", i, ch.Path)
		}
	}
}
