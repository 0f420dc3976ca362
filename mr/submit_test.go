package mr_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mr"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func text(s string) *string { return &s }

func submission(content string) mr.Submission {
	return mr.Submission{Forge: "gitea", Project: "o/r", SourceBranch: "wq/update-a", TargetBranch: "main", Title: "Update a",
		FileActions: []mr.FileAction{{Action: mr.ActionCreate, FilePath: "a.txt", Content: text(content)}}}
}

var project = mr.Project{Label: "managed-by-workqueue", AutoMerge: true}

func forEachDB(t *testing.T, test func(t *testing.T, s mr.Store, ws wq.Store)) {
	for _, kind := range testdb.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s := testdb.Open(t, kind)
			test(t, s, s)
		})
	}
}

func TestSubmitUpsertsByBranch(t *testing.T) {
	forEachDB(t, func(t *testing.T, s mr.Store, ws wq.Store) {
		ctx := context.Background()
		submit := func(sub mr.Submission, want wq.SubmitResult) *wq.Item {
			t.Helper()
			it, result, err := mr.Submit(ctx, s, sub, project, "alice", t0)
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if result != want {
				t.Fatalf("result %q, want %q", result, want)
			}
			return it
		}
		first := submit(submission("v1"), mr.ResultCreated)
		if first.CallerIdentity != "alice" || first.Generation != 1 || !first.Actionable {
			t.Errorf("created %+v", first)
		}
		d, _ := s.GetMRDetail(ctx, first.ID)
		if !d.AutoMerge || d.CommitMessage != "Update a" || len(d.Labels) != 1 || d.Labels[0] != "managed-by-workqueue" {
			t.Errorf("detail %+v: want the project's auto_merge, the title as commit message and the managed label", d)
		}
		if again := submit(submission("v1"), mr.ResultUnchanged); again.ID != first.ID || again.Revision != first.Revision {
			t.Errorf("unchanged submission changed the item: %+v", again)
		}
		updated := submit(submission("v2"), mr.ResultUpdated)
		if updated.ID != first.ID || updated.ContentHash == first.ContentHash {
			t.Errorf("update: %+v", updated)
		}
		retitled := submission("v2")
		retitled.Title = "Update a, better"
		if it := submit(retitled, mr.ResultUpdated); it.ContentHash != updated.ContentHash {
			t.Error("a title-only change changed the content hash")
		}
		if d, _ := s.GetMRDetail(ctx, first.ID); d.Title != "Update a, better" {
			t.Errorf("title not replaced: %q", d.Title)
		}

		// A failed item is retried by the next submission.
		l, err := ws.ClaimItem(ctx, first.ID, "w", t0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ws.RecordFailure(ctx, l, wq.Failure{Error: "forge down", Fail: true}, t0); err != nil {
			t.Fatal(err)
		}
		_ = ws.ReleaseLease(ctx, l)
		if it := submit(retitled, mr.ResultRetried); it.ID != first.ID || it.Phase != wq.PhaseActive {
			t.Errorf("retry: %+v", it)
		}

		// After a terminal phase, a new generation.
		l, _ = ws.ClaimItem(ctx, first.ID, "w", t0, time.Minute)
		if _, err := ws.ApplyChange(ctx, l, wq.Change{Phase: wq.PhaseCompleted, Reason: "merged"}, t0); err != nil {
			t.Fatal(err)
		}
		next := submit(retitled, mr.ResultCreated)
		if next.ID == first.ID || next.Generation != 2 {
			t.Errorf("after completion: %+v, want a new item of generation 2", next)
		}
	})
}

func TestTwoIdenticalSubmissionsAtOnceMakeOneItem(t *testing.T) {
	forEachDB(t, func(t *testing.T, s mr.Store, _ wq.Store) {
		const n = 8
		ids := make([]wq.ItemID, n)
		results := make([]wq.SubmitResult, n)
		errs := make([]error, n)
		testkit.AtOnce(n, func(i int) {
			it, result, err := mr.Submit(context.Background(), s, submission("same"), project, "ci", t0)
			errs[i], results[i] = err, result
			if it != nil {
				ids[i] = it.ID
			}
		})
		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("submission %d: %v", i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Errorf("submission %d got item %s, submission 0 got %s", i, ids[i], ids[0])
			}
			if results[i] == mr.ResultCreated {
				created++
			} else if results[i] != mr.ResultUnchanged {
				t.Errorf("submission %d: result %q", i, results[i])
			}
		}
		if created != 1 {
			t.Errorf("%d submissions created an item, want exactly 1 (results %v)", created, results)
		}
	})
}

func TestSubmitStoresNothingWhenRefused(t *testing.T) {
	forEachDB(t, func(t *testing.T, s mr.Store, _ wq.Store) {
		ctx := context.Background()
		bad := submission("x")
		bad.FileActions = append(bad.FileActions, mr.FileAction{Action: mr.ActionCreate, FilePath: ".git/config", Content: text("x")})
		_, _, err := mr.Submit(ctx, s, bad, project, "mallory", t0)
		var r *mr.Refusal
		if !errors.As(err, &r) || r.Index != 1 || r.Path != ".git/config" || r.Rule != mr.RulePathGitDir {
			t.Fatalf("err = %v, want a refusal of action 1 for .git", err)
		}
		if it, _, err := s.FindMRItem(ctx, "gitea", "o/r", "wq/update-a"); err != nil || it != nil {
			t.Errorf("a refused submission was stored: %+v, %v", it, err)
		}
	})
}

func TestSubmitNamesTheBadField(t *testing.T) {
	s := testdb.Open(t, "sqlite")
	for _, tc := range []struct {
		field string
		edit  func(*mr.Submission)
	}{
		{"forge", func(s *mr.Submission) { s.Forge = "" }},
		{"project", func(s *mr.Submission) { s.Project = "noslash" }},
		{"title", func(s *mr.Submission) { s.Title = "" }},
		{"title", func(s *mr.Submission) { s.Title = "two\nlines" }},
		{"source_branch", func(s *mr.Submission) { s.SourceBranch = "bad..branch" }},
		{"source_branch", func(s *mr.Submission) { s.SourceBranch = "-rf" }},
		{"source_branch", func(s *mr.Submission) { s.SourceBranch = "has space" }},
		{"source_branch", func(s *mr.Submission) { s.SourceBranch = "x.lock" }},
		{"source_branch", func(s *mr.Submission) { s.SourceBranch = "main" }},
		{"target_branch", func(s *mr.Submission) { s.TargetBranch = "" }},
		{"target_branch", func(s *mr.Submission) { s.TargetBranch = "a/.hidden" }},
		{"labels[0]", func(s *mr.Submission) { s.Labels = []string{"a,b"} }},
	} {
		sub := submission("x")
		tc.edit(&sub)
		_, _, err := mr.Submit(context.Background(), s, sub, project, "c", t0)
		// A branch name git refuses is a refusal naming the field and its
		// rule; other bad fields are invalid errors that start with it.
		var r *mr.Refusal
		if errors.As(err, &r) {
			if r.Field != tc.field {
				t.Errorf("%+v: refusal %v, want one naming %s", sub, err, tc.field)
			}
		} else if wq.ErrorCode(err) != wq.EINVALID || !strings.HasPrefix(wq.ErrorMessage(err), tc.field+":") {
			t.Errorf("%+v: err %v, want invalid naming %s", sub, err, tc.field)
		}
	}
}

// A change its forge cannot make is refused at submit, before anything is
// stored: the branch prefix the project owns, and file modes on a forge
// without them (Gitea's API cannot set the executable bit).
func TestSubmitRefusesBranchesOutsideThePrefixAndModesTheForgeCannotSet(t *testing.T) {
	forEachDB(t, func(t *testing.T, s mr.Store, ws wq.Store) {
		ctx := context.Background()
		owned := project
		owned.BranchPrefix = "workqueue/"
		chmod := submission("x\n")
		chmod.SourceBranch = "workqueue/modes"
		chmod.FileActions = append(chmod.FileActions, mr.FileAction{Action: mr.ActionChmod, FilePath: "run.sh", ExecuteFilemode: new(true)})
		executable := submission("x\n")
		executable.SourceBranch = "workqueue/modes"
		executable.FileActions[0].ExecuteFilemode = new(true)
		for _, tc := range []struct {
			name  string
			sub   mr.Submission
			index int
			field string
			rule  string
		}{
			{"a branch outside the prefix", submission("x\n"), -1, "source_branch", mr.RuleBranchOutsidePrefix},
			{"a chmod on a forge without modes", chmod, 1, "", mr.RuleFileModeUnsupported},
			{"an executable create on a forge without modes", executable, 0, "", mr.RuleFileModeUnsupported},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, _, err := mr.Submit(ctx, s, tc.sub, owned, "alice", t0)
				var r *mr.Refusal
				if !errors.As(err, &r) || r.Rule != tc.rule || r.Index != tc.index || r.Field != tc.field {
					t.Fatalf("Submit = %v, want a %s refusal of index %d field %q", err, tc.rule, tc.index, tc.field)
				}
			})
		}
		if items, err := ws.ListItems(ctx, wq.ItemFilter{}); err != nil || len(items) != 0 {
			t.Errorf("refused submissions stored %d items (%v)", len(items), err)
		}
		withModes := owned
		withModes.FileModes = true
		if _, result, err := mr.Submit(ctx, s, chmod, withModes, "alice", t0); err != nil || result != mr.ResultCreated {
			t.Errorf("a chmod on a forge with modes: %q %v, want created", result, err)
		}
	})
}
