package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
)

// A desired state the target already holds is no change (issue 28,
// defect 1), on the real Gitea: a create of a file main holds with the
// same content completes the item empty, without a pull request; beside
// a real change it is dropped and the pull request holds the rest; a
// create over other content fails, naming the path and saying to use
// update.
func TestADesiredStateTheTargetHoldsIsNoChange(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) { c.Projects[0].AutoMerge = false })
	ctx := context.Background()
	if _, err := w.forge.CommitFiles(ctx, wq.CommitRequest{Project: w.repo, Base: "main", Branch: "main", Message: "existing",
		Changes: []wq.FileChange{{Action: "create", Path: "existing.txt", Content: []byte("existing\n")}}}); err != nil {
		t.Fatal(err)
	}
	submit := func(branch string, actions ...map[string]any) map[string]any {
		t.Helper()
		status, out, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch, actions...))
		if status != http.StatusCreated {
			t.Fatalf("submit %s: %d %v", branch, status, out)
		}
		return w.waitItem(out["id"].(string), "a pull request or the end", func(it map[string]any) bool {
			d, _ := it["detail"].(map[string]any)
			return it["phase"] != "active" || d["mr_iid"] != nil
		})
	}
	same := map[string]any{"action": "create", "file_path": "existing.txt", "content": "existing\n"}
	if it := submit("workqueue/same", same); it["phase"] != "completed" || it["reason"] != "empty_diff" {
		t.Errorf("a create the target holds: %v/%v (%v), want completed, empty_diff", it["phase"], it["reason"], it["error"])
	}
	it := submit("workqueue/same-and-new", same, map[string]any{"action": "create", "file_path": "new.txt", "content": "new\n"})
	if it["phase"] != "active" {
		t.Fatalf("a create the target holds beside a new file: %v/%v (%v), want a pull request", it["phase"], it["reason"], it["error"])
	}
	c, owner, name := w.giteaClient()
	files, _, err := c.ListPullRequestFiles(owner, name, int64(it["detail"].(map[string]any)["mr_iid"].(float64)), sdk.ListPullRequestFilesOptions{})
	if err != nil || len(files) != 1 || files[0].Filename != "new.txt" {
		t.Errorf("the pull request's files: %+v, %v; want new.txt only", files, err)
	}
	other := map[string]any{"action": "create", "file_path": "existing.txt", "content": "other\n"}
	if it := submit("workqueue/other", other); it["phase"] != "failed" || !strings.Contains(it["error"].(string), "existing.txt") ||
		!strings.Contains(it["error"].(string), "update") {
		t.Errorf("a create over other content: %v/%v, want failed naming the path and update", it["phase"], it["error"])
	}
}

// Cancelling never closes a person's pull request (issue 28, defect 3):
// a person opens a pull request from the item's branch into another
// target; the item is cancelled, its own pull request closed, and the
// branch kept, the item saying why; the person's pull request stays open.
func TestCancellingKeepsABranchAPersonsPullRequestUses(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) { c.Projects[0].AutoMerge = false })
	status, out, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("workqueue/shared"))
	if status != http.StatusCreated {
		t.Fatalf("submit: %d %v", status, out)
	}
	id := out["id"].(string)
	if _, number := w.waitPR(id); number == 0 {
		t.Fatal("no pull request")
	}
	w.personCommits("release", "release-notes.txt")
	theirs := w.personOpensPR("workqueue/shared", "release", "Take it into the release", "by hand")
	if status, body, _ := w.do("POST", "/api/v1/items/"+id+"/cancel", w.tokens["retry"], nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, body)
	}
	done := w.waitItem(id, "cancellation", func(it map[string]any) bool { return it["phase"] != "active" })
	if done["phase"] != "cancelled" || !strings.Contains(done["reason"].(string), "kept") || !strings.Contains(done["reason"].(string), "!"+strconv.FormatInt(theirs.Number, 10)) {
		t.Errorf("after cancel: %v/%v, want cancelled saying the branch was kept for the person's pull request", done["phase"], done["reason"])
	}
	if head, err := w.forge.BranchHead(context.Background(), w.repo, "workqueue/shared"); err != nil || head == "" {
		t.Errorf("the branch was deleted: %q, %v", head, err)
	}
	if pr, err := w.forge.GetMergeRequest(context.Background(), w.repo, theirs.Number); err != nil || pr.State != wq.MergeRequestOpen {
		t.Errorf("the person's pull request: %+v, %v; want open", pr, err)
	}
}
