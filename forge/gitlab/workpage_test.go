package gitlab_test

import (
	"testing"

	"github.com/workqueue-dev/workqueue/forge/gitlab"
)

// The dashboard links work to its page on GitLab (issue 55).
func TestWorkPageIsTheIssuesOrMergeRequestsPageOnGitLab(t *testing.T) {
	for kind, want := range map[string]string{"issue": "/group/app/-/issues/7", "pr": "/group/app/-/merge_requests/7"} {
		if got := gitlab.Plugin.WorkPage("group/app", kind, 7); got != want {
			t.Errorf("WorkPage of %s 7 = %q, want %q", kind, got, want)
		}
	}
}
