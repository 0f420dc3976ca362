package cpstoretest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

// RunIncidents is the conformance suite of incident.Store; open returns
// a new, empty store for each test. Every implementation runs it: cpstore
// on both databases, and the bridge's in-memory fake, so that the fake
// behaves as the store does.
func RunIncidents(t *testing.T, open func(t *testing.T) incident.Store) {
	for _, area := range []struct {
		name string
		run  func(t *testing.T, s incident.Store)
	}{
		{"claim", claimLink},
		{"claim race", claimRace},
		{"finish claim", finishClaim},
		{"take over claim", takeOverClaim},
		{"update link", updateLink},
		{"list links", listLinks},
	} {
		t.Run(area.name, func(t *testing.T) { area.run(t, open(t)) })
	}
}

// IncidentKey is a key of the suite: Sentry acme/web, no environment.
func IncidentKey(fingerprint string) incident.Key {
	return incident.Key{Provider: incident.ProviderSentry, Organization: "acme", Project: "web", Fingerprint: fingerprint}
}

// Claim is the creating link a bridge would claim for key at now.
func Claim(key incident.Key, token string, now time.Time) incident.Link {
	return incident.Link{Key: key, Forge: "gitea", Repo: "o/r", Status: "unresolved", EventCount: 3,
		Permalink: "https://sentry.example/organizations/acme/issues/" + key.Fingerprint + "/",
		FirstSeen: now.Add(-time.Hour), LastSeen: now.Add(-time.Minute), LinkedPRs: []int64{4, 7},
		State: incident.LinkCreating, ClaimToken: token, ClaimedAt: now, CreatedAt: now, UpdatedAt: now}
}

// mustClaim claims l and fails unless it was this call's claim.
func mustClaim(t *testing.T, s incident.Store, l incident.Link) *incident.Link {
	t.Helper()
	got, claimed, err := s.ClaimLink(context.Background(), l)
	if err != nil || !claimed {
		t.Fatalf("claim %s: claimed %v, %v", l.Key, claimed, err)
	}
	return got
}

func mustLink(t *testing.T, s incident.Store, key incident.Key, number int64) *incident.Link {
	t.Helper()
	mustClaim(t, s, Claim(key, "tok-"+key.Fingerprint, T0))
	l, err := s.FinishClaim(context.Background(), key, "tok-"+key.Fingerprint, incident.IssueRef{Number: number, URL: fmt.Sprintf("https://forge/o/r/issues/%d", number)}, T0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func claimLink(t *testing.T, s incident.Store) {
	ctx := context.Background()
	key := IncidentKey("101")
	_, err := s.GetLink(ctx, key)
	WantCode(t, err, wq.ENOTFOUND)

	first := Claim(key, "tok-a", T0)
	got := mustClaim(t, s, first)
	if got.ID == "" || got.Revision != 1 || got.IssueNumber != 0 {
		t.Errorf("claimed link: id %q, revision %d, issue %d", got.ID, got.Revision, got.IssueNumber)
	}
	want := first
	want.ID, want.Revision = got.ID, 1
	wantDiff(t, "claimed link", want, *got)
	read, err := s.GetLink(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	wantDiff(t, "link as read", want, *read)

	// A second claim of the key gets the first one's row, untouched.
	again, claimed, err := s.ClaimLink(ctx, Claim(key, "tok-b", T0.Add(time.Second)))
	if err != nil || claimed {
		t.Fatalf("second claim: claimed %v, %v", claimed, err)
	}
	wantDiff(t, "the first claim, as the second one reads it", want, *again)

	// Hard rule 6: the empty environment is a key of its own, as is
	// another one; each claims.
	prod := key
	prod.Environment = "production"
	mustClaim(t, s, Claim(prod, "tok-c", T0))

	_, _, err = s.ClaimLink(ctx, Claim(IncidentKey("102"), "", T0))
	WantCode(t, err, wq.EINVALID)
}

// claimRace: ten claims of one key at once, one wins, and every one
// returns the winner's row.
func claimRace(t *testing.T, s incident.Store) {
	key := IncidentKey("201")
	const n = 10
	type answer struct {
		link    *incident.Link
		claimed bool
		err     error
	}
	answers := make([]answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			l, claimed, err := s.ClaimLink(context.Background(), Claim(key, fmt.Sprintf("tok-%d", i), T0))
			answers[i] = answer{l, claimed, err}
		})
	}
	close(start)
	wg.Wait()
	winners := 0
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("claim %d: %v", i, a.err)
		}
		if a.claimed {
			winners++
		}
		if a.link.ID != answers[0].link.ID || a.link.ClaimToken != answers[0].link.ClaimToken {
			t.Errorf("claim %d read link %s under %s, claim 0 %s under %s", i, a.link.ID, a.link.ClaimToken, answers[0].link.ID, answers[0].link.ClaimToken)
		}
	}
	if winners != 1 {
		t.Fatalf("%d claims won, want 1", winners)
	}
}

func finishClaim(t *testing.T, s incident.Store) {
	ctx := context.Background()
	key := IncidentKey("301")
	claim := mustClaim(t, s, Claim(key, "tok-a", T0))
	issue := incident.IssueRef{Number: 42, URL: "https://forge/o/r/issues/42"}

	_, err := s.FinishClaim(ctx, key, "tok-other", issue, T0.Add(time.Second))
	WantCode(t, err, wq.ECONFLICT)
	_, err = s.FinishClaim(ctx, IncidentKey("missing"), "tok-a", issue, T0)
	WantCode(t, err, wq.ENOTFOUND)

	done, err := s.FinishClaim(ctx, key, "tok-a", issue, T0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := *claim
	want.State, want.IssueNumber, want.IssueURL, want.ClaimToken = incident.LinkLinked, 42, issue.URL, ""
	want.Revision, want.UpdatedAt = 2, T0.Add(time.Second)
	wantDiff(t, "finished link", want, *done)

	// A claim is finished once.
	_, err = s.FinishClaim(ctx, key, "tok-a", incident.IssueRef{Number: 43}, T0.Add(2*time.Second))
	WantCode(t, err, wq.ECONFLICT)
	read, err := s.GetLink(ctx, key)
	if err != nil || read.IssueNumber != 42 {
		t.Fatalf("after a second finish: %+v, %v", read, err)
	}
}

func takeOverClaim(t *testing.T, s incident.Store) {
	ctx := context.Background()
	key := IncidentKey("401")
	mustClaim(t, s, Claim(key, "tok-old", T0))
	later := T0.Add(3 * time.Minute)

	got, err := s.TakeOverClaim(ctx, key, "tok-old", "tok-new", later)
	if err != nil {
		t.Fatal(err)
	}
	if got.ClaimToken != "tok-new" || !got.ClaimedAt.Equal(later) || got.State != incident.LinkCreating || got.Revision != 2 {
		t.Errorf("taken over: %+v", got)
	}
	// The old claim lost: it can neither take over again nor finish.
	_, err = s.TakeOverClaim(ctx, key, "tok-old", "tok-third", later)
	WantCode(t, err, wq.ECONFLICT)
	_, err = s.FinishClaim(ctx, key, "tok-old", incident.IssueRef{Number: 1}, later)
	WantCode(t, err, wq.ECONFLICT)
	if _, err := s.FinishClaim(ctx, key, "tok-new", incident.IssueRef{Number: 9}, later); err != nil {
		t.Fatal(err)
	}
	// A linked link has no claim to take.
	_, err = s.TakeOverClaim(ctx, key, "tok-new", "tok-late", later)
	WantCode(t, err, wq.ECONFLICT)
	_, err = s.TakeOverClaim(ctx, IncidentKey("missing"), "a", "b", later)
	WantCode(t, err, wq.ENOTFOUND)
}

func updateLink(t *testing.T, s incident.Store) {
	ctx := context.Background()
	key := IncidentKey("501")
	l := mustLink(t, s, key, 5)
	to := *l
	to.Status, to.EventCount, to.Permalink = "resolved", 99, "https://sentry.example/issues/501/"
	to.FirstSeen, to.LastSeen = T0.Add(-48*time.Hour+time.Microsecond), T0.Add(time.Hour)
	to.LinkedPRs = []int64{3, 4, 7}

	got, err := s.UpdateLink(ctx, *l, to, T0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := to
	want.Revision, want.UpdatedAt = l.Revision+1, T0.Add(time.Minute)
	wantDiff(t, "updated link", want, *got)

	// Decided on the link as it was: refused, nothing written.
	stale := to
	stale.Status = "unresolved"
	_, err = s.UpdateLink(ctx, *l, stale, T0.Add(2*time.Minute))
	WantCode(t, err, wq.ECONFLICT)
	read, err := s.GetLink(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	wantDiff(t, "link after a refused update", want, *read)

	// Zero times and no pull requests are stored as such.
	cleared := *read
	cleared.FirstSeen, cleared.LastSeen, cleared.LinkedPRs = time.Time{}, time.Time{}, nil
	got, err = s.UpdateLink(ctx, *read, cleared, T0.Add(3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !got.FirstSeen.IsZero() || !got.LastSeen.IsZero() || len(got.LinkedPRs) != 0 {
		t.Errorf("cleared link: %+v", got)
	}

	// A creating link is not updated: its claimer writes it.
	creating := mustClaim(t, s, Claim(IncidentKey("502"), "tok", T0))
	_, err = s.UpdateLink(ctx, *creating, *creating, T0)
	WantCode(t, err, wq.ECONFLICT)
	_, err = s.UpdateLink(ctx, incident.Link{Key: IncidentKey("missing")}, to, T0)
	WantCode(t, err, wq.ENOTFOUND)
}

func listLinks(t *testing.T, s incident.Store) {
	ctx := context.Background()
	a := mustLink(t, s, IncidentKey("601"), 1)
	other := IncidentKey("602")
	other.Provider, other.Project = incident.ProviderGlitchTip, "api"
	b := mustClaim(t, s, Claim(other, "tok", T0.Add(time.Second)))

	ids := func(f incident.LinkFilter) []string {
		t.Helper()
		links, err := s.ListLinks(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range links {
			out = append(out, l.ID)
		}
		return out
	}
	for _, c := range []struct {
		name string
		f    incident.LinkFilter
		want []string
	}{
		{"all, newest first", incident.LinkFilter{}, []string{b.ID, a.ID}},
		{"of a provider", incident.LinkFilter{Provider: incident.ProviderSentry}, []string{a.ID}},
		{"of a project", incident.LinkFilter{Project: "api"}, []string{b.ID}},
		{"in a state", incident.LinkFilter{State: incident.LinkLinked}, []string{a.ID}},
		{"of a repository", incident.LinkFilter{Forge: "gitea", Repo: "o/r"}, []string{b.ID, a.ID}},
		{"of another repository", incident.LinkFilter{Repo: "o/other"}, nil},
		{"limited", incident.LinkFilter{Limit: 1}, []string{b.ID}},
	} {
		wantDiff(t, c.name, c.want, ids(c.f))
	}
}
