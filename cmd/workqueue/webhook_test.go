package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
)

const hookSecret = "hook-secret-for-tests"

// startHooked runs serve with hour-long sweep and reconcile intervals, so
// that only a webhook can move an item quickly, and points the repository's
// webhook at it.
func startHooked(t testing.TB) *apiWorld {
	t.Helper()
	w := startWithWebhookSecret(t)
	srv := testgitea.Get(t)
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	owner, name, _ := strings.Cut(w.repo, "/")
	if _, _, err := c.CreateRepoHook(owner, name, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: true, Events: []string{"pull_request"},
		Config: map[string]string{"url": w.base + "/webhooks/gitea", "content_type": "json", "secret": hookSecret}}); err != nil {
		t.Fatal(err)
	}
	return w
}

// startWithWebhookSecret runs serve like startHooked, but Gitea delivers
// nothing: only the test's own deliveries arrive.
func startWithWebhookSecret(t testing.TB) *apiWorld {
	t.Helper()
	t.Setenv("WQ_TEST_HOOK_SECRET", hookSecret)
	w := startAPI(t, "", func(c *config.Config) {
		c.Processing.SweepInterval = config.Duration(time.Hour)
		mrtype.In(c).ReconcileInterval = config.Duration(time.Hour)
		mrtype.In(c).EmptyCheckInterval = config.Duration(time.Hour)
		c.Projects[0].AutoMerge = false
		c.Forges[0].WebhookSecretEnv = "WQ_TEST_HOOK_SECRET"
	})
	return w
}

// settled reports whether an mr item has nothing left to do until its
// hour-long reconcile: the state a refused delivery must not change.
func settled(it map[string]any) bool {
	dims, _ := it["dimensions"].([]any)
	pending := map[string]bool{}
	for _, d := range dims {
		m := d.(map[string]any)
		pending[m["dimension"].(string)] = m["status"] == "false" || m["pending_until"] != nil
	}
	return len(dims) == 4 && pending["needs_mr"] && pending["needs_dashboard"] && pending["needs_empty_check"] && pending["needs_reconcile"]
}

// openPR submits a change and waits until its pull request exists and the
// item is idle.
func (w *apiWorld) openPR(branch string) (string, int64) {
	w.t.Helper()
	// Each branch adds its own file, so merging one never empties another.
	file := strings.ReplaceAll(branch, "/", "-") + ".txt"
	_, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch,
		map[string]any{"action": "create", "file_path": file, "content": branch + "\n"}))
	id := body["id"].(string)
	// Settled: the pull request exists and the item waits for nothing but
	// a webhook, so what happens next is the webhook's doing.
	item := w.waitItem(id, "the pull request", settled)
	return id, int64(item["detail"].(map[string]any)["mr_iid"].(float64))
}

func TestWebhookCompletesAndCancelsItemsWithinTwoSeconds(t *testing.T) {
	w := startHooked(t)
	ctx := context.Background()
	mergedID, mergedPR := w.openPR("workqueue/to-merge")
	closedID, closedPR := w.openPR("workqueue/to-close")

	w.personMerges(mergedPR)
	merged := time.Now()
	item := w.waitItem(mergedID, "completion by webhook", func(it map[string]any) bool { return it["phase"] != "active" })
	mergeLatency := time.Since(merged)
	if item["phase"] != "completed" || item["reason"] != "merged" || mergeLatency > 2*time.Second {
		t.Errorf("after the merge: %s/%s in %v, want completed/merged within 2s", item["phase"], item["reason"], mergeLatency)
	}

	closed := wq.MergeRequestClosed
	if _, err := w.forge.UpdateMergeRequest(ctx, w.repo, closedPR, wq.MergeRequestUpdate{State: &closed}); err != nil {
		t.Fatal(err)
	}
	closedAt := time.Now()
	item = w.waitItem(closedID, "cancellation by webhook", func(it map[string]any) bool { return it["phase"] != "active" })
	closeLatency := time.Since(closedAt)
	if item["phase"] != "cancelled" || item["reason"] != "closed" || closeLatency > 2*time.Second {
		t.Errorf("after the close: %s/%s in %v, want cancelled/closed within 2s", item["phase"], item["reason"], closeLatency)
	}
	t.Logf("forge call returned → item terminal: merge %v, close %v", mergeLatency, closeLatency)
}

func signedDelivery(t *testing.T, w *apiWorld, delivery, body, secret string) (int, map[string]any) {
	t.Helper()
	return signedEvent(t, w, "pull_request", delivery, body, secret)
}

func signedEvent(t *testing.T, w *apiWorld, event, delivery, body, secret string) (int, map[string]any) {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	req, _ := http.NewRequest("POST", w.base+"/webhooks/gitea", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Gitea-Event", event)
	req.Header.Set("X-Gitea-Delivery", delivery)
	req.Header.Set("X-Gitea-Signature", hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestWebhookRefusesForgeriesAndStoresEachDeliveryOnce(t *testing.T) {
	w := startWithWebhookSecret(t)
	id, pr := w.openPR("workqueue/guarded")
	before := w.waitItem(id, "settled", settled)
	event := func(action string, merged bool) string {
		return fmt.Sprintf(`{"action":%q,"number":%d,"pull_request":{"number":%d,"merged":%t,"state":"open","updated_at":"%s",
			"head":{"ref":"workqueue/guarded","sha":"%s"}},"repository":{"full_name":%q}}`, action, pr, pr, merged,
			time.Now().UTC().Format(time.RFC3339), before["detail"].(map[string]any)["head_sha"], w.repo)
	}
	if status, _ := signedDelivery(t, w, "forged-1", event("closed", true), "not-the-secret"); status != http.StatusUnauthorized {
		t.Errorf("wrong signature: %d", status)
	}
	req, _ := http.NewRequest("POST", w.base+"/webhooks/gitea", strings.NewReader(event("closed", true)))
	req.Header.Set("X-Gitea-Event", "pull_request")
	req.Header.Set("X-Gitea-Delivery", "forged-2")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("missing signature: %v %v", resp.StatusCode, err)
	}
	if status, _ := signedDelivery(t, w, "big", strings.Repeat(" ", 2<<20), hookSecret); status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", status)
	}
	if status, _ := signedDelivery(t, w, "bad", `{"action":`, hookSecret); status != http.StatusBadRequest {
		t.Errorf("malformed body: %d", status)
	}
	// A verified delivery that names nothing is acknowledged: a refusal
	// counts towards the failures after which GitLab disables a hook.
	if status, out := signedDelivery(t, w, "x", `{}`, hookSecret); status != http.StatusOK || out["stored"] != float64(0) {
		t.Errorf("body without a pull request: %d %v, want 200 storing nothing", status, out)
	}
	if status, _, _ := w.do("POST", "/webhooks/nosuchforge", "", map[string]any{}); status != http.StatusNotFound {
		t.Errorf("unknown forge: %d", status)
	}
	if after := w.waitItem(id, "unchanged", func(map[string]any) bool { return true }); after["phase"] != "active" || after["updated_at"] != before["updated_at"] {
		t.Errorf("a refused delivery changed the item: %v", after)
	}

	// A genuine "edited" delivery, posted twice: stored and applied once.
	status, first := signedDelivery(t, w, "same-delivery", event("edited", false), hookSecret)
	if status != http.StatusOK || first["stored"] != float64(1) {
		t.Fatalf("first delivery: %d %v", status, first)
	}
	status, second := signedDelivery(t, w, "same-delivery", event("edited", false), hookSecret)
	if status != http.StatusOK || second["duplicate"] != true || second["stored"] != float64(0) {
		t.Errorf("redelivery: %d %v, want a duplicate that stores nothing", status, second)
	}

	// Once the item is terminal, events for it are acknowledged and not stored (DDR-32, DDR-37).
	if status, body, _ := w.do("POST", "/api/v1/items/"+id+"/cancel", w.tokens["retry"], nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, body)
	}
	w.waitItem(id, "cancellation", func(it map[string]any) bool { return it["phase"] == "cancelled" })
	status, late := signedDelivery(t, w, "late", event("closed", true), hookSecret)
	if status != http.StatusOK || late["stored"] != float64(0) {
		t.Errorf("an event for a cancelled item: %d %v, want acknowledged and not stored", status, late)
	}
	if item := w.waitItem(id, "still cancelled", func(map[string]any) bool { return true }); item["phase"] != "cancelled" {
		t.Errorf("a late event moved a cancelled item to %v", item["phase"])
	}
}

// TestCIEventsRecordTheHeadPipelineAndResolveByIt sends Gitea Actions
// events through HTTP: a run of the pushed head is recorded as the head's
// pipeline, after which a job event naming only that run finds the item,
// and a run of another commit changes nothing.
func TestCIEventsRecordTheHeadPipelineAndResolveByIt(t *testing.T) {
	w := startWithWebhookSecret(t)
	id, _ := w.openPR("workqueue/ci")
	before := w.waitItem(id, "settled", settled)
	head := before["detail"].(map[string]any)["head_sha"].(string)
	send := func(event, delivery, body string) map[string]any {
		t.Helper()
		status, out := signedEvent(t, w, event, delivery, body, hookSecret)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %v", delivery, status, out)
		}
		return out
	}
	run := func(id int64, sha, action string) string {
		return fmt.Sprintf(`{"action":%q,"workflow_run":{"id":%d,"head_sha":%q,"head_branch":"workqueue/ci","status":"queued"},
			"repository":{"full_name":%q}}`, action, id, sha, w.repo)
	}
	// A run of another commit on the branch is history: once the item has
	// its number, CI events resolve by its pushed head or head pipeline.
	if out := send("workflow_run", "run-old", run(4100, "0000000000000000000000000000000000000000", "requested")); out["stored"] != float64(0) {
		t.Fatalf("a run of another commit on the branch resolved: %v", out)
	}
	if out := send("workflow_run", "run-head", run(4242, head, "requested")); out["stored"] != float64(1) {
		t.Fatalf("the head's run did not resolve: %v", out)
	}
	item := w.waitItem(id, "the head pipeline recorded", func(it map[string]any) bool {
		return it["detail"].(map[string]any)["head_pipeline_id"] == float64(4242) && settled(it)
	})
	if item["phase"] != "active" {
		t.Fatalf("phase %v", item["phase"])
	}
	// A job event that names only its run: resolved by the head pipeline.
	job := fmt.Sprintf(`{"action":"completed","workflow_job":{"id":9,"run_id":4242,"conclusion":"failure"},"repository":{"full_name":%q}}`, w.repo)
	if out := send("workflow_job", "job-1", job); out["stored"] != float64(1) {
		t.Errorf("a job of the head pipeline did not resolve by pipeline: %v", out)
	}
	other := fmt.Sprintf(`{"action":"completed","workflow_job":{"id":10,"run_id":4100},"repository":{"full_name":%q}}`, w.repo)
	if out := send("workflow_job", "job-2", other); out["stored"] != float64(0) {
		t.Errorf("a job of a pipeline that is not the head's resolved: %v", out)
	}
	w.waitItem(id, "settled after the job", settled)
}

// TestOlderWebhookEventDoesNotMoveThePhaseBack delivers, through HTTP, a
// reopen at T2, then a close stamped T1 < T2 (a forge retry arriving
// late): the close is applied as stale and the item stays active. A close
// stamped after T2 then cancels it, so the guard orders rather than
// blocks.
func TestOlderWebhookEventDoesNotMoveThePhaseBack(t *testing.T) {
	w := startWithWebhookSecret(t)
	id, pr := w.openPR("workqueue/ordered")
	head := w.waitItem(id, "settled", settled)["detail"].(map[string]any)["head_sha"].(string)
	event := func(action, state string, at time.Time) string {
		return fmt.Sprintf(`{"action":%q,"number":%d,"pull_request":{"number":%d,"merged":false,"state":%q,"updated_at":%q,
			"head":{"ref":"workqueue/ordered","sha":%q}},"repository":{"full_name":%q}}`, action, pr, pr, state, at.Format(time.RFC3339), head, w.repo)
	}
	t2 := time.Now().UTC().Truncate(time.Second)
	t1, t3, t4 := t2.Add(-time.Minute), t2.Add(time.Minute), t2.Add(2*time.Minute)
	applied := func(at time.Time) func(map[string]any) bool {
		return func(it map[string]any) bool { return it["last_event_at"] == at.Format(time.RFC3339) && settled(it) }
	}
	deliver := func(delivery, body string) {
		t.Helper()
		if status, out := signedDelivery(t, w, delivery, body, hookSecret); status != http.StatusOK || out["stored"] != float64(1) {
			t.Fatalf("%s: %d %v", delivery, status, out)
		}
	}

	deliver("reopen-t2", event("reopened", "open", t2))
	w.waitItem(id, "the reopen applied", applied(t2))

	// The late close, then a newer edit: events apply oldest first, so once
	// the edit is applied the close was too.
	deliver("close-t1", event("closed", "closed", t1))
	deliver("edit-t3", event("edited", "open", t3))
	item := w.waitItem(id, "the late close and the edit applied", applied(t3))
	if item["phase"] != "active" {
		t.Fatalf("an event older than the last applied moved the phase to %v/%v", item["phase"], item["reason"])
	}

	// A close that really happened: the event asks for a reconcile, which
	// reads the closed pull request (no payload moves the phase itself).
	closed := wq.MergeRequestClosed
	if _, err := w.forge.UpdateMergeRequest(context.Background(), w.repo, pr, wq.MergeRequestUpdate{State: &closed}); err != nil {
		t.Fatal(err)
	}
	deliver("close-t4", event("closed", "closed", t4))
	item = w.waitItem(id, "the newer close applied", func(it map[string]any) bool { return it["phase"] != "active" })
	if item["phase"] != "cancelled" || item["last_event_at"] != t4.Format(time.RFC3339) {
		t.Errorf("after a newer close: %v/%v at %v, want cancelled at %s", item["phase"], item["reason"], item["last_event_at"], t4)
	}
}

// TestWebhookAnsweredBeforeACrashIsAppliedAfterRestart kills serve with
// SIGKILL after it answered a delivery and before anything processed it:
// the first process handles no item types (an API-only instance), so only
// the restarted one can apply the stored event.
func TestWebhookAnsweredBeforeACrashIsAppliedAfterRestart(t *testing.T) {
	srv := testgitea.Get(t)
	t.Setenv("WQ_TEST_GITEA_TOKEN", srv.Token)
	t.Setenv("WQ_TEST_HOOK_SECRET", hookSecret)
	ctx := context.Background()
	repo := srv.NewRepo(t)
	dir := t.TempDir()
	dbURL := "sqlite://" + filepath.Join(dir, "wq.db")
	f, err := gitea.New(srv.URL, srv.Token, gitea.Options{})
	if err != nil {
		t.Fatal(err)
	}

	// An item whose pull request is open and which waits for nothing but
	// a webhook (its reconcile is an hour away).
	st := testdb.OpenURL(t, dbURL)
	sub := mr.Submission{Forge: "gitea", Project: repo, SourceBranch: "workqueue/crash", TargetBranch: "main", Title: "Crash",
		FileActions: []mr.FileAction{{Action: "create", FilePath: "c.txt", Content: new("crash\n")}}}
	item, _, err := mr.Submit(ctx, st, sub, mr.Project{}, "test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.CommitFiles(ctx, wq.CommitRequest{Project: repo, Base: "main", Branch: "workqueue/crash", Message: "Crash",
		Changes: []wq.FileChange{{Action: "create", Path: "c.txt", Content: []byte("crash\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: repo, SourceBranch: "workqueue/crash", TargetBranch: "main", Title: "Crash"})
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	l, err := st.ClaimItem(ctx, item.ID, "seed", time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordForgeState(ctx, l, mr.ForgeState{MRNumber: pr.Number, MRURL: pr.URL, HeadSHA: c.SHA, PushedHash: item.ContentHash}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyChange(ctx, l, wq.Change{Dimensions: []wq.DimensionUpdate{
		{DimensionKey: wq.DimensionKey{Dimension: mr.DimMR}, Status: wq.StatusFalse},
		{DimensionKey: wq.DimensionKey{Dimension: mr.DimDashboard}, Status: wq.StatusFalse},
		{DimensionKey: wq.DimensionKey{Dimension: mr.DimEmptyCheck}, Status: wq.StatusTrue, PendingUntil: later},
		{DimensionKey: wq.DimensionKey{Dimension: mr.DimReconcile}, Status: wq.StatusTrue, PendingUntil: later}}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	seeded, _ := st.GetItem(ctx, item.ID)
	if exited, err := st.FinishProcessing(ctx, l, seeded.Revision, time.Now()); err != nil || !exited {
		t.Fatal(exited, err)
	}

	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	config := func(handled string) string {
		path := filepath.Join(dir, "wq-"+handled+".yaml")
		doc := fmt.Sprintf(`listen: 127.0.0.1:%d
database: %q
handled_types: [%s]
processing: {sweep_interval: 1h}
mr: {reconcile_interval: 1h, empty_check_interval: 1h}
forges: [{name: gitea, kind: gitea, url: %q, token_env: WQ_TEST_GITEA_TOKEN, webhook_secret_env: WQ_TEST_HOOK_SECRET}]
projects: [{match: "workqueue/**", forge: gitea}]
`, port, dbURL, handled, srv.URL)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cl, _ := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	owner, name, _ := strings.Cut(repo, "/")
	if _, _, err := cl.CreateRepoHook(owner, name, sdk.CreateHookOption{Type: sdk.HookTypeGitea, Active: true, Events: []string{"pull_request"},
		Config: map[string]string{"url": base + "/webhooks/gitea", "content_type": "json", "secret": hookSecret}}); err != nil {
		t.Fatal(err)
	}

	apiOnly, log := serveProcess(t, config(""))
	waitReady(t, base, log)
	eventually.True(t, 30*time.Second, "merge", func() (bool, any) {
		got, _ := f.GetMergeRequest(ctx, repo, pr.Number)
		return got != nil && got.Mergeable && f.MergeMergeRequest(ctx, repo, pr.Number, c.SHA) == nil, got
	})
	eventually.True(t, 10*time.Second, "the webhook's event stored", func() (bool, any) {
		ev, _ := st.NextEvent(ctx, item.ID)
		return ev != nil, log
	})
	apiOnly.Process.Signal(syscall.SIGKILL)
	apiOnly.Wait()
	if got, _ := st.GetItem(ctx, item.ID); got.Phase != wq.PhaseActive {
		t.Fatalf("the API-only instance processed the item: %s", got.Phase)
	}

	restarted, log2 := serveProcess(t, config("mr"))
	eventually.True(t, 20*time.Second, "the event applied after the restart", func() (bool, any) {
		got, _ := st.GetItem(ctx, item.ID)
		return got.Phase == wq.PhaseCompleted && got.Reason == mr.ReasonMerged, log2
	})
	restarted.Process.Signal(syscall.SIGTERM)
	restarted.Wait()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitReady(t *testing.T, base string, log fmt.Stringer) {
	t.Helper()
	eventually.True(t, 30*time.Second, "serve ready", func() (bool, any) {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false, log
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, log
	})
}

func TestHooksEnsureIsIdempotentAndReportsWhatItDid(t *testing.T) {
	srv := testgitea.Get(t)
	t.Setenv("WQ_TEST_GITEA_TOKEN", srv.Token)
	t.Setenv("WQ_TEST_HOOK_SECRET", hookSecret)
	repo := srv.NewRepo(t)
	cfgFile := filepath.Join(t.TempDir(), "wq.yaml")
	// Only this test's repository is covered, so other tests' repositories are left alone.
	doc := fmt.Sprintf(`public_url: http://127.0.0.1:9/
forges: [{name: gitea, kind: gitea, url: %q, token_env: WQ_TEST_GITEA_TOKEN, webhook_secret_env: WQ_TEST_HOOK_SECRET}]
projects: [{match: %q, forge: gitea}]
`, srv.URL, repo)
	if err := os.WriteFile(cfgFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCommand(t, "hooks", "ensure", "--config", cfgFile)
	if err != nil || !strings.Contains(out, "created "+repo+": gitea → http://127.0.0.1:9/webhooks/gitea") {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	out, err = runCommand(t, "hooks", "ensure", "--config", cfgFile)
	if err != nil || !strings.Contains(out, "found "+repo) || strings.Contains(out, "created") {
		t.Errorf("second run: %v\n%s", err, out)
	}
	owner, name, _ := strings.Cut(repo, "/")
	cl, _ := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	hooks, _, err := cl.ListRepoHooks(owner, name, sdk.ListHooksOptions{})
	if err != nil || len(hooks) != 1 || hooks[0].Config["url"] != "http://127.0.0.1:9/webhooks/gitea" {
		t.Errorf("hooks on the repository: %+v, %v", hooks, err)
	}
}

func TestAForeignPushToTheServicesBranchIsOverwritten(t *testing.T) {
	w := startHooked(t)
	ctx := context.Background()
	id, _ := w.openPR("workqueue/owned")
	item := w.waitItem(id, "idle", func(it map[string]any) bool { return it["dimensions"] != nil })
	ours := item["detail"].(map[string]any)["head_sha"].(string)

	// Someone else commits on top of the service's branch.
	srv := testgitea.Get(t)
	cl, _ := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	owner, name, _ := strings.Cut(w.repo, "/")
	if _, _, err := cl.ChangeFiles(owner, name, sdk.ChangeFilesOptions{Branch: "workqueue/owned", Message: "by hand",
		Files: []*sdk.ChangeFileOperation{{Operation: "create", Path: "by-hand.txt", Content: "aGFuZAo="}}}); err != nil {
		t.Fatal(err)
	}
	// The synchronized webhook shows a head the service did not push: it
	// puts the desired state back, one commit on top of the target.
	w.waitItem(id, "the branch taken back", func(it map[string]any) bool {
		head := it["detail"].(map[string]any)["head_sha"]
		return head != ours && head != nil
	})
	if _, found, err := w.forge.ReadFile(ctx, w.repo, "workqueue/owned", "by-hand.txt"); err != nil || found {
		t.Errorf("the foreign commit's file is still on the branch (%v)", err)
	}
	if _, found, _ := w.forge.ReadFile(ctx, w.repo, "workqueue/owned", "workqueue-owned.txt"); !found {
		t.Error("the desired change is not on the branch")
	}
}

// GitLab disables a hook after deliveries fail and never retries them;
// hooks ensure repairs such a hook (and says so) instead of reporting it
// found.
func TestHooksEnsureRepairsAHookGitLabDisabled(t *testing.T) {
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	srv.CreateProject("g/p")
	var down atomic.Bool
	down.Store(true)
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	t.Cleanup(service.Close)
	t.Setenv("WQ_TEST_GITLAB_TOKEN", srv.Token)
	t.Setenv("WQ_TEST_HOOK_SECRET", hookSecret)
	cfgFile := filepath.Join(t.TempDir(), "wq.yaml")
	doc := fmt.Sprintf(`public_url: %s
forges: [{name: lab, kind: gitlab, url: %q, token_env: WQ_TEST_GITLAB_TOKEN, webhook_secret_env: WQ_TEST_HOOK_SECRET}]
projects: [{match: g/p, forge: lab}]
`, service.URL, srv.URL)
	if err := os.WriteFile(cfgFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	hookURL := service.URL + "/webhooks/lab"
	if out, err := runCommand(t, "hooks", "ensure", "--config", cfgFile); err != nil || !strings.Contains(out, "created g/p: lab → "+hookURL) {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	// The service is down for four pushes: GitLab disables the hook.
	f, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := f.CommitFiles(context.Background(), wq.CommitRequest{Project: "g/p", Base: "main", Branch: "workqueue/x",
			Message: "m", Changes: []wq.FileChange{{Action: "create", Path: fmt.Sprint(i), Content: []byte("x")}}}); err != nil {
			t.Fatal(err)
		}
	}
	srv.WaitForDeliveries()
	if ev := srv.HookEvents("g/p", hookURL); !ev["alert_status:temporarily_disabled"] {
		t.Fatalf("after four failed deliveries the hook is %v, want disabled", ev)
	}
	down.Store(false)
	if out, err := runCommand(t, "hooks", "ensure", "--config", cfgFile); err != nil || !strings.Contains(out, "updated g/p") {
		t.Fatalf("run on the disabled hook: %v\n%s, want updated", err, out)
	}
	if ev := srv.HookEvents("g/p", hookURL); !ev["alert_status:executable"] || srv.HookCount("g/p") != 1 {
		t.Errorf("after the repair: %v with %d hooks, want one working hook", ev, srv.HookCount("g/p"))
	}
	if out, err := runCommand(t, "hooks", "ensure", "--config", cfgFile); err != nil || !strings.Contains(out, "found g/p") {
		t.Errorf("third run: %v\n%s, want found", err, out)
	}
}
