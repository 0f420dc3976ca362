package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testrunner"
)

// The merge train end to end on the real Gitea with Actions and the
// project's runner (issue 54): two changes that each pass CI alone and
// fail together. Main is protected to require the build; the runner's
// build fails on a commit that holds both files. The first merges, the
// second is ejected and its pull request says why, and main never holds
// both.
func TestTheMergeTrainOnGiteaKeepsMainGreen(t *testing.T) {
	var g *giteaHerd
	g = startHerderOnGiteaWith(t, config.Herder{}, func(ctx context.Context, task testrunner.Task) testrunner.Outcome {
		t.Logf("task %s attempt %d on %.12s", task.Name, task.Attempt, task.SHA)
		_, a, _ := g.forge.ReadFile(ctx, g.repo, task.SHA, "workqueue-train-a.txt")
		_, b, _ := g.forge.ReadFile(ctx, g.repo, task.SHA, "workqueue-train-b.txt")
		if a && b {
			return testrunner.Outcome{Log: []string{"make", "FAIL: a and b do not go together"}, Result: testrunner.Failure}
		}
		return testrunner.Outcome{Log: []string{"make", "ok"}}
	}, true, func(c *config.Config) {
		c.Projects[0].AutoMerge = true
		c.Projects[0].MergeTrain = config.MergeTrain{Enabled: true, BatchSize: 4}
	})
	a := g.submit("workqueue/train-a", "a\n")
	b := g.submit("workqueue/train-b", "b\n")

	doneA := g.waitItem(a, "a ends", func(it map[string]any) bool { return it["phase"] != "active" })
	doneB := g.waitItem(b, "b ends", func(it map[string]any) bool { return it["phase"] != "active" })
	// Whichever joined the train first merges; the second, built on it,
	// fails CI and is ejected.
	merged, ejected, mergedFile, ejectedFile := doneA, doneB, "workqueue-train-a.txt", "workqueue-train-b.txt"
	if doneB["reason"] == "merged" {
		merged, ejected, mergedFile, ejectedFile = doneB, doneA, ejectedFile, mergedFile
	}
	if merged["phase"] != "completed" || merged["reason"] != "merged" {
		t.Errorf("neither merged: a %v/%v (%v), b %v/%v (%v)", doneA["phase"], doneA["reason"], doneA["error"], doneB["phase"], doneB["reason"], doneB["error"])
	}
	if ejected["phase"] != "failed" || !strings.Contains(fmt.Sprint(ejected["error"]), "ejected from the merge train") {
		t.Errorf("the second is %v/%v (%v), want failed: ejected", ejected["phase"], ejected["reason"], ejected["error"])
	}
	ctx := context.Background()
	if _, found, _ := g.forge.ReadFile(ctx, g.repo, "main", mergedFile); !found {
		t.Errorf("main lacks %s", mergedFile)
	}
	if _, found, _ := g.forge.ReadFile(ctx, g.repo, "main", ejectedFile); found {
		t.Errorf("main holds %s: it was red", ejectedFile)
	}
	doneB = ejected
	eventually.True(t, time.Minute, "b's pull request says why it left the train", func() (bool, any) {
		comments, _, err := g.cl.ListIssueComments(g.owner, g.name, prOf(doneB), sdk.ListIssueCommentOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range comments {
			if strings.Contains(c.Body, "out of the merge train") {
				return true, nil
			}
		}
		return false, len(comments)
	})
}
