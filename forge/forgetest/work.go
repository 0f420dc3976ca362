package forgetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
)

// runWork is the work inventory's part of the suite.
func runWork(t *testing.T, newProject func(t *testing.T) Project) {
	ctx := context.Background()
	people := projectHaving(newProject, func(p Project) bool { return p.People != nil }, "no people to act on this forge")
	list := func(t *testing.T, p Project) map[string]wq.WorkInfo {
		t.Helper()
		work, err := p.Forge.ListOpenWork(ctx, p.Path)
		if err != nil {
			t.Fatalf("ListOpenWork: %v", err)
		}
		out := map[string]wq.WorkInfo{}
		for _, w := range work {
			key := fmt.Sprintf("%s %d", w.Kind, w.Number)
			if _, dup := out[key]; dup {
				t.Errorf("%s listed twice", key)
			}
			out[key] = w
		}
		return out
	}
	pr := func(n int64) string { return fmt.Sprintf("%s %d", wq.WorkPR, n) }
	issue := func(n int64) string { return fmt.Sprintf("%s %d", wq.WorkIssue, n) }

	t.Run("open issues and pull requests are listed with what routing reads, closed ones are not", func(t *testing.T) {
		p := people(t)
		bug := p.People.OpenIssue(t, p.Path, "Broken", "bug")
		gone := p.People.OpenIssue(t, p.Path, "Done already")
		p.People.CloseIssue(t, p.Path, gone)
		mr, c := openPR(t, p, "wq/fix", fmt.Sprintf("Fixes #%d.", bug), "managed")
		closedMR, _ := openPR(t, p, "wq/dropped", "")
		closed := wq.MergeRequestClosed
		if _, err := p.Forge.UpdateMergeRequest(ctx, p.Path, closedMR.Number, wq.MergeRequestUpdate{State: &closed}); err != nil {
			t.Fatal(err)
		}
		got := list(t, p)
		if len(got) != 2 {
			t.Errorf("listed %v, want the open issue and the open pull request only", got)
		}
		is, ok := got[issue(bug)]
		if !ok || is.State != wq.MergeRequestOpen || is.Title != "Broken" || !slices.Equal(is.Labels, []string{"bug"}) ||
			is.Author == "" || is.UpdatedAt.IsZero() || is.HeadSHA != "" || is.ReviewState != "" {
			t.Errorf("the issue: %+v (listed: %v)", is, ok)
		}
		w, ok := got[pr(mr.Number)]
		if !ok || w.State != wq.MergeRequestOpen || w.Title != "Work on wq/fix" || !slices.Equal(w.Labels, []string{"managed"}) || w.URL != mr.URL ||
			w.Author == "" || w.HeadSHA != c.SHA || w.ReviewState != wq.ReviewNone || !slices.Equal(w.LinkedIssues, []int64{bug}) ||
			w.UpdatedAt.IsZero() {
			t.Errorf("the pull request: %+v (listed: %v)", w, ok)
		}
		waitMergeable(t, p, mr.Number)
		if w := list(t, p)[pr(mr.Number)]; !w.Mergeable {
			t.Errorf("once the forge says it merges, the listed pull request is not mergeable: %+v", w)
		}
		if got, err := p.Forge.GetWork(ctx, p.Path, wq.WorkIssue, gone); err != nil || got.State != wq.MergeRequestClosed || got.Title != "Done already" {
			t.Errorf("GetWork of the closed issue = %+v, %v", got, err)
		}
		if got, err := p.Forge.GetWork(ctx, p.Path, wq.WorkPR, closedMR.Number); err != nil || got.State != wq.MergeRequestClosed || got.Kind != wq.WorkPR {
			t.Errorf("GetWork of the closed pull request = %+v, %v", got, err)
		}
		_, err := p.Forge.GetWork(ctx, p.Path, wq.WorkIssue, 9999)
		wantKind(t, err, wq.ForgeNotFound)
		_, err = p.Forge.GetWork(ctx, p.Path, wq.WorkPR, 9999)
		wantKind(t, err, wq.ForgeNotFound)
	})

	t.Run("an issue the service opens is work with its labels and web page, listed and read back", func(t *testing.T) {
		p := newProject(t)
		got, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path, Title: "Disk full on db-1",
			Body: "Sentry: disk usage above 95%", Labels: []string{"sev2", "incident"}})
		if err != nil {
			t.Fatalf("CreateIssue: %v", err)
		}
		labels := slices.Sorted(slices.Values(got.Labels))
		if got.Kind != wq.WorkIssue || got.Number <= 0 || got.State != wq.MergeRequestOpen || got.Title != "Disk full on db-1" ||
			!slices.Equal(labels, []string{"incident", "sev2"}) || got.Author == "" || got.UpdatedAt.IsZero() ||
			!strings.HasPrefix(got.URL, "http") || !strings.HasSuffix(got.URL, fmt.Sprintf("/issues/%d", got.Number)) {
			t.Errorf("CreateIssue = %+v", got)
		}
		listed, ok := list(t, p)[issue(got.Number)]
		if !ok || listed.URL != got.URL || listed.Title != got.Title || !slices.Equal(slices.Sorted(slices.Values(listed.Labels)), labels) {
			t.Errorf("listed: %+v (listed: %v); want it as CreateIssue answered: %+v", listed, ok, got)
		}
		if read, err := p.Forge.GetWork(ctx, p.Path, wq.WorkIssue, got.Number); err != nil || read.URL != got.URL {
			t.Errorf("GetWork = %+v, %v; want URL %s", read, err, got.URL)
		}
		second, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path, Title: "Queue stalled", Labels: []string{"incident"}})
		if err != nil || second.Number == got.Number || !slices.Equal(second.Labels, []string{"incident"}) {
			t.Errorf("a second issue with a label the first made = %+v, %v", second, err)
		}
	})

	t.Run("an issue is not opened without a title or on a missing project", func(t *testing.T) {
		p := newProject(t)
		_, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path, Title: " ", Labels: []string{"incident"}})
		wantKind(t, err, wq.ForgePermanent)
		for _, labels := range [][]string{nil, {"incident"}} {
			_, err := p.Forge.CreateIssue(ctx, wq.IssueCreate{Project: p.Path + "-missing", Title: "t", Labels: labels})
			wantKind(t, err, wq.ForgeNotFound)
		}
		if got := list(t, p); len(got) != 0 {
			t.Errorf("listed %v after refusals", got)
		}
	})

	t.Run("a pull request's verdict is its reviewers' latest, changes requested first", func(t *testing.T) {
		p := people(t)
		mr, _ := openPR(t, p, "wq/review", "")
		waitMergeable(t, p, mr.Number) // GitLab says requested_changes only once its checks ran
		verdict := func(t *testing.T) string {
			t.Helper()
			listed := list(t, p)[pr(mr.Number)].ReviewState
			read, err := p.Forge.GetWork(ctx, p.Path, wq.WorkPR, mr.Number)
			if err != nil || read.ReviewState != listed {
				t.Errorf("GetWork = %+v, %v; want the verdict ListOpenWork gives, %q", read, err, listed)
			}
			return listed
		}
		p.People.Review(t, p.Path, mr.Number, wq.ReviewChangesRequested)
		if got := verdict(t); got != wq.ReviewChangesRequested {
			t.Errorf("after changes were requested: %q", got)
		}
		p.People.Review(t, p.Path, mr.Number, wq.ReviewApproved) // the same reviewer, satisfied
		if got := verdict(t); got != wq.ReviewApproved {
			t.Errorf("after the reviewer approved: %q", got)
		}
	})

	t.Run("every page is listed, and a pull request costs one more call", func(t *testing.T) {
		p := people(t)
		if p.WorkPageSize == 0 {
			t.Skip("the page size is not known")
		}
		want := map[string]bool{}
		for i := range p.WorkPageSize + 1 {
			want[issue(p.People.OpenIssue(t, p.Path, fmt.Sprintf("Issue %d", i)))] = true
		}
		one, _ := openPR(t, p, "wq/one", "")
		want[pr(one.Number)] = true
		count := func() int64 {
			if p.Calls == nil {
				return 0
			}
			return p.Calls()
		}
		before := count()
		got := list(t, p)
		withOne := count() - before
		for k := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("%s is not listed", k)
			}
		}
		if len(got) != len(want) {
			t.Errorf("listed %d, want %d", len(got), len(want))
		}
		if p.Calls != nil {
			two, _ := openPR(t, p, "wq/two", "")
			before = count()
			if got := list(t, p); len(got) != len(want)+1 {
				t.Errorf("listed %d after a second pull request, want %d", len(got), len(want)+1)
			}
			if more := count() - before - withOne; more != 1 {
				t.Errorf("a second open pull request (%d) cost %d more calls, want 1", two.Number, more)
			}
		}
	})
}

// openPR commits branch.txt to a new branch and opens a pull request
// from it, titled "Work on " and the branch.
