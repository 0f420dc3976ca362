// Package mrtype registers the mr item type (itemtype.Plugin): its store
// and migrations (mr/mrstore), its own configuration section (MR, the
// file's mr: key), its engine type and face to callers (mr), the control
// plane's gate for assigned submissions (wq.AssignmentGate), the bulk
// reconciliation it runs beside the engine, and the warnings of its
// configuration. It is the one place that wires the type from a
// configuration: the type's section reads the projects, forges and public
// URL every type shares (config.Resolver), so that the type is built from
// its section alone.
package mrtype

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/itemtype"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/mr/mrapi"
	"github.com/workqueue-dev/workqueue/mr/mrstore"
	"github.com/workqueue-dev/workqueue/policy"
)

// MR is the mr type's section of the configuration file (mr:).
type MR struct {
	ReconcileInterval    config.Duration `yaml:"reconcile_interval"`
	MergeRecheckInterval config.Duration `yaml:"merge_recheck_interval"`
	EmptyCheckInterval   config.Duration `yaml:"empty_check_interval"`
	// NoteMinInterval is the least time between two edits of the status
	// note on a merge request.
	NoteMinInterval config.Duration `yaml:"note_min_interval"`
	// BulkReconcileInterval is how often each project's open merge
	// requests are listed once and compared with the items, so that a
	// lost webhook is noticed within it (0: never; default 2m).
	BulkReconcileInterval config.Duration `yaml:"bulk_reconcile_interval"`
	ManagedLabel          string          `yaml:"managed_label"`
	// ReviewLabel marks a merge request whose protected paths wait for a
	// person's approval (protected_paths.mode: review); the service never
	// merges it on its own.
	ReviewLabel string `yaml:"review_label"`

	// shared is the rest of the configuration the type reads (projects,
	// forges, the public URL, the herder), set by Resolved.
	shared *config.Config
}

// DefaultReviewLabel is mr.review_label's default: the label of a merge
// request that waits for a person's review of its protected paths.
const DefaultReviewLabel = "workqueue-review"

// Default returns the section's defaults.
func Default() *MR {
	return &MR{
		ReconcileInterval:     config.Duration(30 * time.Minute),
		MergeRecheckInterval:  config.Duration(time.Minute),
		EmptyCheckInterval:    config.Duration(30 * time.Minute),
		NoteMinInterval:       config.Duration(time.Minute),
		BulkReconcileInterval: config.Duration(2 * time.Minute),
		ManagedLabel:          "managed-by-workqueue",
		ReviewLabel:           DefaultReviewLabel,
	}
}

// Of returns c's mr section, resolved; the defaults where c has none.
func Of(c config.Config) *MR {
	return c.SectionOf(mr.ItemType, func() any { return Default() }).(*MR)
}

// In returns c's mr section to change in place, put in c with its
// defaults first if c has none (a configuration made in code).
func In(c *config.Config) *MR {
	return c.EditSection(mr.ItemType, func() any { return Default() }).(*MR)
}

// Resolved returns the section with the configuration every type shares
// (config.Resolver).
func (s *MR) Resolved(c config.Config) any {
	out := *s
	out.shared = &c
	return &out
}

// minInterval bounds the section's intervals from below.
const minInterval = 100 * time.Millisecond

func validate(v any) []error {
	s := v.(*MR)
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	min := config.Duration(minInterval)
	if s.ReconcileInterval < min || s.MergeRecheckInterval < min || s.EmptyCheckInterval < min {
		bad("mr", "reconcile_interval, merge_recheck_interval and empty_check_interval must be at least %s", minInterval)
	}
	if s.BulkReconcileInterval != 0 && s.BulkReconcileInterval < min {
		bad("mr.bulk_reconcile_interval", "want 0 (off) or at least %s", minInterval)
	}
	if s.NoteMinInterval < 0 {
		bad("mr.note_min_interval", "must not be negative")
	}
	if strings.ContainsAny(s.ManagedLabel, ",\n") || len(s.ManagedLabel) > 100 {
		bad("mr.managed_label", "want a label name without commas, got %q", s.ManagedLabel)
	}
	if s.ReviewLabel == "" || strings.ContainsAny(s.ReviewLabel, ",\n") || len(s.ReviewLabel) > 100 || s.ReviewLabel == s.ManagedLabel {
		bad("mr.review_label", "want a label name without commas, other than managed_label, got %q", s.ReviewLabel)
	}
	return errs
}

// Plugin is the mr item type.
var Plugin = itemtype.Plugin{
	Name:      mr.ItemType,
	OpenStore: func(db wq.Store) (any, error) { return mrstore.New(db) },
	Section:   &itemtype.Section{Key: mr.ItemType, Default: func() any { return Default() }, Validate: validate},
	Build:     build,
	Warnings: func(section any, handled bool) []itemtype.Warning {
		if s := section.(*MR); s.shared != nil && len(s.shared.Projects) > 0 && !handled {
			return []itemtype.Warning{{Field: "handled_types",
				Message: "projects are configured but mr is not handled here: mr items wait until an instance with mr in its handled_types runs on the same database"}}
		}
		return nil
	},
	Labels:      func(section any) []string { s := section.(*MR); return []string{s.ManagedLabel, s.ReviewLabel} },
	ReviewLabel: func(section any) string { return section.(*MR).ReviewLabel },
	Face:        &Face,
}

// Face is what the API's document, the agents' tools and the CLI show of
// the type.
var Face = wq.ItemFace{
	Type:       mr.ItemType,
	Schemas:    itemtype.Schemas(mrapi.OpenAPISchemas),
	Submission: "Submission", Detail: "MRDetail", Summary: "MRSummary",
	Tool: &wq.ItemTool{Name: "submit_change", Input: itemtype.ToolInput[mrapi.ChangeInput](),
		Description: `Submit a change to a repository as desired state: the files a branch should hold, and the merge request that should carry them into the target branch. The service inspects the submission before any forge call and then creates or updates the branch and merge request itself; you never push. The input is the submission as the REST API takes it (item_type "mr"); unknown members are refused by name. Submitting the same content again answers "unchanged"; new content for the same source branch updates the same merge request. A refusal names the inspection rule and the file action or field it refused: fix that and submit again. Follow the item with get_item.`},
	Files:  "file_actions",
	Fields: []string{"forge", "project", "source_branch", "target_branch", "title", "description"},
	Column: "MR",
	View:   view,
}

// view is what people see of an mr item: its title and merge request,
// from its summary in lists, and from its detail with its project,
// branches and files.
func view(summary, detail json.RawMessage) wq.ItemView {
	var v wq.ItemView
	var sum mrapi.Summary
	if len(summary) > 0 && json.Unmarshal(summary, &sum) == nil {
		v.Title, v.Link = sum.Title, sum.MRURL
	}
	var d mrapi.Detail
	if len(detail) > 0 && json.Unmarshal(detail, &d) == nil && d.Project != "" {
		v.Title, v.Link = d.Title, d.MRURL
		v.Lines = []wq.ItemLine{{Label: "project", Value: d.Project + " on " + d.Forge},
			{Label: "branches", Value: d.SourceBranch + " → " + d.TargetBranch},
			{Label: "title", Value: d.Title}, {Label: "files", Value: fmt.Sprint(len(d.Files))}}
	}
	if v.Link != "" {
		v.LinkName = "merge request"
	}
	return v
}

func build(env itemtype.Env, store any) (itemtype.Built, error) {
	st := store.(mr.Store)
	s := env.Section.(*MR)
	c := config.Default()
	if s.shared != nil {
		c = *s.shared
	}
	herd, err := c.Herder.Compile() // nil when no herder is configured
	if err != nil {
		return itemtype.Built{}, err
	}
	// A change submitted for an assignment passes the control plane's
	// gate, at submission and before each forge write.
	assignments := env.Assignments
	var trains *mr.TrainMetrics
	if env.Metrics != nil && env.Handled {
		trains = mr.NewTrainMetrics(env.Metrics, slices.Sorted(maps.Keys(env.Forges)))
	}
	t := mr.Type(mr.Options{TrainMetrics: trains, Store: st, Forges: env.Forges, PublicURL: c.PublicURL, Log: env.Log, Assignments: assignments,
		ReconcileInterval:    time.Duration(s.ReconcileInterval),
		MergeRecheckInterval: time.Duration(s.MergeRecheckInterval),
		EmptyCheckInterval:   time.Duration(s.EmptyCheckInterval),
		NoteMinInterval:      time.Duration(s.NoteMinInterval),
		Herder:               herd,
		DeleteSourceBranch: func(forge, project string) bool {
			p, ok := c.ProjectFor(forge, project)
			return !ok || p.DeletesSourceBranch()
		},
		RequiredChecks: func(forge, project string) []string {
			p, _ := c.ProjectFor(forge, project)
			return p.RequiredChecks
		},
		TrackLabel: func(forge, project string) string { return trackLabel(c, forge, project) },
		MergeTrain: func(forge, project string) (bool, int) {
			p, ok := c.ProjectFor(forge, project)
			return ok && p.MergeTrain.Enabled, p.MergeTrain.Batch()
		},
		Notify: notify(env), TrainPriority: trainPriority(c.ControlPlane.PriorityLabels)})
	b := itemtype.Built{Type: t, API: mr.API(mr.APIOptions{Store: st, Project: Project(c, s, env.Forges), Assignments: assignments,
		Events: env.Queue, Notify: notify(env),
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
	if env.Handled && s.BulkReconcileInterval > 0 {
		bulk := &mr.BulkReconciler{Store: st, Forges: env.Forges, Events: env.Queue, Notify: env.Notify,
			Interval: time.Duration(s.BulkReconcileInterval), Clock: env.Clock, Log: env.Log,
			// Failed jobs no webhook told of reach the herder (issue 50).
			CI: herd != nil}
		b.Run = func(ctx context.Context) { bulk.Run(ctx) }
	}
	return b, nil
}

// defaultBranchWait bounds the read of a repository's default branch at
// submission.
const defaultBranchWait = 2 * time.Second

// Project returns how c and the type's section s configure a project on a
// forge for the type's changes (config.MRProject, as an mr.Project, with
// what the forge's client can do), and false when no project entry covers
// it.
func Project(c config.Config, s *MR, forges map[string]wq.Forge) func(forge, project string) (mr.Project, bool) {
	own := []string{s.ManagedLabel, s.ReviewLabel}
	return func(forge, project string) (mr.Project, bool) {
		p, ok := c.MRProject(forge, project)
		if !ok {
			return mr.Project{}, false
		}
		outbound := policy.ForConfig(c, forge, own)(project)
		return mr.Project{
			Policy: mr.Policy{BlockedPaths: p.Policy.BlockedPaths, MaxFileBytes: p.Policy.MaxFileBytes, MaxTotalBytes: p.Policy.MaxTotalBytes,
				AllowBinary: p.Policy.AllowBinary, AllowGitConfigFiles: p.Policy.AllowGitConfigFiles, AllowSecrets: p.Policy.AllowSecrets,
				SecretAllowlist: outbound.SecretAllowlist},
			AutoMerge: p.AutoMerge, Label: s.ManagedLabel, BranchPrefix: p.BranchPrefix,
			FileModes: forges[forge] != nil && wq.SetsFileModes(forges[forge]),
			Outbound:  outbound, ReviewLabel: s.ReviewLabel,
			TrackLabel: trackLabel(c, forge, project),
			MergeTrain: p.MergeTrain.Enabled,
		}, true
	}
}

// trackLabel is the track_label of project on forge, "" when no project
// entry covers it.
func trackLabel(c config.Config, forge, project string) string {
	p, ok := c.ProjectFor(forge, project)
	if !ok {
		return ""
	}
	return p.Tracking()
}

// notify wakes another mr item through the engine, when env can.
func notify(env itemtype.Env) func(wq.ItemID) {
	if env.Notify == nil {
		return nil
	}
	return func(id wq.ItemID) { env.Notify(mr.ItemType, id) }
}

// trainPriority ranks a merge request by the control plane's priority
// labels: the earliest of them it carries ranks highest; none, lowest.
func trainPriority(order []string) func(labels []string) int {
	if len(order) == 0 {
		return nil
	}
	return func(labels []string) int {
		for i, l := range order {
			if slices.Contains(labels, l) {
				return len(order) - i
			}
		}
		return 0
	}
}
