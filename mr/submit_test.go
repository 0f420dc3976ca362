package mr_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
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

// Push protection (issue 26): a change whose file holds a secret is
// refused before anything is stored, one refusal per finding with its
// file, line, column and rule and never the secret; a base64 content is
// scanned decoded; the project's opt-out and an allowlist entry for the
// path (and rule) let it through.
func TestAChangeHoldingASecretIsRefusedWithItsFindings(t *testing.T) {
	forEachDB(t, func(t *testing.T, s mr.Store, _ wq.Store) {
		ctx := context.Background()
		token := "ghp_" + "R4nd0mL00k1ngT0k3nV4lu3AbCdEfGh1234"
		key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx1y2b3c4d5e6f7g8h9i0jKlMnOpQrStUvWxYz\n-----END RSA PRIVATE KEY-----\n"
		sub := submission("x")
		sub.SourceBranch = "wq/leak"
		sub.FileActions = []mr.FileAction{
			{Action: mr.ActionCreate, FilePath: "deploy/ci.env", Content: text("REGION=eu\nGITHUB_TOKEN=" + token + "\n")},
			{Action: mr.ActionCreate, FilePath: "testdata/key.pem", Content: text(key)},
			{Action: mr.ActionCreate, FilePath: "docs/readme.md", Content: text("# nothing secret here\nrun `make test`\n")},
			{Action: mr.ActionUpdate, FilePath: "b64.txt", Encoding: mr.EncodingBase64, Content: text(base64.StdEncoding.EncodeToString([]byte("password: " + "Tr0ub4dorX3xQZ\n")))},
		}
		_, _, err := mr.Submit(ctx, s, sub, project, "alice", t0)
		var refusals wq.Refusals
		if !errors.As(err, &refusals) {
			t.Fatalf("want refusals, got %v", err)
		}
		var where []string
		for _, r := range refusals {
			if r.Rule != mr.RuleSecret {
				t.Errorf("refusal %+v, want rule %s", r, mr.RuleSecret)
			}
			if strings.Contains(r.Message, token) || strings.Contains(r.Message, "Tr0ub4dor") || strings.Contains(r.Message, "MIIE") {
				t.Errorf("a refusal names the secret: %+v", r)
			}
			where = append(where, fmt.Sprintf("%d %s %s", r.Index, r.Path, strings.SplitN(r.Message, ":", 2)[0]))
		}
		want := []string{"0 deploy/ci.env line 2, column 14", "1 testdata/key.pem line 1, column 1", "3 b64.txt line 1, column 11"}
		if strings.Join(where, "; ") != strings.Join(want, "; ") {
			t.Errorf("findings %q, want %q", where, want)
		}
		if it, _, _ := s.FindMRItem(ctx, "gitea", "o/r", "wq/leak"); it != nil {
			t.Errorf("a refused change stored item %s", it.ID)
		}
		allowed := project
		allowed.Policy.SecretAllowlist = []mr.SecretAllow{{Paths: []string{"testdata/**"}, Rules: []string{"private-key"}},
			{Paths: []string{"deploy/*.env", "b64.txt"}}}
		if _, result, err := mr.Submit(ctx, s, sub, allowed, "alice", t0); err != nil || result != mr.ResultCreated {
			t.Errorf("with every finding allowlisted: %q, %v", result, err)
		}
		narrow := project
		narrow.Policy.SecretAllowlist = []mr.SecretAllow{{Paths: []string{"testdata/**"}, Rules: []string{"github-token"}}}
		sub.SourceBranch = "wq/leak-2"
		if _, _, err := mr.Submit(ctx, s, sub, narrow, "alice", t0); !errors.As(err, &refusals) || len(refusals) != 3 {
			t.Errorf("an allowlist entry of another rule lets the key through: %v", err)
		}
		optOut := project
		optOut.Policy.AllowSecrets = true
		sub.SourceBranch = "wq/leak-3"
		if _, result, err := mr.Submit(ctx, s, sub, optOut, "alice", t0); err != nil || result != mr.ResultCreated {
			t.Errorf("a project that opted out: %q, %v", result, err)
		}
	})
}

// A resubmission while a cancel winds the item down is refused 409
// cancel_pending, not answered updated and then lost when the item ends
// cancelled (issue 28, defect 7); once it ended, a submission starts a
// new item.
func TestAResubmissionDuringACancelIsRefused(t *testing.T) {
	forEachDB(t, func(t *testing.T, s mr.Store, ws wq.Store) {
		ctx := context.Background()
		it, _, err := mr.Submit(ctx, s, submission("v1"), project, "alice", t0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ws.RequestCancel(ctx, it.ID, []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: mr.DimClose}, Status: wq.StatusTrue}}, t0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := mr.Submit(ctx, s, submission("v2"), project, "alice", t0); wq.ErrorReason(err) != mr.ReasonCancelPending {
			t.Fatalf("a resubmission during the cancel: %v, want %s", err, mr.ReasonCancelPending)
		}
		if _, err := ws.CancelItem(ctx, it.ID, "cancelled", t0); err != nil {
			t.Fatal(err)
		}
		next, result, err := mr.Submit(ctx, s, submission("v2"), project, "alice", t0)
		if err != nil || result != mr.ResultCreated || next.Generation != it.Generation+1 {
			t.Errorf("after the cancel ended: %q %+v %v, want a new generation", result, next, err)
		}
	})
}

// A branch the service pushed for one caller is never written for
// another (issue 25). An item cancelled with its branch and merge request
// left on the forge (a gate refusal cancels it so) leaves them its
// caller's: another caller's submission for the branch is refused 409
// owner_conflict. And where a finished item's branch stays (the project
// keeps merged branches), another caller's new item fails before any
// push, and the branch keeps the first caller's head.
func TestABranchLeftByOneCallerIsNeverWrittenForAnother(t *testing.T) {
	t.Run("cancelled", func(t *testing.T) {
		h := newHarness(t, mr.Options{})
		h.project.AutoMerge = false
		it := h.submit(fakeSubmission("alice's\n"))
		if _, d := h.get(it.ID); d.HeadSHA == "" || d.MRNumber == 0 {
			t.Fatalf("the first item has no push and merge request: %+v", d)
		}
		if _, err := h.store.CancelItem(h.ctx, it.ID, "lease_expired", h.clock.Now()); err != nil {
			t.Fatal(err)
		}
		sub := fakeSubmission("mallory's\n")
		sub.Forge, sub.Project = "fake", "o/r"
		if _, _, err := mr.Submit(h.ctx, h.store, sub, h.project, "mallory", h.clock.Now()); wq.ErrorReason(err) != wq.ReasonOwnerConflict {
			t.Errorf("another caller's submission for the cancelled item's branch: %v, want %s", err, wq.ReasonOwnerConflict)
		}
		if _, result, err := mr.Submit(h.ctx, h.store, sub, h.project, "test", h.clock.Now()); err != nil || result != mr.ResultCreated {
			t.Errorf("its own caller's new submission: %q, %v", result, err)
		}
	})
	t.Run("merged, the branch kept", func(t *testing.T) {
		h := newHarness(t, mr.Options{DeleteSourceBranch: func(string, string) bool { return false }})
		it := h.submit(fakeSubmission("alice's\n"))
		h.advance(10*time.Minute, time.Minute)
		got, d := h.get(it.ID)
		if got.Phase != wq.PhaseCompleted || d.HeadSHA == "" {
			t.Fatalf("the first item: %s/%s", got.Phase, got.Reason)
		}
		sub := fakeSubmission("mallory's\n")
		sub.Forge, sub.Project = "fake", "o/r"
		next, result, err := mr.Submit(h.ctx, h.store, sub, h.project, "mallory", h.clock.Now())
		if err != nil || result != mr.ResultCreated {
			t.Fatalf("a new generation: %q, %v", result, err)
		}
		h.settle()
		if got, _ := h.get(next.ID); got.Phase != wq.PhaseFailed || !strings.Contains(got.Error, "another caller") {
			t.Errorf("another caller's item on the branch: %s, %q; want failed, naming the other caller", got.Phase, got.Error)
		}
		if head, _ := h.forge.BranchHead(h.ctx, "o/r", sub.SourceBranch); head != d.HeadSHA {
			t.Errorf("the branch moved from %s to %s", d.HeadSHA, head)
		}
	})
}

// A content refused for another reason (binary, a move's content) is
// still scanned: the caller hears of the secret in it too, and nothing
// is stored.
func TestARefusedContentIsStillScannedForSecrets(t *testing.T) {
	forEachDB(t, func(t *testing.T, s mr.Store, _ wq.Store) {
		ctx := context.Background()
		key := "aws_access_key_id = AKIA" + "Q3Z7XK2P9LMN4R8T\n"
		binary := strings.Repeat("x", 9000) + "\x00" + key
		sub := submission("x")
		sub.SourceBranch = "wq/refused"
		sub.FileActions = []mr.FileAction{
			{Action: mr.ActionCreate, FilePath: "blob.bin", Content: text(binary)},
			{Action: mr.ActionMove, FilePath: "new.txt", PreviousPath: "old.txt", Content: text(key)},
		}
		_, _, err := mr.Submit(ctx, s, sub, project, "alice", t0)
		var refusals wq.Refusals
		if !errors.As(err, &refusals) {
			t.Fatalf("want refusals, got %v", err)
		}
		got := map[string]bool{}
		for _, r := range refusals {
			got[fmt.Sprintf("%d %s", r.Index, r.Rule)] = true
			if strings.Contains(r.Message, "Q3Z7XK2P9LMN4R8T") {
				t.Errorf("a refusal names the secret: %+v", r)
			}
		}
		for _, want := range []string{"0 " + mr.RuleBinary, "0 " + mr.RuleSecret, "1 " + mr.RuleUnexpectedField, "1 " + mr.RuleSecret} {
			if !got[want] {
				t.Errorf("refusals %v lack %q", got, want)
			}
		}
		if it, _, _ := s.FindMRItem(ctx, "gitea", "o/r", "wq/refused"); it != nil {
			t.Errorf("a refused change stored item %s", it.ID)
		}
	})
}

// A merge request the forge made while its answer was lost is found by
// its marker when the next creation conflicts, and adopted: one merge
// request, recorded, merged.
func TestAMergeRequestMadeWhileItsAnswerWasLostIsAdopted(t *testing.T) {
	h := newHarness(t, mr.Options{})
	h.forge.lostCreates = 1
	it := h.submit(submission("v1\n"))
	h.advance(10*time.Minute, time.Minute)
	it, d := h.get(it.ID)
	wantEnded(t, it, wq.PhaseCompleted, mr.ReasonMerged)
	if n := h.forge.count("CreateMergeRequest"); n != 2 || len(h.forge.mrs) != 1 || d.MRNumber != 1 {
		t.Errorf("%d creations, %d merge requests, recorded !%d; want the lost one found and adopted", n, len(h.forge.mrs), d.MRNumber)
	}
}
