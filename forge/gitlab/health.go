package gitlab

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

var (
	_ wq.VersionReader         = (*Forge)(nil)
	_ wq.SettingsReader        = (*Forge)(nil)
	_ wq.WebhookInspector      = (*Forge)(nil)
	_ wq.WebhookSecretResetter = (*Forge)(nil)
)

// ServerVersion reads GET /api/v4/version (wq.VersionReader), one call.
func (f *Forge) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := f.call(ctx, "version", func(o gl.RequestOptionFunc) error {
		got, _, err := f.client.Version.GetVersion(o)
		if err == nil && got != nil {
			v = got.Version
		}
		return err
	})
	return v, err
}

// MinServerVersion is the oldest GitLab the adapter supports
// (MinServerVersion, the constant; docs/forge-checks.md).
func (f *Forge) MinServerVersion() string { return MinServerVersion }

// ProjectSettings reads the project (GET /projects/:id: merge_method,
// only_allow_merge_if_pipeline_succeeds) and its approval configuration
// (GET /projects/:id/approvals: reset_approvals_on_push), two calls
// (wq.SettingsReader). The approvals endpoint is GitLab Premium's: on a
// Free instance, or for a token that may not read it, the setting is
// reported unknown.
func (f *Forge) ProjectSettings(ctx context.Context, project string) ([]wq.ProjectSetting, error) {
	var p *gl.Project
	err := f.call(ctx, "project "+project, func(o gl.RequestOptionFunc) (err error) {
		p, _, err = f.client.Projects.GetProject(project, nil, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	var approvals *gl.ProjectApprovals
	approvalsErr := f.call(ctx, "approvals of "+project, func(o gl.RequestOptionFunc) (err error) {
		approvals, _, err = f.client.Projects.GetApprovalConfiguration(project, o)
		return err
	})
	var out []wq.ProjectSetting
	switch {
	case approvalsErr == nil && approvals != nil:
		out = append(out, wq.ProjectSetting{Name: "reset_approvals_on_push", Value: fmt.Sprint(approvals.ResetApprovalsOnPush), Known: true,
			Safe: approvals.ResetApprovalsOnPush, Meaning: map[bool]string{
				true:  "an approval counts only for the commit it was given on: a push removes it",
				false: "an approval survives a push: a commit nobody reviewed can merge on an older approval; turn on \"Remove all approvals when commits are added to the source branch\"",
			}[approvals.ResetApprovalsOnPush]})
	case wq.IsForgeError(approvalsErr, wq.ForgeNotFound), wq.IsForgeError(approvalsErr, wq.ForgePermanent):
		out = append(out, wq.ProjectSetting{Name: "reset_approvals_on_push",
			Meaning: "not read (" + approvalsErr.Error() + "): merge request approvals are a GitLab Premium feature or the token may not read them; " +
				"whether an approval survives a push is unknown"})
	default:
		return nil, approvalsErr
	}
	method := cmp.Or(string(p.MergeMethod), "merge")
	out = append(out, wq.ProjectSetting{Name: "merge_method", Value: method, Known: true, Safe: true, Meaning: map[bool]string{
		true:  "a merge commit: the service merges the head it pushed as it is",
		false: "the branch must sit on the target's head to merge: when the target moves, the service pushes its change again on top of it (a new head, which CI and approvals see anew)",
	}[method == "merge"]})
	pipelines := p.OnlyAllowMergeIfPipelineSucceeds
	out = append(out, wq.ProjectSetting{Name: "only_allow_merge_if_pipeline_succeeds", Value: fmt.Sprint(pipelines), Known: true, Safe: pipelines,
		Meaning: map[bool]string{
			true:  "a merge waits for the head's pipeline to succeed",
			false: "a merge does not wait for CI: a failing pipeline does not stop auto_merge; turn on \"Pipelines must succeed\"",
		}[pipelines]})
	return out, nil
}

// listHooks reads every hook of the project, 100 a page.
func (f *Forge) listHooks(ctx context.Context, project string) ([]*gl.ProjectHook, error) {
	var all []*gl.ProjectHook
	for page := int64(1); ; page++ {
		var hooks []*gl.ProjectHook
		var resp *gl.Response
		err := f.call(ctx, "list hooks of "+project, func(o gl.RequestOptionFunc) (err error) {
			hooks, resp, err = f.client.Projects.ListProjectHooks(project,
				&gl.ListProjectHooksOptions{ListOptions: gl.ListOptions{Page: page, PerPage: 100}}, o)
			return err
		})
		if err != nil {
			return nil, err
		}
		all = append(all, hooks...)
		if resp == nil || resp.NextPage == 0 {
			return all, nil
		}
	}
}

// ourHooks are the service's hooks: to hookURL, or to its path on another
// host; those to hookURL first, then by id, so that every instance keeps
// the same one.
func ourHooks(hooks []*gl.ProjectHook, hookURL string) []*gl.ProjectHook {
	var ours []*gl.ProjectHook
	for _, h := range hooks {
		if forge.SameHookTarget(h.URL, hookURL) {
			ours = append(ours, h)
		}
	}
	slices.SortFunc(ours, func(a, b *gl.ProjectHook) int {
		ax, bx := a.URL == hookURL, b.URL == hookURL
		if ax != bx {
			if ax {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return ours
}

// hookEventsRight reports whether h sends exactly the events the webhook
// package reads (and no notes, whose quick actions are not ours to see).
func hookEventsRight(h *gl.ProjectHook) bool {
	return h.MergeRequestsEvents && h.IssuesEvents && h.PushEvents && h.PipelineEvents && h.JobEvents && !h.NoteEvents
}

func hookProblems(ours []*gl.ProjectHook, hookURL string, now time.Time) wq.WebhookHealth {
	var h wq.WebhookHealth
	for _, o := range ours {
		h.HookIDs = append(h.HookIDs, o.ID)
	}
	if len(ours) == 0 {
		h.Problems = []wq.WebhookProblem{wq.WebhookMissing}
		return h
	}
	keep := ours[0]
	if hookDisabled(keep, now) {
		h.Problems = append(h.Problems, wq.WebhookDisabled)
	}
	if keep.URL != hookURL {
		h.Problems = append(h.Problems, wq.WebhookWrongURL)
	}
	if !hookEventsRight(keep) {
		h.Problems = append(h.Problems, wq.WebhookWrongEvents)
	}
	if !keep.TokenPresent {
		h.Problems = append(h.Problems, wq.WebhookNoSecret)
	}
	if len(ours) > 1 {
		h.Problems = append(h.Problems, wq.WebhookDuplicate)
	}
	return h
}

// InspectWebhook reads the project's hooks (wq.WebhookInspector):
// GET /projects/:id/hooks, a call per 100 hooks.
func (f *Forge) InspectWebhook(ctx context.Context, project, hookURL string) (wq.WebhookHealth, error) {
	hooks, err := f.listHooks(ctx, project)
	if err != nil {
		return wq.WebhookHealth{}, err
	}
	return hookProblems(ourHooks(hooks, hookURL), hookURL, time.Now()), nil
}

// EnsureWebhook makes one project hook to url send merge request
// (approvals included), issue, push, pipeline and job events (the events
// the webhook package reads, and no others: not confidential issues or
// notes) with secret as its token. It compares before it writes, and
// every instance makes the same choice: the service's hooks are listed
// (ourHooks), the first is kept and set right, every other deleted.
//
// A hook GitLab disabled after failing deliveries (alert_status other than
// executable, or disabled_until in the future) is replaced: GitLab does not
// retry deliveries, and it re-enables a hook only after a 2xx delivery,
// which editing the hook does not make. A fresh hook starts executable.
func (f *Forge) EnsureWebhook(ctx context.Context, project, hookURL, secret string) (wq.WebhookOutcome, error) {
	return f.ensureWebhook(ctx, project, hookURL, secret, false)
}

// ResetWebhookSecret is EnsureWebhook that also writes the token of a
// hook that looks right (wq.WebhookSecretRefused).
func (f *Forge) ResetWebhookSecret(ctx context.Context, project, hookURL, secret string) (wq.WebhookOutcome, error) {
	return f.ensureWebhook(ctx, project, hookURL, secret, true)
}

func (f *Forge) ensureWebhook(ctx context.Context, project, hookURL, secret string, forceSecret bool) (wq.WebhookOutcome, error) {
	hooks, err := f.listHooks(ctx, project)
	if err != nil {
		return "", err
	}
	ours := ourHooks(hooks, hookURL)
	if len(ours) == 0 {
		return wq.WebhookCreated, f.addHook(ctx, project, hookURL, secret)
	}
	outcome := wq.WebhookFound
	for _, extra := range ours[1:] {
		if err := f.deleteHook(ctx, project, extra.ID); err != nil {
			return "", err
		}
		outcome = wq.WebhookUpdated
	}
	keep := ours[0]
	problems := hookProblems(ours[:1], hookURL, time.Now())
	switch {
	case problems.OK() && !forceSecret:
		return outcome, nil
	case hookDisabled(keep, time.Now()):
		if err := f.deleteHook(ctx, project, keep.ID); err != nil {
			return "", err
		}
		return wq.WebhookUpdated, f.addHook(ctx, project, hookURL, secret)
	}
	err = f.call(ctx, "update hook on "+project, func(o gl.RequestOptionFunc) error {
		_, _, err := f.client.Projects.EditProjectHook(project, keep.ID, &gl.EditProjectHookOptions{URL: &hookURL, Token: &secret,
			MergeRequestsEvents: gl.Ptr(true), IssuesEvents: gl.Ptr(true), PushEvents: gl.Ptr(true), PipelineEvents: gl.Ptr(true),
			JobEvents: gl.Ptr(true), NoteEvents: gl.Ptr(false)}, o)
		return err
	})
	if wq.IsForgeError(err, wq.ForgeNotFound) { // a person deleted it meanwhile
		return wq.WebhookCreated, f.addHook(ctx, project, hookURL, secret)
	}
	return wq.WebhookUpdated, err
}

// deleteHook deletes a hook; one already gone (another instance, a
// person) is not an error.
func (f *Forge) deleteHook(ctx context.Context, project string, id int64) error {
	err := f.call(ctx, fmt.Sprintf("delete hook %d on %s", id, project), func(o gl.RequestOptionFunc) error {
		_, err := f.client.Projects.DeleteProjectHook(project, id, o)
		return err
	})
	if wq.IsForgeError(err, wq.ForgeNotFound) {
		return nil
	}
	return err
}

// hookDisabled reports whether GitLab stopped delivering to h after
// failures. alert_status is "executable", "temporarily_disabled" or
// "disabled" (GitLab 15.x and later; older releases send none).
func hookDisabled(h *gl.ProjectHook, now time.Time) bool {
	return (h.AlertStatus != "" && h.AlertStatus != "executable") || (h.DisabledUntil != nil && h.DisabledUntil.After(now))
}

func (f *Forge) addHook(ctx context.Context, project, hookURL, secret string) error {
	return f.call(ctx, "create hook on "+project, func(o gl.RequestOptionFunc) error {
		_, _, err := f.client.Projects.AddProjectHook(project, &gl.AddProjectHookOptions{URL: &hookURL, Token: &secret,
			MergeRequestsEvents: gl.Ptr(true), IssuesEvents: gl.Ptr(true), PipelineEvents: gl.Ptr(true), JobEvents: gl.Ptr(true),
			NoteEvents: gl.Ptr(false), PushEvents: gl.Ptr(true)}, o)
		return err
	})
}
