package forge_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
)

// fixtures are the deliveries under testdata/KIND, shaped as the forge's
// webhook documentation shows each event, by file name (without .json),
// with the event header each is sent under (testdata/KIND/events.json).
func fixtures(t *testing.T, kind string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", kind, "events.json"))
	if err != nil {
		t.Fatal(err)
	}
	var events map[string]string
	if err := json.Unmarshal(b, &events); err != nil {
		t.Fatal(err)
	}
	return events
}

// read is what a delivery says, as the item types and the inventory use it.
type read struct {
	EventType                  string
	Project                    string
	Number, PipelineID         int64
	SourceBranch, HeadSHA      string
	Work                       string // kind, number, state and verdict
	RecheckReview              bool
	PushBranch, PushAfterShort string
}

func readOf(d *forge.Delivery) *read {
	if d == nil {
		return nil
	}
	r := &read{EventType: d.EventType, Project: d.Project, Number: d.Number, PipelineID: d.PipelineID, SourceBranch: d.SourceBranch,
		HeadSHA: d.HeadSHA, RecheckReview: d.RecheckReview}
	if w := d.Work; w != nil {
		r.Work = w.Kind + " " + itoa(w.Number) + " " + w.State + " " + w.ReviewState
	}
	if p := d.Push; p != nil {
		r.PushBranch, r.PushAfterShort = p.Branch, p.After[:7]
	}
	return r
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestEveryDocumentedGitLabEventIsAcknowledged sends every GitLab event
// kind its webhook documentation shows (push, tag push, issue, work
// items, notes, merge request, wiki, pipeline, job, deployment, release,
// emoji, feature flag, member, project, subgroup, access token,
// milestone, vulnerability): none is refused, and those workqueue reads
// say what they should. A refused delivery counts towards the four
// failures after which GitLab disables the hook.
func TestEveryDocumentedGitLabEventIsAcknowledged(t *testing.T) {
	mr := func(r read) *read {
		r.EventType, r.Project, r.Number, r.SourceBranch = gitlab.EventMergeRequest, "mike/diaspora", 1, "workqueue/ms-viewport"
		return &r
	}
	want := map[string]*read{
		"push":                                 {EventType: forge.EventPush, Project: "mike/diaspora", PushBranch: "main", PushAfterShort: "da15608"},
		"issue":                                {EventType: gitlab.EventIssue, Project: "mike/diaspora", Work: "issue 23 open "},
		"merge_request":                        mr(read{Work: "pr 1 open "}),
		"merge_request_requested_changes":      mr(read{Work: "pr 1 open changes_requested"}),
		"merge_request_without_reviewer_state": mr(read{Work: "pr 1 open ", RecheckReview: true}),
		"pipeline": {EventType: gitlab.EventPipeline, Project: "mike/diaspora", Number: 1, PipelineID: 31, SourceBranch: "workqueue/ms-viewport",
			HeadSHA: "bcbb5ec396a2c0f828686f14fac9b80b780504f2"},
		"job": {EventType: gitlab.EventJob, Project: "mike/diaspora", PipelineID: 2366, SourceBranch: "workqueue/ms-viewport",
			HeadSHA: "2293ada6b400935a1378653304eaf6221e0fdb8f"},
	}
	events := fixtures(t, "gitlab")
	for _, kind := range []string{"Push Hook", "Tag Push Hook", "Issue Hook", "Note Hook", "Merge Request Hook", "Wiki Page Hook", "Pipeline Hook",
		"Job Hook", "Deployment Hook", "Release Hook", "Emoji Hook", "Feature Flag Hook", "Member Hook", "Project Hook", "Subgroup Hook"} {
		if !slices.Contains(mapValues(events), kind) {
			t.Errorf("no fixture of %s", kind)
		}
	}
	for name, event := range events {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "gitlab", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{"X-Gitlab-Token": {"k"}, "X-Gitlab-Event": {event}, "X-Gitlab-Event-Uuid": {"13792a34-cac6-4fda-95a8-c58e00a3954e"}}
			d, err := shipped.ParseWebhook(wq.ForgeGitLab, "k", h, body)
			if err != nil {
				t.Fatalf("%s refused: %v", event, err)
			}
			if diff := cmp.Diff(want[name], readOf(d)); diff != "" {
				t.Errorf("what %s says (-want +got):\n%s", event, diff)
			}
		})
	}
}

// TestEveryDocumentedGiteaEventIsAcknowledged is the same for Gitea's
// events.
func TestEveryDocumentedGiteaEventIsAcknowledged(t *testing.T) {
	const head = "4ad1f8f3bf1a3d67e1c0c9b1bc0e7cfbb9e0b5a2"
	pr := func(r read) *read {
		r.Project, r.Number, r.SourceBranch = "gitea/webhooks", 4, "workqueue/fix-typo"
		return &r
	}
	want := map[string]*read{
		"push":                      {EventType: forge.EventPush, Project: "gitea/webhooks", PushBranch: "main", PushAfterShort: "bffeb74"},
		"issues":                    {EventType: gitea.EventIssues, Project: "gitea/webhooks", Work: "issue 3 open "},
		"issues_labeled":            {EventType: gitea.EventIssues, Project: "gitea/webhooks", Work: "issue 3 open "},
		"pull_request":              pr(read{EventType: gitea.EventPullRequest, Work: "pr 4 open "}),
		"pull_request_synchronized": pr(read{EventType: gitea.EventPullRequest, Work: "pr 4 open ", RecheckReview: true}),
		"pull_request_approved":     pr(read{EventType: gitea.EventReview, Work: "pr 4 open ", RecheckReview: true}),
		"pull_request_rejected":     pr(read{EventType: gitea.EventReview, Work: "pr 4 open changes_requested"}),
		"status":                    {EventType: gitea.EventStatus, Project: "gitea/webhooks", HeadSHA: head},
		"workflow_run":              {EventType: gitea.EventWorkflowRun, Project: "gitea/webhooks", PipelineID: 12, SourceBranch: "workqueue/fix-typo", HeadSHA: head},
		"workflow_job":              {EventType: gitea.EventWorkflowJob, Project: "gitea/webhooks", PipelineID: 12, SourceBranch: "workqueue/fix-typo", HeadSHA: head},
	}
	for name, event := range fixtures(t, "gitea") {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "gitea", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			d, err := shipped.ParseWebhook(wq.ForgeGitea, "k", giteaHeaders(sign("k", string(body)), event), body)
			if err != nil {
				t.Fatalf("%s refused: %v", event, err)
			}
			if diff := cmp.Diff(want[name], readOf(d)); diff != "" {
				t.Errorf("what %s says (-want +got):\n%s", event, diff)
			}
		})
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
