package swarm

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	cp "github.com/workqueue-dev/workqueue/controlplane"
)

func TestRolesSplitSessionsSoThatEveryRoleIsFilled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sessions int
		want     Split
	}{
		{3, Split{Authors: 1, Reviewers: 1, Mergers: 1}},
		{4, Split{Authors: 2, Reviewers: 1, Mergers: 1}},
		{8, Split{Authors: 5, Reviewers: 2, Mergers: 1}},
		{16, Split{Authors: 10, Reviewers: 4, Mergers: 2}},
	} {
		if got, err := Roles(tc.sessions); err != nil || got != tc.want {
			t.Errorf("Roles(%d) = %+v, %v; want %+v", tc.sessions, got, err, tc.want)
		}
	}
	if _, err := Roles(2); err == nil {
		t.Error("Roles(2): no error, but a role is left empty")
	}
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// lease is a lease of work held by session from a to b seconds after t0,
// released then; b < 0 leaves it active until it expires at -b.
func lease(id, work, session string, a, b float64) cp.Lease {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	l := cp.Lease{ID: id, WorkID: work, SessionID: session, CreatedAt: at(a), State: cp.LeaseReleased, ExpiresAt: at(a + 1800), EndedAt: at(b)}
	if b < 0 {
		l.State, l.ExpiresAt, l.EndedAt = cp.LeaseActive, at(-b), time.Time{}
	}
	return l
}

var auditWork = map[string]cp.Work{
	"i1": {ID: "i1", WorkKey: cp.WorkKey{Kind: cp.KindIssue, Number: 1}},
	"p2": {ID: "p2", WorkKey: cp.WorkKey{Kind: cp.KindPR, Number: 2}},
}

func TestHeldOnceFindsWorkHeldByTwoSessionsAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		leases []cp.Lease
		failed int
	}{
		{"leases of one work in turn pass", []cp.Lease{lease("a", "p2", "s1", 0, 5), lease("b", "p2", "s2", 5, 9), lease("c", "p2", "s3", 10, -20)}, 0},
		{"leases of different work at once pass", []cp.Lease{lease("a", "i1", "s1", 0, 5), lease("b", "p2", "s2", 1, 4)}, 0},
		{"a lease taken before the last ended fails", []cp.Lease{lease("a", "p2", "s1", 0, 5), lease("b", "p2", "s2", 4, 9)}, 1},
		{"a lease inside a long one fails even after a short one", []cp.Lease{lease("a", "p2", "s1", 0, 20), lease("b", "p2", "s2", 1, 2), lease("c", "p2", "s3", 3, 4)}, 2},
		{"an active lease holds until it expires", []cp.Lease{lease("a", "p2", "s1", 0, -10), lease("b", "p2", "s2", 9, 12)}, 1},
		{"an expired lease ended late held only until it expired", []cp.Lease{
			{ID: "a", WorkID: "p2", SessionID: "s1", State: cp.LeaseExpired, CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Second), EndedAt: t0.Add(time.Minute)},
			lease("b", "p2", "s2", 6, 9)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := heldOnce(tc.leases, auditWork)
			if len(c.Failed) != tc.failed {
				t.Errorf("%d violations, want %d: %q", len(c.Failed), tc.failed, c.Failed)
			}
		})
	}
}

func TestUnderLeasesFindsForgeWritesOutsideALeaseOfTheirRole(t *testing.T) {
	t.Parallel()
	roles := map[string]cp.Role{"author": cp.RoleAuthor, "reviewer": cp.RoleReviewer, "merger": cp.RoleMerger}
	leases := []cp.Lease{
		lease("l1", "i1", "author", 0.4, 10), lease("l2", "p2", "reviewer", 11, 12), lease("l3", "p2", "merger", 13, 15),
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name string
		pr   pull
		want string // a violation's words; "" for none
	}{
		{"each write in its lease passes (the forge's whole second too)", pull{number: 2, closes: []int64{1}, opened: at(0), reviews: []time.Time{at(12)}, merged: true, mergedAt: at(14)}, ""},
		{"an unmerged pull request has no merge to check", pull{number: 2, closes: []int64{1}, opened: at(5)}, ""},
		{"opened after the author released the issue", pull{number: 2, closes: []int64{1}, opened: at(11)}, "opened"},
		{"reviewed under the merger's lease", pull{number: 2, closes: []int64{1}, opened: at(5), reviews: []time.Time{at(14)}}, "reviewed"},
		{"merged under no lease", pull{number: 2, closes: []int64{1}, opened: at(5), merged: true, mergedAt: at(16)}, "merged"},
		{"opened for an issue nobody held", pull{number: 2, closes: []int64{7}, opened: at(5)}, "issue #7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := underLeases([]pull{tc.pr}, leases, auditWork, roles)
			switch {
			case tc.want == "" && len(c.Failed) > 0:
				t.Errorf("violations %q, want none", c.Failed)
			case tc.want != "" && (len(c.Failed) != 1 || !strings.Contains(c.Failed[0], tc.want)):
				t.Errorf("violations %q, want one saying %q", c.Failed, tc.want)
			}
		})
	}
}

func TestClosedOnceWantsEachIssueClosedByOneMergedPullRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		closed map[int64]bool
		pulls  []pull
		want   []string // each violation's words
	}{
		{"one merged pull request each passes", map[int64]bool{1: true, 2: true},
			[]pull{{number: 3, closes: []int64{1}, merged: true}, {number: 4, closes: []int64{2}, merged: true}}, nil},
		{"an open issue fails", map[int64]bool{1: true},
			[]pull{{number: 3, closes: []int64{1}, merged: true}}, []string{"issue #2 is open"}},
		{"two pull requests for one issue fail", map[int64]bool{1: true, 2: true},
			[]pull{{number: 3, closes: []int64{1}, merged: true}, {number: 4, closes: []int64{2}, merged: true}, {number: 5, closes: []int64{2}}},
			[]string{"issue #2 has 2 pull requests: #4, #5"}},
		{"an issue closed without a merge fails", map[int64]bool{1: true, 2: true},
			[]pull{{number: 3, closes: []int64{1}, merged: true}, {number: 4, closes: []int64{2}}}, []string{"#4 is not merged"}},
		{"a pull request closing nothing, or another issue, fails", map[int64]bool{1: true, 2: true},
			[]pull{{number: 3, closes: []int64{1}, merged: true}, {number: 4, closes: []int64{2}, merged: true}, {number: 5}, {number: 6, closes: []int64{9}}},
			[]string{"pr #5 closes no issue", "close #9, not a swarm issue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := closedOnce([]int64{1, 2}, tc.closed, tc.pulls)
			if len(c.Failed) != len(tc.want) {
				t.Fatalf("violations %q, want %d: %q", c.Failed, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(c.Failed[i], w) {
					t.Errorf("violation %d is %q, want it to say %q", i, c.Failed[i], w)
				}
			}
		})
	}
}

func TestAuthorshipWantsTheInventoryAndTheSwarmToAgree(t *testing.T) {
	t.Parallel()
	pulls := []pull{{number: 1}, {number: 2}, {number: 3}, {number: 4}}
	inventory := map[int64]string{1: "a", 2: "b", 4: "d"}
	recorded := map[int64]string{1: "a", 2: "c", 3: "c"}
	authors, disputes := authorship(pulls, inventory, recorded)
	if want := map[int64]string{1: "a", 2: "b", 4: "d"}; !maps.Equal(authors, want) {
		t.Errorf("authors %v, want %v", authors, want)
	}
	for i, want := range []string{"pr #2: the inventory says b wrote it, the swarm saw c", "pr #3: the inventory names no author"} {
		if i >= len(disputes) || !strings.Contains(disputes[i], want) {
			t.Errorf("disputes %q, want %d saying %q", disputes, i, want)
		}
	}
	if len(disputes) != 2 {
		t.Errorf("disputes %q, want 2 (pr #4 the swarm did not see opened is the inventory's)", disputes)
	}
}

const h1, h2 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"

func approve(pr int64, head, identity string) judgment {
	return judgment{pr: pr, action: cp.ActReview, verdict: cp.VerdictApprove, head: head, session: identity + "-s", identity: identity, actor: identity}
}

func merge(pr int64, head, identity string) judgment {
	return judgment{pr: pr, action: cp.ActMerge, head: head, session: identity + "-s", identity: identity, actor: identity}
}

func TestMergedApprovedWantsEveryMergeAtAHeadAnotherIdentityApproved(t *testing.T) {
	t.Parallel()
	authors := map[int64]string{2: "author"}
	merged := func(head string, approvedOnForge ...string) pull {
		p := pull{number: 2, merged: true, head: head, approved: map[string]bool{}}
		for _, c := range approvedOnForge {
			p.approved[c] = true
		}
		return p
	}
	for _, tc := range []struct {
		name      string
		pr        pull
		judgments []judgment
		want      string // a violation's words; "" for none
	}{
		{"a merge at the approved head passes", merged(h1, h1), []judgment{approve(2, h1, "reviewer"), merge(2, h1, "merger")}, ""},
		{"an approval at another head does not count", merged(h2, h1, h2), []judgment{approve(2, h1, "reviewer"), merge(2, h2, "merger")}, "which no identity but its author"},
		{"the author's own approval does not count", merged(h1, h1), []judgment{approve(2, h1, "author"), merge(2, h1, "merger")}, "which no identity but its author"},
		{"a request for changes is no approval", merged(h1, h1), []judgment{{pr: 2, action: cp.ActReview, verdict: cp.VerdictRequestChanges, head: h1, identity: "reviewer", actor: "reviewer"}, merge(2, h1, "merger")}, "which no identity"},
		{"a merge the log does not have fails", merged(h1, h1), []judgment{approve(2, h1, "reviewer")}, "by no merge in the event log"},
		{"a merge logged at another head than the forge's fails", merged(h2, h1, h2), []judgment{approve(2, h1, "reviewer"), approve(2, h2, "reviewer"), merge(2, h1, "merger")}, "the event log merged it at"},
		{"a merge the forge holds no approval of fails", merged(h1), []judgment{approve(2, h1, "reviewer"), merge(2, h1, "merger")}, "the forge holds no approval"},
		{"an open pull request has no merge to check", pull{number: 2, head: h2, approved: map[string]bool{}}, []judgment{approve(2, h1, "reviewer")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mergedApproved([]pull{tc.pr}, tc.judgments, authors)
			switch {
			case tc.want == "" && len(c.Failed) > 0:
				t.Errorf("violations %q, want none", c.Failed)
			case tc.want != "" && (len(c.Failed) != 1 || !strings.Contains(c.Failed[0], tc.want)):
				t.Errorf("violations %q, want one saying %q", c.Failed, tc.want)
			}
		})
	}
}

func TestOwnJudgmentsFindsAnIdentityJudgingWhatItWrote(t *testing.T) {
	t.Parallel()
	authors := map[int64]string{2: "author"}
	for _, tc := range []struct {
		name     string
		judgment judgment
		want     string
	}{
		{"another identity's review passes", approve(2, h1, "reviewer"), ""},
		{"another identity's merge passes", merge(2, h1, "merger"), ""},
		{"the author's approval through another session fails", approve(2, h1, "author"), "which wrote it"},
		{"the author's merge fails", merge(2, h1, "author"), "which wrote it"},
		{"an action for another identity's session fails", judgment{pr: 2, action: cp.ActMerge, head: h1, session: "s", identity: "merger", actor: "author"}, "by author for session s of merger"},
		{"an action of an unknown session fails", judgment{pr: 2, action: cp.ActMerge, head: h1, session: "s", actor: "x"}, "which the service does not list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ownJudgments([]judgment{tc.judgment}, authors, nil)
			switch {
			case tc.want == "" && len(c.Failed) > 0:
				t.Errorf("violations %q, want none", c.Failed)
			case tc.want != "" && (len(c.Failed) != 1 || !strings.Contains(c.Failed[0], tc.want)):
				t.Errorf("violations %q, want one saying %q", c.Failed, tc.want)
			}
		})
	}
	if c := ownJudgments(nil, authors, []string{"pr #3: nobody is known to have written it"}); len(c.Failed) != 1 {
		t.Errorf("violations %q, want the dispute", c.Failed)
	}
}

func TestOwnWritesFindsAWriteOnAnotherIdentitysItem(t *testing.T) {
	t.Parallel()
	authors := map[int64]string{2: "a"}
	item := itemOwner{id: "i1", caller: "a", branch: "workqueue/swarm-issue-1", pr: 2}
	sub := func(identity string) submission {
		return submission{ItemID: "i1", Identity: identity, Agent: identity + "-agent", Branch: item.branch}
	}
	head := func(by ...string) pull {
		p := pull{number: 2, head: h1}
		for i, b := range by {
			p.files = append(p.files, headFile{path: fmt.Sprintf("f%d", i), writtenBy: b})
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		items []itemOwner
		subs  []submission
		pr    pull
		want  string
	}{
		{"an item its creator wrote again passes", []itemOwner{item}, []submission{sub("a"), sub("a")}, head("a"), ""},
		{"another identity's accepted submission fails", []itemOwner{item}, []submission{sub("a"), sub("b")}, head("a"), "b's submission was accepted too"},
		{"an item that names another caller than its creator fails", []itemOwner{{id: "i1", caller: "b", branch: item.branch}}, []submission{sub("a")}, head("a"), "names b, but a created it"},
		{"an item no accepted submission made fails", []itemOwner{item}, nil, head("a"), "no submission the swarm saw accepted"},
		{"a file another identity wrote at the head fails", []itemOwner{item}, []submission{sub("a")}, head("a", "b"), "written by b"},
		{"a file that names no session the service lists fails", []itemOwner{item}, []submission{sub("a")}, head(""), "names no session the service lists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ownWrites(tc.items, tc.subs, []pull{tc.pr}, authors)
			switch {
			case tc.want == "" && len(c.Failed) > 0:
				t.Errorf("violations %q, want none", c.Failed)
			case tc.want != "" && (len(c.Failed) != 1 || !strings.Contains(c.Failed[0], tc.want)):
				t.Errorf("violations %q, want one saying %q", c.Failed, tc.want)
			}
		})
	}
}

func TestRunRefusesAHostileSplitItCannotFill(t *testing.T) {
	t.Parallel()
	base := Config{Service: "http://127.0.0.1:1", AdminToken: "admin", AgentTokens: []string{"a", "b", "c", "d"}, Issues: 1, Events: noEvents{}}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"hostile sessions leave fewer than 3 honest ones", func(c *Config) { c.Sessions, c.Hostile = 4, 2 }, "at least 3"},
		{"every session hostile", func(c *Config) { c.Sessions, c.Hostile = 4, 4 }, "hostile: from 0"},
		{"no token left for the honest sessions", func(c *Config) { c.Sessions, c.Hostile, c.AgentTokens = 4, 1, []string{"a"} }, "each needs one of its own"},
		{"no event log", func(c *Config) { c.Sessions, c.Events = 3, nil }, "event log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			if _, err := Run(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

type noEvents struct{}

func (noEvents) ListEvents(context.Context, cp.EventFilter) ([]cp.Event, error) { return nil, nil }
