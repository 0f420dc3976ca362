package forge_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
)

// shipped is a program's registry of the kinds shipped, as its
// composition root builds it (cmd/workqueue/world.go).
var shipped = forge.NewRegistry(gitea.Plugin, gitlab.Plugin)

const giteaMerged = `{"action":"closed","number":3,"pull_request":{"number":3,"merged":true,"state":"closed",
 "updated_at":"2026-03-04T05:06:07Z","head":{"ref":"wq/a","sha":"abc"}},"repository":{"full_name":"o/r"}}`

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func giteaHeaders(sig, event string) http.Header {
	h := http.Header{}
	h.Set("X-Gitea-Signature", sig)
	h.Set("X-Gitea-Event", event)
	h.Set("X-Gitea-Delivery", "6f0c1b2a-0000-4000-8000-000000000001")
	return h
}

func TestGiteaDeliveryIsVerifiedThenRead(t *testing.T) {
	d, err := shipped.ParseWebhook(wq.ForgeGitea, "s3cret", giteaHeaders(sign("s3cret", giteaMerged), "pull_request"), []byte(giteaMerged))
	if err != nil {
		t.Fatal(err)
	}
	if d.EventType != gitea.EventPullRequest || d.Project != "o/r" || d.Number != 3 || d.SourceBranch != "wq/a" ||
		!d.EventTS.Equal(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)) || d.DeliveryID == "" {
		t.Errorf("delivery %+v", d)
	}
}

func TestBadSignaturesAndTokensAreUnauthorized(t *testing.T) {
	for name, tc := range map[string]struct {
		kind, secret string
		h            http.Header
	}{
		"gitea wrong signature":    {wq.ForgeGitea, "s3cret", giteaHeaders(sign("other", giteaMerged), "pull_request")},
		"gitea missing signature":  {wq.ForgeGitea, "s3cret", giteaHeaders("", "pull_request")},
		"gitea signature of other": {wq.ForgeGitea, "s3cret", giteaHeaders(sign("s3cret", giteaMerged+" "), "pull_request")},
		"no secret configured":     {wq.ForgeGitea, "", giteaHeaders(sign("", giteaMerged), "pull_request")},
		"gitlab wrong token":       {wq.ForgeGitLab, "s3cret", http.Header{"X-Gitlab-Token": {"nope"}}},
		"gitlab missing token":     {wq.ForgeGitLab, "s3cret", http.Header{}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := shipped.ParseWebhook(tc.kind, tc.secret, tc.h, []byte(giteaMerged)); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
				t.Errorf("err %v, want unauthorized", err)
			}
		})
	}
}

// TestOnlyAnUnreadableDeliveryIsInvalid: a verified delivery is refused
// only when its body is not JSON or it has no delivery id; one that
// names nothing workqueue could act on is acknowledged and not used,
// since GitLab disables a hook after four failed deliveries in a row.
func TestOnlyAnUnreadableDeliveryIsInvalid(t *testing.T) {
	for name, body := range map[string]string{
		"not json":       `{"action":`,
		"trailing bytes": `{"action":"closed"} x`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := shipped.ParseWebhook(wq.ForgeGitea, "k", giteaHeaders(sign("k", body), "pull_request"), []byte(body)); wq.ErrorCode(err) != wq.EINVALID {
				t.Errorf("err %v, want invalid", err)
			}
		})
	}
	for name, body := range map[string]string{
		"no pull request":     `{"action":"closed","repository":{"full_name":"o/r"}}`,
		"no repository":       `{"action":"closed","pull_request":{"number":3}}`,
		"number zero":         `{"action":"closed","pull_request":{"number":0},"repository":{"full_name":"o/r"}}`,
		"a member of a shape": `{"action":"closed","pull_request":{"number":"three"},"repository":{"full_name":"o/r"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if d, err := shipped.ParseWebhook(wq.ForgeGitea, "k", giteaHeaders(sign("k", body), "pull_request"), []byte(body)); d != nil || err != nil {
				t.Errorf("%+v, %v; want acknowledged and not used", d, err)
			}
		})
	}
	h := giteaHeaders(sign("k", giteaMerged), "pull_request")
	h.Del("X-Gitea-Delivery")
	if _, err := shipped.ParseWebhook(wq.ForgeGitea, "k", h, []byte(giteaMerged)); wq.ErrorCode(err) != wq.EINVALID {
		t.Errorf("no delivery id: %v", err)
	}
}

func TestUnusedEventsAreAcknowledgedAndIgnored(t *testing.T) {
	d, err := shipped.ParseWebhook(wq.ForgeGitea, "k", giteaHeaders(sign("k", `{"ref":"main"}`), "push"), []byte(`{"ref":"main"}`))
	if err != nil || d != nil {
		t.Errorf("push: %+v, %v; want ignored", d, err)
	}
}

func TestGitLabMergeRequestHook(t *testing.T) {
	body := `{"object_kind":"merge_request","project":{"path_with_namespace":"g/sub/p"},
	 "object_attributes":{"iid":9,"action":"merge","state":"merged","source_branch":"wq/x","updated_at":"2026-03-04 05:06:07 UTC"}}`
	h := http.Header{"X-Gitlab-Token": {"k"}, "X-Gitlab-Event": {"Merge Request Hook"}, "X-Gitlab-Event-Uuid": {"u-1"}}
	d, err := shipped.ParseWebhook(wq.ForgeGitLab, "k", h, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if d.EventType != gitlab.EventMergeRequest || d.Project != "g/sub/p" || d.Number != 9 || d.SourceBranch != "wq/x" ||
		!d.EventTS.Equal(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)) || d.DeliveryID != "u-1:"+bodyHash(body) {
		t.Errorf("delivery %+v", d)
	}
}

func TestEveryUsedEventResolvesByWhatItNames(t *testing.T) {
	gitlabHook := func(event, body string) (http.Header, string) {
		return http.Header{"X-Gitlab-Token": {"k"}, "X-Gitlab-Event": {event}, "X-Gitlab-Event-Uuid": {"u-1"}}, body
	}
	giteaHook := func(event, body string) (http.Header, string) { return giteaHeaders(sign("k", body), event), body }
	for _, tc := range []struct {
		name, kind string
		h          http.Header
		body       string
		want       forge.Delivery
	}{
		{name: "gitea approval", kind: wq.ForgeGitea, want: forge.Delivery{EventType: gitea.EventReview, Project: "o/r", Number: 4, SourceBranch: "wq/b"}},
		{name: "gitea commit status", kind: wq.ForgeGitea, want: forge.Delivery{EventType: gitea.EventStatus, Project: "o/r", HeadSHA: "c0ffee"}},
		{name: "gitea workflow run", kind: wq.ForgeGitea, want: forge.Delivery{EventType: gitea.EventWorkflowRun, Project: "o/r", PipelineID: 12, SourceBranch: "wq/b", HeadSHA: "c0ffee"}},
		{name: "gitea workflow job", kind: wq.ForgeGitea, want: forge.Delivery{EventType: gitea.EventWorkflowJob, Project: "o/r", Number: 4, PipelineID: 12, SourceBranch: "wq/b", HeadSHA: "c0ffee"}},
		{name: "gitlab merge request pipeline", kind: wq.ForgeGitLab, want: forge.Delivery{EventType: gitlab.EventPipeline, Project: "g/p", Number: 9, PipelineID: 31, SourceBranch: "wq/x", HeadSHA: "c0ffee"}},
		{name: "gitlab merged-results pipeline resolves by number, its merge commit is not the head", kind: wq.ForgeGitLab, want: forge.Delivery{EventType: gitlab.EventPipeline, Project: "g/p", Number: 9, PipelineID: 34, SourceBranch: "wq/x", TargetBranch: "main"}},
		{name: "gitlab branch pipeline", kind: wq.ForgeGitLab, want: forge.Delivery{EventType: gitlab.EventPipeline, Project: "g/p", PipelineID: 32, SourceBranch: "wq/x", HeadSHA: "c0ffee"}},
		{name: "gitlab tag pipeline names no branch", kind: wq.ForgeGitLab, want: forge.Delivery{EventType: gitlab.EventPipeline, Project: "g/p", PipelineID: 33, HeadSHA: "c0ffee"}},
		{name: "gitlab job reads pipeline_id, not commit.id", kind: wq.ForgeGitLab, want: forge.Delivery{EventType: gitlab.EventJob, Project: "g/p", PipelineID: 31, SourceBranch: "wq/x", HeadSHA: "c0ffee"}},
	} {
		switch tc.name {
		case "gitea approval":
			tc.h, tc.body = giteaHook("pull_request_approved", `{"action":"reviewed","pull_request":{"number":4,"updated_at":"2026-03-04T05:06:07Z","head":{"ref":"wq/b"}},"review":{"type":"pull_request_review_approved"},"repository":{"full_name":"o/r"}}`)
		case "gitea commit status":
			tc.h, tc.body = giteaHook("status", `{"sha":"c0ffee","state":"success","context":"ci","repository":{"full_name":"o/r"}}`)
		case "gitea workflow run":
			tc.h, tc.body = giteaHook("workflow_run", `{"action":"completed","workflow_run":{"id":12,"head_sha":"c0ffee","head_branch":"wq/b","conclusion":"success"},"repository":{"full_name":"o/r"}}`)
		case "gitea workflow job":
			tc.h, tc.body = giteaHook("workflow_job", `{"action":"completed","workflow_job":{"id":5,"run_id":12,"head_sha":"c0ffee","head_branch":"wq/b"},"pull_request":{"number":4},"repository":{"full_name":"o/r"}}`)
		case "gitlab merge request pipeline":
			tc.h, tc.body = gitlabHook("Pipeline Hook", `{"object_kind":"pipeline","project":{"path_with_namespace":"g/p"},"object_attributes":{"id":31,"ref":"refs/merge-requests/9/head","sha":"c0ffee","status":"success"},"merge_request":{"iid":9,"source_branch":"wq/x"}}`)
		case "gitlab merged-results pipeline resolves by number, its merge commit is not the head":
			tc.h, tc.body = gitlabHook("Pipeline Hook", `{"object_kind":"pipeline","project":{"path_with_namespace":"g/p"},"object_attributes":{"id":34,"ref":"refs/merge-requests/9/merge","sha":"3e7ge","source":"merge_request_event","status":"success"},"merge_request":{"iid":9,"source_branch":"wq/x","target_branch":"main","source_project_id":7,"target_project_id":7}}`)
		case "gitlab branch pipeline":
			tc.h, tc.body = gitlabHook("Pipeline Hook", `{"object_kind":"pipeline","project":{"path_with_namespace":"g/p"},"object_attributes":{"id":32,"ref":"wq/x","sha":"c0ffee","status":"running"}}`)
		case "gitlab tag pipeline names no branch":
			tc.h, tc.body = gitlabHook("Pipeline Hook", `{"object_kind":"pipeline","project":{"path_with_namespace":"g/p"},"object_attributes":{"id":33,"ref":"v1","tag":true,"sha":"c0ffee"}}`)
		case "gitlab job reads pipeline_id, not commit.id":
			tc.h, tc.body = gitlabHook("Job Hook", `{"object_kind":"build","project":{"path_with_namespace":"g/p"},"ref":"wq/x","sha":"c0ffee","build_status":"failed","pipeline_id":31,"commit":{"id":999,"sha":"c0ffee"}}`)
		}
		t.Run(tc.name, func(t *testing.T) {
			d, err := shipped.ParseWebhook(tc.kind, "k", tc.h, []byte(tc.body))
			if err != nil || d == nil {
				t.Fatalf("%+v, %v", d, err)
			}
			got := *d
			got.DeliveryID, got.Event = "", nil
			got.Work, got.RecheckReview = nil, false // what the inventory reads: TestDeliveriesCarryTheNewStateOfTheirWork
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCIAndReviewEventsCarryNoEventTime(t *testing.T) {
	// The stale guard orders phase changes by the merge request's own
	// clock; a CI system's clock must not move last_event_at.
	body := `{"action":"reviewed","pull_request":{"number":4,"updated_at":"2030-01-01T00:00:00Z"},"repository":{"full_name":"o/r"}}`
	d, err := shipped.ParseWebhook(wq.ForgeGitea, "k", giteaHeaders(sign("k", body), "pull_request_rejected"), []byte(body))
	if err != nil || !d.EventTS.IsZero() {
		t.Errorf("review: %+v %v, want no event time", d, err)
	}
}

func bodyHash(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:8])
}

func TestGitLabIdempotencyKeyIsTheDeliveryID(t *testing.T) {
	body := `{"object_kind":"merge_request","project":{"path_with_namespace":"g/p"},"object_attributes":{"iid":1}}`
	h := http.Header{"X-Gitlab-Token": {"k"}, "X-Gitlab-Event": {"Merge Request Hook"}, "X-Gitlab-Event-Uuid": {"shared"},
		"Idempotency-Key": {"stable"}}
	if d, err := shipped.ParseWebhook(wq.ForgeGitLab, "k", h, []byte(body)); err != nil || d.DeliveryID != "stable" {
		t.Errorf("%+v %v", d, err)
	}
}

func TestWithoutIdempotencyKeyOneRequestsDeliveriesStayApart(t *testing.T) {
	// Before GitLab 17.4 every delivery of one request carries the same
	// X-Gitlab-Event-UUID: a push's merge request event and pipeline event
	// must not be taken for one delivery.
	h := func(event string) http.Header {
		return http.Header{"X-Gitlab-Token": {"k"}, "X-Gitlab-Event": {event}, "X-Gitlab-Event-Uuid": {"one-request"}}
	}
	mrEvent := `{"object_kind":"merge_request","project":{"path_with_namespace":"g/p"},"object_attributes":{"iid":1,"action":"update"}}`
	pipeline := `{"object_kind":"pipeline","project":{"path_with_namespace":"g/p"},"object_attributes":{"id":3,"ref":"wq/a","sha":"c0ffee"}}`
	a, errA := shipped.ParseWebhook(wq.ForgeGitLab, "k", h("Merge Request Hook"), []byte(mrEvent))
	b, errB := shipped.ParseWebhook(wq.ForgeGitLab, "k", h("Pipeline Hook"), []byte(pipeline))
	again, errC := shipped.ParseWebhook(wq.ForgeGitLab, "k", h("Merge Request Hook"), []byte(mrEvent))
	if errA != nil || errB != nil || errC != nil {
		t.Fatal(errA, errB, errC)
	}
	if a.DeliveryID == b.DeliveryID {
		t.Errorf("two events of one request share delivery id %q: the second would be dropped", a.DeliveryID)
	}
	if a.DeliveryID != again.DeliveryID || !strings.HasPrefix(a.DeliveryID, "one-request:") {
		t.Errorf("the same delivery sent again has id %q, then %q; want one id, uuid:hash", a.DeliveryID, again.DeliveryID)
	}
}

func TestAForksMergeRequestIsNeverResolved(t *testing.T) {
	// A fork may propose a branch with the name of one of ours: its events
	// must not move our item. Its merge request is still work of the
	// project, so a merge request event carries that alone.
	gitlab := func(event string) http.Header {
		return http.Header{"X-Gitlab-Token": {"k"}, "X-Gitlab-Event": {event}, "X-Gitlab-Event-Uuid": {"u"}}
	}
	giteaFork := `{"action":"closed","pull_request":{"number":4,"merged":true,"head":{"ref":"workqueue/a","repo_id":8},"base":{"ref":"main","repo_id":7}},"repository":{"full_name":"o/r"}}`
	for _, tc := range []struct {
		name, kind string
		h          http.Header
		body       string
		work       bool // the event carries the fork's merge request as work
	}{
		{"gitlab merge request from a fork", wq.ForgeGitLab, gitlab("Merge Request Hook"), `{"object_kind":"merge_request","project":{"path_with_namespace":"g/p"},
		 "object_attributes":{"iid":4,"action":"merge","state":"merged","source_branch":"workqueue/a","target_branch":"main","source_project_id":8,"target_project_id":7}}`, true},
		{"gitlab pipeline of a fork's merge request", wq.ForgeGitLab, gitlab("Pipeline Hook"), `{"object_kind":"pipeline","project":{"path_with_namespace":"g/p"},
		 "object_attributes":{"id":5,"ref":"refs/merge-requests/4/head","sha":"c0ffee"},"merge_request":{"iid":4,"source_branch":"workqueue/a","source_project_id":8,"target_project_id":7}}`, false},
		{"gitea pull request from a fork", wq.ForgeGitea, giteaHeaders(sign("k", giteaFork), "pull_request"), giteaFork, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := shipped.ParseWebhook(tc.kind, "k", tc.h, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if d == nil {
				if tc.work {
					t.Error("dropped: want the fork's merge request as work")
				}
				return // acknowledged and dropped
			}
			if d.Number != 0 || d.PipelineID != 0 || d.SourceBranch != "" || d.TargetBranch != "" || d.HeadSHA != "" {
				t.Errorf("%+v: names a merge request, pipeline, branch or commit an item could resolve by", d)
			}
			if d.Work == nil || d.Work.Kind != wq.WorkPR || d.Work.Number != 4 || d.Work.State != wq.MergeRequestMerged {
				t.Errorf("work %+v, want the fork's merged pull request 4", d.Work)
			}
		})
	}
	// The same payloads within one project are read.
	body := `{"object_kind":"merge_request","project":{"path_with_namespace":"g/p"},
	 "object_attributes":{"iid":4,"source_branch":"workqueue/a","target_branch":"main","source_project_id":7,"target_project_id":7}}`
	if d, err := shipped.ParseWebhook(wq.ForgeGitLab, "k", gitlab("Merge Request Hook"), []byte(body)); err != nil || d == nil || d.Number != 4 {
		t.Errorf("own merge request: %+v, %v", d, err)
	}
}

func TestEventsNamingNothingAreAcknowledgedAndNotUsed(t *testing.T) {
	for name, tc := range map[string]struct{ kind, event, body string }{
		"status without sha":         {wq.ForgeGitea, "status", `{"state":"success","repository":{"full_name":"o/r"}}`},
		"status without repo":        {wq.ForgeGitea, "status", `{"sha":"abc"}`},
		"workflow run without run":   {wq.ForgeGitea, "workflow_run", `{"action":"completed","repository":{"full_name":"o/r"}}`},
		"pipeline without id":        {wq.ForgeGitLab, "Pipeline Hook", `{"object_kind":"pipeline","project":{"path_with_namespace":"g/p"},"object_attributes":{"ref":"b"}}`},
		"job of another kind":        {wq.ForgeGitLab, "Job Hook", `{"object_kind":"pipeline","project":{"path_with_namespace":"g/p"},"pipeline_id":3}`},
		"negative pipeline":          {wq.ForgeGitLab, "Job Hook", `{"object_kind":"build","project":{"path_with_namespace":"g/p"},"pipeline_id":-3,"ref":"b"}`},
		"gitea issue without number": {wq.ForgeGitea, "issues", `{"action":"opened","issue":{"title":"x"},"repository":{"full_name":"o/r"}}`},
		"gitea issue without repo":   {wq.ForgeGitea, "issues", `{"action":"opened","issue":{"number":2}}`},
		"gitlab issue without iid":   {wq.ForgeGitLab, "Issue Hook", `{"object_kind":"issue","project":{"path_with_namespace":"g/p"},"object_attributes":{"title":"x"}}`},
		"gitlab issue of other kind": {wq.ForgeGitLab, "Issue Hook", `{"object_kind":"note","project":{"path_with_namespace":"g/p"},"object_attributes":{"iid":2}}`},
	} {
		t.Run(name, func(t *testing.T) {
			h := giteaHeaders(sign("k", tc.body), tc.event)
			h.Set("X-Gitlab-Token", "k")
			h.Set("X-Gitlab-Event", tc.event)
			h.Set("X-Gitlab-Event-UUID", "u")
			if d, err := shipped.ParseWebhook(tc.kind, "k", h, []byte(tc.body)); d != nil || err != nil {
				t.Errorf("%+v, %v; want acknowledged and not used", d, err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("gitea", "pull_request", giteaMerged)
	f.Add("gitea", "status", `{"sha":"abc","state":"success","repository":{"full_name":"o/r"}}`)
	f.Add("gitea", "workflow_job", `{"action":"completed","workflow_job":{"run_id":1,"head_sha":"a"},"repository":{"full_name":"o/r"}}`)
	f.Add("gitlab", "Merge Request Hook", `{"object_kind":"merge_request","object_attributes":{"iid":1}}`)
	f.Add("gitlab", "Pipeline Hook", `{"object_kind":"pipeline","project":{"path_with_namespace":"g/p"},"object_attributes":{"id":3,"ref":"b"}}`)
	f.Add("gitlab", "Job Hook", `{"object_kind":"build","project":{"path_with_namespace":"g/p"},"pipeline_id":3}`)
	f.Add("gitea", "issues", `{"action":"opened","issue":{"number":2,"state":"open"},"repository":{"full_name":"o/r"}}`)
	f.Add("gitlab", "Issue Hook", `{"object_kind":"issue","project":{"path_with_namespace":"g/p"},"object_attributes":{"iid":2}}`)
	f.Fuzz(func(t *testing.T, kind, event, body string) {
		h := giteaHeaders(sign("k", body), event)
		h.Set("X-Gitlab-Token", "k")
		h.Set("X-Gitlab-Event", event)
		h.Set("X-Gitlab-Event-UUID", "u")
		d, err := shipped.ParseWebhook(kind, "k", h, []byte(body))
		if err == nil && d != nil && (d.Project == "" || d.DeliveryID == "" || d.Number < 0 || d.PipelineID < 0 ||
			(d.Number == 0 && d.PipelineID == 0 && d.SourceBranch == "" && d.HeadSHA == "" && d.Work == nil) ||
			(d.Work != nil && (d.Work.Number <= 0 || (d.Work.Kind != wq.WorkIssue && d.Work.Kind != wq.WorkPR)))) {
			t.Fatalf("accepted an unusable delivery: %+v", d)
		}
	})
}

func TestDeliveriesCarryTheNewStateOfTheirWork(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	gitea := func(event, body string) (string, http.Header, string) {
		return wq.ForgeGitea, giteaHeaders(sign("k", body), event), body
	}
	gitlab := func(event, body string) (string, http.Header, string) {
		return wq.ForgeGitLab, http.Header{"X-Gitlab-Token": {"k"}, "X-Gitlab-Event": {event}, "X-Gitlab-Event-Uuid": {"u"}}, body
	}
	const giteaPR = `"number":7,"title":"Fix it","body":"Closes #2, fixes #3","state":"open","merged":false,"mergeable":true,
	 "draft":false,"user":{"login":"alice"},"labels":[{"name":"bug"}],"updated_at":"2026-03-04T05:06:07Z",
	 "head":{"ref":"fix","sha":"c0ffee","repo_id":1},"base":{"ref":"main","repo_id":1}`
	openPR := wq.WorkInfo{Kind: wq.WorkPR, Number: 7, State: wq.MergeRequestOpen, Title: "Fix it", Labels: []string{"bug"}, Author: "alice",
		HeadSHA: "c0ffee", Mergeable: true, LinkedIssues: []int64{2, 3}, UpdatedAt: at}
	with := func(w wq.WorkInfo, edit func(w *wq.WorkInfo)) *wq.WorkInfo { edit(&w); return &w }
	const gitlabMR = `"object_kind":"merge_request","project":{"path_with_namespace":"g/p"},"labels":[{"title":"bug"}]`
	const gitlabAttrs = `"iid":7,"title":"Fix it","description":"Resolves #2","state":"opened","detailed_merge_status":"mergeable",
	 "source_branch":"fix","target_branch":"main","source_project_id":1,"target_project_id":1,"last_commit":{"id":"c0ffee"},
	 "updated_at":"2026-03-04 05:06:07 UTC"`
	openMR := wq.WorkInfo{Kind: wq.WorkPR, Number: 7, State: wq.MergeRequestOpen, Title: "Fix it", Labels: []string{"bug"},
		HeadSHA: "c0ffee", Mergeable: true, LinkedIssues: []int64{2}, UpdatedAt: at}
	for _, tc := range []struct {
		name    string
		kind    string
		h       http.Header
		body    string
		want    *wq.WorkInfo // nil: the delivery is dropped
		recheck bool
		number  int64 // the merge request an item may resolve by
	}{
		{name: "a gitea issue opened", want: &wq.WorkInfo{Kind: wq.WorkIssue, Number: 2, State: wq.MergeRequestOpen, Title: "Broken",
			Labels: []string{"bug", "p1"}, Author: "bob", UpdatedAt: at}},
		{name: "a gitea issue closed", want: &wq.WorkInfo{Kind: wq.WorkIssue, Number: 2, State: wq.MergeRequestClosed, Title: "Broken", Author: "bob", UpdatedAt: at}},
		{name: "the issue side of a gitea pull request is dropped"},
		{name: "a gitea pull request opened", want: &openPR, number: 7},
		{name: "a gitea pull request merged", want: with(openPR, func(w *wq.WorkInfo) { w.State, w.Mergeable = wq.MergeRequestMerged, false }), number: 7},
		{name: "a gitea draft is not mergeable", want: with(openPR, func(w *wq.WorkInfo) { w.Mergeable = false }), number: 7},
		{name: "a push to a gitea pull request rechecks its verdict", want: &openPR, recheck: true, number: 7},
		{name: "a gitea request for changes settles the verdict", want: with(openPR, func(w *wq.WorkInfo) { w.ReviewState = wq.ReviewChangesRequested }), number: 7},
		{name: "a gitea approval rechecks the verdict", want: &openPR, recheck: true, number: 7},
		{name: "a gitlab issue opened", want: &wq.WorkInfo{Kind: wq.WorkIssue, Number: 3, State: wq.MergeRequestOpen, Title: "Broken",
			Labels: []string{"bug"}, UpdatedAt: at}},
		{name: "a gitlab incident is dropped"},
		{name: "a gitlab merge request updated", want: &openMR, number: 7},
		{name: "a gitlab reviewer requesting changes settles the verdict", want: with(openMR, func(w *wq.WorkInfo) { w.ReviewState = wq.ReviewChangesRequested }), number: 7},
		{name: "gitlab's approved settles the verdict", want: with(openMR, func(w *wq.WorkInfo) { w.ReviewState = wq.ReviewApproved }), number: 7},
		{name: "gitlab's single approval rechecks the verdict", want: &openMR, recheck: true, number: 7},
		{name: "a push to a gitlab merge request rechecks its verdict", want: &openMR, recheck: true, number: 7},
		{name: "a locked gitlab merge request is open and not mergeable", want: with(openMR, func(w *wq.WorkInfo) { w.Mergeable = false }), number: 7},
	} {
		switch tc.name {
		case "a gitea issue opened":
			tc.kind, tc.h, tc.body = gitea("issues", `{"action":"opened","number":2,"issue":{"number":2,"title":"Broken","state":"open",
			 "user":{"login":"bob"},"labels":[{"name":"bug"},{"name":"p1"}],"updated_at":"2026-03-04T05:06:07Z","pull_request":null},"repository":{"full_name":"o/r"}}`)
		case "a gitea issue closed":
			tc.kind, tc.h, tc.body = gitea("issues", `{"action":"closed","issue":{"number":2,"title":"Broken","state":"closed",
			 "user":{"login":"bob"},"labels":[],"updated_at":"2026-03-04T05:06:07Z"},"repository":{"full_name":"o/r"}}`)
		case "the issue side of a gitea pull request is dropped":
			tc.kind, tc.h, tc.body = gitea("issues", `{"action":"label_updated","issue":{"number":7,"state":"open","pull_request":{"merged":false}},"repository":{"full_name":"o/r"}}`)
		case "a gitea pull request opened":
			tc.kind, tc.h, tc.body = gitea("pull_request", `{"action":"opened","pull_request":{`+giteaPR+`},"repository":{"full_name":"o/r"}}`)
		case "a gitea pull request merged":
			tc.kind, tc.h, tc.body = gitea("pull_request", `{"action":"closed","pull_request":{`+giteaPR+`,"state":"closed","merged":true},"repository":{"full_name":"o/r"}}`)
		case "a gitea draft is not mergeable":
			tc.kind, tc.h, tc.body = gitea("pull_request", `{"action":"edited","pull_request":{`+giteaPR+`,"draft":true},"repository":{"full_name":"o/r"}}`)
		case "a push to a gitea pull request rechecks its verdict":
			tc.kind, tc.h, tc.body = gitea("pull_request", `{"action":"synchronized","pull_request":{`+giteaPR+`},"repository":{"full_name":"o/r"}}`)
		case "a gitea request for changes settles the verdict":
			tc.kind, tc.h, tc.body = gitea("pull_request_rejected", `{"action":"reviewed","pull_request":{`+giteaPR+`},"review":{"type":"pull_request_review_rejected"},"repository":{"full_name":"o/r"}}`)
		case "a gitea approval rechecks the verdict":
			tc.kind, tc.h, tc.body = gitea("pull_request_approved", `{"action":"reviewed","pull_request":{`+giteaPR+`},"review":{"type":"pull_request_review_approved"},"repository":{"full_name":"o/r"}}`)
		case "a gitlab issue opened":
			tc.kind, tc.h, tc.body = gitlab("Issue Hook", `{"object_kind":"issue","project":{"path_with_namespace":"g/p"},"labels":[{"title":"bug"}],
			 "object_attributes":{"iid":3,"title":"Broken","state":"opened","action":"open","type":"Issue","confidential":false,"author_id":5,"updated_at":"2026-03-04 05:06:07 UTC"}}`)
		case "a gitlab incident is dropped":
			tc.kind, tc.h, tc.body = gitlab("Issue Hook", `{"object_kind":"issue","project":{"path_with_namespace":"g/p"},"object_attributes":{"iid":3,"state":"opened","type":"Incident"}}`)
		case "a gitlab merge request updated":
			tc.kind, tc.h, tc.body = gitlab("Merge Request Hook", `{`+gitlabMR+`,"reviewers":[{"username":"carol","state":"unreviewed"}],"object_attributes":{`+gitlabAttrs+`,"action":"update"}}`)
		case "a gitlab reviewer requesting changes settles the verdict":
			tc.kind, tc.h, tc.body = gitlab("Merge Request Hook", `{`+gitlabMR+`,"reviewers":[{"username":"dan","state":"approved"},{"username":"carol","state":"requested_changes"}],
			 "changes":{"reviewers":{"previous":[],"current":[]}},"object_attributes":{`+gitlabAttrs+`,"action":"update"}}`)
		case "gitlab's approved settles the verdict":
			tc.kind, tc.h, tc.body = gitlab("Merge Request Hook", `{`+gitlabMR+`,"reviewers":[],"object_attributes":{`+gitlabAttrs+`,"action":"approved"}}`)
		case "gitlab's single approval rechecks the verdict":
			tc.kind, tc.h, tc.body = gitlab("Merge Request Hook", `{`+gitlabMR+`,"object_attributes":{`+gitlabAttrs+`,"action":"approval"}}`)
		case "a push to a gitlab merge request rechecks its verdict":
			tc.kind, tc.h, tc.body = gitlab("Merge Request Hook", `{`+gitlabMR+`,"object_attributes":{`+gitlabAttrs+`,"action":"update","oldrev":"0ld"}}`)
		case "a locked gitlab merge request is open and not mergeable":
			tc.kind, tc.h, tc.body = gitlab("Merge Request Hook", `{`+gitlabMR+`,"object_attributes":{`+gitlabAttrs+`,"state":"locked","action":"update"}}`)
		}
		t.Run(tc.name, func(t *testing.T) {
			d, err := shipped.ParseWebhook(tc.kind, "k", tc.h, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if d != nil {
					t.Errorf("%+v, want dropped", d)
				}
				return
			}
			if d == nil || d.Work == nil {
				t.Fatalf("%+v: no work", d)
			}
			if diff := cmp.Diff(tc.want, d.Work); diff != "" {
				t.Errorf("work (-want +got):\n%s", diff)
			}
			if d.RecheckReview != tc.recheck || d.Number != tc.number || d.Project == "" {
				t.Errorf("recheck %v, number %d, project %q; want %v, %d", d.RecheckReview, d.Number, d.Project, tc.recheck, tc.number)
			}
		})
	}
}

// A push to a branch, on either forge, says which branch moved from where
// to where, and names no item; a tag push is not used.
func TestPushesSayWhichBranchMoved(t *testing.T) {
	gitea := `{"ref":"refs/heads/feature","before":"aaa","after":"bbb","repository":{"full_name":"o/r"}}`
	d, err := shipped.ParseWebhook(wq.ForgeGitea, "s", giteaHeaders(sign("s", gitea), "push"), []byte(gitea))
	if err != nil || d == nil || d.Project != "o/r" || d.Push == nil || *d.Push != (forge.BranchPush{Branch: "feature", Before: "aaa", After: "bbb"}) ||
		d.Number != 0 || d.SourceBranch != "" || d.HeadSHA != "" || d.Work != nil {
		t.Errorf("gitea push: %+v, %v", d, err)
	}
	gitlab := `{"object_kind":"push","ref":"refs/heads/wq/x","before":"ccc","after":"ddd","project":{"path_with_namespace":"g/p"}}`
	h := http.Header{"X-Gitlab-Token": {"k"}, "X-Gitlab-Event": {"Push Hook"}, "X-Gitlab-Event-Uuid": {"u-2"}}
	d, err = shipped.ParseWebhook(wq.ForgeGitLab, "k", h, []byte(gitlab))
	if err != nil || d == nil || d.Project != "g/p" || d.Push == nil || *d.Push != (forge.BranchPush{Branch: "wq/x", Before: "ccc", After: "ddd"}) {
		t.Errorf("gitlab push: %+v, %v", d, err)
	}
	tag := `{"ref":"refs/tags/v1","before":"0","after":"eee","repository":{"full_name":"o/r"}}`
	if d, err := shipped.ParseWebhook(wq.ForgeGitea, "s", giteaHeaders(sign("s", tag), "push"), []byte(tag)); d != nil || err != nil {
		t.Errorf("a tag push: %+v, %v, want unused", d, err)
	}
	bad := `{"ref":"refs/heads/x","repository":{"full_name":"o/r"}}`
	if d, err := shipped.ParseWebhook(wq.ForgeGitea, "s", giteaHeaders(sign("s", bad), "push"), []byte(bad)); d != nil || err != nil {
		t.Errorf("a push without before and after: %+v, %v, want acknowledged and not used", d, err)
	}
}

// The headers alone settle what they can before a body is read: a
// GitLab token (the secret itself) is refused or passed on them, a Gitea
// signature that cannot be an HMAC-SHA256 is refused, and one that could
// be is left to ParseWebhook, which reads the body.
func TestHeadersAloneRefuseWhatTheyCanBeforeTheBodyIsRead(t *testing.T) {
	for name, tc := range map[string]struct {
		kind, secret string
		h            http.Header
		want         string // error code; "": left to the body
	}{
		"gitlab right token":        {wq.ForgeGitLab, "s3cret", http.Header{"X-Gitlab-Token": {"s3cret"}}, ""},
		"gitlab wrong token":        {wq.ForgeGitLab, "s3cret", http.Header{"X-Gitlab-Token": {"nope"}}, wq.EUNAUTHORIZED},
		"gitlab missing token":      {wq.ForgeGitLab, "s3cret", http.Header{}, wq.EUNAUTHORIZED},
		"gitlab no secret":          {wq.ForgeGitLab, "", http.Header{"X-Gitlab-Token": {""}}, wq.EUNAUTHORIZED},
		"gitea signature of a form": {wq.ForgeGitea, "s3cret", giteaHeaders(sign("other", giteaMerged), "pull_request"), ""},
		"gitea missing signature":   {wq.ForgeGitea, "s3cret", giteaHeaders("", "pull_request"), wq.EUNAUTHORIZED},
		"gitea signature not hex":   {wq.ForgeGitea, "s3cret", giteaHeaders("zz", "pull_request"), wq.EUNAUTHORIZED},
		"gitea signature too short": {wq.ForgeGitea, "s3cret", giteaHeaders("abcd", "pull_request"), wq.EUNAUTHORIZED},
	} {
		t.Run(name, func(t *testing.T) {
			err := shipped.VerifyHeader(tc.kind, tc.secret, tc.h)
			if got := wq.ErrorCode(err); (err == nil) != (tc.want == "") || (err != nil && got != tc.want) {
				t.Errorf("err %v, want code %q", err, tc.want)
			}
		})
	}
}

// A project hook is the service's when it is the service's URL, or the
// same /webhooks/<forge> path on another host (a check points it back).
func TestSameHookTarget(t *testing.T) {
	const want = "https://wq.example.org/webhooks/gitea"
	for got, same := range map[string]bool{
		want:                                     true,
		"http://10.0.0.5:8080/webhooks/gitea/":   true,
		"https://wq.example.org/webhooks/gitlab": false,
		"https://other.example.org/hooks/gitea":  false,
		"::not a url":                            false,
	} {
		if forge.SameHookTarget(got, want) != same {
			t.Errorf("SameHookTarget(%q) = %v, want %v", got, !same, same)
		}
	}
	if forge.SameHookTarget("https://x.example.org/", "https://wq.example.org/") {
		t.Error("a URL without /webhooks/ matched another host's by path")
	}
}
