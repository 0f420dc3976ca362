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
