package gitlabtest_test

import (
	"fmt"
	"testing"

	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
)

func TestDescriptionsLoseTheQuickActionsGitLabRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text, stored string
		commands     string
	}{
		{"/merge", "", "[[merge ]]"},
		{"Text\n/MERGE\n/label ~a ~\"b c\"\nmore", "Text\nmore", "[[merge ] [label ~a ~\"b c\"]]"},
		{"a\r\n/close\r\n", "a", "[[close ]]"},
		{"\r/close", "", "[[close ]]"},
		{"/closed\n/close-it\n/nothing", "/closed\n/close-it\n/nothing", "[]"},
		{" /close\nx /merge", " /close\nx /merge", "[]"},
		{"```\n/close\n```\n/merge", "```\n/close\n```", "[[merge ]]"},
		{"~~~~ go\n/close\n~~~\n~~~~\n/merge", "~~~~ go\n/close\n~~~\n~~~~", "[[merge ]]"},
		{"```\n/close", "```\n/close", "[]"},
		{">>>\n/close\n>>>\n/merge", ">>>\n/close\n>>>", "[[merge ]]"},
		{"> quoted\n>\n> /close", "> quoted\n>\n> /close", "[]"},
		{"`code\n/close\nend` /x\n/merge", "`code\n/close\nend` /x", "[[merge ]]"},
		{"<details>\n/close\n</details>\n/approve", "<details>\n/close\n</details>", "[[approve ]]"},
		{"/approve\n\n\nnext", "\nnext", "[[approve ]]"}, // the paragraph takes one blank line with it
	} {
		stored, commands := gitlabtest.ExtractQuickActions(tc.text)
		if stored != tc.stored || fmt.Sprint(commands) != tc.commands {
			t.Errorf("ExtractQuickActions(%q) = %q, %v; want %q, %s", tc.text, stored, commands, tc.stored, tc.commands)
		}
	}
}
