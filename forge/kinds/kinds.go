// Package kinds registers the kinds of forge workqueue ships with the
// forge registry (forge.Register): a program that reads configuration,
// opens forges or receives their webhooks imports it. Adding a kind is
// its package under forge/ and one line here.
package kinds

import (
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
)

func init() {
	forge.Register(gitea.Plugin)
	forge.Register(gitlab.Plugin)
}
