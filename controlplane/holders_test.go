package controlplane_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/forge/gitea"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testgitea"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/policy"
)

// holderNotes are the service's holder notes on a thread of the test
// Gitea.
func holderNotes(t *testing.T, c *sdk.Client, repo string, number int64) []string {
	t.Helper()
	owner, name, _ := strings.Cut(repo, "/")
	comments, _, err := c.ListIssueComments(owner, name, number, sdk.ListIssueCommentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cm := range comments {
		if strings.Contains(cm.Body, cp.HolderMarker) {
			out = append(out, cm.Body)
		}
	}
	return out
}

// On the real Gitea: while a session holds a pull request, the thread's
// one holder note names its identity and role; it is edited within
// seconds of each allocation and release, the reviewer-to-merger handoff
// reads in its history, a lease that passed its expiry is said to be held
// by nobody, and a takeover names the new holder and the old.
func TestThePullRequestsThreadShowsWhoHoldsItAndTheHandoff(t *testing.T) {
	srv := testgitea.Get(t)
	repo := srv.NewRepo(t)
	ctx := context.Background()
	adapter, err := gitea.New(srv.URL, srv.Token, gitea.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adapter.CommitFiles(ctx, wq.CommitRequest{Project: repo, Base: "main", Branch: "feature/held", Message: "a change",
		Changes: []wq.FileChange{{Action: "create", Path: "held.txt", Content: []byte("held\n")}}}); err != nil {
		t.Fatal(err)
	}
	pr, err := adapter.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: repo, SourceBranch: "feature/held", TargetBranch: "main", Title: "Held"})
	if err != nil {
		t.Fatal(err)
	}
	sdkc, err := sdk.NewClient(srv.URL, sdk.SetToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}

	clock := clockwork.NewFakeClockAt(time.Now().UTC().Truncate(time.Second))
	store := testdb.ControlPlane(t, "sqlite")
	guarded := policy.Guard("gitea", adapter, func(string) policy.Project { return policy.Project{} })
	holders := &cp.HolderNotes{Store: store, Forges: map[string]wq.Forge{"gitea": guarded}, Clock: clock, Log: testkit.Quiet()}
	t.Cleanup(holders.Stop)
	trail := testkit.CheckedAudit(t) // every lease change with its state before and after (DDR-28)
	svc := &cp.Service{Store: store, Clock: clock, LeaseTTL: 10 * time.Minute, SessionTTL: time.Hour, Holders: holders, Audit: trail}
	work := cp.Work{ID: "held-pr", WorkKey: cp.WorkKey{Forge: "gitea", Repo: repo, Kind: cp.KindPR, Number: pr.Number},
		State: cp.StateOpen, Title: "Held", Author: srv.User, HeadSHA: pr.HeadSHA, ReviewState: cp.ReviewNone, UpdatedAt: clock.Now()}
	if err := store.UpsertWork(ctx, []cp.Work{work}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	session := func(who string, role cp.Role) (cp.Caller, string) {
		c := cp.Caller{Identity: who}
		s, err := svc.RegisterSession(ctx, c, role, who, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c, s.ID
	}
	note := func(what string) string {
		t.Helper()
		notes := holderNotes(t, sdkc, repo, pr.Number)
		if len(notes) != 1 {
			t.Fatalf("%s: %d holder notes on the thread, want one (edited, never posted again): %q", what, len(notes), notes)
		}
		return notes[0]
	}

	// A reviewer is given it: the note names it, within seconds.
	reviewer, rs := session("token:reviewer-bot", cp.RoleReviewer)
	start := time.Now()
	a, err := svc.Allocate(ctx, reviewer, rs, "", true)
	if err != nil || a.Outcome != cp.OutcomeAssigned {
		t.Fatalf("the reviewer's allocation: %+v, %v", a, err)
	}
	holders.Wait()
	shown := time.Since(start)
	if got := note("after the reviewer's allocation"); !strings.Contains(got, "**Held by** `token:reviewer-bot` as **reviewer**") {
		t.Errorf("after the reviewer's allocation the note says:\n%s", got)
	}

	// It releases the pull request, approved: the note says nobody holds it.
	if _, err := svc.ReleaseLease(ctx, reviewer, a.Lease.ID, rs); err != nil {
		t.Fatal(err)
	}
	holders.Wait()
	if got := note("after the release"); !strings.Contains(got, "**Held by nobody**") {
		t.Errorf("after the release the note says:\n%s", got)
	}

	// A merger is given it: the handoff reads on the thread.
	work.ReviewState, work.Mergeable = cp.ReviewApproved, true
	if err := store.UpsertWork(ctx, []cp.Work{work}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	merger, ms := session("token:merger-bot", cp.RoleMerger)
	if a, err = svc.Allocate(ctx, merger, ms, "", true); err != nil || a.Outcome != cp.OutcomeAssigned {
		t.Fatalf("the merger's allocation: %+v, %v", a, err)
	}
	holders.Wait()
	got := note("after the merger's allocation")
	if !strings.Contains(got, "**Held by** `token:merger-bot` as **merger**") {
		t.Errorf("after the merger's allocation the note says:\n%s", got)
	}
	handoff := []string{"| assigned | merger | `token:merger-bot`", "| released | reviewer | `token:reviewer-bot`", "| assigned | reviewer | `token:reviewer-bot`"}
	at := -1
	for _, row := range handoff {
		i := strings.Index(got, row)
		if i <= at {
			t.Errorf("the note's history lacks %q after the rows before it (newest first):\n%s", row, got)
			break
		}
		at = i
	}

	// The merger goes quiet: once its lease's expiry passes, the note
	// says nobody holds the pull request.
	clock.Advance(11 * time.Minute)
	eventually.True(t, 20*time.Second, "the note says the merger's lease expired", func() (bool, any) {
		n := holderNotes(t, sdkc, repo, pr.Number)
		return len(n) == 1 && strings.Contains(n[0], "expired at"), n
	})

	// Another merger takes it over: the note names it, and from whom.
	other, os := session("token:merger-two", cp.RoleMerger)
	if _, err := svc.ReclaimLease(ctx, other, a.Lease.ID, os); err != nil {
		t.Fatalf("the reclaim: %v", err)
	}
	holders.Wait()
	got = note("after the takeover")
	if !strings.Contains(got, "**Held by** `token:merger-two` as **merger**") || !strings.Contains(got, "Taken over from session `"+ms[len(ms)-8:]+"`") ||
		!strings.Contains(got, "| reclaimed | merger | `token:merger-two`") {
		t.Errorf("after the takeover the note says:\n%s", got)
	}
	t.Logf("the note named the holder %v after its allocation; after the handoff it read:\n%s", shown.Round(time.Millisecond), got)

	// The audit trail has each change, the old lease beside the new.
	var kinds []string
	for _, e := range trail.Entries(wq.AuditLeaseAssigned, wq.AuditLeaseEnded, wq.AuditLeaseAdopted, wq.AuditLeaseReclaimed) {
		kinds = append(kinds, e.EventType)
	}
	want := []string{wq.AuditLeaseAssigned, wq.AuditLeaseEnded, wq.AuditLeaseAssigned, wq.AuditLeaseReclaimed}
	if !slices.Equal(kinds, want) {
		t.Errorf("lease audit entries %v, want %v", kinds, want)
	}
	if r := trail.Entries(wq.AuditLeaseReclaimed); len(r) == 1 && (r[0].OldState["session"] != ms || r[0].NewState["session"] != os) {
		t.Errorf("the reclaim's entry: from %v to %v, want from the quiet merger's session to the new one's", r[0].OldState, r[0].NewState)
	}
}
