package policy_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/policy"
)

// token is a GitHub personal access token's shape, made at run time so
// that no scanner of this repository finds one in the source.
var token = "ghp" + "_" + strings.Repeat("Zq7Rk2Lm9Xw4", 3)

var agent = policy.Caller{Identity: "agent-1", AgentOnly: true, Assignment: &policy.Assignment{ID: "a1", Issue: 7}}
var person = policy.Caller{Identity: "dev"}

func submit() policy.Write {
	return policy.Write{Op: policy.OpSubmit, Project: "o/r", SourceBranch: "workqueue/fix", TargetBranch: "main", DefaultBranch: "main",
		Title: "Fix the parser", Description: "Closes #7", Message: "fix: the parser",
		Files: []policy.File{{Action: "update", Path: "src/parse.go"}}}
}

func project() policy.Project {
	return policy.Project{BranchPrefix: "workqueue/", SteeringLabels: []string{"do-not-automate", "priority/high"},
		ServiceLabels: []string{"managed-by-workqueue", "workqueue-review"}}
}

func TestAnOrdinaryChangePasses(t *testing.T) {
	for _, c := range []policy.Caller{agent, person} {
		if d := policy.Check(c, project(), submit()); d.Err() != nil || len(d.Review) > 0 {
			t.Errorf("%s: %v, review %v", c.Identity, d.Err(), d.Review)
		}
	}
}

// Every text a write sends is scanned, and a refusal names the field
// but never the secret.
func TestASecretInAnyFieldIsRefusedNamingTheFieldNotTheSecret(t *testing.T) {
	for _, tc := range []struct {
		field string
		set   func(w *policy.Write)
	}{
		{"title", func(w *policy.Write) { w.Title = "token " + token }},
		{"description", func(w *policy.Write) { w.Description = "use " + token + " to log in" }},
		{"commit_message", func(w *policy.Write) { w.Message = "fix\n\nGH=" + token }},
		{"body", func(w *policy.Write) { w.Body = "here it is: " + token }},
		{"labels[0]", func(w *policy.Write) { w.Labels = []string{token} }},
		{"source_branch", func(w *policy.Write) { w.SourceBranch = "workqueue/" + token }},
		{"target_branch", func(w *policy.Write) { w.TargetBranch = token }},
		{"file_actions[0].file_path", func(w *policy.Write) { w.Files[0].Path = "keys/" + token + ".txt" }},
		{"file_actions[0].previous_path", func(w *policy.Write) {
			w.Files[0] = policy.File{Action: "move", Path: "a.txt", PreviousPath: "keys/" + token}
		}},
		{"file_actions[0].content", func(w *policy.Write) { w.Files[0].Content = []byte("x = 1\ntoken = \"" + token + "\"\n") }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			w := submit()
			tc.set(&w)
			d := policy.Check(person, project(), w)
			var found *wq.Refusal
			for _, r := range d.Refusals {
				if r.Rule == policy.RuleSecret && r.Field == tc.field {
					found = r
				}
				if strings.Contains(r.Error(), token) {
					t.Errorf("a refusal quotes the secret: %v", r)
				}
			}
			if found == nil {
				t.Fatalf("no %s refusal for %s: %v", policy.RuleSecret, tc.field, d.Err())
			}
			var r *wq.Refusal
			if !errors.As(d.Err(), &r) || wq.ErrorCode(d.Err()) != wq.EINVALID {
				t.Errorf("the decision's error is not an EINVALID refusal: %v", d.Err())
			}
		})
	}
}

func TestProtectedPathsAreRefusedByDefaultAsTheirReadersSpellThem(t *testing.T) {
	protected := []string{
		".github/workflows/ci.yml", ".GitHub/Workflows/CI.YAML", ".gitea/workflows/build.yaml", ".forgejo/workflows/x.yml",
		".github/actions/setup/action.yml", "tools/release/action.yaml", ".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS",
		".gitlab/CODEOWNERS", ".gitlab-ci.yml", ".gitlab-ci.yaml", "ci/deploy.gitlab-ci.yml", "sub/.gitlab-ci.yml",
		".woodpecker.yml", ".woodpecker/test.yaml", ".drone.yml", ".drone.jsonnet", "Jenkinsfile", "build/Jenkinsfile",
		"Jenkinsfile.release", ".circleci/config.yml", ".buildkite/pipeline.yml", "azure-pipelines.yml", "ci/azure-pipelines-release.yaml",
		".github/dependabot.yml", "renovate.json", ".renovaterc.json", "renovate.json5", ".pre-commit-config.yaml",
		".devcontainer/devcontainer.json", ".devcontainer.json", "AGENTS.md", "pkg/AGENTS.md", "CLAUDE.md", "sub/CLAUDE.md",
		".github/copilot-instructions.md", ".cursorrules", ".cursor/rules/x.mdc", ".claude/settings.json", "GEMINI.md",
		".windsurfrules", ".clinerules", ".tekton/push.yaml", ".travis.yml", "bitbucket-pipelines.yml", ".vscode/tasks.json",
		".husky/pre-commit", ".mcp.json", "agents.md", ".github\u200c/workflows/x.yml", ".github./workflows/x.yml",
	}
	for _, path := range protected {
		w := submit()
		w.Files = []policy.File{{Action: "create", Path: path}}
		d := policy.Check(person, project(), w)
		if len(d.Refusals) != 1 || d.Refusals[0].Rule != policy.RuleProtectedPath || d.Refusals[0].Path != path {
			t.Errorf("%q: want one %s refusal, got %v", path, policy.RuleProtectedPath, d.Err())
		}
	}
	for _, path := range []string{"src/github/workflows.go", "docs/ci.md", "README.md", "agents/AGENTS.txt", "jenkins.md", "mygithub/x.yml"} {
		w := submit()
		w.Files = []policy.File{{Action: "create", Path: path}}
		if err := policy.Check(person, project(), w).Err(); err != nil {
			t.Errorf("%q is not protected, but: %v", path, err)
		}
	}
}

func TestAMoveOrDeleteTouchingAProtectedPathCounts(t *testing.T) {
	for _, f := range []policy.File{
		{Action: "delete", Path: ".github/workflows/ci.yml"},
		{Action: "move", Path: "old-ci.yml", PreviousPath: ".gitlab-ci.yml"},
		{Action: "move", Path: ".github/workflows/new.yml", PreviousPath: "docs/new.yml"},
		{Action: "chmod", Path: ".husky/pre-push"},
	} {
		w := submit()
		w.Files = []policy.File{f}
		if d := policy.Check(person, project(), w); len(d.Refusals) == 0 || d.Refusals[0].Rule != policy.RuleProtectedPath {
			t.Errorf("%+v: want %s, got %v", f, policy.RuleProtectedPath, d.Err())
		}
	}
}

func TestTheProjectsModeDecidesWhatAProtectedPathDoes(t *testing.T) {
	w := submit()
	w.Files = append(w.Files, policy.File{Action: "create", Path: ".github/workflows/ci.yml"}, policy.File{Action: "create", Path: "deploy/prod.tf"})
	p := project()
	p.Protected = policy.Protected{Mode: policy.ProtectedReview, Add: []string{"deploy/**"}}
	d := policy.Check(agent, p, w)
	if d.Err() != nil || fmt.Sprint(d.Review) != "[.github/workflows/ci.yml deploy/prod.tf]" {
		t.Errorf("review mode: want no refusal and both paths for review, got %v, %v", d.Err(), d.Review)
	}
	p.Protected.Mode = policy.ProtectedAllow
	if d := policy.Check(agent, p, w); d.Err() != nil || len(d.Review) > 0 {
		t.Errorf("allow mode: %v, %v", d.Err(), d.Review)
	}
	p.Protected.Mode = ""
	if d := policy.Check(agent, p, w); len(d.Refusals) != 2 {
		t.Errorf("the default mode refuses both paths (the added one too), got %v", d.Err())
	}
}

func TestClosingReferencesAreHeldToTheAssignment(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caller policy.Caller
		text   string
		ok     bool
	}{
		{"the agent's own issue", agent, "Fixes #7", true},
		{"another issue, by an agent", agent, "Closes #7\nFixes #8", false},
		{"any issue, by an agent without an issue assignment", policy.Caller{Identity: "a", AgentOnly: true, Assignment: &policy.Assignment{ID: "x"}}, "Resolves #7", false},
		{"an issue of the same project, by a person", person, "Closes #12", true},
		{"another repository, by a person", person, "Closes other/repo#3", false},
		{"another repository, by an agent", agent, "Fixes other/repo#7", false},
		{"the same project named in full", person, "Closes o/r#4", true},
	} {
		for _, field := range []string{"title", "description", "commit_message"} {
			w := submit()
			w.Description = ""
			switch field {
			case "title":
				w.Title = tc.text
			case "description":
				w.Description = tc.text
			default:
				w.Message = tc.text
			}
			d := policy.Check(tc.caller, project(), w)
			refused := len(d.Refusals) > 0 && d.Refusals[0].Rule == policy.RuleClosingReference && d.Refusals[0].Field == field
			if refused == tc.ok || (tc.ok && d.Err() != nil) {
				t.Errorf("%s in %s: want allowed %v, got %v", tc.name, field, tc.ok, d.Err())
			}
		}
	}
}

func TestTargetsAreTheDefaultBranchOrTheProjectsGlobs(t *testing.T) {
	p := project()
	for _, tc := range []struct {
		target, isSource string
		globs            []string
		rule             string
	}{
		{target: "main"},
		{target: "release/1.0", rule: policy.RuleTargetNotAllowed},
		{target: "someones-branch", rule: policy.RuleTargetNotAllowed},
		{target: "workqueue/other", rule: policy.RuleTargetOwned},
		{target: "feature-x", isSource: "item 1234", rule: policy.RuleTargetIsSource},
		{target: "release/1.0", globs: []string{"main", "release/*"}},
		{target: "main", globs: []string{"release/*"}, rule: policy.RuleTargetNotAllowed},
		{target: "workqueue/x", globs: []string{"**"}, rule: policy.RuleTargetOwned},
	} {
		w := submit()
		w.TargetBranch, w.TargetIsSource = tc.target, tc.isSource
		p.TargetBranches = tc.globs
		d := policy.Check(person, p, w)
		got := ""
		if len(d.Refusals) > 0 {
			got = d.Refusals[0].Rule
			if d.Refusals[0].Field != "target_branch" {
				t.Errorf("%s: the refusal names %q", tc.target, d.Refusals[0].Field)
			}
		}
		if got != tc.rule {
			t.Errorf("target %q (globs %v): want %q, got %v", tc.target, tc.globs, tc.rule, d.Err())
		}
	}
}

func TestLabelsAreTheCallersOnlyWhereTheProjectSaysSo(t *testing.T) {
	p := project()
	for _, tc := range []struct {
		name    string
		caller  policy.Caller
		allowed []string
		label   string
		rule    string
	}{
		{"a person's label", person, nil, "bug", ""},
		{"an agent's label by default", agent, nil, "bug", policy.RuleLabelNotAllowed},
		{"an agent's listed label", agent, []string{"kind/*"}, "kind/bug", ""},
		{"a person's unlisted label", person, []string{"kind/*"}, "bug", policy.RuleLabelNotAllowed},
		{"the blocked label", person, nil, "do-not-automate", policy.RuleLabelReserved},
		{"a priority label in another case", person, []string{"**"}, "Priority/High", policy.RuleLabelReserved},
		{"the managed label", person, nil, "managed-by-workqueue", policy.RuleLabelReserved},
		{"the review label", agent, []string{"**"}, "workqueue-review", policy.RuleLabelReserved},
		{"the service's own label", policy.Caller{Service: true}, nil, "managed-by-workqueue", ""},
		{"a steering label, even for the service", policy.Caller{Service: true}, nil, "priority/high", policy.RuleLabelReserved},
	} {
		w := submit()
		w.Labels = []string{tc.label}
		p.CallerLabels = tc.allowed
		d := policy.Check(tc.caller, p, w)
		got := ""
		if len(d.Refusals) > 0 {
			got = d.Refusals[0].Rule
		}
		if got != tc.rule {
			t.Errorf("%s: want %q, got %v", tc.name, tc.rule, d.Err())
		}
	}
}

// The issue the incident bridge files carries the labels the operator
// configured for it, a priority among them; a caller's issue does not.
func TestAnIncidentsIssueCarriesTheOperatorsLabels(t *testing.T) {
	w := policy.Write{Op: policy.OpCreateIssue, Project: "o/r", Title: "checkout: TypeError", Body: "seen 12 times", Labels: []string{"incident", "priority/high"}}
	if err := policy.Check(policy.Caller{Service: true}, project(), w).Err(); err != nil {
		t.Errorf("the bridge's issue: %v", err)
	}
	if err := policy.Check(person, project(), w).Err(); err == nil {
		t.Error("a caller's issue took a priority label")
	}
}
