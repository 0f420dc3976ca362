package gitea

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

var (
	_ wq.VersionReader    = (*Forge)(nil)
	_ wq.SettingsReader   = (*Forge)(nil)
	_ wq.WebhookInspector = (*Forge)(nil)
)

// ServerVersion reads GET /api/v1/version (wq.VersionReader), one call.
func (f *Forge) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := f.call(ctx, "version", func(c *sdk.Client) (resp *sdk.Response, err error) {
		v, resp, err = c.ServerVersion()
		return resp, err
	})
	return v, err
}

// MinServerVersion is ServerVersion, the release the adapter relies on:
// force-push through ChangeFiles, Actions jobs and their reruns, and
// review staleness came with 1.26 (docs/forge-checks.md).
func (f *Forge) MinServerVersion() string { return ServerVersion }

// ProjectSettings reads the branch protection of the repository's default
// branch (wq.SettingsReader): GET /repos/{o}/{r}, then
// GET /repos/{o}/{r}/branch_protections, two calls. A merge through the
// API is held to the rule that covers the target (approvals, status
// checks, stale approvals dismissed) unless it is forced by an admin,
// which the service never asks for; without a rule, nothing but Git's own
// mergeability holds it.
func (f *Forge) ProjectSettings(ctx context.Context, project string) ([]wq.ProjectSetting, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	branch, err := f.DefaultBranch(ctx, project)
	if err != nil {
		return nil, err
	}
	var rules []*sdk.BranchProtection
	err = f.call(ctx, "branch protections of "+project, func(c *sdk.Client) (resp *sdk.Response, err error) {
		rules, resp, err = c.ListBranchProtections(owner, repo, sdk.ListBranchProtectionsOptions{})
		return resp, err
	})
	if wq.IsForgeError(err, wq.ForgePermanent) {
		// A token that may not read them (Gitea asks for repository admin).
		return []wq.ProjectSetting{{Name: "branch_protection(" + branch + ")", Meaning: "not read: the token may not read branch protections (" +
			err.Error() + "); whether a merge through the API waits for approvals and CI on " + branch + " is unknown"}}, nil
	}
	if err != nil {
		return nil, err
	}
	rule := protectionFor(rules, branch)
	name := "branch_protection(" + branch + ")"
	if rule == nil {
		return []wq.ProjectSetting{{Name: name, Value: "none", Known: true, Safe: false,
			Meaning: "no rule protects " + branch + ": a merge through the API needs no approval and no passing status check, " +
				"so auto_merge merges as soon as Git can; add a branch protection rule for " + branch + " with required approvals, " +
				"status checks and dismissed stale approvals"}}, nil
	}
	name = "branch_protection(" + rule.RuleName + ")"
	return []wq.ProjectSetting{
		{Name: name, Value: "present", Known: true, Safe: true,
			Meaning: "a merge through the API is held to this rule: the service never forces a merge past it"},
		{Name: name + ".required_approvals", Value: strconv.FormatInt(rule.RequiredApprovals, 10), Known: true, Safe: rule.RequiredApprovals > 0,
			Meaning: map[bool]string{
				true:  "a merge waits for that many approvals",
				false: "a merge waits for no approval: set required_approvals to make people's reviews gate merges",
			}[rule.RequiredApprovals > 0]},
		{Name: name + ".dismiss_stale_approvals", Value: strconv.FormatBool(rule.DismissStaleApprovals), Known: true, Safe: rule.DismissStaleApprovals,
			Meaning: map[bool]string{
				true:  "an approval counts only for the commit it was given on: a push dismisses it",
				false: "an approval survives a push: a commit nobody reviewed can merge on an older approval; turn dismiss_stale_approvals on",
			}[rule.DismissStaleApprovals]},
		{Name: name + ".enable_status_check", Value: strconv.FormatBool(rule.EnableStatusCheck), Known: true, Safe: rule.EnableStatusCheck,
			Meaning: map[bool]string{
				true:  "a merge waits for the rule's status checks to pass",
				false: "a merge does not wait for CI: turn enable_status_check on and list the checks",
			}[rule.EnableStatusCheck]},
	}, nil
}

// protectionFor is the rule that covers branch: one named for it, else
// the first whose glob matches it (Gitea's rule names are globs).
func protectionFor(rules []*sdk.BranchProtection, branch string) *sdk.BranchProtection {
	for _, r := range rules {
		if ruleName(r) == branch {
			return r
		}
	}
	for _, r := range rules {
		if ok, _ := path.Match(ruleName(r), branch); ok {
			return r
		}
	}
	return nil
}

func ruleName(r *sdk.BranchProtection) string {
	if r.RuleName != "" {
		return r.RuleName
	}
	return r.BranchName
}

// listHooks reads every hook of a repository.
func (f *Forge) listHooks(ctx context.Context, owner, repo string) ([]*sdk.Hook, error) {
	var all []*sdk.Hook
	for page := 1; ; page++ {
		var hooks []*sdk.Hook
		err := f.call(ctx, "list hooks of "+owner+"/"+repo, func(c *sdk.Client) (resp *sdk.Response, err error) {
			hooks, resp, err = c.ListRepoHooks(owner, repo, sdk.ListHooksOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: 50}})
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		all = append(all, hooks...)
		if len(hooks) < 50 {
			return all, nil
		}
	}
}

// ourHooks are the hooks that are the service's: to url, or to url's path
// on another host (a person changed the host). Sorted: those to url first,
// then by id, so that every instance keeps the same one.
func ourHooks(hooks []*sdk.Hook, hookURL string) []*sdk.Hook {
	var ours []*sdk.Hook
	for _, h := range hooks {
		if forge.SameHookTarget(h.Config["url"], hookURL) {
			ours = append(ours, h)
		}
	}
	slices.SortFunc(ours, func(a, b *sdk.Hook) int {
		ax, bx := a.Config["url"] == hookURL, b.Config["url"] == hookURL
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

// hookProblems says what is wrong with the hooks that are the service's.
func hookProblems(ours []*sdk.Hook, hookURL string) wq.WebhookHealth {
	var h wq.WebhookHealth
	for _, o := range ours {
		h.HookIDs = append(h.HookIDs, o.ID)
	}
	if len(ours) == 0 {
		h.Problems = []wq.WebhookProblem{wq.WebhookMissing}
		return h
	}
	keep := ours[0]
	if !keep.Active {
		h.Problems = append(h.Problems, wq.WebhookDisabled)
	}
	if keep.Config["url"] != hookURL {
		h.Problems = append(h.Problems, wq.WebhookWrongURL)
	}
	wrong := keep.Config["content_type"] != "json"
	for _, e := range HookEvents {
		wrong = wrong || !slices.Contains(keep.Events, e)
	}
	if wrong {
		h.Problems = append(h.Problems, wq.WebhookWrongEvents)
	}
	if len(ours) > 1 {
		h.Problems = append(h.Problems, wq.WebhookDuplicate)
	}
	return h
}

// InspectWebhook reads the repository's hooks (wq.WebhookInspector):
// GET /repos/{o}/{r}/hooks, a call per 50 hooks.
func (f *Forge) InspectWebhook(ctx context.Context, project, hookURL string) (wq.WebhookHealth, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return wq.WebhookHealth{}, err
	}
	hooks, err := f.listHooks(ctx, owner, repo)
	if err != nil {
		return wq.WebhookHealth{}, err
	}
	return hookProblems(ourHooks(hooks, hookURL), hookURL), nil
}

// EnsureWebhook makes one Gitea hook to url send HookEvents, signed with
// secret. It compares before it writes, and every instance that runs it
// makes the same choice: the service's hooks are listed (ourHooks), the
// first is kept and set right (URL, events, active) when anything about
// it is wrong, and every other is deleted. Two instances that both find
// none both create one; the next run of either deletes the later one.
// Gitea 1.26 does not change a hook's secret on an edit (its API reads
// only the URL and content type of config): a hook's secret is set when
// it is made, and ResetWebhookSecret makes it again.
func (f *Forge) EnsureWebhook(ctx context.Context, project, hookURL, secret string) (wq.WebhookOutcome, error) {
	return f.ensureWebhook(ctx, project, hookURL, secret, false)
}

// ResetWebhookSecret replaces the service's hook with one signed with
// secret (wq.WebhookSecretResetter): Gitea's API cannot change a hook's
// secret, so the hook is deleted and made again, with its events.
func (f *Forge) ResetWebhookSecret(ctx context.Context, project, hookURL, secret string) (wq.WebhookOutcome, error) {
	return f.ensureWebhook(ctx, project, hookURL, secret, true)
}

func (f *Forge) ensureWebhook(ctx context.Context, project, hookURL, secret string, forceSecret bool) (wq.WebhookOutcome, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return "", err
	}
	hooks, err := f.listHooks(ctx, owner, repo)
	if err != nil {
		return "", err
	}
	ours := ourHooks(hooks, hookURL)
	config := map[string]string{"url": hookURL, "content_type": "json", "secret": secret}
	if len(ours) == 0 {
		err = f.call(ctx, "create hook on "+project, func(c *sdk.Client) (*sdk.Response, error) {
			_, resp, err := c.CreateRepoHook(owner, repo, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: true,
				Events: HookEvents, Config: config})
			return resp, err
		})
		return wq.WebhookCreated, err
	}
	outcome := wq.WebhookFound
	for _, extra := range ours[1:] {
		err := f.call(ctx, fmt.Sprintf("delete duplicate hook %d on %s", extra.ID, project), func(c *sdk.Client) (*sdk.Response, error) {
			return c.DeleteRepoHook(owner, repo, extra.ID)
		})
		if err != nil && !wq.IsForgeError(err, wq.ForgeNotFound) { // another instance deleted it first
			return "", err
		}
		outcome = wq.WebhookUpdated
	}
	keep := ours[0]
	problems := hookProblems(ours[:1], hookURL)
	if problems.OK() && !forceSecret {
		return outcome, nil
	}
	if forceSecret {
		err := f.call(ctx, fmt.Sprintf("delete hook %d on %s to set its secret", keep.ID, project), func(c *sdk.Client) (*sdk.Response, error) {
			return c.DeleteRepoHook(owner, repo, keep.ID)
		})
		if err != nil && !wq.IsForgeError(err, wq.ForgeNotFound) {
			return "", err
		}
		err = f.call(ctx, "create hook on "+project, func(c *sdk.Client) (*sdk.Response, error) {
			_, resp, err := c.CreateRepoHook(owner, repo, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: true,
				Events: HookEvents, Config: config})
			return resp, err
		})
		return wq.WebhookUpdated, err
	}
	active := true
	events := slices.Clone(keep.Events)
	for _, e := range HookEvents {
		if !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	err = f.call(ctx, "update hook on "+project, func(c *sdk.Client) (*sdk.Response, error) {
		return c.EditRepoHook(owner, repo, keep.ID, sdk.EditHookOption{Active: &active, Events: events, Config: config})
	})
	if wq.IsForgeError(err, wq.ForgeNotFound) {
		// A person deleted it between the list and the edit: make it.
		err = f.call(ctx, "create hook on "+project, func(c *sdk.Client) (*sdk.Response, error) {
			_, resp, err := c.CreateRepoHook(owner, repo, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: true,
				Events: HookEvents, Config: config})
			return resp, err
		})
		return wq.WebhookCreated, err
	}
	return wq.WebhookUpdated, err
}

var _ wq.WebhookSecretResetter = (*Forge)(nil)
