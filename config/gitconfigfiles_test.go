package config_test

import (
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/config"
)

func TestGitConfigFilesAreRefusedUnlessAProjectAllowsThem(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`
forges:
  - {name: a, kind: gitea, url: 'http://a', token_env: A}
projects:
  - {match: 'team/open', forge: a, allow_git_config_files: true}
  - {match: 'team/**', forge: a}
`))
	if err != nil {
		t.Fatal(err)
	}
	for project, want := range map[string]bool{"team/open": true, "team/other": false} {
		p, ok := cfg.ProjectFor("a", project)
		if !ok || p.AllowGitConfigFiles != want {
			t.Errorf("%s: allow_git_config_files %v (found %v), want %v", project, p.AllowGitConfigFiles, ok, want)
		}
	}
}
