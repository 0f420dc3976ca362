package relay_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/forge/forgetest"
	"github.com/workqueue-dev/workqueue/forge/forgetest/relay"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/testforge"
)

// kinds is a program's registry with the one line that adds the kind:
// nothing else in the tree names it.
var kinds = forge.NewRegistry(relay.Plugin)

func TestTheRelayKindPassesTheForgeConformanceSuite(t *testing.T) {
	srv := gitlabtest.New()
	defer srv.Close()
	client, calls := forgetest.CountingClient()
	f, err := kinds.Open(relay.Kind, forge.Config{URL: srv.URL, Token: srv.Token, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind() != relay.Kind {
		t.Fatalf("Kind() = %q, want %q", f.Kind(), relay.Kind)
	}
	reviewing, err := kinds.Open(relay.Kind, forge.Config{URL: srv.URL, Token: srv.Token, ReviewToken: srv.AddUser("a-reviewer")})
	if err != nil {
		t.Fatal(err)
	}
	person, err := gl.NewClient(srv.Token, gl.WithBaseURL(srv.URL+"/api/v4"), gl.WithoutRetries())
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	people := testforge.GitLabOn(t, srv)
	forgetest.Run(t, func(t *testing.T) forgetest.Project {
		path := fmt.Sprintf("group/relay/project-%d", n.Add(1))
		srv.CreateProject(path)
		return forgetest.Project{Forge: f, Path: path, Calls: calls, People: people, WorkPageSize: relay.PageSize,
			Reviewing: reviewing, Comments: func(t testing.TB, kind string, number int64) []forgetest.Comment {
				t.Helper()
				var notes []*gl.Note
				var err error
				if kind == wq.WorkIssue {
					notes, _, err = person.Notes.ListIssueNotes(path, number, nil)
				} else {
					notes, _, err = person.Notes.ListMergeRequestNotes(path, number, nil)
				}
				if err != nil {
					t.Fatalf("notes on %s %s#%d: %v", kind, path, number, err)
				}
				var out []forgetest.Comment
				for _, n := range notes {
					out = append(out, forgetest.Comment{ID: n.ID, Body: n.Body})
				}
				return out
			}}
	})
}

func TestRelayDeliveriesAreVerifiedAndReadAsForgeNeutralEvents(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	body := []byte(`{"project":"g/p","merge_request":{"number":4,"source_branch":"wq/a","target_branch":"main",` +
		`"head_sha":"c0ffee","action":"merge","state":"merged","updated_at":"2026-12-02T10:00:00Z"}}`)
	if _, err := kinds.ParseWebhook(relay.Kind, "k", relay.Headers("other", "merge_request", "d-1", body), body); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
		t.Fatalf("a delivery signed with another secret: %v, want EUNAUTHORIZED", err)
	}
	d, err := kinds.ParseWebhook(relay.Kind, "k", relay.Headers("k", "merge_request", "d-1", body), body)
	if err != nil {
		t.Fatal(err)
	}
	if d.EventType != relay.EventMergeRequest || d.Project != "g/p" || d.Number != 4 || d.SourceBranch != "wq/a" ||
		!d.EventTS.Equal(at) || d.DeliveryID != "d-1" || d.Work == nil || d.Work.State != wq.MergeRequestMerged {
		t.Fatalf("delivery %+v", d)
	}
	e := d.Event
	if e == nil || e.MergeRequest == nil || !e.MergeRequest.Merged || e.MergeRequest.HeadSHA != "c0ffee" {
		t.Fatalf("decoded %+v", e)
	}
	job := []byte(`{"project":"g/p","job":{"id":9,"pipeline_id":3,"sha":"c0ffee","name":"test","status":"failed"}}`)
	d, err = kinds.ParseWebhook(relay.Kind, "k", relay.Headers("k", "job", "d-2", job), job)
	if err != nil || d.PipelineID != 3 || d.HeadSHA != "c0ffee" {
		t.Fatalf("job delivery %+v, %v", d, err)
	}
	if e := d.Event; e == nil || e.CI == nil || !e.CI.Failed || e.CI.Job == nil || e.CI.Job.ID != 9 {
		t.Fatalf("decoded job %+v", e)
	}
	if _, ok := kinds.Lookup(relay.Kind); !ok || wq.SetsFileModes(&relay.Forge{}) {
		t.Fatalf("lookup: %v, or the relay claims file modes", ok)
	}
	if j, ok := relayJob(t, "/g/p/jobs/9"); !ok || j.Project != "g/p" || j.JobID != 9 {
		t.Fatalf("job page: %+v %v", j, ok)
	}
	if _, ok := relayJob(t, "/g/p/-/jobs/9/x"); ok {
		t.Fatal("a path that is no job page read as one")
	}
}

func relayJob(t *testing.T, path string) (forge.JobRef, bool) {
	t.Helper()
	p, _ := kinds.Lookup(relay.Kind)
	return p.JobPage(path)
}
