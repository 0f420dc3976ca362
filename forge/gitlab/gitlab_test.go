package gitlab_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/forgetest"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
)

func TestConformanceOnAGitLabShapedServer(t *testing.T) {
	srv := gitlabtest.New()
	defer srv.Close()
	f, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	forgetest.Run(t, func(t *testing.T) forgetest.Project {
		path := fmt.Sprintf("group/sub/project-%d", n.Add(1))
		srv.CreateProject(path)
		return forgetest.Project{Forge: f, Path: path}
	})
}

func TestWrongTokenIsPermanent(t *testing.T) {
	srv := gitlabtest.New()
	defer srv.Close()
	srv.CreateProject("g/p")
	f, _ := gitlab.New(srv.URL, "wrong", gitlab.Options{})
	if _, err := f.BranchHead(context.Background(), "g/p", "main"); !wq.IsForgeError(err, wq.ForgePermanent) {
		t.Errorf("wrong token: %v, want a permanent forge error", err)
	}
}

func TestRefusedConnectionIsTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	f, _ := gitlab.New("http://"+addr, "t", gitlab.Options{Timeout: 2 * time.Second})
	if _, err := f.BranchHead(context.Background(), "g/p", "main"); !wq.IsForgeError(err, wq.ForgeTransient) {
		t.Errorf("refused connection: %v, want transient", err)
	}
}

func TestOpenMergeRequestReportsItsHeadPipeline(t *testing.T) {
	srv := gitlabtest.New()
	defer srv.Close()
	srv.CreateProject("g/p")
	f, _ := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
	ctx := context.Background()
	content := []byte("x\n")
	c, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "g/p", Base: "main", Branch: "wq/a", Message: "m",
		Changes: []wq.FileChange{{Action: "create", Path: "a", Content: content}}})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: "g/p", SourceBranch: "wq/a", TargetBranch: "main", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.GetMergeRequest(ctx, "g/p", mr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if got.HeadSHA != c.SHA || got.HeadPipelineID <= gitlabtest.PipelineBase {
		t.Errorf("head %s pipeline %d, want %s and a pipeline", got.HeadSHA, got.HeadPipelineID, c.SHA)
	}
}

func TestHookMissingEventsIsUpdated(t *testing.T) {
	srv := gitlabtest.New()
	defer srv.Close()
	srv.CreateProject("g/p")
	f, _ := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
	ctx := context.Background()
	const url = "http://wq.example/webhooks/gitlab"
	if got, err := f.EnsureWebhook(ctx, "g/p", url, "s"); err != nil || got != wq.WebhookCreated {
		t.Fatalf("%q %v", got, err)
	}
	srv.SetHookEvent("g/p", url, "pipeline_events", false) // someone unticked it
	if got, err := f.EnsureWebhook(ctx, "g/p", url, "s"); err != nil || got != wq.WebhookUpdated {
		t.Fatalf("%q %v, want updated", got, err)
	}
	ev := srv.HookEvents("g/p", url)
	if !ev["merge_requests_events"] || !ev["pipeline_events"] || !ev["job_events"] || !ev["note_events"] {
		t.Errorf("events after update: %v", ev)
	}
	if got, err := f.EnsureWebhook(ctx, "g/p", url, "s"); err != nil || got != wq.WebhookFound {
		t.Errorf("%q %v, want found", got, err)
	}
}
