package policy

import (
	"fmt"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge"
)

// ForConfig resolves the outbound policy of every repository of one
// configured forge from c: the project entry that covers it (or the
// defaults where none does: a control-plane or incident repository), the
// control plane's steering labels, and own, the labels the service puts
// itself (its item types' managed and review labels).
func ForConfig(c config.Config, forgeName string, own []string) Projects {
	steering := append(append([]string(nil), c.ControlPlane.BlockedLabels...), c.ControlPlane.PriorityLabels...)
	own = append([]string(nil), own...)
	return func(project string) Project {
		p := Project{SteeringLabels: steering, ServiceLabels: own, BranchPrefix: config.DefaultBranchPrefix}
		e, ok := c.ProjectFor(forgeName, project)
		if !ok {
			return p
		}
		p.Protected = Protected{Mode: ProtectedMode(e.ProtectedPaths.Mode), Add: e.ProtectedPaths.Add}
		p.TargetBranches = e.TargetBranches
		if e.CallerLabels != nil {
			p.CallerLabels = append([]string{}, (*e.CallerLabels)...)
		}
		p.CreateLabels = e.CreateLabels
		p.BranchPrefix = e.SourceBranchPrefix()
		p.AllowSecrets = e.AllowSecrets
		for _, a := range e.SecretAllowlist {
			p.SecretAllowlist = append(p.SecretAllowlist, SecretAllow{Paths: a.Paths, Rules: a.Rules})
		}
		return p
	}
}

// Open builds the client of configured forge f, of a kind of kinds,
// guarded (Guard): the one way serve, hooks and the herder get a forge
// to write to, so that no write goes around the policy (scripts/check
// holds that nothing else opens a forge's client).
// own are the labels the service puts itself (ForConfig).
func Open(kinds *forge.Registry, c config.Config, own []string, f config.Forge, fc forge.Config) (wq.Forge, error) {
	g, err := kinds.Open(f.Kind, fc)
	if err != nil {
		return nil, fmt.Errorf("forge %s: %w", f.Name, err)
	}
	return Guard(f.Name, g, ForConfig(c, f.Name, own)), nil
}
