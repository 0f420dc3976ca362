package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The workqueue commands the repository shows users to run (the GitLab
// CI example's scripts, the Kubernetes container's args, the systemd
// unit's ExecStart) name subcommands and flags that exist and parse: a
// renamed flag must not leave an example that fails on a team's first
// run.
func TestTheCommandsInExamplesAndDeployParse(t *testing.T) {
	var commands []string // each without the leading "workqueue"

	// examples/gitlab-ci.yml: every script line that runs workqueue.
	body, err := os.ReadFile("../../examples/gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var pipeline map[string]struct {
		Script []string `yaml:"script"`
	}
	if err := yaml.Unmarshal(body, &pipeline); err != nil {
		t.Fatal(err)
	}
	for _, job := range pipeline {
		for _, line := range job.Script {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "workqueue "); ok {
				commands = append(commands, rest)
			}
		}
	}

	// deploy/kubernetes: the container's args.
	manifests, _ := filepath.Glob("../../deploy/kubernetes/*.yaml")
	argsLine := regexp.MustCompile(`(?m)^\s*args:\s*\[(.*)\]\s*$`)
	for _, f := range manifests {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range argsLine.FindAllSubmatch(b, -1) {
			commands = append(commands, strings.ReplaceAll(string(m[1]), ",", " "))
		}
	}

	// deploy/systemd: ExecStart.
	unit, err := os.ReadFile("../../deploy/systemd/workqueue.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^ExecStart=\S*workqueue (.*)$`).FindAllSubmatch(unit, -1) {
		commands = append(commands, string(m[1]))
	}

	if len(commands) < 3 {
		t.Fatalf("found %d commands (%q): the test no longer sees the examples", len(commands), commands)
	}
	for _, line := range commands {
		args := shellWords(t, line)
		root := newRootCommand(io.Discard, io.Discard)
		cmd, rest, err := root.Find(args)
		if err != nil || cmd == root {
			t.Errorf("%q: no such command (%v)", line, err)
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		if cmd.Args != nil {
			if err := cmd.Args(cmd, cmd.Flags().Args()); err != nil {
				t.Errorf("%q: %v", line, err)
			}
		}
	}
}

// shellWords splits a command line as a POSIX shell would for the forms
// the examples use: blanks, double and single quotes; variables stay as
// written.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var (
		words []string
		cur   strings.Builder
		quote rune
		in    bool
	)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("%q: unterminated quote", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}
