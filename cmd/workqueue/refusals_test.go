package main

import (
	"bytes"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/client"
)

// A refused submission's refusals are printed one a line, so that the
// caller fixes them all in one go; the exit status is a failure's.
func TestEveryRefusalOfASubmissionIsPrinted(t *testing.T) {
	rs := []*wq.Refusal{
		{Index: 1, Path: ".git/config", Rule: "path_git_dir", Message: "component .git"},
		{Index: 3, Path: "../up.txt", Rule: "path_dotdot", Message: "path has a .. component"},
	}
	err := &client.Error{Status: 422, Problem: api.Problem{Status: 422, Code: wq.EINVALID,
		Detail: wq.Refusals(rs).Error(), Refusal: rs[0], Refusals: rs}}
	var stderr bytes.Buffer
	code := reportError(&stderr, nil, err)
	out := stderr.String()
	for _, want := range []string{
		`  refused: action 1 (".git/config"): path_git_dir: component .git`,
		`  refused: action 3 ("../up.txt"): path_dotdot: path has a .. component`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("stderr %q: want the line %q", out, want)
		}
	}
	if code == 0 {
		t.Error("exit status 0 for a refused submission")
	}
}
