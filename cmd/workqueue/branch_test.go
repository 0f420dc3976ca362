package main

import (
	"net/http"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
)

// projects[].delete_source_branch reaches the mr type: a merged item's
// branch is deleted unless its project keeps it.
func TestAPIMergedBranchIsDeletedUnlessTheProjectKeepsIt(t *testing.T) {
	for _, keep := range []bool{false, true} {
		name := map[bool]string{false: "by default", true: "delete_source_branch false"}[keep]
		t.Run(name, func(t *testing.T) {
			w := startAPI(t, "", func(c *config.Config) {
				if keep {
					c.Projects[0].DeleteSourceBranch = new(false)
				}
			})
			status, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("workqueue/tidy"))
			if status != http.StatusCreated {
				t.Fatalf("submit: %d %v", status, body)
			}
			item := w.waitItem(body["id"].(string), "completion", func(it map[string]any) bool { return it["phase"] != "active" })
			if item["phase"] != "completed" || item["reason"] != "merged" {
				t.Fatalf("item %v, want completed/merged", item)
			}
			_, err := w.forge.BranchHead(t.Context(), w.repo, "workqueue/tidy")
			if deleted := wq.IsForgeError(err, wq.ForgeNotFound); deleted == keep {
				t.Errorf("branch deleted: %v (%v), want %v", deleted, err, !keep)
			}
		})
	}
}
