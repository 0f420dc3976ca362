package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/mr"
)

// These tests play a person who works on the forge by hand next to
// workqueue (issue 9, defects 2 and 3): the service writes only branches
// and pull requests it created, and an event about someone else's pull
// request never moves its item.

// personCommits creates branch from main with a commit of a person's own,
// as a person would on the forge, and returns the branch's head.
func (w *apiWorld) personCommits(branch, file string) string {
	w.t.Helper()
	c, err := w.forge.CommitFiles(context.Background(), wq.CommitRequest{Project: w.repo, Base: "main", Branch: branch,
		Message: "A person's own work", Author: wq.CommitAuthor{Name: "A Person", Email: "person@example.com"},
		Changes: []wq.FileChange{{Action: "create", Path: file, Content: []byte("written by hand\n")}}})
	if err != nil {
		w.t.Fatalf("a person commits to %s: %v", branch, err)
	}
	return c.SHA
}

// personOpensPR opens a pull request as a person would, by hand.
func (w *apiWorld) personOpensPR(source, target, title, description string) *wq.MergeRequest {
	w.t.Helper()
	pr, err := w.forge.CreateMergeRequest(context.Background(), wq.MergeRequestCreate{Project: w.repo, SourceBranch: source,
		TargetBranch: target, Title: title, Description: description})
	if err != nil {
		w.t.Fatalf("a person opens a pull request from %s into %s: %v", source, target, err)
	}
	return pr
}

// personClosesPR closes a pull request as a person would.
func (w *apiWorld) personClosesPR(number int64) {
	w.t.Helper()
	closed := wq.MergeRequestClosed
	if _, err := w.forge.UpdateMergeRequest(context.Background(), w.repo, number, wq.MergeRequestUpdate{State: &closed}); err != nil {
		w.t.Fatalf("a person closes #%d: %v", number, err)
	}
}

// giteaClient is an SDK client for what the forge interface does not do.
func (w *apiWorld) giteaClient() (c *sdk.Client, owner, name string) {
	w.t.Helper()
	srv := testgitea.Get(w.t)
	c, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		w.t.Fatal(err)
	}
	owner, name, _ = strings.Cut(w.repo, "/")
	return c, owner, name
}

// prState is what a person sees of a pull request and would notice
// changing.
type prState struct {
	State, Title, Description, HeadSHA string
}

func (w *apiWorld) prState(number int64) prState {
	w.t.Helper()
	pr, err := w.forge.GetMergeRequest(context.Background(), w.repo, number)
	if err != nil {
		w.t.Fatalf("read #%d: %v", number, err)
	}
	return prState{State: pr.State, Title: pr.Title, Description: pr.Description, HeadSHA: pr.HeadSHA}
}

func (w *apiWorld) branchHead(branch string) string {
	w.t.Helper()
	head, err := w.forge.BranchHead(context.Background(), w.repo, branch)
	if err != nil {
		w.t.Fatalf("read the head of %s: %v", branch, err)
	}
	return head
}

// submitOver submits a change to branch and waits until the item is
// terminal or has pushed: either is the service's answer to a branch
// that is not its own.
func (w *apiWorld) submitOver(branch string) map[string]any {
	w.t.Helper()
	status, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch))
	if status != http.StatusCreated {
		w.t.Fatalf("submit to %s: %d %v, want 201", branch, status, body)
	}
	return w.waitItem(body["id"].(string), "the item to fail or push", func(it map[string]any) bool {
		d, _ := it["detail"].(map[string]any)
		return it["phase"] != "active" || d["head_sha"] != nil
	})
}

// prEvent is a Gitea pull_request delivery about pull request number,
// from head into base, stamped at.
func prEvent(repo string, number int64, action, state string, merged bool, head, base, sha string, at time.Time) string {
	return fmt.Sprintf(`{"action":%q,"number":%d,"pull_request":{"number":%d,"merged":%t,"state":%q,"updated_at":%q,
		"head":{"ref":%q,"sha":%q},"base":{"ref":%q}},"repository":{"full_name":%q}}`,
		action, number, number, merged, state, at.UTC().Format(time.RFC3339), head, sha, base, repo)
}

func TestOwnershipRefusesABranchOutsideThePrefixAndStoresNothing(t *testing.T) {
	w := startAPI(t, "", nil)
	before := w.personCommits("victim", "theirs.txt")

	status, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("victim"))
	refusal, _ := body["refusal"].(map[string]any)
	if status != http.StatusUnprocessableEntity || refusal["rule"] != mr.RuleBranchOutsidePrefix || refusal["field"] != "source_branch" {
		t.Fatalf("submit to a person's branch outside the prefix: %d %v, want 422 %s on source_branch", status, body, mr.RuleBranchOutsidePrefix)
	}
	if status, list, _ := w.do("GET", "/api/v1/items", w.tokens["read"], nil); status != http.StatusOK || len(list["items"].([]any)) != 0 {
		t.Errorf("after the refusal: %d %v, want no items", status, list)
	}
	if got := w.branchHead("victim"); got != before {
		t.Errorf("head of victim = %s, want the person's %s", got, before)
	}
}

// refusesAPersonsBranch submits to branch, which a person created on the
// forge and proposes in an open pull request of their own: the item fails,
// and the branch and the pull request are as the person left them.
func refusesAPersonsBranch(t *testing.T, w *apiWorld, branch string) {
	t.Helper()
	head := w.personCommits(branch, "theirs.txt")
	pr := w.personOpensPR(branch, "main", "A person's work", "Written by hand.")
	want := prState{State: wq.MergeRequestOpen, Title: "A person's work", Description: "Written by hand.", HeadSHA: head}

	item := w.submitOver(branch)
	if item["phase"] != "failed" || !strings.Contains(fmt.Sprint(item["error"]), "does not own") ||
		!strings.Contains(fmt.Sprint(item["error"]), branch) {
		t.Errorf("item: %v/%v %q, want failed saying it does not own %s", item["phase"], item["reason"], item["error"], branch)
	}
	if got := w.branchHead(branch); got != head {
		t.Errorf("head of %s = %s, want the person's %s", branch, got, head)
	}
	if diff := cmp.Diff(want, w.prState(pr.Number)); diff != "" {
		t.Errorf("the person's pull request #%d changed (-want +got):\n%s", pr.Number, diff)
	}
	if found, err := w.forge.FindMergeRequest(context.Background(), w.repo, branch, "main"); err != nil || found == nil || found.Number != pr.Number {
		t.Errorf("newest pull request from %s: %+v %v, want the person's #%d only", branch, found, err, pr.Number)
	}
}

func TestOwnershipAPersonsBranchInsideThePrefixFailsTheItemAndIsUntouched(t *testing.T) {
	w := startAPI(t, "", nil) // the default prefix, workqueue/
	refusesAPersonsBranch(t, w, "workqueue/victim")
}

func TestOwnershipWithoutAPrefixAPersonsBranchStillFailsTheItemAndIsUntouched(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) { c.Projects[0].BranchPrefix = new("") })
	refusesAPersonsBranch(t, w, "victim")
}

// TestOwnershipAPersonsClosedPullRequestIsNeverReopenedOrEdited: a person
// once proposed the branch, closed the pull request and deleted the
// branch. A submission to that branch opens a pull request of its own.
func TestOwnershipAPersonsClosedPullRequestIsNeverReopenedOrEdited(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) { c.Projects[0].AutoMerge = false })
	const branch = "workqueue/old"
	w.personCommits(branch, "theirs.txt")
	theirs := w.personOpensPR(branch, "main", "An old attempt", "Abandoned.")
	w.personClosesPR(theirs.Number)
	if err := w.forge.DeleteBranch(context.Background(), w.repo, branch); err != nil {
		t.Fatal(err)
	}
	// Gitea shows a pull request's head as its branch's head while that
	// branch exists: once the service recreates the branch, the head of
	// the person's pull request is not theirs to compare.
	theirsNow := func() prState {
		s := w.prState(theirs.Number)
		s.HeadSHA = ""
		return s
	}
	want := prState{State: wq.MergeRequestClosed, Title: "An old attempt", Description: "Abandoned."}
	if diff := cmp.Diff(want, theirsNow()); diff != "" {
		t.Fatalf("the person's pull request before the submission (-want +got):\n%s", diff)
	}

	_, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch))
	id := body["id"].(string)
	item, number := w.waitPR(id)
	if item["phase"] != "active" || number == 0 || number == theirs.Number {
		t.Fatalf("item: %v %q with pull request #%v, want active with a pull request of its own (not the person's #%d)",
			item["phase"], item["error"], number, theirs.Number)
	}
	ours := w.prState(int64(number))
	if ours.State != wq.MergeRequestOpen || ours.Description != mr.ManagedDescription(uuid.MustParse(id), "") {
		t.Errorf("the item's pull request #%d: %+v, want open and carrying the item's marker", int64(number), ours)
	}
	if diff := cmp.Diff(want, theirsNow()); diff != "" {
		t.Errorf("the person's closed pull request #%d changed (-want +got):\n%s", theirs.Number, diff)
	}
}

// TestAnotherPRFromTheSameBranchChangesNothing delivers the opened and
// closed events of a person's pull request from the item's branch into
// another target: once the item has its own number, they resolve to no
// item, and the item and its pull request stay as they were.
func TestAnotherPRFromTheSameBranchChangesNothing(t *testing.T) {
	w := startWithWebhookSecret(t) // auto_merge off: the item's pull request stays open
	const branch = "workqueue/x"
	id, ours := w.openPR(branch)
	head := w.waitItem(id, "settled", settled)["detail"].(map[string]any)["head_sha"].(string)

	c, owner, name := w.giteaClient()
	if _, _, err := c.CreateBranch(owner, name, sdk.CreateBranchOption{BranchName: "release", OldBranchName: "main"}); err != nil {
		t.Fatal(err)
	}
	theirs := w.personOpensPR(branch, "release", "Backport x", "By hand.")
	if theirs.Number == ours {
		t.Fatalf("the person's pull request has the item's number %d", ours)
	}
	deliver := func(delivery, body string) {
		t.Helper()
		status, out := signedDelivery(t, w, delivery, body, hookSecret)
		if status != http.StatusOK || out["stored"] != float64(0) {
			t.Errorf("%s: %d %v, want acknowledged and stored for no item", delivery, status, out)
		}
	}
	at := time.Now().Add(time.Minute)
	deliver("theirs-opened", prEvent(w.repo, theirs.Number, "opened", "open", false, branch, "release", head, at))
	w.personClosesPR(theirs.Number)
	deliver("theirs-closed", prEvent(w.repo, theirs.Number, "closed", "closed", false, branch, "release", head, at.Add(time.Minute)))

	// A later event of the item's own pull request: events apply in
	// order, so once it is applied anything stored before it was too.
	barrier := at.Add(2 * time.Minute).Truncate(time.Second)
	if status, out := signedDelivery(t, w, "ours-edited", prEvent(w.repo, ours, "edited", "open", false, branch, "main", head, barrier), hookSecret); status != http.StatusOK || out["stored"] != float64(1) {
		t.Fatalf("an event of the item's own #%d: %d %v, want stored for the item", ours, status, out)
	}
	after := w.waitItem(id, "the item's own event applied", func(it map[string]any) bool {
		return it["phase"] != "active" || (it["last_event_at"] == barrier.UTC().Format(time.RFC3339) && settled(it))
	})
	if after["phase"] != "active" || after["detail"].(map[string]any)["mr_iid"] != float64(ours) {
		t.Errorf("after events of #%d: %v/%v with #%v, want active with #%d",
			theirs.Number, after["phase"], after["reason"], after["detail"].(map[string]any)["mr_iid"], ours)
	}
	if got := w.prState(ours).State; got != wq.MergeRequestOpen {
		t.Errorf("the item's pull request #%d is %s, want open", ours, got)
	}
}

// TestForgedMergedPayloadDoesNotCompleteTheItemButARealMergeDoes sends a
// correctly signed merged payload for the item's pull request while the
// forge says it is open: the item stays active. A real merge and its
// webhook then complete it within seconds, so the first half cannot pass
// by merged payloads being ignored altogether.
func TestForgedMergedPayloadDoesNotCompleteTheItemButARealMergeDoes(t *testing.T) {
	w := startWithWebhookSecret(t) // auto_merge off: only a person merges
	const branch = "workqueue/forged"
	id, number := w.openPR(branch)
	head := w.waitItem(id, "settled", settled)["detail"].(map[string]any)["head_sha"].(string)

	// Signed with the secret, but the forge says the pull request is open.
	forgedAt := time.Now().Add(time.Minute).Truncate(time.Second)
	if status, out := signedDelivery(t, w, "forged-merged", prEvent(w.repo, number, "closed", "closed", true, branch, "main", head, forgedAt), hookSecret); status != http.StatusOK || out["stored"] != float64(1) {
		t.Fatalf("forged merged payload: %d %v, want stored for the item", status, out)
	}
	item := w.waitItem(id, "the forged payload applied", func(it map[string]any) bool {
		return it["phase"] != "active" || (it["last_event_at"] == forgedAt.UTC().Format(time.RFC3339) && settled(it))
	})
	if item["phase"] != "active" || item["detail"].(map[string]any)["mr_iid"] != float64(number) {
		t.Fatalf("after a merged payload for open #%d: %v/%v, want still active", number, item["phase"], item["reason"])
	}
	if got := w.prState(number).State; got != wq.MergeRequestOpen {
		t.Fatalf("#%d is %s after the forged payload, want open", number, got)
	}

	// A person really merges it; its webhook completes the item.
	w.personMerges(number)
	delivered := time.Now()
	if status, out := signedDelivery(t, w, "real-merged", prEvent(w.repo, number, "closed", "closed", true, branch, "main", head, forgedAt.Add(time.Minute)), hookSecret); status != http.StatusOK || out["stored"] != float64(1) {
		t.Fatalf("merged webhook: %d %v, want stored for the item", status, out)
	}
	item = w.waitItem(id, "completion", func(it map[string]any) bool { return it["phase"] != "active" })
	if latency := time.Since(delivered); item["phase"] != "completed" || item["reason"] != "merged" || latency > 5*time.Second {
		t.Errorf("after a real merge and its webhook: %v/%v in %v, want completed/merged within 5s", item["phase"], item["reason"], latency)
	}
}

// TestOwnershipAPersonsOpenPRFromTheServicesBranchIsNeverTakenOver: the
// branch is the service's (an earlier item pushed it), but the open pull
// request from it is a person's. The next item fails with a clear error
// instead of adopting and editing that pull request.
func TestOwnershipAPersonsOpenPRFromTheServicesBranchIsNeverTakenOver(t *testing.T) {
	keep := false // the old branch stays for the person to propose
	w := startAPI(t, "", func(c *config.Config) { c.Projects[0].AutoMerge, c.Projects[0].DeleteSourceBranch = false, &keep })
	const branch = "workqueue/taken"
	_, body, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch))
	first := body["id"].(string)
	item, ours := w.waitPR(first)
	if ours == 0 {
		t.Fatalf("first item: %v %q, want a pull request", item["phase"], item["error"])
	}
	if status, body, _ := w.do("POST", "/api/v1/items/"+first+"/cancel", w.tokens["retry"], nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, body)
	}
	// The cancel closes the service's pull request; a person proposes
	// the service's branch in one of their own.
	w.waitItem(first, "cancellation", func(it map[string]any) bool { return it["phase"] == "cancelled" })
	theirs := w.personOpensPR(branch, "main", "Taking it over", "Mine now.")
	want := prState{State: wq.MergeRequestOpen, Title: "Taking it over", Description: "Mine now."}
	theirsNow := func() prState {
		s := w.prState(theirs.Number)
		s.HeadSHA = "" // the branch is the service's: a new push moves it
		return s
	}

	_, body, _ = w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission(branch,
		map[string]any{"action": "create", "file_path": "again.txt", "content": "again\n"}))
	second := body["id"].(string)
	if second == first {
		t.Fatalf("a submission after the cancel reused item %s", first)
	}
	item, _ = w.waitPR(second)
	if item["phase"] != "failed" || !strings.Contains(fmt.Sprint(item["error"]), "did not create") {
		t.Errorf("second item: %v with #%v, error %q; want failed saying an open pull request it did not create exists",
			item["phase"], item["detail"].(map[string]any)["mr_iid"], item["error"])
	}
	if diff := cmp.Diff(want, theirsNow()); diff != "" {
		t.Errorf("the person's pull request #%d changed (-want +got):\n%s", theirs.Number, diff)
	}
}
