package mr_test

import (
	"encoding/json"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testforge"
	"github.com/workqueue-dev/workqueue/mr"
)

// Required checks end to end, on the real Gitea and the GitLab test
// server, on both databases: the checks are commit statuses a CI system
// (here the test, as Konflux would) sets on the pushed head. A pending
// check holds the merge, a failed one blocks it and the status note
// names it, and success on every check releases it.
func TestRequiredChecksOnTheForges(t *testing.T) {
	testforge.Each(t, func(t *testing.T, fx testforge.Fixture) {
		testdb.EachKindInTurn(t, func(t *testing.T, dbKind string) {
			opts := mr.Options{RequiredChecks: requiring("Red Hat Konflux / *", "ci/lint")}
			w := startWorldOn(t, dbKind, fx, fx.Kind(), fx.Forge(), fx.NewProject(t, "main", "README.md", "# readme\n"), opts)
			it := w.submit(submission("checked\n"), mr.ResultCreated)
			blocked := func(it *wq.Item, d *mr.Detail) bool {
				if it.Phase.Terminal() {
					t.Fatalf("item %s/%s (%s) before its checks succeeded", it.Phase, it.Reason, it.Error)
				}
				var rd mr.ReconcileDetail
				_ = json.Unmarshal(it.Dimensions[wq.DimensionKey{Dimension: mr.DimReconcile}].Detail, &rd)
				return d.MRNumber != 0 && rd.Blocker == "required_checks"
			}
			_, d := w.waitFor(it.ID, "the merge held by its required checks", blocked)
			konflux := "Red Hat Konflux / app-on-pull-request"
			fx.SetStatus(t, w.repo, d.HeadSHA, konflux, "pending")
			fx.SetStatus(t, w.repo, d.HeadSHA, "ci/lint", "failure")
			it, _ = w.waitFor(it.ID, "ci/lint failed on the item", func(it *wq.Item, d *mr.Detail) bool {
				if it.Phase.Terminal() {
					t.Fatalf("item %s/%s with ci/lint failed", it.Phase, it.Reason)
				}
				_, cd := checkRowIf(it, "ci/lint")
				return cd.State == wq.CheckFailed
			})
			if note := mr.RenderNote(it, d, ""); !strings.Contains(note, "failed: ci/lint") {
				t.Errorf("the status note does not name ci/lint:\n%s", note)
			}
			fx.SetStatus(t, w.repo, d.HeadSHA, konflux, "success")
			fx.SetStatus(t, w.repo, d.HeadSHA, "ci/lint", "success")
			got, _ := w.waitTerminal(it.ID)
			wantEnded(t, got, wq.PhaseCompleted, mr.ReasonMerged)
			if content, _ := fx.ReadFile(t, w.repo, "main", "a.txt"); content != "checked\n" {
				t.Errorf("main:a.txt = %q after the merge", content)
			}
		})
	})
}

// checkRowIf is the item's needs_check row of glob, zero when missing.
func checkRowIf(it *wq.Item, glob string) (wq.Dimension, mr.CheckDetail) {
	row := it.Dimensions[wq.DimensionKey{Dimension: mr.DimCheck, Variant: glob}]
	var d mr.CheckDetail
	_ = json.Unmarshal(row.Detail, &d)
	return row, d
}
