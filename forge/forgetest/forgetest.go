// Package forgetest is the conformance suite every Forge passes: the real
// Gitea of the test harness, and the GitLab adapter against a GitLab-shaped
// test server.
package forgetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/eventually"
)

// Project is a fresh project on a forge, with a main branch holding
// README.md.
type Project struct {
	Forge wq.Forge
	Path  string // owner/name or group/name
	// Calls, when set, counts the HTTP requests the Forge made so far, so
	// that the suite can hold a method to a number of calls.
	Calls func() int64
	// People, when set, act on the project as people do; the work
	// inventory's cases need them and are skipped without.
	People People
	// WorkPageSize is the page size of the Forge's ListOpenWork: the
	// suite makes one issue more than a page.
	WorkPageSize int
	// Reviewing, when set, is an adapter of the same forge whose review
	// identity is a second account with write access to the project (its
	// ReviewToken); the cases of verdicts given are skipped without it.
	Reviewing wq.Forge
	// Comments, when set, reads the comments on an issue or a pull request
	// (kind wq.WorkIssue or wq.WorkPR) of the project as the forge shows
	// them; the comment cases read what they wrote back with it.
	Comments func(t testing.TB, kind string, number int64) []Comment
}

// Comment is a comment as the forge shows it.
type Comment struct {
	ID   int64
	Body string
}

// People act on a project as people do (internal/testforge.Fixture is
// one).
type People interface {
	OpenIssue(t testing.TB, project, title string, labels ...string) int64
	CloseIssue(t testing.TB, project string, number int64)
	// Review gives a verdict (wq.ReviewApproved, wq.ReviewChangesRequested)
	// as a reviewer who is not the merge request's author.
	Review(t testing.TB, project string, number int64, verdict string)
}

// Run runs the suite, one part per area (commits.go, mergerequests.go,
// work.go, actions.go, checks.go). newProject makes a fresh project for
// each test.
func Run(t *testing.T, newProject func(t *testing.T) Project) {
	runChecks(t, newProject)
	runCommitStatuses(t, newProject)
	runWork(t, newProject)
	runActions(t, newProject)
	runCommits(t, newProject)
	runMergeRequests(t, newProject)
}

// change is a file change as the suite writes one.
func change(action, path, content string) wq.FileChange {
	c := wq.FileChange{Action: action, Path: path}
	if content != "" || action == "create" || action == "update" {
		c.Content = []byte(content)
	}
	return c
}

// commit makes branch one commit on main holding changes.
func commit(t *testing.T, p Project, branch string, changes ...wq.FileChange) wq.Commit {
	t.Helper()
	c, err := p.Forge.CommitFiles(context.Background(), wq.CommitRequest{Project: p.Path, Base: "main", Branch: branch,
		Message: "workqueue test", Changes: changes})
	if err != nil {
		t.Fatalf("CommitFiles: %v", err)
	}
	if c.SHA == "" {
		t.Fatal("CommitFiles returned no SHA")
	}
	return c
}

// read reads path at ref.
func read(t *testing.T, p Project, ref, path string) (string, bool) {
	t.Helper()
	b, found, err := p.Forge.ReadFile(context.Background(), p.Path, ref, path)
	if err != nil {
		t.Fatalf("ReadFile %s:%s: %v", ref, path, err)
	}
	return string(b), found
}

// wantFiles checks a branch: each present path holds its content, no
// absent path exists.
func wantFiles(t *testing.T, p Project, branch string, present map[string]string, absent ...string) {
	t.Helper()
	for path, want := range present {
		if got, found := read(t, p, branch, path); !found || got != want {
			t.Errorf("%s:%s = %q (found: %t), want %q", branch, path, got, found, want)
		}
	}
	for _, path := range absent {
		if _, found := read(t, p, branch, path); found {
			t.Errorf("%s:%s is still there", branch, path)
		}
	}
}

// seed commits changes to a branch and merges it, so that main holds them.
func seed(t *testing.T, p Project, changes ...wq.FileChange) {
	t.Helper()
	commit(t, p, "wq/seed", changes...)
	if err := mergeNow(context.Background(), p, "wq/seed"); err != nil {
		t.Fatalf("merge the seed: %v", err)
	}
}

func openPR(t *testing.T, p Project, branch, description string, labels ...string) (*wq.MergeRequest, wq.Commit) {
	t.Helper()
	ctx := context.Background()
	c, err := p.Forge.CommitFiles(ctx, wq.CommitRequest{Project: p.Path, Base: "main", Branch: branch, Message: "work",
		Changes: []wq.FileChange{{Action: "create", Path: branch + ".txt", Content: []byte(branch + "\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: branch, TargetBranch: "main",
		Title: "Work on " + branch, Description: description, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	return mr, c
}

// waitMergeable polls until the forge has computed mergeability: both
// forges do it asynchronously after a push.
func waitMergeable(t *testing.T, p Project, number int64) {
	t.Helper()
	waitFor(t, p, number, "mergeable", func(mr *wq.MergeRequest) bool { return mr.Mergeable })
}

// waitBlocker polls until the merge request's blocker is want and returns
// the merge request.
func waitBlocker(t *testing.T, p Project, number int64, want wq.MergeBlocker) *wq.MergeRequest {
	t.Helper()
	return waitFor(t, p, number, fmt.Sprintf("blocked by %q", want), func(mr *wq.MergeRequest) bool { return mr.Blocker == want })
}

// waitFor reads the merge request until done says it is as wanted, for up
// to 30s, and returns it.
func waitFor(t *testing.T, p Project, number int64, what string, done func(*wq.MergeRequest) bool) *wq.MergeRequest {
	t.Helper()
	var mr *wq.MergeRequest
	eventually.TrueEvery(t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("merge request %d %s", number, what), func() (bool, any) {
		var err error
		if mr, err = p.Forge.GetMergeRequest(context.Background(), p.Path, number); err != nil {
			t.Fatal(err)
		}
		return done(mr), mr
	})
	return mr
}

// projectHaving makes projects as newProject does, and skips the test,
// saying why, when the project lacks what has looks for.
func projectHaving(newProject func(t *testing.T) Project, has func(Project) bool, why string) func(t *testing.T) Project {
	return func(t *testing.T) Project {
		t.Helper()
		p := newProject(t)
		if !has(p) {
			t.Skip(why)
		}
		return p
	}
}

// mergeNow opens a merge request for branch and merges it.
func mergeNow(ctx context.Context, p Project, branch string) error {
	mr, err := p.Forge.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: p.Path, SourceBranch: branch, TargetBranch: "main", Title: "seed"})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := p.Forge.GetMergeRequest(ctx, p.Path, mr.Number)
		if err != nil {
			return err
		}
		if got.Mergeable {
			err := p.Forge.MergeMergeRequest(ctx, p.Path, mr.Number, got.HeadSHA)
			if !wq.IsForgeError(err, wq.ForgeUnprocessable) {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("merge request %d never became mergeable", mr.Number)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantKind fails the test unless err is a forge error of kind k.
func wantKind(t *testing.T, err error, k wq.ForgeErrorKind) {
	t.Helper()
	got, ok := wq.ForgeErrorOf(err)
	if !ok || got != k {
		t.Fatalf("error %v: want a %s forge error", err, k)
	}
}
