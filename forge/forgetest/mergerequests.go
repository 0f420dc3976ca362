package forgetest

import (
	"context"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// runMergeRequests is the part of the suite about merge requests: their
// lifecycle, blockers, pinned merges, and the project's webhook.
func runMergeRequests(t *testing.T, newProject func(t *testing.T) Project) {
	ctx := context.Background()
	t.Run("a merge request is created with its label, found, edited, closed and reopened", func(t *testing.T) {
		p := newProject(t)
		c := commit(t, p, "wq/mr", change("create", "a.txt", "a\n"))
		mr, err := p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: "wq/mr", TargetBranch: "main",
			Title: "Add a", Description: "Because.", Labels: []string{"managed-by-workqueue"}})
		if err != nil {
			t.Fatal(err)
		}
		if mr.Number == 0 || mr.URL == "" || mr.State != wq.MergeRequestOpen || mr.SourceBranch != "wq/mr" || mr.TargetBranch != "main" {
			t.Errorf("created %+v", mr)
		}
		got, err := p.Forge.GetMergeRequest(ctx, p.Path, mr.Number)
		if err != nil {
			t.Fatal(err)
		}
		if got.HeadSHA != c.SHA || got.Title != "Add a" || got.Description != "Because." || len(got.Labels) != 1 || got.Labels[0] != "managed-by-workqueue" {
			t.Errorf("read back %+v", got)
		}
		_, err = p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: "wq/mr", TargetBranch: "main", Title: "again"})
		wantKind(t, err, wq.ForgeConflict)
		found, err := p.Forge.FindMergeRequest(ctx, p.Path, "wq/mr", "main")
		if err != nil || found == nil || found.Number != mr.Number {
			t.Fatalf("FindMergeRequest = %+v, %v", found, err)
		}
		if from, err := p.Forge.OpenMergeRequestsFrom(ctx, p.Path, "wq/mr"); err != nil || len(from) != 1 || from[0].Number != mr.Number || from[0].TargetBranch != "main" {
			t.Errorf("OpenMergeRequestsFrom = %+v, %v; want the one open merge request", from, err)
		}
		if from, err := p.Forge.OpenMergeRequestsFrom(ctx, p.Path, "no-such-branch"); err != nil || len(from) != 0 {
			t.Errorf("OpenMergeRequestsFrom a branch without one = %+v, %v", from, err)
		}
		title, desc, closed, open := "Add a, better", "Because, really.", wq.MergeRequestClosed, wq.MergeRequestOpen
		if got, err = p.Forge.UpdateMergeRequest(ctx, p.Path, mr.Number, wq.MergeRequestUpdate{Title: &title, Description: &desc}); err != nil ||
			got.Title != title || got.Description != desc {
			t.Errorf("edit: %+v, %v", got, err)
		}
		if got, err = p.Forge.UpdateMergeRequest(ctx, p.Path, mr.Number, wq.MergeRequestUpdate{State: &closed}); err != nil || got.State != wq.MergeRequestClosed {
			t.Errorf("close: %+v, %v", got, err)
		}
		if got, err = p.Forge.UpdateMergeRequest(ctx, p.Path, mr.Number, wq.MergeRequestUpdate{State: &open}); err != nil || got.State != wq.MergeRequestOpen {
			t.Errorf("reopen: %+v, %v", got, err)
		}
		id, err := p.Forge.CreateNote(ctx, p.Path, mr.Number, "workqueue is on it")
		if err != nil || id == 0 {
			t.Fatalf("CreateNote = %d, %v", id, err)
		}
		if err := p.Forge.UpdateNote(ctx, p.Path, mr.Number, id, "workqueue: done"); err != nil {
			t.Errorf("UpdateNote: %v", err)
		}
	})

	t.Run("a project's webhook is ensured once and the project is listed", func(t *testing.T) {
		p := newProject(t)
		projects, err := p.Forge.ListProjects(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listed := false
		for _, path := range projects {
			listed = listed || path == p.Path
		}
		if !listed {
			t.Errorf("ListProjects = %v, want it to hold %s", projects, p.Path)
		}
		url := "http://127.0.0.1:8080/webhooks/test"
		if got, err := p.Forge.EnsureWebhook(ctx, p.Path, url, "secret"); err != nil || got != wq.WebhookCreated {
			t.Fatalf("first EnsureWebhook: %q, %v; want created", got, err)
		}
		if got, err := p.Forge.EnsureWebhook(ctx, p.Path, url, "secret"); err != nil || got != wq.WebhookFound {
			t.Errorf("second EnsureWebhook: %q, %v; want found", got, err)
		}
		if got, err := p.Forge.EnsureWebhook(ctx, p.Path, url+"/other", "secret"); err != nil || got != wq.WebhookCreated {
			t.Errorf("EnsureWebhook to another URL: %q, %v; want created", got, err)
		}
	})

	t.Run("a merge request says what blocks it and where its branch started", func(t *testing.T) {
		p := newProject(t)
		forked, err := p.Forge.BranchHead(ctx, p.Path, "main")
		if err != nil {
			t.Fatal(err)
		}
		commit(t, p, "wq/mb", change("create", "mb.txt", "ours\n"))
		mr, err := p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: "wq/mb", TargetBranch: "main", Title: "mb"})
		if err != nil {
			t.Fatal(err)
		}
		got := waitBlocker(t, p, mr.Number, wq.MergeClear)
		if !got.Mergeable || got.MergeBase != forked {
			t.Errorf("fresh: mergeable %v, merge base %q; want mergeable from %q", got.Mergeable, got.MergeBase, forked)
		}
		// The target moves: the branch still starts where it did.
		commit(t, p, "wq/other", change("create", "other.txt", "o\n"))
		if err := mergeNow(ctx, p, "wq/other"); err != nil {
			t.Fatalf("move the target: %v", err)
		}
		moved, err := p.Forge.BranchHead(ctx, p.Path, "main")
		if err != nil {
			t.Fatal(err)
		}
		got = waitBlocker(t, p, mr.Number, wq.MergeClear)
		if got.MergeBase != forked || got.MergeBase == moved {
			t.Errorf("after the target moved, merge base %q; want %q, not the target's head %q", got.MergeBase, forked, moved)
		}
		// A change to the same file lands on the target.
		commit(t, p, "wq/clash", change("create", "mb.txt", "theirs\n"))
		if err := mergeNow(ctx, p, "wq/clash"); err != nil {
			t.Fatalf("land the clash: %v", err)
		}
		if p.Forge.Kind() == wq.ForgeGitea {
			// Gitea's API says only "not mergeable": a conflict looks like a
			// check still running (see forge/gitea).
			got = waitBlocker(t, p, mr.Number, wq.MergeChecking)
		} else {
			got = waitBlocker(t, p, mr.Number, wq.MergeConflict)
		}
		if got.Mergeable {
			t.Errorf("a conflicting merge request is mergeable: %+v", got)
		}
		closed := wq.MergeRequestClosed
		if got, err = p.Forge.UpdateMergeRequest(ctx, p.Path, mr.Number, wq.MergeRequestUpdate{State: &closed}); err != nil ||
			got.Blocker != wq.MergeOther || got.Mergeable {
			t.Errorf("closed: %+v, %v; want blocked by something other than the branch", got, err)
		}
	})

	t.Run("a merge is pinned to the head SHA", func(t *testing.T) {
		p := newProject(t)
		c := commit(t, p, "wq/merge", change("create", "m.txt", "merged\n"))
		mr, err := p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: "wq/merge", TargetBranch: "main", Title: "m"})
		if err != nil {
			t.Fatal(err)
		}
		waitMergeable(t, p, mr.Number)
		err = p.Forge.MergeMergeRequest(ctx, p.Path, mr.Number, "0000000000000000000000000000000000000000")
		wantKind(t, err, wq.ForgeConflict)
		// A refused merge makes Gitea recompute mergeability; until it is
		// done it answers "try again later" (Unprocessable), which callers
		// retry, as reconcile_mr does.
		for deadline := time.Now().Add(30 * time.Second); ; {
			err := p.Forge.MergeMergeRequest(ctx, p.Path, mr.Number, c.SHA)
			if err == nil {
				break
			}
			if !wq.IsForgeError(err, wq.ForgeUnprocessable) || time.Now().After(deadline) {
				t.Fatalf("merge at the head: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		got, err := p.Forge.GetMergeRequest(ctx, p.Path, mr.Number)
		if err != nil || got.State != wq.MergeRequestMerged {
			t.Fatalf("after merge: %+v, %v", got, err)
		}
		if content, _ := read(t, p, "main", "m.txt"); content != "merged\n" {
			t.Errorf("main:m.txt = %q", content)
		}
	})
}
