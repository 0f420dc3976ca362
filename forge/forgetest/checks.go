package forgetest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// runChecks holds the optional capabilities of the forge checks (issue
// 50, docs/forge-checks.md) and of the holder note: each case is skipped
// for a Forge without the capability.
func runChecks(t *testing.T, newProject func(t *testing.T) Project) {
	ctx := context.Background()
	having := func(has func(wq.Forge) bool, what string) func(t *testing.T) Project {
		return projectHaving(newProject, func(p Project) bool { return has(p.Forge) }, "the forge cannot "+what)
	}
	t.Run("the version reads and is one the kind supports", func(t *testing.T) {
		p := having(func(f wq.Forge) bool { _, ok := f.(wq.VersionReader); return ok }, "read its version")(t)
		raw, err := p.Forge.(wq.VersionReader).ServerVersion(ctx)
		if err != nil {
			t.Fatalf("ServerVersion: %v", err)
		}
		if v, msg := forge.CheckVersion(p.Forge.Kind(), p.Forge.(wq.VersionReader).MinServerVersion(), raw); v != forge.VersionSupported {
			t.Errorf("the test forge's version %q: %s", raw, msg)
		}
	})
	t.Run("each project setting says its value and what it means", func(t *testing.T) {
		p := having(func(f wq.Forge) bool { _, ok := f.(wq.SettingsReader); return ok }, "read project settings")(t)
		settings, err := p.Forge.(wq.SettingsReader).ProjectSettings(ctx, p.Path)
		if err != nil || len(settings) == 0 {
			t.Fatalf("ProjectSettings: %+v, %v; want some", settings, err)
		}
		for _, s := range settings {
			if s.Name == "" || s.Meaning == "" || (s.Known && s.Value == "") {
				t.Errorf("setting %+v: want a name, a meaning and, when known, a value", s)
			}
		}
		if _, err := p.Forge.(wq.SettingsReader).ProjectSettings(ctx, p.Path+"-missing"); !wq.IsForgeError(err, wq.ForgeNotFound) {
			t.Errorf("the settings of a missing project: %v, want not found", err)
		}
	})
	t.Run("a missing webhook is found missing, ensured once, then right", func(t *testing.T) {
		p := having(func(f wq.Forge) bool { _, ok := f.(wq.WebhookInspector); return ok }, "read webhooks")(t)
		const url = "http://127.0.0.1:9/webhooks/conformance"
		inspect := func() wq.WebhookHealth {
			t.Helper()
			h, err := p.Forge.(wq.WebhookInspector).InspectWebhook(ctx, p.Path, url)
			if err != nil {
				t.Fatalf("InspectWebhook: %v", err)
			}
			return h
		}
		if h := inspect(); !slices.Equal(h.Problems, []wq.WebhookProblem{wq.WebhookMissing}) {
			t.Errorf("before any hook: %+v, want missing", h)
		}
		if got, err := p.Forge.EnsureWebhook(ctx, p.Path, url, "s3cret"); err != nil || got != wq.WebhookCreated {
			t.Fatalf("EnsureWebhook: %q, %v; want created", got, err)
		}
		if h := inspect(); !h.OK() || len(h.HookIDs) != 1 {
			t.Errorf("after ensure: %+v, want one right hook", h)
		}
		if got, err := p.Forge.EnsureWebhook(ctx, p.Path, url, "s3cret"); err != nil || got != wq.WebhookFound {
			t.Errorf("ensure again: %q, %v; want found", got, err)
		}
		if r, ok := p.Forge.(wq.WebhookSecretResetter); ok {
			if _, err := r.ResetWebhookSecret(ctx, p.Path, url, "an0ther"); err != nil {
				t.Fatalf("ResetWebhookSecret: %v", err)
			}
			if h := inspect(); !h.OK() || len(h.HookIDs) != 1 {
				t.Errorf("after a secret reset: %+v, want one right hook", h)
			}
		}
	})
	t.Run("the service's own comment is found by its marker and edited", func(t *testing.T) {
		p := having(func(f wq.Forge) bool { _, ok := f.(wq.WorkCommentEditor); return ok }, "edit its comments")(t)
		e := p.Forge.(wq.WorkCommentEditor)
		const marker = "<!-- conformance:holder -->"
		issue, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path, Title: "held"})
		if err != nil {
			t.Fatal(err)
		}
		if id, err := e.FindOwnWorkComment(ctx, p.Path, wq.WorkIssue, issue.Number, marker); err != nil || id != 0 {
			t.Fatalf("before any note: %d, %v; want none", id, err)
		}
		if _, err := p.Forge.CommentOnWork(ctx, p.Path, wq.WorkIssue, issue.Number, "unrelated"); err != nil {
			t.Fatal(err)
		}
		made, err := p.Forge.CommentOnWork(ctx, p.Path, wq.WorkIssue, issue.Number, marker+"\nheld by a")
		if err != nil {
			t.Fatal(err)
		}
		if id, err := e.FindOwnWorkComment(ctx, p.Path, wq.WorkIssue, issue.Number, marker); err != nil || id != made {
			t.Fatalf("found %d, %v; want %d", id, err, made)
		}
		if err := e.EditWorkComment(ctx, p.Path, wq.WorkIssue, issue.Number, made, marker+"\nheld by b"); err != nil {
			t.Fatalf("EditWorkComment: %v", err)
		}
		if p.Comments != nil {
			var bodies []string
			for _, c := range p.Comments(t, wq.WorkIssue, issue.Number) {
				if c.ID == made {
					bodies = append(bodies, c.Body)
				}
			}
			if len(bodies) != 1 || !strings.Contains(bodies[0], "held by b") {
				t.Errorf("the edited comment reads %q, want it to say held by b", bodies)
			}
		}
	})
}

// StatusSetter is a People that sets commit statuses as a CI system does
// (state in Gitea's words: pending, success, failure).
type StatusSetter interface {
	SetStatus(t testing.TB, project, sha, context, state string)
}

// runCommitStatuses holds a forge's commit statuses (wq.CommitStatusReader)
// to the required checks' needs: the latest state of each check, by
// name, in neutral words, and none for a commit no check reported on.
func runCommitStatuses(t *testing.T, newProject func(t *testing.T) Project) {
	t.Run("a commit's statuses are the latest of each check", func(t *testing.T) {
		p := projectHaving(newProject, func(p Project) bool { _, ok := p.Forge.(wq.CommitStatusReader); return ok },
			"the forge cannot read commit statuses")(t)
		people, ok := p.People.(StatusSetter)
		if !ok {
			t.Fatal("the forge reads commit statuses, but the suite's People cannot set one")
		}
		ctx := context.Background()
		r := p.Forge.(wq.CommitStatusReader)
		c := commit(t, p, "wq/statuses", change("create", "s.txt", "s\n"))
		if got, err := r.CommitStatuses(ctx, p.Path, c.SHA); err != nil || len(got) != 0 {
			t.Fatalf("a commit nothing reported on: %+v, %v; want none", got, err)
		}
		people.SetStatus(t, p.Path, c.SHA, "konflux/build", "pending")
		people.SetStatus(t, p.Path, c.SHA, "konflux/release", "pending")
		people.SetStatus(t, p.Path, c.SHA, "konflux/build", "success")
		people.SetStatus(t, p.Path, c.SHA, "konflux/release", "failure")
		got, err := r.CommitStatuses(ctx, p.Path, c.SHA)
		if err != nil {
			t.Fatalf("CommitStatuses: %v", err)
		}
		states := map[string]string{}
		for _, s := range got {
			if _, twice := states[s.Context]; twice {
				t.Errorf("check %q listed twice: %+v", s.Context, got)
			}
			states[s.Context] = s.State
		}
		want := map[string]string{"konflux/build": wq.CheckSuccess, "konflux/release": wq.CheckFailed}
		if !maps.Equal(states, want) {
			t.Errorf("statuses = %v, want %v", states, want)
		}
		if _, err := r.CommitStatuses(ctx, p.Path, ""); !wq.IsForgeError(err, wq.ForgePermanent) {
			t.Errorf("statuses of no commit: %v, want a permanent error", err)
		}
	})
}
