package gitlab_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge/gitlab"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
)

// hostile is a description a caller could submit: every line after the
// first would run on GitLab as the service's account if sent as it is.
// The carriage return hides one from a reader that splits on "\n" only.
const hostile = "Adds the parser.\n/approve\n/merge\n/label ~\"priority::1\" ~managed\n/title Owned\n/assign @mallory\r\n/close\n\n" +
	"```\n/unlabel\n```\n/Draft"

// quickActionWorld is the GitLab-shaped server with project g/p, whose
// branch feature holds a change ready to merge, and the adapter on it as
// the service, with a person's raw client.
func quickActionWorld(t *testing.T) (*gitlabtest.Server, *gitlab.Forge, *gl.Client) {
	t.Helper()
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	srv.CreateProject("g/p")
	f, err := gitlab.New(srv.URL, srv.Token, gitlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CommitFiles(context.Background(), wq.CommitRequest{Project: "g/p", Base: "main", Branch: "feature", Message: "change",
		Changes: []wq.FileChange{{Action: "create", Path: "a.txt", Content: []byte("a\n")}}}); err != nil {
		t.Fatal(err)
	}
	person, err := gl.NewClient(srv.AddUser("person"), gl.WithBaseURL(srv.URL+"/api/v4"), gl.WithoutRetries())
	if err != nil {
		t.Fatal(err)
	}
	return srv, f, person
}

// checkNothingRan fails unless the merge request is as the service made
// it: open, unapproved, its title and labels its own, and no quick action
// run; its stored description must be the inert form of what was sent.
func checkNothingRan(t *testing.T, srv *gitlabtest.Server, f *gitlab.Forge, number int64, title, sent string) {
	t.Helper()
	if ran := srv.QuickActions(); len(ran) > 0 {
		t.Errorf("quick actions ran: %v", ran)
	}
	mr, err := f.GetMergeRequest(context.Background(), "g/p", number)
	if err != nil {
		t.Fatal(err)
	}
	if mr.State != wq.MergeRequestOpen || mr.Title != title || len(mr.Labels) != 1 || mr.Labels[0] != "workqueue" {
		t.Errorf("merge request %s %q %v, want open %q [workqueue]", mr.State, mr.Title, mr.Labels, title)
	}
	if mr.Description != gitlab.Inert(sent) {
		t.Errorf("stored description %q, want the inert form %q", mr.Description, gitlab.Inert(sent))
	}
	// A person reads every line that was sent, a space before the ones
	// that start with "/".
	for _, line := range strings.Split(strings.ReplaceAll(sent, "\r", ""), "\n") {
		if !slices.Contains(strings.Split(mr.Description, "\n"), line) && !slices.Contains(strings.Split(mr.Description, "\n"), " "+line) {
			t.Errorf("line %q is missing from the stored description %q", line, mr.Description)
		}
	}
}

// The server runs what the adapter must neutralise: the same description
// sent by a person's client merges, approves, relabels and retitles.
func TestTheServerRunsQuickActionsOfADescriptionAsGitLabDoes(t *testing.T) {
	srv, _, person := quickActionWorld(t)
	mr, _, err := person.MergeRequests.CreateMergeRequest("g/p", &gl.CreateMergeRequestOptions{Title: gl.Ptr("Parser"),
		Description: gl.Ptr(hostile), SourceBranch: gl.Ptr("feature"), TargetBranch: gl.Ptr("main")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range srv.QuickActions() {
		names = append(names, q.Name)
	}
	if want := []string{"approve", "merge", "label", "title", "assign", "close", "draft"}; !slices.Equal(names, want) {
		t.Errorf("ran %v, want %v", names, want)
	}
	if mr.State != "merged" || mr.Description != "Adds the parser.\n```\n/unlabel\n```" {
		t.Errorf("merge request %s with description %q, want merged with the commands dropped", mr.State, mr.Description)
	}
}

func TestQuickActionsInAMergeRequestDescriptionDoNotRunOnCreation(t *testing.T) {
	srv, f, _ := quickActionWorld(t)
	mr, err := f.CreateMergeRequest(context.Background(), wq.MergeRequestCreate{Project: "g/p", SourceBranch: "feature", TargetBranch: "main",
		Title: "Parser", Description: hostile, Labels: []string{"workqueue"}})
	if err != nil {
		t.Fatal(err)
	}
	checkNothingRan(t, srv, f, mr.Number, "Parser", hostile)
}

func TestQuickActionsInAMergeRequestDescriptionDoNotRunOnUpdate(t *testing.T) {
	srv, f, _ := quickActionWorld(t)
	ctx := context.Background()
	mr, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: "g/p", SourceBranch: "feature", TargetBranch: "main",
		Title: "Parser", Description: "Adds the parser.", Labels: []string{"workqueue"}})
	if err != nil {
		t.Fatal(err)
	}
	// A resubmission changes the description, then the title with it.
	description := hostile
	if _, err := f.UpdateMergeRequest(ctx, "g/p", mr.Number, wq.MergeRequestUpdate{Description: &description}); err != nil {
		t.Fatal(err)
	}
	checkNothingRan(t, srv, f, mr.Number, "Parser", hostile)
	title, description := "Parser, again", "Again.\n/merge\n/approve"
	if _, err := f.UpdateMergeRequest(ctx, "g/p", mr.Number, wq.MergeRequestUpdate{Title: &title, Description: &description}); err != nil {
		t.Fatal(err)
	}
	checkNothingRan(t, srv, f, mr.Number, title, description)
	// Sending back what GitLab stored changes nothing more: the form is
	// stable, so a sync that compares finds it equal.
	stored, _ := f.GetMergeRequest(ctx, "g/p", mr.Number)
	if _, err := f.UpdateMergeRequest(ctx, "g/p", mr.Number, wq.MergeRequestUpdate{Description: &stored.Description}); err != nil {
		t.Fatal(err)
	}
	checkNothingRan(t, srv, f, mr.Number, title, description)
}

func TestQuickActionsInAnIssueDescriptionDoNotRun(t *testing.T) {
	srv, f, person := quickActionWorld(t)
	w, err := f.CreateIssue(context.Background(), wq.IssueCreate{Project: "g/p", Title: "Disk full", Body: hostile, Labels: []string{"incident"}})
	if err != nil {
		t.Fatal(err)
	}
	if ran := srv.QuickActions(); len(ran) > 0 {
		t.Errorf("quick actions ran: %v", ran)
	}
	is, _, err := person.Issues.GetIssue("g/p", w.Number)
	if err != nil {
		t.Fatal(err)
	}
	if is.State != "opened" || is.Title != "Disk full" || !slices.Equal([]string(is.Labels), []string{"incident"}) || is.Description != gitlab.Inert(hostile) {
		t.Errorf("issue %s %q %v %q, want it open as filed, its description inert", is.State, is.Title, is.Labels, is.Description)
	}
}

func TestTheServicesNoteIsInertWhenMadeAndWhenEdited(t *testing.T) {
	srv, f, person := quickActionWorld(t)
	ctx := context.Background()
	mr, err := f.CreateMergeRequest(ctx, wq.MergeRequestCreate{Project: "g/p", SourceBranch: "feature", TargetBranch: "main",
		Title: "Parser", Description: "Adds the parser.", Labels: []string{"workqueue"}})
	if err != nil {
		t.Fatal(err)
	}
	// The note renders a title a caller chose.
	id, err := f.CreateNote(ctx, "g/p", mr.Number, "workqueue: item for\n/close\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.UpdateNote(ctx, "g/p", mr.Number, id, "workqueue: done\n/merge\n/close"); err != nil {
		t.Fatal(err)
	}
	checkNothingRan(t, srv, f, mr.Number, "Parser", "Adds the parser.")
	notes, _, err := person.Notes.ListMergeRequestNotes("g/p", mr.Number, nil)
	if err != nil || len(notes) != 1 || notes[0].Body != "workqueue: done\n /merge\n /close" {
		t.Errorf("notes %v, %v: want the edited note, inert", notes, err)
	}
}

func TestTheGitLabKindSaysWhichFormItSends(t *testing.T) {
	for _, text := range []string{hostile, "plain", "", "/close", "a\r\n/merge\r\n"} {
		if got := wq.InertText(&gitlab.Forge{}, text); got != gitlab.Inert(text) {
			t.Errorf("InertText(%q) = %q, want %q", text, got, gitlab.Inert(text))
		}
	}
	if got := wq.InertText(nil, "/close"); got != "/close" {
		t.Errorf("a kind without InertText sends %q as it is, got %q", "/close", got)
	}
}

// FuzzInertTextRunsNoQuickAction holds, for any text, that GitLab (as the
// test server reads a description) finds no quick action in its inert
// form, that the form is stable, and that it keeps every line a person
// reads.
func FuzzInertTextRunsNoQuickAction(f *testing.F) {
	for _, s := range []string{hostile, "/close", "\r/merge", "a\n/approve x\n", "```\n/close\n```", ">>>\n/close\n>>>", "`a\n/merge\nb`", " /close"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		inert := gitlab.Inert(text)
		if _, commands := gitlabtest.ExtractQuickActions(inert); len(commands) > 0 {
			t.Errorf("Inert(%q) = %q runs %v", text, inert, commands)
		}
		if again := gitlab.Inert(inert); again != inert {
			t.Errorf("Inert is not stable: %q, then %q", inert, again)
		}
		sent, kept := strings.Split(strings.ReplaceAll(text, "\r", ""), "\n"), strings.Split(inert, "\n")
		if len(sent) != len(kept) {
			t.Fatalf("Inert(%q) = %q: %d lines, want %d", text, inert, len(kept), len(sent))
		}
		for i := range sent {
			if kept[i] != sent[i] && (kept[i] != " "+sent[i] || !strings.HasPrefix(sent[i], "/")) {
				t.Errorf("Inert(%q) line %d = %q, want %q or, for a leading slash, a space before it", text, i, kept[i], sent[i])
			}
		}
	})
}
