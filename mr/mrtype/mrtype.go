// Package mrtype registers the mr item type (itemtype.Plugin): its store
// and migrations (mr/mrstore), its engine type and face to callers (mr),
// the control plane's gate for assigned submissions (wq.AssignmentGate),
// the bulk reconciliation it runs beside the engine, and the warnings of
// its configuration (the mr section and projects). It is the one place
// that wires the type from a configuration.
package mrtype

import (
	"context"
	"slices"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/itemtype"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/mr/mrstore"
	"github.com/workqueue-dev/workqueue/policy"
)

// Plugin is the mr item type.
var Plugin = itemtype.Plugin{
	Name:      mr.ItemType,
	OpenStore: func(db wq.Store) (any, error) { return mrstore.New(db) },
	Build:     build,
	Warnings: func(c config.Config) []config.Warning {
		if len(c.Projects) > 0 && !slices.Contains(c.HandledTypes, mr.ItemType) {
			return []config.Warning{{Field: "handled_types",
				Message: "projects are configured but mr is not handled here: mr items wait until an instance with mr in its handled_types runs on the same database"}}
		}
		return nil
	},
}

func build(env itemtype.Env, store any) (itemtype.Built, error) {
	st := store.(mr.Store)
	c := env.Config
	herd, err := c.Herder.Compile() // nil when no herder is configured
	if err != nil {
		return itemtype.Built{}, err
	}
	// A change submitted for an assignment passes the control plane's
	// gate, at submission and before each forge write.
	assignments := env.Assignments
	t := mr.Type(mr.Options{Store: st, Forges: env.Forges, PublicURL: c.PublicURL, Log: env.Log, Assignments: assignments,
		ReconcileInterval:    time.Duration(c.MR.ReconcileInterval),
		MergeRecheckInterval: time.Duration(c.MR.MergeRecheckInterval),
		EmptyCheckInterval:   time.Duration(c.MR.EmptyCheckInterval),
		NoteMinInterval:      time.Duration(c.MR.NoteMinInterval),
		Herder:               herd,
		DeleteSourceBranch: func(forge, project string) bool {
			p, ok := c.ProjectFor(forge, project)
			return !ok || p.DeletesSourceBranch()
		}})
	b := itemtype.Built{Type: t, API: mr.API(mr.APIOptions{Store: st, Project: Project(c, env.Forges), Assignments: assignments,
		DefaultBranch: func(ctx context.Context, forge, project string) (string, error) {
			if db, ok := env.Forges[forge].(wq.DefaultBrancher); ok {
				// Briefly: a forge that is slow or down leaves the rule to
				// the push instead of holding the submission.
				ctx, cancel := context.WithTimeout(ctx, defaultBranchWait)
				defer cancel()
				return db.DefaultBranch(ctx, project)
			}
			return "", nil
		}})}
	if slices.Contains(c.HandledTypes, mr.ItemType) && c.MR.BulkReconcileInterval > 0 {
		bulk := &mr.BulkReconciler{Store: st, Forges: env.Forges, Events: env.Queue, Notify: env.Notify,
			Interval: time.Duration(c.MR.BulkReconcileInterval), Clock: env.Clock, Log: env.Log}
		b.Run = func(ctx context.Context) { bulk.Run(ctx) }
	}
	return b, nil
}

// defaultBranchWait bounds the read of a repository's default branch at
// submission.
const defaultBranchWait = 2 * time.Second

// Project returns how c configures a project on a forge for the type's
// changes (config.MRProject, as an mr.Project, with what the forge's
// client can do), and false when no project entry covers it.
func Project(c config.Config, forges map[string]wq.Forge) func(forge, project string) (mr.Project, bool) {
	return func(forge, project string) (mr.Project, bool) {
		p, ok := c.MRProject(forge, project)
		if !ok {
			return mr.Project{}, false
		}
		outbound := policy.ForConfig(c, forge)(project)
		return mr.Project{
			Policy: mr.Policy{BlockedPaths: p.Policy.BlockedPaths, MaxFileBytes: p.Policy.MaxFileBytes, MaxTotalBytes: p.Policy.MaxTotalBytes,
				AllowBinary: p.Policy.AllowBinary, AllowGitConfigFiles: p.Policy.AllowGitConfigFiles, AllowSecrets: p.Policy.AllowSecrets,
				SecretAllowlist: outbound.SecretAllowlist},
			AutoMerge: p.AutoMerge, Label: p.Label, BranchPrefix: p.BranchPrefix, FileModes: forges[forge] != nil && wq.SetsFileModes(forges[forge]),
			Outbound: outbound, ReviewLabel: c.MR.ReviewLabel,
		}, true
	}
}
