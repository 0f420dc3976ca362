package gitea_test

import (
	"testing"

	"github.com/workqueue-dev/workqueue/forge/gitea"
)

// The dashboard links work to its page on Gitea (issue 55).
func TestWorkPageIsTheIssuesOrPullRequestsPageOnGitea(t *testing.T) {
	for kind, want := range map[string]string{"issue": "/platform/api/issues/7", "pr": "/platform/api/pulls/7"} {
		if got := gitea.Plugin.WorkPage("platform/api", kind, 7); got != want {
			t.Errorf("WorkPage of %s 7 = %q, want %q", kind, got, want)
		}
	}
}
