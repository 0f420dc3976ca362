package gitlab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/forgetest"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/testforge"
)

func TestConformanceOnAGitLabShapedServer(t *testing.T) {
	srv := gitlabtest.New()
	defer srv.Close()
	client, calls := forgetest.CountingClient()
	f, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	reviewing, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{ReviewToken: srv.AddUser("a-reviewer")})
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
		path := fmt.Sprintf("group/sub/project-%d", n.Add(1))
		srv.CreateProject(path)
		return forgetest.Project{Forge: f, Path: path, Calls: calls, People: people, WorkPageSize: gitlab.WorkPageSize,
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

// newProject starts a GitLab-shaped server with project g/p and returns
// the adapter for it.
func newProject(t *testing.T) (*gitlabtest.Server, *gitlab.Forge) {
	t.Helper()
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	srv.CreateProject("g/p")
	f, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return srv, f
}

func TestWrongTokenIsPermanent(t *testing.T) {
	srv, _ := newProject(t)
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
	_, f := newProject(t)
	ctx := context.Background()
	c, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "g/p", Base: "main", Branch: "wq/a", Message: "m",
		Changes: []wq.FileChange{{Action: "create", Path: "a", Content: []byte("x\n")}}})
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

func TestEveryDetailedMergeStatusHasABlocker(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]wq.MergeBlocker{
		"mergeable":                  wq.MergeClear,
		"checking":                   wq.MergeChecking,
		"unchecked":                  wq.MergeChecking,
		"preparing":                  wq.MergeChecking,
		"approvals_syncing":          wq.MergeChecking,
		"ci_must_pass":               wq.MergeCI,
		"ci_still_running":           wq.MergeCI,
		"status_checks_must_pass":    wq.MergeCI,
		"external_status_checks":     wq.MergeCI,
		"need_rebase":                wq.MergeRebase,
		"conflict":                   wq.MergeConflict,
		"broken_status":              wq.MergeConflict,
		"not_approved":               wq.MergePeople,
		"discussions_not_resolved":   wq.MergePeople,
		"draft_status":               wq.MergePeople,
		"requested_changes":          wq.MergePeople,
		"merge_request_blocked":      wq.MergePeople,
		"jira_association_missing":   wq.MergePeople,
		"security_policy_violations": wq.MergePeople,
		"locked_paths":               wq.MergePeople,
		"locked_lfs_files":           wq.MergePeople,
		"not_open":                   wq.MergeOther,
		"merge_time":                 wq.MergeOther,
		"commits_status":             wq.MergeOther,
		"a_word_from_a_newer_gitlab": wq.MergeOther,
	} {
		if got := gitlab.Blocker(status); got != want {
			t.Errorf("Blocker(%q) = %q, want %q", status, got, want)
		}
	}
}

func TestALockedMergeRequestIsOpenAndMerging(t *testing.T) {
	// GitLab locks a merge request while it merges it: treating that as
	// closed would cancel an item whose change is landing.
	srv, f := newProject(t)
	ctx := context.Background()
	mr := openMergeRequest(t, f)
	srv.SetMergeRequestState("g/p", mr.Number, "locked")
	got, err := f.GetMergeRequest(ctx, "g/p", mr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != wq.MergeRequestOpen || got.Blocker != wq.MergeMerging || got.Mergeable {
		t.Errorf("locked: state %q blocker %q mergeable %v; want open, merging, not mergeable", got.State, got.Blocker, got.Mergeable)
	}
}

// openMergeRequest commits a.txt to wq/a and opens a merge request of it
// into main.
func openMergeRequest(t *testing.T, f *gitlab.Forge) *wq.MergeRequest {
	t.Helper()
	commitTo(t, f, "wq/a", wq.FileChange{Action: "create", Path: "a", Content: []byte("a\n")})
	mr, err := f.CreateMergeRequest(context.Background(), wq.MergeRequestCreate{Project: "g/p", SourceBranch: "wq/a", TargetBranch: "main", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return mr
}

func commitTo(t *testing.T, f *gitlab.Forge, branch string, changes ...wq.FileChange) wq.Commit {
	t.Helper()
	c, err := f.CommitFiles(context.Background(), wq.CommitRequest{Project: "g/p", Base: "main", Branch: branch, Message: "m", Changes: changes})
	if err != nil {
		t.Fatalf("CommitFiles: %v", err)
	}
	return c
}

// seededProject is newProject whose main branch also holds run.sh (not
// executable) and other, landed through a merge request.
func seededProject(t *testing.T, other string) (*gitlabtest.Server, *gitlab.Forge) {
	t.Helper()
	srv, f := newProject(t)
	ctx := context.Background()
	commitTo(t, f, "wq/seed", wq.FileChange{Action: "create", Path: "run.sh", Content: []byte("echo\n")},
		wq.FileChange{Action: "create", Path: other, Content: []byte("old\n")})
	mr, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: "g/p", SourceBranch: "wq/seed", TargetBranch: "main", Title: "seed"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.MergeMergeRequest(ctx, "g/p", mr.Number, ""); err != nil {
		t.Fatalf("merge the seed: %v", err)
	}
	return srv, f
}

func TestAModeOnUpdateAndMoveIsSentAsChmod(t *testing.T) {
	srv, f := seededProject(t, "old.sh")
	yes := true
	c := commitTo(t, f, "wq/x", wq.FileChange{Action: "update", Path: "run.sh", Content: []byte("echo\n"), Executable: &yes},
		wq.FileChange{Action: "move", Path: "new.sh", PreviousPath: "old.sh", Executable: &yes},
		wq.FileChange{Action: "create", Path: "made.sh", Content: []byte("m\n"), Executable: &yes})
	for _, path := range []string{"run.sh", "new.sh", "made.sh"} {
		if got := srv.FileMode("g/p", c.SHA, path); got != "100755" {
			t.Errorf("%s has mode %s, want 100755", path, got)
		}
	}
	got, err := f.CommitChanges(context.Background(), "g/p", c.SHA)
	if err != nil {
		t.Fatal(err)
	}
	if !hasChange(got, wq.PathChange{Path: "run.sh", Status: wq.PathModified, Mode: wq.ModeExecutable}) {
		t.Errorf("CommitChanges = %v: the mode change of run.sh is missing", got)
	}
}

func TestTheServerDropsExecuteFilemodeOnUpdateAsGitLabDoes(t *testing.T) {
	// The adapter's chmod is only needed because GitLab drops the flag on
	// update: the server must too, or the test above proves nothing.
	srv, _ := seededProject(t, "old.txt")
	c := rawClient(t, srv)
	commit, _, err := c.Commits.CreateCommit("g/p", &gl.CreateCommitOptions{Branch: gl.Ptr("main"), CommitMessage: gl.Ptr("m"),
		Actions: []*gl.CommitActionOptions{{Action: gl.Ptr(gl.FileUpdate), FilePath: gl.Ptr("run.sh"), Content: gl.Ptr("echo 2\n"),
			ExecuteFilemode: gl.Ptr(true)}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.FileMode("g/p", commit.ID, "run.sh"); got != "100644" {
		t.Errorf("an update with execute_filemode made mode %s; GitLab keeps 100644", got)
	}
}

func rawClient(t *testing.T, srv *gitlabtest.Server) *gl.Client {
	t.Helper()
	c, err := gl.NewClient(srv.Token, gl.WithBaseURL(srv.URL+"/api/v4"), gl.WithoutRetries())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hasChange(list []wq.PathChange, want wq.PathChange) bool {
	for _, c := range list {
		if c == want {
			return true
		}
	}
	return false
}

func TestAForksMergeRequestWithOurBranchNameIsNeverFound(t *testing.T) {
	srv, f := newProject(t)
	ctx := context.Background()
	srv.CreateForkMergeRequest("g/p", "wq/a", "main", "from a fork")
	if mr, err := f.FindMergeRequest(ctx, "g/p", "wq/a", "main"); err != nil || mr != nil {
		t.Errorf("with only a fork's merge request: %+v, %v; want none", mr, err)
	}
	commitTo(t, f, "wq/a", wq.FileChange{Action: "create", Path: "a", Content: []byte("a\n")})
	ours, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: "g/p", SourceBranch: "wq/a", TargetBranch: "main", Title: "ours"})
	if err != nil {
		t.Fatalf("a fork's merge request must not block ours: %v", err)
	}
	srv.CreateForkMergeRequest("g/p", "wq/a", "main", "newer, from a fork")
	if got, err := f.FindMergeRequest(ctx, "g/p", "wq/a", "main"); err != nil || got == nil || got.Number != ours.Number {
		t.Errorf("FindMergeRequest = %+v, %v; want ours (!%d), not the newer fork's", got, err, ours.Number)
	}
}

func TestAMergeRequestIntoAMissingBranchFailsForGood(t *testing.T) {
	_, f := newProject(t)
	commitTo(t, f, "wq/a", wq.FileChange{Action: "create", Path: "a", Content: []byte("a\n")})
	_, err := f.CreateMergeRequest(context.Background(), wq.MergeRequestCreate{Project: "g/p", SourceBranch: "wq/a",
		TargetBranch: "gone", Title: "t"})
	if !wq.IsForgeError(err, wq.ForgePermanent) || !strings.Contains(err.Error(), `Target branch \"gone\" does not exist`) &&
		!strings.Contains(err.Error(), `Target branch "gone" does not exist`) {
		t.Errorf("%v: want a permanent error with GitLab's message", err)
	}
}

func TestCompareTreesSeesModeChangesAndRenames(t *testing.T) {
	_, f := seededProject(t, "old.txt")
	yes := true
	commitTo(t, f, "wq/x", wq.FileChange{Action: "chmod", Path: "run.sh", Executable: &yes},
		wq.FileChange{Action: "move", Path: "new.txt", PreviousPath: "old.txt"})
	got, err := f.CompareTrees(context.Background(), "g/p", "main", "wq/x", []string{"run.sh", "old.txt", "new.txt"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []wq.PathChange{{Path: "run.sh", Status: wq.PathModified}, {Path: "old.txt", Status: wq.PathRemoved},
		{Path: "new.txt", Status: wq.PathAdded}} {
		if !hasChange(got, want) {
			t.Errorf("CompareTrees = %v, missing %v", got, want)
		}
	}
}

func TestCompareBeyondGitLabsDiffLimitsFailsForGood(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"commits":[],"diffs":[{"old_path":"a","new_path":"a"}],"compare_timeout":true}`))
	}))
	defer srv.Close()
	f, _ := gitlab.New(srv.URL, "t", gitlab.Options{})
	if _, err := f.CompareTrees(context.Background(), "g/p", "main", "wq/x", []string{"a"}); !wq.IsForgeError(err, wq.ForgePermanent) {
		t.Errorf("%v: an incomplete list must not pass for the whole", err)
	}
}

func TestHookMissingEventsIsUpdatedAndNoteEventsAreDropped(t *testing.T) {
	srv, f := newProject(t)
	ctx := context.Background()
	const url = "http://wq.example/webhooks/gitlab"
	if got, err := f.EnsureWebhook(ctx, "g/p", url, "s"); err != nil || got != wq.WebhookCreated {
		t.Fatalf("%q %v", got, err)
	}
	want := map[string]bool{"merge_requests_events": true, "issues_events": true, "pipeline_events": true, "job_events": true,
		"note_events": false, "push_events": true, "alert_status:executable": true}
	if got := srv.HookEvents("g/p", url); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("created with %v, want %v", got, want)
	}
	srv.SetHookEvent("g/p", url, "pipeline_events", false) // someone unticked it
	if got, err := f.EnsureWebhook(ctx, "g/p", url, "s"); err != nil || got != wq.WebhookUpdated {
		t.Fatalf("%q %v, want updated", got, err)
	}
	srv.SetHookEvent("g/p", url, "issues_events", false) // made before the inventory read issues
	if got, err := f.EnsureWebhook(ctx, "g/p", url, "s"); err != nil || got != wq.WebhookUpdated {
		t.Fatalf("%q %v, want updated", got, err)
	}
	srv.SetHookEvent("g/p", url, "push_events", false) // made before the inventory followed pushes
	if got, err := f.EnsureWebhook(ctx, "g/p", url, "s"); err != nil || got != wq.WebhookUpdated {
		t.Fatalf("%q %v, want updated", got, err)
	}
	srv.SetHookEvent("g/p", url, "note_events", true) // an older workqueue subscribed notes it never read
	if got, err := f.EnsureWebhook(ctx, "g/p", url, "s"); err != nil || got != wq.WebhookUpdated {
		t.Fatalf("%q %v, want updated", got, err)
	}
	if got := srv.HookEvents("g/p", url); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events after update: %v, want %v", got, want)
	}
	if got, err := f.EnsureWebhook(ctx, "g/p", url, "s"); err != nil || got != wq.WebhookFound {
		t.Errorf("%q %v, want found", got, err)
	}
}

func TestAHookGitLabDisabledIsRepairedNotFound(t *testing.T) {
	srv, f := newProject(t)
	ctx := context.Background()
	var failing atomic.Bool
	failing.Store(true)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer receiver.Close()
	if got, err := f.EnsureWebhook(ctx, "g/p", receiver.URL, "s"); err != nil || got != wq.WebhookCreated {
		t.Fatalf("%q %v", got, err)
	}
	// Four pushes, four failing Pipeline Hook deliveries: GitLab disables
	// the hook, and never retries them.
	for i := range 4 {
		commitTo(t, f, "wq/a", wq.FileChange{Action: "create", Path: fmt.Sprint(i), Content: []byte("x")})
	}
	srv.WaitForDeliveries()
	if ev := srv.HookEvents("g/p", receiver.URL); !ev["alert_status:temporarily_disabled"] {
		t.Fatalf("after four failures the hook is %v, want temporarily_disabled", ev)
	}
	failing.Store(false) // the service is back; GitLab would still not deliver
	if got, err := f.EnsureWebhook(ctx, "g/p", receiver.URL, "s"); err != nil || got != wq.WebhookUpdated {
		t.Fatalf("EnsureWebhook on a disabled hook: %q %v, want updated", got, err)
	}
	if ev := srv.HookEvents("g/p", receiver.URL); !ev["alert_status:executable"] || srv.HookCount("g/p") != 1 {
		t.Errorf("after the repair: %v and %d hooks; want one executable hook", ev, srv.HookCount("g/p"))
	}
	if got, err := f.EnsureWebhook(ctx, "g/p", receiver.URL, "s"); err != nil || got != wq.WebhookFound {
		t.Errorf("%q %v, want found", got, err)
	}
}

func TestIncidentsAndConfidentialIssuesAreNotWork(t *testing.T) {
	// Incidents become work only as issues (DESIGN section 9), and a
	// confidential issue's text is not for every agent.
	srv, f := newProject(t)
	ctx := context.Background()
	incident := srv.CreateIssueOfType("g/p", "Disk full", "incident", false)
	secret := srv.CreateIssueOfType("g/p", "A hole", "issue", true)
	task := srv.CreateIssueOfType("g/p", "Subtask", "task", false)
	plain := srv.CreateIssueOfType("g/p", "Broken", "issue", false)
	work, err := f.ListOpenWork(ctx, "g/p")
	if err != nil {
		t.Fatal(err)
	}
	if len(work) != 1 || work[0].Number != plain || work[0].Kind != wq.WorkIssue {
		t.Errorf("ListOpenWork = %+v, want issue %d alone", work, plain)
	}
	for _, n := range []int64{incident, secret, task} {
		if _, err := f.GetWork(ctx, "g/p", wq.WorkIssue, n); !wq.IsForgeError(err, wq.ForgeNotFound) {
			t.Errorf("GetWork of issue %d: %v, want not found", n, err)
		}
	}
}

func TestApprovalsMakeAMergeRequestApproved(t *testing.T) {
	srv, f := newProject(t)
	ctx := context.Background()
	mr := openMergeRequest(t, f)
	verdict := func() string {
		t.Helper()
		w, err := f.GetWork(ctx, "g/p", wq.WorkPR, mr.Number)
		if err != nil {
			t.Fatal(err)
		}
		return w.ReviewState
	}
	if got := verdict(); got != wq.ReviewNone {
		t.Errorf("fresh: %q", got)
	}
	// The token's own approval counts as any other: GitLab leaves
	// approval by the author to the project's settings.
	c := rawClient(t, srv)
	if _, _, err := c.MergeRequestApprovals.ApproveMergeRequest("g/p", mr.Number, nil); err != nil {
		t.Fatal(err)
	}
	if got := verdict(); got != wq.ReviewApproved {
		t.Errorf("approved: %q", got)
	}
	if _, err := c.MergeRequestApprovals.UnapproveMergeRequest("g/p", mr.Number); err != nil {
		t.Fatal(err)
	}
	if got := verdict(); got != wq.ReviewNone {
		t.Errorf("unapproved: %q", got)
	}
}

func TestAnIssueIsOpenedAsAPlainIssueWithItsLabelsByName(t *testing.T) {
	// Labels go by name, for GitLab to make those the project lacks, and
	// the type is asked for: an incident would not be work.
	type request struct {
		method, path, contentType string
		body                      map[string]any
	}
	got := make(chan request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := request{method: r.Method, path: r.URL.EscapedPath(), contentType: r.Header.Get("Content-Type")}
		json.NewDecoder(r.Body).Decode(&req.body)
		got <- req
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id": 9001, "iid": 7, "title": "Disk full", "state": "opened", "labels": ["incident", "sev2"],
			"author": {"username": "bridge"}, "issue_type": "issue", "updated_at": "2026-03-01T10:00:00.123Z",
			"web_url": "https://gitlab.example/g/p/-/issues/7"}`)
	}))
	defer srv.Close()
	f, _ := gitlab.New(srv.URL, "t", gitlab.Options{})
	w, err := f.CreateIssue(context.Background(), wq.IssueCreate{Project: "g/p", Title: "Disk full", Body: "from Sentry\n/close",
		Labels: []string{"incident", "sev2"}})
	if err != nil {
		t.Fatal(err)
	}
	req := <-got
	// A line of what a provider observed never runs as a quick action.
	wantBody := map[string]any{"title": "Disk full", "description": "from Sentry\n /close", "labels": "incident,sev2", "issue_type": "issue"}
	if req.method != "POST" || req.path != "/api/v4/projects/g%2Fp/issues" || !strings.HasPrefix(req.contentType, "application/json") ||
		fmt.Sprint(req.body) != fmt.Sprint(wantBody) {
		t.Errorf("request %+v, want POST /api/v4/projects/g%%2Fp/issues with %v", req, wantBody)
	}
	want := wq.WorkInfo{Kind: wq.WorkIssue, Number: 7, State: wq.MergeRequestOpen, Title: "Disk full", Labels: []string{"incident", "sev2"},
		URL: "https://gitlab.example/g/p/-/issues/7", Author: "bridge", UpdatedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	if diff := cmp.Diff(want, *w); diff != "" {
		t.Errorf("CreateIssue (-want +got):\n%s", diff)
	}
}

// A move carrying content is refused before any call: GitLab would write
// it, Gitea would not apply it as given, and the two adapters agree.
func TestAMoveCarryingContentIsRefusedBeforeAnyCall(t *testing.T) {
	_, f := seededProject(t, "old.txt")
	_, err := f.CommitFiles(context.Background(), wq.CommitRequest{Project: "g/p", Base: "main", Branch: "wq/m", Message: "m",
		Changes: []wq.FileChange{{Action: "move", Path: "new.txt", PreviousPath: "old.txt", Content: []byte("other\n")}}})
	if !wq.IsForgeError(err, wq.ForgePermanent) {
		t.Fatalf("%v: want a permanent refusal", err)
	}
	if _, err := f.BranchHead(context.Background(), "g/p", "wq/m"); !wq.IsForgeError(err, wq.ForgeNotFound) {
		t.Errorf("the branch exists after a refused commit: %v", err)
	}
}

func TestInspectWebhookSaysWhatIsWrongWithTheServicesHook(t *testing.T) {
	srv, f := newProject(t)
	ctx := context.Background()
	const url = "http://wq.example/webhooks/gitlab"
	if h, err := f.InspectWebhook(ctx, "g/p", url); err != nil || fmt.Sprint(h.Problems) != "[missing]" {
		t.Fatalf("no hook: %+v %v, want missing", h, err)
	}
	if _, err := f.EnsureWebhook(ctx, "g/p", url, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ResetWebhookSecret(ctx, "g/p", url, "s"); err != nil {
		t.Fatal(err)
	}
	h, err := f.InspectWebhook(ctx, "g/p", url)
	if err != nil || !h.OK() || len(h.HookIDs) != 1 {
		t.Errorf("after ensure and a secret reset: %+v %v, want one right hook", h, err)
	}
	srv.SetHookEvent("g/p", url, "job_events", false)
	if h, _ := f.InspectWebhook(ctx, "g/p", url); fmt.Sprint(h.Problems) != "[wrong_events]" {
		t.Errorf("a job event unticked: %+v, want wrong_events", h)
	}
}

// The holder note (controlplane.HolderNotes) on an issue and a merge
// request: the service's note with the marker is found and edited, a
// person's note holding the marker is not the service's, and an edit
// runs no quick action.
func TestTheServicesOwnNoteIsFoundAndEditedOnIssuesAndMergeRequests(t *testing.T) {
	srv, f := newProject(t)
	ctx := context.Background()
	const marker = "<!-- holder -->"
	issue, err := f.CreateIssue(ctx, wq.IssueCreate{Project: "g/p", Title: "Broken"})
	if err != nil {
		t.Fatal(err)
	}
	person := srv.AddUser("person")
	pf, err := gitlab.New(srv.URL, person, gitlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pf.CommentOnWork(ctx, "g/p", wq.WorkIssue, issue.Number, marker+" a person's copy"); err != nil {
		t.Fatal(err)
	}
	if id, err := f.FindOwnWorkComment(ctx, "g/p", wq.WorkIssue, issue.Number, marker); err != nil || id != 0 {
		t.Fatalf("only a person's note holds the marker: found %d, %v; want none", id, err)
	}
	made, err := f.CommentOnWork(ctx, "g/p", wq.WorkIssue, issue.Number, marker+" held by a")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := f.FindOwnWorkComment(ctx, "g/p", wq.WorkIssue, issue.Number, marker); err != nil || id != made {
		t.Fatalf("found %d, %v; want the service's note %d", id, err, made)
	}
	if err := f.EditWorkComment(ctx, "g/p", wq.WorkIssue, issue.Number, made, marker+" held by b\n/close"); err != nil {
		t.Fatal(err)
	}
	if w, err := f.GetWork(ctx, "g/p", wq.WorkIssue, issue.Number); err != nil || w.State != wq.MergeRequestOpen {
		t.Errorf("after an edit holding /close the issue is %+v, %v; want open", w, err)
	}

	if _, err := f.CommitFiles(ctx, wq.CommitRequest{Project: "g/p", Base: "main", Branch: "wq/held", Message: "m",
		Changes: []wq.FileChange{{Action: "create", Path: "a", Content: []byte("a")}}}); err != nil {
		t.Fatal(err)
	}
	mr, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: "g/p", SourceBranch: "wq/held", TargetBranch: "main", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	made, err = f.CommentOnWork(ctx, "g/p", wq.WorkPR, mr.Number, marker+" held")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := f.FindOwnWorkComment(ctx, "g/p", wq.WorkPR, mr.Number, marker); err != nil || id != made {
		t.Fatalf("on the merge request: found %d, %v; want %d", id, err, made)
	}
	if err := f.EditWorkComment(ctx, "g/p", wq.WorkPR, mr.Number, made, marker+" released"); err != nil {
		t.Errorf("edit on the merge request: %v", err)
	}
}
