package mr_test

import (
	"fmt"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testforge"
	"github.com/workqueue-dev/workqueue/mr"
)

// The merge train end to end on the real Gitea and the GitLab test
// server: eight changes, of which one breaks CI; the test plays the
// project's CI, setting each merge request head's ci/build from the
// files it holds. The seven others merge, the culprit is ejected and
// named, and main never holds the culprit.
func TestTheMergeTrainOnTheForges(t *testing.T) {
	testforge.Each(t, func(t *testing.T, fx testforge.Fixture) {
		opts := mr.Options{MergeTrain: func(string, string) (bool, int) { return true, 4 }}
		w := newWorld(t, fx, opts)
		const culprit = "f3.txt"
		var ids []wq.ItemID
		for i := range 8 {
			sub := trainSubmission(fmt.Sprintf("wq/train-%d", i), fmt.Sprintf("f%d.txt", i))
			ids = append(ids, w.submit(sub, mr.ResultCreated).ID)
		}
		played := map[string]bool{}
		runs := 0
		eventually.TrueEvery(t, 3*60e9, 100e6, "every car merged or ejected", func() (bool, any) {
			done := 0
			for _, id := range ids {
				it, d := w.get(id)
				if it.Phase.Terminal() {
					done++
					continue
				}
				if d.HeadSHA == "" || played[d.HeadSHA] {
					continue
				}
				played[d.HeadSHA] = true
				runs++
				state := "success"
				if _, bad := fx.ReadFile(t, w.repo, d.HeadSHA, culprit); bad {
					state = "failure"
				}
				fx.SetStatus(t, w.repo, d.HeadSHA, "ci/build", state)
				w.engine.Notify(mr.ItemType, id)
			}
			return done == len(ids), fmt.Sprintf("%d of %d done", done, len(ids))
		})
		for i, id := range ids {
			it, _ := w.get(id)
			if i == 3 {
				if it.Phase != wq.PhaseFailed || !strings.Contains(it.Error, "ejected from the merge train") {
					t.Errorf("the culprit is %s (%s), want failed: ejected", it.Phase, it.Error)
				}
				continue
			}
			wantEnded(t, it, wq.PhaseCompleted, mr.ReasonMerged)
		}
		if _, found := fx.ReadFile(t, w.repo, "main", culprit); found {
			t.Error("main holds the culprit")
		}
		for i := range 8 {
			if _, found := fx.ReadFile(t, w.repo, "main", fmt.Sprintf("f%d.txt", i)); !found && i != 3 {
				t.Errorf("main lacks f%d.txt", i)
			}
		}
		t.Logf("%d CI runs for 8 changes", runs)
	})
}
