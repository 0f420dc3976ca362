package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
)

// post submits body from any goroutine (w.do may only be called from the
// test's own) and returns the status and decoded answer.
func (w *apiWorld) post(body any) (int, map[string]any, error) {
	b, _ := json.Marshal(body)
	status, out, _, err := w.send("POST", "/api/v1/items", b, http.Header{"Authorization": {"Bearer " + w.tokens["submit"]}})
	return status, out, err
}

func content(file string, i int) []map[string]any {
	return []map[string]any{{"action": "create", "file_path": file, "content": fmt.Sprintf("content %d\n", i)}}
}

// desiredContent reads, from the store, the content of the item's one
// file action: the API's view does not show contents.
func desiredContent(t *testing.T, s *testdb.Store, id string) string {
	t.Helper()
	d, err := s.GetMRDetail(context.Background(), uuid.MustParse(id))
	if err != nil || len(d.FileActions) != 1 || d.FileActions[0].Content == nil {
		t.Fatalf("detail of %s: %+v %v", id, d, err)
	}
	return *d.FileActions[0].Content
}

// raceWorld is a served API on a database of kind, with the project's
// auto-merge set, and the store to read what it wanted.
func raceWorld(t *testing.T, kind string, autoMerge bool) (*apiWorld, *testdb.Store) {
	dbURL := testdb.URL(t, kind)
	w := startAPI(t, "", func(c *config.Config) {
		c.Database = dbURL
		c.Projects[0].AutoMerge = autoMerge
		// No webhooks here: the merge waits on reconciles, whose backoff
		// while Gitea checks mergeability must not outgrow the test.
		mrtype.In(c).ReconcileInterval = config.Duration(2 * time.Second)
	})
	return w, testdb.OpenURL(t, dbURL)
}

// A resubmission while the first content is being pushed must win: the
// branch, and the merge, hold the latest accepted content (issue 9,
// defect 1: before, the push's needs_mr=false overwrote the resubmission
// and content A was merged while the item said completed/merged).
func TestAResubmissionDuringThePushIsWhatGetsMerged(t *testing.T) {
	testdb.EachKindInTurn(t, func(t *testing.T, kind string) {
		w, st := raceWorld(t, kind, true)
		// The race window is the forge calls of ensure_mr: a few delays
		// put the second submission before, inside and after it.
		delays := []time.Duration{0, 50 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond}
		ids := make([]string, len(delays))
		for i, d := range delays {
			branch, file := fmt.Sprintf("workqueue/a-then-b-%d", i), fmt.Sprintf("race-%d.txt", i)
			status, first, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch, content(file, 1)...))
			if status != http.StatusCreated {
				t.Fatalf("A: %d %v", status, first)
			}
			time.Sleep(d)
			status, second, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch, content(file, 2)...))
			if status != http.StatusOK && status != http.StatusCreated {
				t.Fatalf("B: %d %v", status, second)
			}
			ids[i] = second["id"].(string)
		}
		for i, id := range ids {
			file := fmt.Sprintf("race-%d.txt", i)
			done := w.waitItem(id, "B merged", func(it map[string]any) bool { return it["phase"] != "active" })
			if done["phase"] != "completed" || done["reason"] != "merged" || desiredContent(t, st, id) != "content 2\n" {
				t.Errorf("delay %s: item %v, want completed/merged wanting content 2", delays[i], done)
				continue
			}
			detail := done["detail"].(map[string]any)
			head, _ := detail["head_sha"].(string)
			got, found, err := w.forge.ReadFile(context.Background(), w.repo, head, file)
			if err != nil || !found || string(got) != "content 2\n" {
				t.Errorf("delay %s: the merged head %s holds %q (%v), want content 2", delays[i], head, got, err)
			}
			if got, _, _ := w.forge.ReadFile(context.Background(), w.repo, "main", file); string(got) != "content 2\n" {
				t.Errorf("delay %s: main holds %q, want content 2", delays[i], got)
			}
		}
	})
}

// Fifty callers submitting to one branch at once are all answered (none
// refused as "too many concurrent changes"), and once the item is idle the
// branch holds exactly the content the item settled on (issue 9, defects 1
// and 8: before, the branch held content 34 while the item wanted 43).
func TestFiftyConcurrentSubmissionsToOneBranchSettleOnTheStoredContent(t *testing.T) {
	testdb.EachKindInTurn(t, func(t *testing.T, kind string) {
		w, st := raceWorld(t, kind, false)
		const callers = 50
		var wg sync.WaitGroup
		statuses := make([]int, callers)
		ids := make([]string, callers)
		errs := make([]error, callers)
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var out map[string]any
				statuses[i], out, errs[i] = w.post(w.submission("workqueue/fifty", content("race.txt", i)...))
				if id, ok := out["id"].(string); ok {
					ids[i] = id
				}
			}()
		}
		wg.Wait()
		for i := range callers {
			if errs[i] != nil || (statuses[i] != http.StatusOK && statuses[i] != http.StatusCreated) {
				t.Errorf("caller %d: %d %v", i, statuses[i], errs[i])
			}
			if ids[i] != ids[0] {
				t.Errorf("caller %d got item %s, caller 0 item %s: one branch, one item", i, ids[i], ids[0])
			}
		}
		if t.Failed() {
			return
		}
		settledItem := w.waitItem(ids[0], "the item settled with its pull request", settled)
		want := desiredContent(t, st, ids[0])
		got, found, err := w.forge.ReadFile(context.Background(), w.repo, "workqueue/fifty", "race.txt")
		if err != nil || !found || string(got) != want {
			t.Errorf("branch holds %q (%v), the settled item wants %q", got, err, want)
		}
		detail := settledItem["detail"].(map[string]any)
		if head, _ := w.forge.BranchHead(context.Background(), w.repo, "workqueue/fifty"); head != detail["head_sha"] {
			t.Errorf("branch head %s, the item recorded %v", head, detail["head_sha"])
		}
	})
}
