package mr_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
)

// TestEventHandlersReadEventsIntoResults drives every handler with the
// payload shapes the forges send, for an item whose pushed head is "ours"
// and whose head pipeline 77 is known.
func TestEventHandlersReadEventsIntoResults(t *testing.T) {
	ctx := context.Background()
	s := testdb.Open(t, store.KindSQLite)
	content := "x\n"
	it, err := s.CreateMR(ctx, wq.NewItem{ItemType: mr.ItemType, IdempotencyKey: mr.IdempotencyKey("gitea", "o/r", "wq/a"), Generation: 1},
		mr.Detail{Forge: "gitea", Project: "o/r", SourceBranch: "wq/a", TargetBranch: "main", Title: "t",
			FileActions: []mr.FileAction{{Action: mr.ActionCreate, FilePath: "a", Content: &content}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.ClaimItem(ctx, it.ID, "test", time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// An earlier head of ours, pushed before a resubmission, then the
	// current one.
	for _, head := range []string{"ours-before", "ours"} {
		if err := s.RecordForgeState(ctx, l, mr.ForgeState{MRNumber: 3, HeadSHA: head, HeadPipelineID: 77}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	handlers := mr.Type(mr.Options{Store: s}).EventHandlers

	const (
		none      = ""
		reconcile = "reconcile now"
	)
	for _, tc := range []struct {
		name, eventType, body string
		phase                 wq.Phase
		reason                string
		want                  string // none or reconcile
		foreign               bool   // needs_mr set with the foreign head
		pipeline              int64  // pipeline id left on needs_reconcile
	}{
		{"gitea merged asks the forge before completing", gitea.EventPullRequest,
			`{"action":"closed","pull_request":{"merged":true,"state":"closed","head":{"sha":"ours"}}}`, "", "", reconcile, false, 0},
		{"gitea closed asks the forge before cancelling", gitea.EventPullRequest,
			`{"action":"closed","pull_request":{"merged":false,"state":"closed","head":{"sha":"ours"}}}`, "", "", reconcile, false, 0},
		{"gitea merged with another head is not a foreign push", gitea.EventPullRequest,
			`{"action":"closed","pull_request":{"merged":true,"state":"closed","head":{"sha":"theirs"}}}`, "", "", reconcile, false, 0},
		{"gitea reopened reconciles", gitea.EventPullRequest,
			`{"action":"reopened","pull_request":{"state":"open","head":{"sha":"ours"}}}`, "", "", reconcile, false, 0},
		{"gitea late event with our own earlier head is not a foreign push", gitea.EventPullRequest,
			`{"action":"synchronized","pull_request":{"state":"open","head":{"sha":"ours-before"}}}`, "", "", reconcile, false, 0},
		{"gitlab late event with our own earlier head is not a foreign push", gitlab.EventMergeRequest,
			`{"object_attributes":{"action":"update","state":"opened","last_commit":{"id":"ours-before"}}}`, "", "", reconcile, false, 0},
		{"gitea push by someone else is recorded on needs_mr", gitea.EventPullRequest,
			`{"action":"synchronized","pull_request":{"state":"open","head":{"sha":"theirs"}}}`, "", "", reconcile, true, 0},
		{"gitea approval reconciles", gitea.EventReview,
			`{"action":"reviewed","review":{"type":"pull_request_review_approved"},"pull_request":{"state":"closed","merged":true}}`, "", "", reconcile, false, 0},
		{"gitea success status of our head reconciles", gitea.EventStatus, `{"sha":"ours","state":"success"}`, "", "", reconcile, false, 0},
		{"gitea failed status of our head reconciles", gitea.EventStatus, `{"sha":"ours","state":"failure"}`, "", "", reconcile, false, 0},
		{"gitea pending status waits", gitea.EventStatus, `{"sha":"ours","state":"pending"}`, "", "", none, false, 0},
		{"gitea status of another commit is history", gitea.EventStatus, `{"sha":"old","state":"success"}`, "", "", none, false, 0},
		{"gitea new run records its pipeline", gitea.EventWorkflowRun,
			`{"action":"requested","workflow_run":{"id":78,"head_sha":"ours","status":"queued"}}`, "", "", reconcile, false, 78},
		{"gitea known run in progress waits", gitea.EventWorkflowRun,
			`{"action":"in_progress","workflow_run":{"id":77,"head_sha":"ours"}}`, "", "", none, false, 0},
		{"gitea run completed reconciles", gitea.EventWorkflowRun,
			`{"action":"completed","workflow_run":{"id":77,"head_sha":"ours","conclusion":"success"}}`, "", "", reconcile, false, 77},
		{"gitea failed job reconciles", gitea.EventWorkflowJob,
			`{"action":"completed","workflow_job":{"run_id":77,"head_sha":"ours","conclusion":"failure"}}`, "", "", reconcile, false, 77},
		{"gitea successful job of a known run waits", gitea.EventWorkflowJob,
			`{"action":"completed","workflow_job":{"run_id":77,"head_sha":"ours","conclusion":"success"}}`, "", "", none, false, 0},
		{"gitlab merge asks the forge before completing", gitlab.EventMergeRequest,
			`{"object_attributes":{"action":"merge","state":"merged","last_commit":{"id":"ours"}}}`, "", "", reconcile, false, 0},
		{"gitlab close asks the forge before cancelling", gitlab.EventMergeRequest,
			`{"object_attributes":{"action":"close","state":"closed","last_commit":{"id":"ours"}}}`, "", "", reconcile, false, 0},
		{"gitlab approval reconciles", gitlab.EventMergeRequest,
			`{"object_attributes":{"action":"approved","state":"opened","last_commit":{"id":"ours"}}}`, "", "", reconcile, false, 0},
		{"gitlab pipeline finished reconciles", gitlab.EventPipeline,
			`{"object_attributes":{"id":77,"sha":"ours","status":"success"}}`, "", "", reconcile, false, 77},
		{"gitlab pipeline failed reconciles", gitlab.EventPipeline,
			`{"object_attributes":{"id":77,"sha":"ours","status":"failed"}}`, "", "", reconcile, false, 77},
		{"gitlab known pipeline running waits", gitlab.EventPipeline,
			`{"object_attributes":{"id":77,"sha":"ours","status":"running"}}`, "", "", none, false, 0},
		{"gitlab new pipeline is recorded", gitlab.EventPipeline,
			`{"object_attributes":{"id":79,"sha":"ours","status":"pending"}}`, "", "", reconcile, false, 79},
		{"gitlab pipeline of an old commit is history", gitlab.EventPipeline,
			`{"object_attributes":{"id":70,"sha":"old","status":"success"}}`, "", "", none, false, 0},
		// Merged-results and merge-train pipelines run on GitLab's merge of
		// our head into the target: their commit is never ours.
		{"gitlab merged-results pipeline of our merge request reconciles", gitlab.EventPipeline,
			`{"object_attributes":{"id":80,"sha":"merge-commit","ref":"refs/merge-requests/3/merge","status":"success"},"merge_request":{"iid":3}}`, "", "", reconcile, false, 80},
		{"gitlab merge-train pipeline of our merge request reconciles", gitlab.EventPipeline,
			`{"object_attributes":{"id":81,"sha":"train-commit","ref":"refs/merge-requests/3/train","status":"failed"},"merge_request":{"iid":3}}`, "", "", reconcile, false, 81},
		{"gitlab merged-results pipeline of another merge request is history", gitlab.EventPipeline,
			`{"object_attributes":{"id":82,"sha":"merge-commit","ref":"refs/merge-requests/4/merge","status":"success"},"merge_request":{"iid":4}}`, "", "", none, false, 0},
		{"gitlab branch pipeline claiming our merge request is still held to our head", gitlab.EventPipeline,
			`{"object_attributes":{"id":83,"sha":"other","ref":"wq/a","status":"success"},"merge_request":{"iid":3}}`, "", "", none, false, 0},
		{"gitlab failed job reconciles", gitlab.EventJob,
			`{"pipeline_id":77,"sha":"ours","build_status":"failed","commit":{"id":77}}`, "", "", reconcile, false, 77},
		{"gitlab job that succeeded waits despite a failure_reason", gitlab.EventJob,
			`{"pipeline_id":77,"sha":"ours","build_status":"success","build_failure_reason":"unknown_failure"}`, "", "", none, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := handlers[forge.EventType]
			if !ok {
				t.Fatalf("no handler for %q", forge.EventType)
			}
			r, err := h(ctx, it, &wq.Event{ItemID: it.ID, EventType: forge.EventType, Body: neutral(t, tc.eventType, tc.body)})
			if err != nil {
				t.Fatal(err)
			}
			if r.Phase != tc.phase || r.Reason != tc.reason {
				t.Errorf("phase %q/%q, want %q/%q", r.Phase, r.Reason, tc.phase, tc.reason)
			}
			var rec, needsMR *wq.DimensionUpdate
			for i, d := range r.Dimensions {
				switch d.Dimension {
				case mr.DimReconcile:
					rec = &r.Dimensions[i]
				case mr.DimMR:
					needsMR = &r.Dimensions[i]
				}
			}
			if got := rec != nil && rec.Status == wq.StatusTrue && rec.PendingUntil.IsZero(); got != (tc.want == reconcile) {
				t.Errorf("reconcile now = %v, want %v (%+v)", got, tc.want == reconcile, r.Dimensions)
			}
			if (needsMR != nil) != tc.foreign {
				t.Errorf("needs_mr set = %v, want %v", needsMR != nil, tc.foreign)
			}
			if tc.pipeline != 0 {
				var seen mr.ReconcileDetail
				if rec == nil || json.Unmarshal(rec.Detail, &seen) != nil || seen.PipelineID != tc.pipeline || seen.SHA != "ours" {
					t.Errorf("pipeline left for reconcile: %s, want %d of ours", detailOf(rec), tc.pipeline)
				}
			}
			if r.Trigger == nil {
				t.Error("no trigger for the audit")
			}
		})
	}
	if _, err := handlers[forge.EventType](ctx, it, &wq.Event{EventType: forge.EventType, Body: json.RawMessage(`[`)}); err == nil {
		t.Error("a malformed stored event was read")
	}
	for _, bad := range []string{gitea.EventPullRequest, gitea.EventStatus} {
		if _, err := gitea.Plugin.DecodeEvent(bad, []byte(`[`)); err == nil {
			t.Errorf("%s: a malformed payload was read", bad)
		}
	}
	for _, bad := range []string{gitlab.EventPipeline, gitlab.EventJob} {
		if _, err := gitlab.Plugin.DecodeEvent(bad, []byte(`[`)); err == nil {
			t.Errorf("%s: a malformed payload was read", bad)
		}
	}
}

func detailOf(d *wq.DimensionUpdate) string {
	if d == nil {
		return "none"
	}
	return string(d.Detail)
}
