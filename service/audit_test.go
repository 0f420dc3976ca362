package service_test

import (
	"fmt"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/service"
)

// Every change a caller makes to an item is audited with the state before
// and after (DDR-28): a resubmission that updates, a cancel, a retry; a
// creation with its new state only.
func TestACallersChangesAreAuditedWithTheOldStateAndTheNew(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := t.Context()
		st := testdb.Open(t, kind)
		cfg := config.Default()
		cfg.Forges = []config.Forge{{Name: "gitea", Kind: "gitea", URL: "http://127.0.0.1:1", TokenEnv: "UNUSED"}}
		cfg.Projects = []config.Project{{Match: "team/**", Forge: "gitea"}}
		items := testapi.Items(st, cfg)
		log := testkit.CheckedAudit(t) // every entry is held to its kind when the test ends
		items.Audit = log
		caller := &auth.Caller{Identity: "bot", Grants: []auth.Grant{{Rule: "bot",
			Permissions: []auth.Permission{auth.Submit, auth.Read, auth.Retry}, Projects: []string{"team/**"}}}}
		submit := func(content string) (string, wq.SubmitResult) {
			t.Helper()
			body := fmt.Sprintf(`{"item_type": "mr", "forge": "gitea", "project": "team/app", "source_branch": "workqueue/a",
				"target_branch": "main", "title": "A change", "file_actions": [{"action": "create", "file_path": "a.txt", "content": %q}]}`, content)
			it, result, err := items.Submit(ctx, caller, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			return it.ID, result
		}
		id, created := submit("one\n")
		if _, updated := submit("two\n"); created != wq.SubmitCreated || updated != wq.SubmitUpdated {
			t.Fatalf("submissions %s, then %s", created, updated)
		}
		itemID, err := service.ParseID("id", id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := items.Cancel(ctx, caller, itemID); err != nil { // the type winds it down: cancel requested
			t.Fatal(err)
		}
		if _, err := st.CancelItem(ctx, itemID, "closed", time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := items.Retry(ctx, caller, itemID); err != nil {
			t.Fatal(err)
		}
		want := map[string]wq.Phase{wq.AuditItemUpdated: wq.PhaseActive, wq.AuditItemCancelRequested: wq.PhaseActive,
			wq.AuditItemRetried: wq.PhaseCancelled}
		for event, old := range want {
			got := log.Entries(event)
			if len(got) != 1 || got[0].OldState["phase"] != old || got[0].NewState["phase"] == nil {
				t.Errorf("%s entries %+v, want one from phase %s", event, got, old)
			}
		}
		if got := log.Entries(wq.AuditItemCreated); len(got) != 1 || got[0].OldState != nil || got[0].NewState["phase"] != wq.PhaseActive {
			t.Errorf("created: %+v", got)
		}
	})
}
