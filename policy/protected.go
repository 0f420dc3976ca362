package policy

import (
	"strings"
	"unicode"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/text/unicode/norm"
)

// ProtectedMode is what a project does with a change that touches a
// protected path (a file that configures CI, automation, code ownership
// or an agent's instructions).
type ProtectedMode string

// Modes of protected paths.
const (
	// ProtectedRefuse refuses the change (the default): a file a CI
	// system runs, pushed to the base repository, runs with the
	// repository's secrets before anyone reviewed anything.
	ProtectedRefuse ProtectedMode = "refuse"
	// ProtectedReview opens the merge request labelled for review, never
	// merges it on its own, and lets the control plane merge it only
	// after an identity that is not agent-only approved its current head.
	ProtectedReview ProtectedMode = "review"
	// ProtectedAllow lets the change through as any other.
	ProtectedAllow ProtectedMode = "allow"
)

// Valid reports whether m is a known mode.
func (m ProtectedMode) Valid() bool {
	return m == ProtectedRefuse || m == ProtectedReview || m == ProtectedAllow
}

// Protected is a project's protected paths: the built-in list, plus Add.
type Protected struct {
	Mode ProtectedMode // "": ProtectedRefuse
	Add  []string      // doublestar globs, matched as the built-in ones
}

// mode is m, ProtectedRefuse when unset.
func (p Protected) mode() ProtectedMode {
	if p.Mode == "" {
		return ProtectedRefuse
	}
	return p.Mode
}

// ProtectedEntry is one entry of the built-in list: a glob and the
// system that reads the files it matches.
type ProtectedEntry struct {
	Glob   string `json:"glob"`
	Reader string `json:"reader"`
}

// BuiltinProtected is the built-in list of protected paths: the files
// that configure CI, automation, code ownership and agents' instructions,
// for the forges and CI systems our users run. Globs are doublestar ones
// over the path as a forge stores it; they are matched as those systems
// read names: without regard to case, with both YAML extensions, in
// every directory where a system reads the name, and as a directory when
// a system reads every file below one. docs/policy.md lists it for
// people; config check prints the effective list of each project.
var BuiltinProtected = []ProtectedEntry{
	// Forges' own configuration: Actions workflows and composite actions
	// (GitHub, Gitea, Forgejo; Gitea and Forgejo also run .github's),
	// CODEOWNERS, Dependabot, issue and pull request templates, Copilot's
	// instructions.
	{".github/**", "GitHub Actions, CODEOWNERS, Dependabot, Copilot (and Gitea, Forgejo)"},
	{".gitea/**", "Gitea Actions, CODEOWNERS"},
	{".forgejo/**", "Forgejo Actions, CODEOWNERS"},
	{".gitlab/**", "GitLab CODEOWNERS, CI includes, templates"},
	{"**/action.{yml,yaml}", "Actions composite and Docker actions, used by path"},
	// Code ownership, wherever a forge or a bot reads it.
	{"**/CODEOWNERS", "CODEOWNERS (GitLab, Gitea, GitHub read the root, docs/ and their own directory)"},
	{"**/OWNERS", "Prow and Kubernetes owners"},
	{"**/OWNERS_ALIASES", "Prow and Kubernetes owners"},
	// CI systems.
	{"**/.gitlab-ci.{yml,yaml}", "GitLab CI"},
	{"**/*.gitlab-ci.{yml,yaml}", "GitLab CI includes"},
	{".woodpecker/**", "Woodpecker CI"},
	{".woodpecker.{yml,yaml}", "Woodpecker CI"},
	{".drone.{yml,yaml,jsonnet,star}", "Drone CI"},
	{"**/Jenkinsfile", "Jenkins"},
	{"**/Jenkinsfile.*", "Jenkins"},
	{"**/*.jenkinsfile", "Jenkins"},
	{".jenkins/**", "Jenkins"},
	{".circleci/**", "CircleCI"},
	{".buildkite/**", "Buildkite"},
	{"buildkite.{yml,yaml,json}", "Buildkite"},
	{".buildkite.{yml,yaml,json}", "Buildkite"},
	{"**/azure-pipelines*.{yml,yaml}", "Azure Pipelines"},
	{".azure-pipelines/**", "Azure Pipelines"},
	{".azuredevops/**", "Azure DevOps"},
	{".travis.{yml,yaml}", "Travis CI"},
	{"bitbucket-pipelines.{yml,yaml}", "Bitbucket Pipelines"},
	{"{.,}appveyor.{yml,yaml}", "AppVeyor"},
	{".cirrus.{yml,yaml,star}", "Cirrus CI"},
	{".semaphore/**", "Semaphore"},
	{".tekton/**", "Tekton and Konflux pipelines as code"},
	{".prow.{yml,yaml}", "Prow"},
	{".prow/**", "Prow"},
	{"{.,}codecov.{yml,yaml}", "Codecov"},
	// Dependency bots.
	{"{.,}renovate.json{,5}", "Renovate"},
	{".renovaterc{,.json,.json5}", "Renovate"},
	{"**/dependabot.{yml,yaml}", "Dependabot"},
	// Hooks that run on people's machines.
	{".pre-commit-config.{yml,yaml}", "pre-commit"},
	{".pre-commit-hooks.{yml,yaml}", "pre-commit"},
	{".husky/**", "husky git hooks"},
	{"{.,}lefthook{,-local}.{yml,yaml,json,toml}", "Lefthook git hooks"},
	{".lefthook/**", "Lefthook git hooks"},
	{".githooks/**", "git hooks by convention"},
	{".envrc", "direnv"},
	// Development containers and editors that run tasks on opening.
	{".devcontainer/**", "devcontainers"},
	{"**/.devcontainer.json", "devcontainers"},
	{".vscode/tasks.json", "VS Code tasks (run on folder open)"},
	{".vscode/settings.json", "VS Code settings"},
	{".vscode/mcp.json", "VS Code MCP servers"},
	// Agents' instructions and configuration.
	{"**/AGENTS.md", "agent instructions (AGENTS.md, read in every directory)"},
	{"**/AGENT.md", "agent instructions"},
	{"**/CLAUDE.md", "Claude Code instructions"},
	{"**/CLAUDE.local.md", "Claude Code instructions"},
	{".claude/**", "Claude Code settings, hooks and commands"},
	{"**/GEMINI.md", "Gemini CLI instructions"},
	{".gemini/**", "Gemini CLI settings"},
	{".cursorrules", "Cursor rules"},
	{".cursor/**", "Cursor rules and MCP servers"},
	{".windsurfrules", "Windsurf rules"},
	{".windsurf/**", "Windsurf rules"},
	{".clinerules{,/**}", "Cline rules"},
	{".roorules{,/**}", "Roo Code rules"},
	{".roo/**", "Roo Code rules"},
	{".continue/**", "Continue rules"},
	{".junie/**", "Junie guidelines"},
	{".kiro/**", "Kiro steering"},
	{".amazonq/**", "Amazon Q rules"},
	{".codex/**", "Codex configuration"},
	{".aider.conf.{yml,yaml}", "aider"},
	{".goosehints", "goose hints"},
	{".mcp.json", "MCP servers of a project"},
}

// protectedMatch returns the glob of the built-in list, or of add, that
// path matches, and the system that reads it; "" when none does. A path
// is compared as the systems above read it: folded to lower case, NFC,
// with the code points HFS+ ignores removed and NTFS's trailing dots and
// spaces dropped from each component. A path below a matching directory
// matches.
func protectedMatch(path string, add []string) (glob, reader string) {
	folded := foldPath(path)
	for _, e := range BuiltinProtected {
		if matchFolded(e.Glob, folded) {
			return e.Glob, e.Reader
		}
	}
	for _, g := range add {
		if matchFolded(g, folded) {
			return g, "the project's protected_paths.add"
		}
	}
	return "", ""
}

// matchFolded matches a glob, folded as paths are, against a folded path.
func matchFolded(glob, folded string) bool {
	ok, _ := doublestar.Match(strings.ToLower(glob), folded)
	return ok
}

// foldPath is path as a case-insensitive, normalising reader sees it.
func foldPath(path string) string {
	parts := strings.Split(norm.NFC.String(path), "/")
	for i, c := range parts {
		c = strings.Map(func(r rune) rune {
			if ignorable(r) {
				return -1
			}
			return unicode.ToLower(r)
		}, c)
		parts[i] = strings.TrimRight(c, ". ")
		if parts[i] == "" {
			parts[i] = c
		}
	}
	return strings.Join(parts, "/")
}

// ignorable reports whether r is a code point that a file system or a
// reader ignores in a name: zero-width and format characters, variation
// selectors, the soft hyphen, the byte order mark.
func ignorable(r rune) bool {
	switch {
	case r == 0xAD, r == 0x34F, r == 0x61C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x3164, r == 0xFFA0, r == 0xFEFF:
		return true
	case r >= 0x180B && r <= 0x180F, r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x206F,
		r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0000 && r <= 0xE0FFF, r >= 0x1BCA0 && r <= 0x1BCA3:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// EffectiveProtected is the list a project protects: the built-in
// entries, then its own, for config check and the docs.
func EffectiveProtected(p Protected) []ProtectedEntry {
	out := append([]ProtectedEntry(nil), BuiltinProtected...)
	for _, g := range p.Add {
		out = append(out, ProtectedEntry{Glob: g, Reader: "protected_paths.add"})
	}
	return out
}
