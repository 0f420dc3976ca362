package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
)

// A lost webhook costs one bulk interval, not reconcile_interval (issue
// 28, defect 10), on the real Gitea: no webhook reaches this service and
// each item's own reconcile is 30 minutes away, yet a pull request a
// person merges, and one a person closes, end their items within a few
// sweeps of mr.bulk_reconcile_interval; the one left open stays active.
func TestALostWebhookCostsOneBulkInterval(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) {
		c.Projects[0].AutoMerge = false
		mrtype.In(c).ReconcileInterval = config.Duration(30 * time.Minute)
		mrtype.In(c).MergeRecheckInterval = config.Duration(30 * time.Minute)
		mrtype.In(c).BulkReconcileInterval = config.Duration(300 * time.Millisecond)
	})
	ids := map[string]string{}
	numbers := map[string]int64{}
	for _, branch := range []string{"workqueue/merged", "workqueue/closed", "workqueue/open"} {
		status, out, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch))
		if status != http.StatusCreated {
			t.Fatalf("submit %s: %d %v", branch, status, out)
		}
		ids[branch] = out["id"].(string)
	}
	for branch, id := range ids {
		it, number := w.waitPR(id)
		if number == 0 {
			t.Fatalf("%s: no pull request: %v", branch, it)
		}
		numbers[branch] = number
	}
	w.personMerges(numbers["workqueue/merged"])
	w.personClosesPR(numbers["workqueue/closed"])
	// Well inside reconcile_interval: only the bulk reconciliation looks.
	ended := func(branch, phase string) {
		t.Helper()
		it := w.waitItem(ids[branch], branch+" to end", func(it map[string]any) bool { return it["phase"] != "active" })
		if it["phase"] != phase {
			t.Errorf("%s: %v/%v, want %s", branch, it["phase"], it["reason"], phase)
		}
	}
	start := time.Now()
	ended("workqueue/merged", "completed")
	ended("workqueue/closed", "cancelled")
	t.Logf("both ended %s after the person's last action (bulk interval 300ms)", time.Since(start).Round(10*time.Millisecond))
	if _, it, _ := w.do("GET", "/api/v1/items/"+ids["workqueue/open"], w.tokens["read"], nil); it["phase"] != "active" {
		t.Errorf("the item of the pull request left open: %v/%v, want active", it["phase"], it["reason"])
	}
}
