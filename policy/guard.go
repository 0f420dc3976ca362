package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

type callerKey struct{}

// WithCaller returns ctx carrying the caller its forge writes are made
// for: a guarded forge (Guard) checks them as that caller's.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the caller ctx carries; without one, the service
// itself (Caller.Service): what depends on a caller was checked where
// the work was accepted, and what the forge receives is checked again.
func CallerOf(ctx context.Context) Caller {
	if c, ok := ctx.Value(callerKey{}).(Caller); ok {
		return c
	}
	return Caller{Service: true}
}

// Projects resolves a repository's outbound policy; a repository no
// configuration names gets the defaults (the zero Project).
type Projects func(project string) Project

// defaultBranchFor is how long a repository's default branch is kept.
const defaultBranchFor = 5 * time.Minute

// Guard returns f with every write passing Check before the adapter is
// called: the only form in which serve hands a forge to the item types,
// the control plane and the incident bridge (policy.Open builds it), so
// that nothing writes to a forge around the policy. Reads pass through.
// A refused write is a permanent *wq.ForgeError wrapping the refusals,
// and the adapter is not called.
func Guard(name string, f wq.Forge, projects Projects) wq.Forge {
	g := &guard{Forge: f, name: name, projects: projects, now: time.Now}
	if ci, ok := f.(wq.CIJobs); ok {
		return &guardCI{guard: g, ci: ci}
	}
	return g
}

type guard struct {
	wq.Forge
	name     string
	projects Projects
	now      func() time.Time

	mu       sync.Mutex
	defaults map[string]cachedBranch
}

type cachedBranch struct {
	branch string
	err    error
	at     time.Time
}

// defaultBranchFailedFor is how long a failed read of a default branch
// stands: a forge that is down costs one read per repository in this
// while, not one per submission. A rate limit is not kept: the forge's
// budget (forge/budget) already answers for the forge until its reset,
// and a kept 429 would outlive a shorter pause.
const defaultBranchFailedFor = 30 * time.Second

// Unguarded returns the adapter behind a guarded forge (f itself
// otherwise), for tests that need to act as a person would.
func Unguarded(f wq.Forge) wq.Forge {
	switch g := f.(type) {
	case *guard:
		return g.Forge
	case *guardCI:
		return g.Forge
	}
	return f
}

// check runs Check for the caller ctx carries, and refuses as the forge
// would refuse for good.
func (g *guard) check(ctx context.Context, w Write) error {
	c := CallerOf(ctx)
	p := g.projects(w.Project)
	d := Check(c, p, w)
	if (w.Op == OpCommit || w.Op == OpDeleteBranch) && p.BranchPrefix != "" && !strings.HasPrefix(w.SourceBranch, p.BranchPrefix) {
		d.Refusals = append(d.Refusals, &wq.Refusal{Index: -1, Field: "source_branch", Rule: RuleSourceNotOwned,
			Message: fmt.Sprintf("%q does not start with the branch prefix %q: the service writes only branches it owns", w.SourceBranch, p.BranchPrefix)})
	}
	if len(d.Refusals) == 0 && w.TargetBranch != "" && len(p.TargetBranches) == 0 && (w.Op == OpCommit || w.Op == OpOpenMR) {
		// The default target is read only for a write that passed the
		// rest: a refused write costs the forge nothing.
		def, err := g.defaultBranch(ctx, w.Project)
		if err != nil {
			return err
		}
		w.DefaultBranch = def
		if r := checkTarget(p, w); r != nil {
			d.Refusals = append(d.Refusals, r)
		}
	}
	if err := d.Err(); err != nil {
		return &wq.ForgeError{Kind: wq.ForgePermanent, Op: fmt.Sprintf("policy: %s %s on %s", w.Op, w.Project, g.name),
			Message: "refused by the outbound policy: " + err.Error(), Err: err}
	}
	return nil
}

// RuleSourceNotOwned refuses a push to, or the deletion of, a branch
// outside the project's branch prefix.
const RuleSourceNotOwned = "branch_not_owned"

// defaultBranch reads project's default branch, kept a few minutes; ""
// where the forge cannot say (then only target_branches bind).
func (g *guard) defaultBranch(ctx context.Context, project string) (string, error) {
	db, ok := g.Forge.(wq.DefaultBrancher)
	if !ok {
		return "", nil
	}
	g.mu.Lock()
	c, hit := g.defaults[project]
	g.mu.Unlock()
	if hit && (c.err == nil && g.now().Sub(c.at) < defaultBranchFor || c.err != nil && g.now().Sub(c.at) < defaultBranchFailedFor) {
		return c.branch, c.err
	}
	branch, err := db.DefaultBranch(ctx, project)
	if err != nil && ctx.Err() != nil {
		return "", err // the caller's deadline, not the forge's answer
	}
	if wq.IsForgeError(err, wq.ForgeRateLimited) {
		return "", err // not the forge's answer about the branch either
	}
	g.mu.Lock()
	if g.defaults == nil {
		g.defaults = map[string]cachedBranch{}
	}
	g.defaults[project] = cachedBranch{branch: branch, err: err, at: g.now()}
	g.mu.Unlock()
	return branch, err
}

// SetsFileModes is the adapter's (wq.FileModeSetter): the guard keeps
// what the kind's client can do.
func (g *guard) SetsFileModes() bool { return wq.SetsFileModes(g.Forge) }

// InertText is the adapter's (wq.InertTexter).
func (g *guard) InertText(text string) string { return wq.InertText(g.Forge, text) }

// DefaultBranch reads through the guard's cache (wq.DefaultBrancher), so
// that a submission's check and the push's share one read.
func (g *guard) DefaultBranch(ctx context.Context, project string) (string, error) {
	return g.defaultBranch(ctx, project)
}

func (g *guard) CommitFiles(ctx context.Context, req wq.CommitRequest) (wq.Commit, error) {
	w := Write{Op: OpCommit, Project: req.Project, SourceBranch: req.Branch, TargetBranch: req.Base, Message: req.Message}
	if req.Target != "" && req.Target != req.Base {
		// Built on another branch than the target (a merge train's car on
		// the car ahead): that branch must be the service's own, and the
		// target one a change may have.
		if prefix := g.projects(req.Project).BranchPrefix; prefix == "" || !strings.HasPrefix(req.Base, prefix) || req.Base == req.Branch {
			return wq.Commit{}, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "commit " + req.Project + " on " + g.name,
				Message: fmt.Sprintf("refused by the outbound policy: %q is not a branch of the service's to build %q on", req.Base, req.Branch)}
		}
		w.TargetBranch = req.Target
	}
	for _, ch := range req.Changes {
		content := ch.Content
		if content == nil && (ch.Action == "create" || ch.Action == "update") {
			content = []byte{}
		}
		w.Files = append(w.Files, File{Action: ch.Action, Path: ch.Path, PreviousPath: ch.PreviousPath, Content: content})
	}
	if err := g.check(ctx, w); err != nil {
		return wq.Commit{}, err
	}
	return g.Forge.CommitFiles(ctx, req)
}

func (g *guard) DeleteBranch(ctx context.Context, project, branch string) error {
	if err := g.check(ctx, Write{Op: OpDeleteBranch, Project: project, SourceBranch: branch}); err != nil {
		return err
	}
	return g.Forge.DeleteBranch(ctx, project, branch)
}

func (g *guard) CreateMergeRequest(ctx context.Context, req wq.MergeRequestCreate) (*wq.MergeRequest, error) {
	if err := g.check(ctx, Write{Op: OpOpenMR, Project: req.Project, SourceBranch: req.SourceBranch, TargetBranch: req.TargetBranch,
		Title: req.Title, Description: req.Description, Labels: req.Labels}); err != nil {
		return nil, err
	}
	req.ExistingOnly = g.existingOnly(req.Project, req.Labels, req.ExistingOnly)
	return g.Forge.CreateMergeRequest(ctx, req)
}

func (g *guard) UpdateMergeRequest(ctx context.Context, project string, number int64, u wq.MergeRequestUpdate) (*wq.MergeRequest, error) {
	w := Write{Op: OpUpdateMR, Project: project}
	if u.Title != nil {
		w.Title = *u.Title
	}
	if u.Description != nil {
		w.Description = *u.Description
	}
	if err := g.check(ctx, w); err != nil {
		return nil, err
	}
	return g.Forge.UpdateMergeRequest(ctx, project, number, u)
}

func (g *guard) MergeMergeRequest(ctx context.Context, project string, number int64, headSHA string) error {
	if err := g.check(ctx, Write{Op: OpMerge, Project: project}); err != nil {
		return err
	}
	return g.Forge.MergeMergeRequest(ctx, project, number, headSHA)
}

func (g *guard) CreateNote(ctx context.Context, project string, number int64, body string) (int64, error) {
	if err := g.check(ctx, Write{Op: OpNote, Project: project, Body: body}); err != nil {
		return 0, err
	}
	return g.Forge.CreateNote(ctx, project, number, body)
}

func (g *guard) UpdateNote(ctx context.Context, project string, number, noteID int64, body string) error {
	if err := g.check(ctx, Write{Op: OpNote, Project: project, Body: body}); err != nil {
		return err
	}
	return g.Forge.UpdateNote(ctx, project, number, noteID, body)
}

func (g *guard) CreateIssue(ctx context.Context, req wq.IssueCreate) (*wq.WorkInfo, error) {
	if err := g.check(ctx, Write{Op: OpCreateIssue, Project: req.Project, Title: req.Title, Body: req.Body, Labels: req.Labels}); err != nil {
		return nil, err
	}
	return g.Forge.CreateIssue(ctx, req)
}

func (g *guard) CommentOnWork(ctx context.Context, project, kind string, number int64, body string) (int64, error) {
	if err := g.check(ctx, Write{Op: OpComment, Project: project, Body: body}); err != nil {
		return 0, err
	}
	return g.Forge.CommentOnWork(ctx, project, kind, number, body)
}

func (g *guard) ReviewPullRequest(ctx context.Context, project string, number int64, verdict, body, headSHA string) error {
	if err := g.check(ctx, Write{Op: OpReview, Project: project, Body: body}); err != nil {
		return err
	}
	return g.Forge.ReviewPullRequest(ctx, project, number, verdict, body, headSHA)
}

func (g *guard) CloseIssue(ctx context.Context, project string, number int64) error {
	if err := g.check(ctx, Write{Op: OpCloseIssue, Project: project}); err != nil {
		return err
	}
	return g.Forge.CloseIssue(ctx, project, number)
}

func (g *guard) EnsureWebhook(ctx context.Context, project, url, secret string) (wq.WebhookOutcome, error) {
	if err := g.check(ctx, Write{Op: OpWebhook, Project: project}); err != nil {
		return "", err
	}
	return g.Forge.EnsureWebhook(ctx, project, url, secret)
}

// existingOnly is the labels of a merge request the adapter must not
// make: every one but the service's own, unless the project lets the
// service make labels (create_labels).
func (g *guard) existingOnly(project string, labels, already []string) []string {
	p := g.projects(project)
	if p.CreateLabels {
		return already
	}
	out := slices.Clone(already)
	for _, l := range labels {
		if !slices.Contains(p.ServiceLabels, l) && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// guardCI is a guarded forge whose CI jobs can be read and retried.
type guardCI struct {
	*guard
	ci wq.CIJobs
}

func (g *guardCI) PipelineJobs(ctx context.Context, project string, pipelineID int64) ([]wq.CIJob, error) {
	return g.ci.PipelineJobs(ctx, project, pipelineID)
}

func (g *guardCI) Job(ctx context.Context, project string, jobID int64) (*wq.CIJob, error) {
	return g.ci.Job(ctx, project, jobID)
}

func (g *guardCI) LatestPipeline(ctx context.Context, project, sha string) (int64, error) {
	return g.ci.LatestPipeline(ctx, project, sha)
}

func (g *guardCI) JobTrace(ctx context.Context, project string, jobID int64, maxBytes int) ([]byte, error) {
	return g.ci.JobTrace(ctx, project, jobID, maxBytes)
}

func (g *guardCI) RetryJob(ctx context.Context, project string, pipelineID, jobID int64) (int64, error) {
	if err := g.check(ctx, Write{Op: OpRetryJob, Project: project}); err != nil {
		return 0, err
	}
	return g.ci.RetryJob(ctx, project, pipelineID, jobID)
}

// The forge's checks (issue 50) pass the guard as DefaultBranch does: the
// guard has every one, and answers an error wrapping errors.ErrUnsupported
// where its adapter lacks it, so that a caller reports "not checked".

// errUnsupported is the guard's answer for a capability its adapter
// lacks.
func (g *guard) errUnsupported(what string) error {
	return &wq.ForgeError{Kind: wq.ForgePermanent, Op: fmt.Sprintf("%s on %s", what, g.name),
		Message: "the " + g.Forge.Kind() + " adapter cannot " + what, Err: errors.ErrUnsupported}
}

// ServerVersion reads the forge's version (wq.VersionReader).
func (g *guard) ServerVersion(ctx context.Context) (string, error) {
	if v, ok := g.Forge.(wq.VersionReader); ok {
		return v.ServerVersion(ctx)
	}
	return "", g.errUnsupported("read its version")
}

// MinServerVersion is the adapter's (wq.VersionReader); "" without one.
func (g *guard) MinServerVersion() string {
	if v, ok := g.Forge.(wq.VersionReader); ok {
		return v.MinServerVersion()
	}
	return ""
}

// ProjectSettings reads a project's safety settings (wq.SettingsReader).
func (g *guard) ProjectSettings(ctx context.Context, project string) ([]wq.ProjectSetting, error) {
	if s, ok := g.Forge.(wq.SettingsReader); ok {
		return s.ProjectSettings(ctx, project)
	}
	return nil, g.errUnsupported("read project settings")
}

// InspectWebhook reads a project's webhook (wq.WebhookInspector).
func (g *guard) InspectWebhook(ctx context.Context, project, url string) (wq.WebhookHealth, error) {
	if w, ok := g.Forge.(wq.WebhookInspector); ok {
		return w.InspectWebhook(ctx, project, url)
	}
	return wq.WebhookHealth{}, g.errUnsupported("read webhooks")
}

// ResetWebhookSecret is a write, checked as EnsureWebhook is
// (wq.WebhookSecretResetter); without it in the adapter, EnsureWebhook.
func (g *guard) ResetWebhookSecret(ctx context.Context, project, url, secret string) (wq.WebhookOutcome, error) {
	if err := g.check(ctx, Write{Op: OpWebhook, Project: project}); err != nil {
		return "", err
	}
	if r, ok := g.Forge.(wq.WebhookSecretResetter); ok {
		return r.ResetWebhookSecret(ctx, project, url, secret)
	}
	return g.Forge.EnsureWebhook(ctx, project, url, secret)
}

// FindOwnWorkComment reads the service's comment on a thread
// (wq.WorkCommentEditor).
func (g *guard) FindOwnWorkComment(ctx context.Context, project, kind string, number int64, marker string) (int64, error) {
	if e, ok := g.Forge.(wq.WorkCommentEditor); ok {
		return e.FindOwnWorkComment(ctx, project, kind, number, marker)
	}
	return 0, g.errUnsupported("find its comments")
}

// EditWorkComment is a write, checked as a comment (wq.WorkCommentEditor).
func (g *guard) EditWorkComment(ctx context.Context, project, kind string, number, id int64, body string) error {
	if err := g.check(ctx, Write{Op: OpComment, Project: project, Body: body}); err != nil {
		return err
	}
	if e, ok := g.Forge.(wq.WorkCommentEditor); ok {
		return e.EditWorkComment(ctx, project, kind, number, id, body)
	}
	return g.errUnsupported("edit comments")
}

// CommitStatuses reads a commit's checks (wq.CommitStatusReader): a read,
// passed through.
func (g *guard) CommitStatuses(ctx context.Context, project, sha string) ([]wq.CommitStatus, error) {
	if r, ok := g.Forge.(wq.CommitStatusReader); ok {
		return r.CommitStatuses(ctx, project, sha)
	}
	return nil, g.errUnsupported("read commit statuses")
}

// CommitPaths lists a commit's changes without modes
// (wq.CommitPathLister): a read, passed through; CommitChanges where the
// adapter has no cheaper list.
func (g *guard) CommitPaths(ctx context.Context, project, sha string) ([]wq.PathChange, error) {
	if l, ok := g.Forge.(wq.CommitPathLister); ok {
		return l.CommitPaths(ctx, project, sha)
	}
	return g.Forge.CommitChanges(ctx, project, sha)
}
