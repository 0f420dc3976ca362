package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
)

// The kill -9 suite's merge train (issue 54): serve drives twelve changes
// through a train of four on the GitLab test server, whose CI the test
// plays, and is killed with SIGKILL three times while cars ride. After
// the last restart (two instances at once on PostgreSQL) every change is
// merged, once: no item lost, no merge request merged twice, main
// holding each change once.
func TestServeKilledMidTrainLosesNothingAndMergesNothingTwice(t *testing.T) {
	const changes = 12
	for _, kind := range testdb.Kinds {
		t.Run(kind, func(t *testing.T) {
			srv := gitlabtest.New()
			t.Cleanup(srv.Close)
			const project = "group/train"
			srv.CreateProject(project)
			t.Setenv("WQ_TEST_GL_TOKEN", srv.Token)
			url := testdb.URL(t, kind)
			s := testdb.OpenURL(t, url)
			ctx := context.Background()
			var ids []wq.ItemID
			for i := range changes {
				sub := mr.Submission{Forge: "gitlab", Project: project, SourceBranch: fmt.Sprintf("workqueue/k-%d", i), TargetBranch: "main",
					Title: fmt.Sprintf("change %d", i), FileActions: []mr.FileAction{{Action: mr.ActionCreate, FilePath: fmt.Sprintf("k%d.txt", i),
						Content: strPtr(fmt.Sprintf("change %d\n", i))}}}
				it, _, err := mr.Submit(ctx, s, sub, mr.Project{Label: "managed-by-workqueue", AutoMerge: true, FileModes: true}, "crash", time.Now())
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, it.ID)
			}
			cfg := filepath.Join(t.TempDir(), "workqueue.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf(`
database: %q
listen: 127.0.0.1:0
handled_types: [mr]
processing: {workers: 4, lease: 2s, sweep_interval: 200ms}
forges: [{name: gitlab, kind: gitlab, url: %q, token_env: WQ_TEST_GL_TOKEN}]
projects: [{match: "group/**", forge: gitlab, auto_merge: true, merge_train: {enabled: true, batch_size: 4}}]
mr: {merge_recheck_interval: 200ms, reconcile_interval: 2s, bulk_reconcile_interval: 0s}
`, url, srv.URL)), 0o600)

			// CI: every head of a change's merge request passes 300 ms after
			// the test first sees it.
			f, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			seen := map[string]time.Time{}
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					for _, id := range ids {
						d, err := s.GetMRDetail(ctx, id)
						if err != nil || d.HeadSHA == "" {
							continue
						}
						mu.Lock()
						at, ok := seen[d.HeadSHA]
						if !ok {
							seen[d.HeadSHA] = time.Now()
						} else if !at.IsZero() && time.Since(at) > 300*time.Millisecond {
							srv.SetStatus(project, d.HeadSHA, "ci/build", "success")
							seen[d.HeadSHA] = time.Time{}
						}
						mu.Unlock()
					}
				}
			}()
			merged := func() int {
				n := 0
				for _, id := range ids {
					if it, err := s.GetItem(ctx, id); err == nil && it.Phase == wq.PhaseCompleted {
						n++
					}
				}
				return n
			}
			for kill := range 3 {
				proc, _ := serveProcess(t, cfg)
				want := (kill + 1) * 2
				eventually.True(t, 2*time.Minute, fmt.Sprintf("%d merged before kill %d", want, kill+1), func() (bool, any) {
					return merged() >= want, merged()
				})
				proc.Process.Signal(syscall.SIGKILL)
				proc.Wait()
				t.Logf("kill %d with %d of %d merged", kill+1, merged(), changes)
			}
			// On PostgreSQL the rest of the train rides on two instances at
			// once, as several instances share one database.
			last, _ := serveProcess(t, cfg) // its log is written while it runs: not read here
			if kind == store.KindPostgres {
				other, _ := serveProcess(t, cfg)
				defer func() { other.Process.Signal(syscall.SIGTERM); other.Wait() }()
			}
			eventually.True(t, 3*time.Minute, "every change merged after the last restart", func() (bool, any) {
				return merged() == changes, fmt.Sprintf("%d merged", merged())
			})
			last.Process.Signal(syscall.SIGTERM)
			last.Wait()
			for i, id := range ids {
				it, d := mustItem(t, s, id)
				if it.Phase != wq.PhaseCompleted || it.Reason != mr.ReasonMerged {
					t.Errorf("change %d: %s/%s (%s)", i, it.Phase, it.Reason, it.Error)
					continue
				}
				m, err := f.GetMergeRequest(ctx, project, d.MRNumber)
				if err != nil || m.State != wq.MergeRequestMerged {
					t.Errorf("change %d: !%d %+v, %v", i, d.MRNumber, m, err)
				}
				if content, found, _ := f.ReadFile(ctx, project, "main", fmt.Sprintf("k%d.txt", i)); !found || string(content) != fmt.Sprintf("change %d\n", i) {
					t.Errorf("main:k%d.txt = %q (found %t)", i, content, found)
				}
			}
			// Each merge request merged once: a second merge of one would be a
			// merge request of ours merged again, or another opened for it.
			open, err := f.OpenMergeRequestsFrom(ctx, project, "")
			if err != nil || len(open) != 0 {
				t.Errorf("open merge requests left: %+v, %v", open, err)
			}
		})
	}
}

func mustItem(t *testing.T, s *testdb.Store, id wq.ItemID) (*wq.Item, *mr.Detail) {
	t.Helper()
	it, err := s.GetItem(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.GetMRDetail(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return it, d
}

func strPtr(s string) *string { return &s }
