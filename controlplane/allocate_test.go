package controlplane_test

import (
	"fmt"
	"testing"
	"time"

	cp "github.com/workqueue-dev/workqueue/controlplane"
)

var now = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func session(id string, role cp.Role) *cp.Session {
	return &cp.Session{ID: id, Identity: "agent:" + id, Role: role, CreatedAt: now, HeartbeatAt: now}
}

// issue and pr build candidates; edit adjusts one.
func issue(n int64, edit ...func(*cp.Candidate)) cp.Candidate {
	c := cp.Candidate{Work: &cp.Work{ID: fmt.Sprintf("i%d", n), WorkKey: cp.WorkKey{Forge: "f", Repo: "o/r", Kind: cp.KindIssue, Number: n},
		State: cp.StateOpen, Title: "t", UpdatedAt: now.Add(-time.Duration(n) * time.Minute)}}
	for _, e := range edit {
		e(&c)
	}
	return c
}

func pr(n int64, review cp.ReviewState, edit ...func(*cp.Candidate)) cp.Candidate {
	c := issue(n, edit...)
	c.ID, c.Kind, c.ReviewState, c.HeadSHA, c.Mergeable = fmt.Sprintf("p%d", n), cp.KindPR, review, fmt.Sprintf("sha%d", n), true
	for _, e := range edit {
		e(&c)
	}
	return c
}

func heldBy(s string) func(*cp.Candidate) {
	return func(c *cp.Candidate) { c.LeaseSession, c.LeaseID, c.LeaseIdentity = s, "lease-"+s, "agent:"+s }
}
func lockedBy(s string) func(*cp.Candidate) { return func(c *cp.Candidate) { c.LockSession = s } }
func authoredBy(s string) func(*cp.Candidate) {
	return func(c *cp.Candidate) { c.AuthorSession, c.AuthorIdentity = s, "agent:"+s }
}

// bySibling: a pull request another session of s's identity wrote.
func bySibling(s string) func(*cp.Candidate) {
	return func(c *cp.Candidate) { c.AuthorSession, c.AuthorIdentity = s+"-sibling", "agent:"+s }
}
func labelled(l ...string) func(*cp.Candidate) {
	return func(c *cp.Candidate) { c.Labels = l }
}
func state(st cp.State) func(*cp.Candidate) { return func(c *cp.Candidate) { c.State = st } }
func links(n ...int64) func(*cp.Candidate)  { return func(c *cp.Candidate) { c.LinkedIssues = n } }
func notMergeable() func(*cp.Candidate)     { return func(c *cp.Candidate) { c.Mergeable = false } }
func inRepo(r string) func(*cp.Candidate)   { return func(c *cp.Candidate) { c.Repo = r } }
func updated(d time.Duration) func(*cp.Candidate) {
	return func(c *cp.Candidate) { c.UpdatedAt = now.Add(-d) }
}

// Every routing rule: which work a session of a role is given first.
func TestChooseRoutesWorkByRoleAndPath(t *testing.T) {
	policy := cp.Policy{BlockedLabels: []string{"do-not-touch"}, PriorityLabels: []string{"p0", "p1"}}
	for _, tc := range []struct {
		name    string
		session *cp.Session
		cands   []cp.Candidate
		glob    string
		outcome cp.Outcome
		want    string // the chosen work's id
		actions []cp.Action
		head    string
		lock    bool
	}{
		{"an author takes an open issue", session("a", cp.RoleAuthor), []cp.Candidate{issue(1)}, "",
			cp.OutcomePreview, "i1", []cp.Action{cp.ActPush, cp.ActOpenPR, cp.ActComment, cp.ActClose}, "", false},
		{"a merger takes an approved mergeable pull request under a terminal lock", session("m", cp.RoleMerger),
			[]cp.Candidate{pr(2, cp.ReviewApproved)}, "", cp.OutcomePreview, "p2", []cp.Action{cp.ActMerge, cp.ActComment}, "sha2", true},
		{"the terminal path comes first: an author's own changes-requested pull request before issues",
			session("a", cp.RoleAuthor), []cp.Candidate{issue(1, updated(time.Hour)), pr(2, cp.ReviewChangesRequested, authoredBy("a"))}, "",
			cp.OutcomePreview, "p2", []cp.Action{cp.ActPush, cp.ActComment}, "sha2", false},
		{"a reviewer takes a pull request awaiting review", session("r", cp.RoleReviewer),
			[]cp.Candidate{issue(1), pr(2, cp.ReviewNone, authoredBy("a"))}, "", cp.OutcomePreview, "p2", []cp.Action{cp.ActReview, cp.ActComment}, "sha2", false},
		{"priority labels first", session("a", cp.RoleAuthor),
			[]cp.Candidate{issue(1, updated(time.Hour)), issue(2, labelled("p1")), issue(3, labelled("p0"))}, "", cp.OutcomePreview, "i3", nil, "", false},
		{"then the oldest", session("a", cp.RoleAuthor),
			[]cp.Candidate{issue(1, updated(time.Minute)), issue(2, updated(time.Hour))}, "", cp.OutcomePreview, "i2", nil, "", false},
		{"then by key, deterministically", session("a", cp.RoleAuthor),
			[]cp.Candidate{issue(2, updated(time.Hour)), issue(1, updated(time.Hour))}, "", cp.OutcomePreview, "i1", nil, "", false},
		{"a repo glob limits the candidates", session("a", cp.RoleAuthor),
			[]cp.Candidate{issue(1, inRepo("x/y")), issue(2, inRepo("o/other"))}, "o/*", cp.OutcomePreview, "i2", nil, "", false},
		{"a foreign live lease on the only work means wait", session("a", cp.RoleAuthor),
			[]cp.Candidate{issue(1, heldBy("b"))}, "", cp.OutcomeWait, "", nil, "", false},
		{"a terminal lock held by another session means wait", session("m", cp.RoleMerger),
			[]cp.Candidate{pr(2, cp.ReviewApproved, lockedBy("m2"))}, "", cp.OutcomeWait, "", nil, "", false},
		{"merged and closed work is no safe work", session("a", cp.RoleAuthor),
			[]cp.Candidate{issue(1, state(cp.StateClosed)), pr(2, cp.ReviewApproved, state(cp.StateMerged))}, "", cp.OutcomeNoSafeWork, "", nil, "", false},
		{"changes requested on a pull request that only says it closes the issue this author holds are not its to push", session("a", cp.RoleAuthor),
			[]cp.Candidate{issue(7, heldBy("a")), pr(8, cp.ReviewChangesRequested, links(7))}, "", cp.OutcomeNoSafeWork, "", nil, "", false},
		{"changes requested of another session of the author's identity come back to this one", session("a", cp.RoleAuthor),
			[]cp.Candidate{pr(8, cp.ReviewChangesRequested, bySibling("a"))}, "", cp.OutcomePreview, "p8", []cp.Action{cp.ActPush, cp.ActComment}, "sha8", false},
		{"nothing for the role is no safe work, not wait", session("r", cp.RoleReviewer),
			[]cp.Candidate{issue(1), issue(2, heldBy("b"))}, "", cp.OutcomeNoSafeWork, "", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cp.Choose(tc.session, tc.cands, tc.glob, policy, now)
			if got.Outcome != tc.outcome {
				t.Fatalf("outcome %s, want %s (skipped %+v)", got.Outcome, tc.outcome, got.Skipped)
			}
			if tc.want == "" {
				if got.Work != nil {
					t.Fatalf("chose %s, want nothing", got.Work.ID)
				}
				return
			}
			if got.Work == nil || got.Work.ID != tc.want {
				t.Fatalf("chose %+v, want %s", got.Work, tc.want)
			}
			if tc.actions != nil && fmt.Sprint(got.Actions) != fmt.Sprint(tc.actions) {
				t.Errorf("actions %v, want %v", got.Actions, tc.actions)
			}
			if got.Head != tc.head || got.Terminal != tc.lock {
				t.Errorf("head %q lock %v, want %q %v", got.Head, got.Terminal, tc.head, tc.lock)
			}
			if len(got.Skipped) != len(tc.cands)-1-outside(tc.cands, tc.glob) {
				t.Errorf("%d skipped, want every other candidate: %+v", len(got.Skipped), got.Skipped)
			}
		})
	}
}

func outside(cands []cp.Candidate, glob string) int {
	n := 0
	for _, c := range cands {
		if glob != "" && c.Repo == "x/y" {
			n++
		}
	}
	return n
}

// Every skip reason, for the candidate that earns it.
func TestChooseSaysWhyEachCandidateWasPassedOver(t *testing.T) {
	policy := cp.Policy{BlockedLabels: []string{"do-not-touch"}}
	for _, tc := range []struct {
		reason  string
		session *cp.Session
		cand    cp.Candidate
	}{
		{cp.SkipTerminal, session("a", cp.RoleAuthor), issue(9, state(cp.StateClosed))},
		{cp.SkipTerminal, session("m", cp.RoleMerger), pr(9, cp.ReviewApproved, state(cp.StateMerged))},
		{cp.SkipForeignLease, session("a", cp.RoleAuthor), issue(9, heldBy("b"))},
		{cp.SkipOwnLease, session("a", cp.RoleAuthor), issue(9, heldBy("a"))},
		{cp.SkipTerminalLock, session("m", cp.RoleMerger), pr(9, cp.ReviewApproved, lockedBy("m2"))},
		{cp.SkipWrongRole, session("r", cp.RoleReviewer), issue(9)},
		{cp.SkipWrongRole, session("a", cp.RoleAuthor), pr(9, cp.ReviewApproved)},
		{cp.SkipWrongRole, session("m", cp.RoleMerger), pr(9, cp.ReviewNone)},
		{cp.SkipWrongRole, session("r", cp.RoleReviewer), pr(9, cp.ReviewChangesRequested, authoredBy("a"))},
		{cp.SkipNotAuthor, session("a", cp.RoleAuthor), pr(9, cp.ReviewChangesRequested, authoredBy("other"))},
		{cp.SkipNotAuthor, session("a", cp.RoleAuthor), pr(9, cp.ReviewChangesRequested)}, // a person's pull request
		{cp.SkipOwnPR, session("r", cp.RoleReviewer), pr(9, cp.ReviewNone, authoredBy("r"))},
		{cp.SkipOwnPR, session("m", cp.RoleMerger), pr(9, cp.ReviewApproved, authoredBy("m"))},
		{cp.SkipOwnPR, session("r", cp.RoleReviewer), pr(9, cp.ReviewNone, links(6))}, // r holds issue 6, which it closes
		{cp.SkipOwnPR, session("r", cp.RoleReviewer), pr(9, cp.ReviewNone, bySibling("r"))},
		{cp.SkipOwnPR, session("m", cp.RoleMerger), pr(9, cp.ReviewApproved, bySibling("m"))},
		{cp.SkipBlockedLabel, session("a", cp.RoleAuthor), issue(9, labelled("do-not-touch"))},
		{cp.SkipHasOpenPR, session("a", cp.RoleAuthor), issue(7)},
		{cp.SkipNotMergeable, session("m", cp.RoleMerger), pr(9, cp.ReviewApproved, notMergeable())},
	} {
		t.Run(tc.reason+" for a "+string(tc.session.Role), func(t *testing.T) {
			cands := []cp.Candidate{tc.cand}
			if tc.reason == cp.SkipHasOpenPR {
				cands = append(cands, pr(8, cp.ReviewNone, links(7), heldBy("someone")))
			}
			if len(tc.cand.LinkedIssues) > 0 && tc.cand.LinkedIssues[0] == 6 {
				cands = append(cands, issue(6, heldBy(tc.session.ID)))
			}
			got := cp.Choose(tc.session, cands, "", policy, now)
			for _, s := range got.Skipped {
				if s.Work.ID == tc.cand.ID {
					if s.Reason != tc.reason {
						t.Errorf("skipped as %q, want %q", s.Reason, tc.reason)
					}
					return
				}
			}
			t.Errorf("not skipped: outcome %s, chose %+v", got.Outcome, got.Work)
		})
	}
}

// An eligible candidate that is not chosen is named too, so that a dry
// run explains every candidate.
func TestChooseNamesTheEligibleItDidNotChoose(t *testing.T) {
	got := cp.Choose(session("a", cp.RoleAuthor), []cp.Candidate{issue(1), issue(2)}, "", cp.Policy{}, now)
	if len(got.Skipped) != 1 || got.Skipped[0].Reason != cp.SkipLower {
		t.Errorf("skipped %+v, want the other issue as %s", got.Skipped, cp.SkipLower)
	}
}
