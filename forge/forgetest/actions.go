package forgetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

// runActions is the part of the suite for what the service does on an
// agent's behalf once the gate allows it: comment, give a review verdict,
// close an issue.
func runActions(t *testing.T, newProject func(t *testing.T) Project) {
	ctx := context.Background()
	reviewing := projectHaving(newProject, func(p Project) bool { return p.Reviewing != nil }, "no second identity to review on this forge")
	verdict := func(t *testing.T, p Project, number int64) string {
		t.Helper()
		w, err := p.Forge.GetWork(ctx, p.Path, wq.WorkPR, number)
		if err != nil {
			t.Fatalf("GetWork: %v", err)
		}
		return w.ReviewState
	}
	// give has p's review identity give v and checks that the pull
	// request then has that verdict.
	give := func(t *testing.T, p Project, number int64, v, body, head string) {
		t.Helper()
		if err := p.Reviewing.ReviewPullRequest(ctx, p.Path, number, v, body, head); err != nil {
			t.Fatalf("%s at %s: %v", v, head, err)
		}
		if got := verdict(t, p, number); got != v {
			t.Errorf("after %s at %s, the verdict is %q", v, head, got)
		}
	}

	t.Run("a comment on an issue or a pull request is text, read back as written", func(t *testing.T) {
		p := newProject(t)
		is, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path, Title: "Flaky test"})
		if err != nil {
			t.Fatal(err)
		}
		mr, _ := openPR(t, p, "wq/comment", "")
		// GitLab runs a line like the last one as a quick action; a
		// comment must do nothing but comment.
		const body = "Looking into it.\n/close"
		for _, w := range []struct {
			kind   string
			number int64
		}{{wq.WorkIssue, is.Number}, {wq.WorkPR, mr.Number}} {
			id, err := p.Forge.CommentOnWork(ctx, p.Path, w.kind, w.number, body)
			if err != nil || id <= 0 {
				t.Fatalf("CommentOnWork on %s %d = %d, %v", w.kind, w.number, id, err)
			}
			if p.Comments != nil {
				got := p.Comments(t, w.kind, w.number)
				i := slices.IndexFunc(got, func(c Comment) bool { return c.ID == id })
				if i < 0 || strings.Join(strings.Fields(got[i].Body), " ") != "Looking into it. /close" {
					t.Errorf("comments on %s %d: %+v; want %d reading %q", w.kind, w.number, got, id, body)
				}
			}
			if read, err := p.Forge.GetWork(ctx, p.Path, w.kind, w.number); err != nil || read.State != wq.MergeRequestOpen {
				t.Errorf("%s %d after the comment: %+v, %v; want it open", w.kind, w.number, read, err)
			}
		}
	})

	t.Run("missing work, or work of the other kind, is not found", func(t *testing.T) {
		p := newProject(t)
		mr, c := openPR(t, p, "wq/kind", "")
		for _, kind := range []string{wq.WorkIssue, wq.WorkPR} {
			_, err := p.Forge.CommentOnWork(ctx, p.Path, kind, 9999, "hello")
			wantKind(t, err, wq.ForgeNotFound)
		}
		// No issue has the pull request's number (Gitea numbers both in
		// one sequence; GitLab's project has no issue yet).
		_, err := p.Forge.CommentOnWork(ctx, p.Path, wq.WorkIssue, mr.Number, "hello")
		wantKind(t, err, wq.ForgeNotFound)
		wantKind(t, p.Forge.CloseIssue(ctx, p.Path, mr.Number), wq.ForgeNotFound)
		wantKind(t, p.Forge.CloseIssue(ctx, p.Path, 9999), wq.ForgeNotFound)
		wantKind(t, p.Forge.ReviewPullRequest(ctx, p.Path, 9999, wq.ReviewApproved, "", c.SHA), wq.ForgeNotFound)
		if got, err := p.Forge.GetMergeRequest(ctx, p.Path, mr.Number); err != nil || got.State != wq.MergeRequestOpen {
			t.Errorf("the pull request after the refusals: %+v, %v; want it open", got, err)
		}
		if p.Comments != nil {
			if got := p.Comments(t, wq.WorkPR, mr.Number); len(got) != 0 {
				t.Errorf("comments on the pull request: %+v, want none", got)
			}
		}
	})

	t.Run("an issue is closed, and closing it again changes nothing", func(t *testing.T) {
		p := newProject(t)
		is, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path, Title: "Done already"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := p.Forge.CloseIssue(ctx, p.Path, is.Number); err != nil {
				t.Fatalf("CloseIssue, time %d: %v", i+1, err)
			}
			if got, err := p.Forge.GetWork(ctx, p.Path, wq.WorkIssue, is.Number); err != nil || got.State != wq.MergeRequestClosed {
				t.Errorf("after CloseIssue, time %d: %+v, %v; want it closed", i+1, got, err)
			}
		}
		work, err := p.Forge.ListOpenWork(ctx, p.Path)
		if err != nil || len(work) != 0 {
			t.Errorf("ListOpenWork = %+v, %v; want nothing open", work, err)
		}
	})

	t.Run("a verdict that cannot be given as asked is refused before anything is recorded", func(t *testing.T) {
		p := newProject(t)
		mr, c := openPR(t, p, "wq/refused", "")
		for _, tc := range []struct{ what, verdict, body, head string }{
			{"another verdict", "lgtm", "Fine.", c.SHA},
			{"no head", wq.ReviewApproved, "Fine.", ""},
			{"changes requested without a body", wq.ReviewChangesRequested, " ", c.SHA},
		} {
			if err := p.Forge.ReviewPullRequest(ctx, p.Path, mr.Number, tc.verdict, tc.body, tc.head); !wq.IsForgeError(err, wq.ForgePermanent) {
				t.Errorf("%s: %v, want a permanent error", tc.what, err)
			}
		}
		closed := wq.MergeRequestClosed
		if _, err := p.Forge.UpdateMergeRequest(ctx, p.Path, mr.Number, wq.MergeRequestUpdate{State: &closed}); err != nil {
			t.Fatal(err)
		}
		err := p.Forge.ReviewPullRequest(ctx, p.Path, mr.Number, wq.ReviewApproved, "Fine.", c.SHA)
		if !wq.IsForgeError(err, wq.ForgePermanent) || errors.Is(err, wq.ErrSelfReview) {
			t.Errorf("a closed pull request: %v, want a permanent error for its state", err)
		}
		if got := verdict(t, p, mr.Number); got != wq.ReviewNone {
			t.Errorf("verdict %q after the refusals, want none", got)
		}
	})

	t.Run("the service's own pull request is not reviewed with the service's token", func(t *testing.T) {
		p := newProject(t)
		mr, c := openPR(t, p, "wq/own", "")
		for _, v := range []string{wq.ReviewApproved, wq.ReviewChangesRequested} {
			err := p.Forge.ReviewPullRequest(ctx, p.Path, mr.Number, v, "Fine by me.", c.SHA)
			if !wq.IsForgeError(err, wq.ForgePermanent) || !errors.Is(err, wq.ErrSelfReview) || !strings.Contains(err.Error(), "review_token_env") {
				t.Errorf("%s: %v; want a permanent error naming review_token_env", v, err)
			}
		}
		if got := verdict(t, p, mr.Number); got != wq.ReviewNone {
			t.Errorf("verdict %q, want none", got)
		}
	})

	t.Run("a second identity's approval makes a pull request approved, its request for changes changes requested", func(t *testing.T) {
		p := reviewing(t)
		mr, c := openPR(t, p, "wq/reviewed", "")
		waitMergeable(t, p, mr.Number) // GitLab says requested_changes only once its checks ran
		give(t, p, mr.Number, wq.ReviewApproved, "Looks good.", c.SHA)
		give(t, p, mr.Number, wq.ReviewApproved, "", c.SHA) // a retry finds it given
		give(t, p, mr.Number, wq.ReviewChangesRequested, "Please add a test.", c.SHA)
	})

	t.Run("a verdict pinned to a head the pull request moved past is a conflict, and nothing is recorded", func(t *testing.T) {
		p := reviewing(t)
		mr, old := openPR(t, p, "wq/moved", "")
		moved, err := p.Forge.CommitFiles(ctx, wq.CommitRequest{Project: p.Path, Base: "main", Branch: "wq/moved", Message: "again",
			Changes: []wq.FileChange{{Action: "create", Path: "again.txt", Content: []byte("again\n")}}})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, p, mr.Number, "at the new head", func(mr *wq.MergeRequest) bool { return mr.HeadSHA == moved.SHA })
		waitMergeable(t, p, mr.Number)
		for _, v := range []string{wq.ReviewApproved, wq.ReviewChangesRequested} {
			err := p.Reviewing.ReviewPullRequest(ctx, p.Path, mr.Number, v, "Reviewed the old head.", old.SHA)
			wantKind(t, err, wq.ForgeConflict)
		}
		if got := verdict(t, p, mr.Number); got != wq.ReviewNone {
			t.Errorf("verdict %q after the conflicts, want none", got)
		}
		give(t, p, mr.Number, wq.ReviewApproved, "Reviewed the new head.", moved.SHA)
	})
}
