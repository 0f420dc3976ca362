package main

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testrunner"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
)

// Non-managed merge request tracking end to end on the real Gitea (issue
// 51): a person's pull request, with its build failing once on a runner
// hiccup, is left alone while unlabelled; labelled with the project's
// track_label it gets the status note and the herder's retry, its branch
// never moves and it is never merged; the label removed, the item ends
// and the note says so.
func TestATrackedPullRequestGetsTheNoteAndACIRetryAndIsNeverWritten(t *testing.T) {
	g := startHerderOnGiteaWith(t, herderSection(3, time.Second), func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
		if task.Attempt == 1 {
			return testrunner.Outcome{Log: []string{"make", herderRunnerFailure}, Result: testrunner.Failure}
		}
		return testrunner.Outcome{Log: []string{"make", "ok"}}
	}, true, func(c *config.Config) {
		c.Projects[0].AutoMerge = true // tracking must not merge whatever the project says
		mrtype.In(c).BulkReconcileInterval = config.Duration(time.Second)
		mrtype.In(c).ReconcileInterval = config.Duration(2 * time.Second)
	})
	// A person's branch and pull request, as people make them.
	if _, _, err := g.cl.CreateFile(g.owner, g.name, "person.txt", sdk.CreateFileOptions{
		FileOptions: sdk.FileOptions{Message: "a person's change", BranchName: "main", NewBranchName: "person/feature"},
		Content:     base64.StdEncoding.EncodeToString([]byte("by hand\n"))}); err != nil {
		t.Fatal(err)
	}
	pr, _, err := g.cl.CreatePullRequest(g.owner, g.name, sdk.CreatePullRequestOption{Head: "person/feature", Base: "main", Title: "A person's change"})
	if err != nil {
		t.Fatal(err)
	}
	head := pr.Head.Sha

	// Unlabelled: its build fails and nothing follows it.
	eventually.True(t, 2*time.Minute, "the build's first attempt failed", func() (bool, any) {
		return len(buildTasks(g.taken())) >= 1, g.taken()
	})
	time.Sleep(3 * time.Second) // a bulk sweep and the deliveries pass; nothing may come of them
	if items := g.itemsOf(pr.Index); len(items) != 0 {
		t.Fatalf("an unlabelled pull request has items: %v", items)
	}
	if n := len(buildTasks(g.taken())); n != 1 {
		t.Fatalf("the unlabelled pull request's build ran %d times, want once (no retry)", n)
	}

	label, _, err := g.cl.CreateLabel(g.owner, g.name, sdk.CreateLabelOption{Name: "workqueue-track", Color: "#00aabb"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.cl.AddIssueLabels(g.owner, g.name, pr.Index, sdk.IssueLabelsOption{Labels: []int64{label.ID}}); err != nil {
		t.Fatal(err)
	}
	id := eventually.Value(t, time.Minute, "the labelled pull request is tracked", func() (string, bool) {
		items := g.itemsOf(pr.Index)
		if len(items) == 0 {
			return "", false
		}
		return items[0]["id"].(string), true
	})
	note := eventually.Value(t, time.Minute, "the status note", func() (string, bool) {
		n := g.trackedNote(pr.Index)
		return n, n != ""
	})
	if !strings.Contains(note, "workqueue never merges") {
		t.Errorf("the note does not say the service never merges it:\n%s", note)
	}
	eventually.True(t, 2*time.Minute, "the herder retried the build", func() (bool, any) {
		tasks := buildTasks(g.taken())
		return len(tasks) == 2 && tasks[1].Attempt == 2 && tasks[1].Result == testrunner.Success, tasks
	})
	// The decision is recorded after the retry, which the runner can
	// finish first.
	eventually.True(t, time.Minute, "the retry recorded as the herder's", func() (bool, any) {
		decisions := herderDecisions(t, g.item(id))
		return len(decisions) == 1 && decisions[0].Outcome == mr.CIOutcomeRetried, decisions
	})

	time.Sleep(3 * time.Second) // mergeable, auto_merge on: a reconcile or two pass
	got, err := g.forge.GetMergeRequest(context.Background(), g.repo, pr.Index)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "open" || got.HeadSHA != head {
		t.Fatalf("the tracked pull request is %s at %.12s, want open at the person's head %.12s", got.State, got.HeadSHA, head)
	}
	if tip, _ := g.forge.BranchHead(context.Background(), g.repo, "person/feature"); tip != head {
		t.Fatalf("the person's branch moved to %.12s from %.12s", tip, head)
	}
	if item := g.item(id); item["phase"] != "active" {
		t.Fatalf("the tracked item is %v/%v while labelled and open", item["phase"], item["reason"])
	}

	if _, err := g.cl.DeleteIssueLabel(g.owner, g.name, pr.Index, label.ID); err != nil {
		t.Fatal(err)
	}
	done := g.waitItem(id, "the untracked item ends", func(it map[string]any) bool { return it["phase"] != "active" })
	if done["phase"] != "completed" || done["reason"] != mr.ReasonUntracked {
		t.Errorf("item %v/%v, want completed/untracked", done["phase"], done["reason"])
	}
	eventually.True(t, time.Minute, "the note says tracking stopped", func() (bool, any) {
		n := g.trackedNote(pr.Index)
		return strings.Contains(n, "stopped: the track label was removed"), n
	})
	if got, _ := g.forge.GetMergeRequest(context.Background(), g.repo, pr.Index); got.State != "open" || got.HeadSHA != head {
		t.Errorf("after untracking the pull request is %s at %.12s", got.State, got.HeadSHA)
	}
}

// itemsOf lists the mr items of the repository's pull request number.
func (g *giteaHerd) itemsOf(number int64) []map[string]any {
	g.t.Helper()
	status, list, _ := g.do("GET", "/api/v1/items?item_type=mr&project="+url.QueryEscape(g.repo), g.tokens["read"], nil)
	if status != http.StatusOK {
		g.t.Fatalf("list items: %d %v", status, list)
	}
	var out []map[string]any
	for _, it := range list["items"].([]any) {
		item := it.(map[string]any)
		full := g.item(item["id"].(string))
		if prOf(full) == number {
			out = append(out, full)
		}
	}
	return out
}

// trackedNote is the service's status note on a tracked pull request, ""
// while there is none; more than one fails the test.
func (g *giteaHerd) trackedNote(pr int64) string {
	g.t.Helper()
	return g.noteSaying(pr, "**workqueue** tracks this merge request")
}
