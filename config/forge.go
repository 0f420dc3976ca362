package config

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Forge is one code forge the service writes to.
type Forge struct {
	Name string `yaml:"name"`
	Kind string `yaml:"kind"` // gitea or gitlab
	URL  string `yaml:"url"`
	// The API token: from an environment variable or a file, never inline.
	TokenEnv  string `yaml:"token_env"`
	TokenFile string `yaml:"token_file"`
	// The webhook secret, likewise (optional until webhooks are configured).
	WebhookSecretEnv  string `yaml:"webhook_secret_env"`
	WebhookSecretFile string `yaml:"webhook_secret_file"`
	// The token of a second account that gives review verdicts on the
	// agents' behalf, likewise, and optional: without it the service's
	// token reviews, and a verdict on a pull request the service opened
	// is refused (Gitea refuses its author's verdict; see
	// wq.ErrSelfReview). The account needs write access to the projects,
	// and its token to read its own user and act on repositories (Gitea
	// scopes read:user and write:repository; GitLab api).
	ReviewTokenEnv  string `yaml:"review_token_env"`
	ReviewTokenFile string `yaml:"review_token_file"`
	// RequestsPerMinute is a ceiling on the service's requests to the
	// forge, all callers together, in any minute: the forge's rate limit
	// is shared with everyone else on its token or instance. Writes and
	// the reads an event or a caller waits for go before the periodic
	// sweeps' reads. Each instance keeps its own: instances sharing a
	// database send up to their number times it. 0 or unset: no ceiling;
	// a 429 or GitLab's RateLimit-Remaining: 0 still pauses every caller
	// until the forge's reset.
	RequestsPerMinute int `yaml:"requests_per_minute"`
}

// Project is the policy for the projects its Match glob names on a forge.
type Project struct {
	Match        string   `yaml:"match"` // glob over the project path; ** crosses groups
	Forge        string   `yaml:"forge"`
	BlockedPaths []string `yaml:"blocked_paths"`
	// MaxFileBytes bounds one file's decoded content (0 or unset: 10 MiB);
	// a submission's body is at most 32 MiB whatever it says.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// MaxTotalBytes bounds a change's decoded contents together (0 or
	// unset: 20 MiB).
	MaxTotalBytes int64 `yaml:"max_total_bytes"`
	AllowBinary   bool  `yaml:"allow_binary"`
	AutoMerge     bool  `yaml:"auto_merge"`
	// AllowGitConfigFiles lets changes write .gitmodules (still held to
	// git fsck's submodule rules), .lfsconfig, and .gitattributes lines
	// naming filter, diff or merge drivers or a working-tree-encoding. Off
	// by default: they decide what runs, what is fetched and from where, or
	// what bytes land when someone clones or checks out (mr.Policy).
	AllowGitConfigFiles bool `yaml:"allow_git_config_files"`
	// AllowSecrets turns push protection off for the projects: a change
	// whose files hold a secret (a token, a key, a password line) is
	// pushed as submitted. Off by default: such a change is refused with
	// the file, line and rule of every finding.
	AllowSecrets bool `yaml:"allow_secrets"`
	// SecretAllowlist lets push protection's findings through for some
	// paths (doublestar globs), of some rules (all when none are given):
	// test fixtures holding example keys, say.
	SecretAllowlist []SecretAllow `yaml:"secret_allowlist"`
	// BranchPrefix is the prefix every source branch must start with:
	// the service only writes branches it owns. Unset: DefaultBranchPrefix;
	// "" is an explicit opt-out (any branch name the service did not
	// create is still never overwritten).
	BranchPrefix *string `yaml:"branch_prefix"`
	// DeleteSourceBranch deletes an item's source branch once its merge
	// request is merged or the item is cancelled, if the branch head is
	// still the commit the service pushed. Unset: true.
	DeleteSourceBranch *bool `yaml:"delete_source_branch"`
	// ProtectedPaths is what happens to a change touching a file that
	// configures CI, automation, code ownership or agents' instructions
	// (the built-in list of docs/policy.md, plus add): refused (the
	// default), opened for a person's review, or allowed.
	ProtectedPaths ProtectedPaths `yaml:"protected_paths"`
	// TargetBranches are the globs a change may target. Unset: the
	// repository's default branch only. A branch under branch_prefix, or
	// another change's source branch, is never a target.
	TargetBranches []string `yaml:"target_branches"`
	// CallerLabels are the labels (globs) callers may put on their merge
	// requests. Unset: none for agent-only callers, any existing label for
	// others. The labels that steer the control plane (blocked, priority)
	// and the service's own are never a caller's.
	CallerLabels *[]string `yaml:"caller_labels,omitempty"`
	// CreateLabels lets the service make a label the repository lacks
	// (off: a caller's label must exist on the forge).
	CreateLabels bool `yaml:"create_labels"`
	// RequiredChecks are the commit status or check contexts (doublestar
	// globs; "*" stays within one "/") that must have succeeded on a merge
	// request's current head before the service merges it: each is a
	// needs_check dimension of the item, the glob its variant. Unset:
	// none beyond what the forge itself requires.
	RequiredChecks []string `yaml:"required_checks"`
	// TrackLabel is the label a person puts on a merge request the service
	// did not open to have it tracked: the status note, the CI retry
	// herder and reconciliation, and never a write to its branch, title,
	// description or state. Unset: DefaultTrackLabel; "" turns tracking
	// off for the projects.
	TrackLabel *string `yaml:"track_label"`
	// MergeTrain merges the projects' merge requests through a merge
	// train (docs/merge-train.md): each is tested on top of the ones
	// ahead of it before any is merged. Off by default.
	MergeTrain MergeTrain `yaml:"merge_train"`
}

// MergeTrain is a project's merge train.
type MergeTrain struct {
	Enabled bool `yaml:"enabled"`
	// BatchSize is how many merge requests ride at once, each built on
	// the one ahead (0 or unset: DefaultTrainBatch).
	BatchSize int `yaml:"batch_size"`
}

// DefaultTrainBatch is merge_train.batch_size's default.
const DefaultTrainBatch = 4

// MaxTrainBatch bounds merge_train.batch_size.
const MaxTrainBatch = 32

// Batch is the train's batch size, the default when unset.
func (t MergeTrain) Batch() int {
	if t.BatchSize <= 0 {
		return DefaultTrainBatch
	}
	return t.BatchSize
}

// DefaultTrackLabel is the track_label of a project that sets none.
const DefaultTrackLabel = "workqueue-track"

// MaxRequiredChecks bounds a project's required_checks.
const MaxRequiredChecks = 32

// Tracking is the project's track_label, the default when unset; ""
// when tracking is off.
func (p Project) Tracking() string {
	if p.TrackLabel == nil {
		return DefaultTrackLabel
	}
	return *p.TrackLabel
}

// ProtectedPaths configures a project's protected paths.
type ProtectedPaths struct {
	// Mode is refuse (the default), review or allow.
	Mode string `yaml:"mode"`
	// Add are more protected paths (doublestar globs, matched without
	// regard to case, as the built-in ones).
	Add []string `yaml:"add"`
}

// Modes of protected_paths.mode.
const (
	ProtectedRefuse = "refuse"
	ProtectedReview = "review"
	ProtectedAllow  = "allow"
)

// DefaultBranchPrefix is the branch prefix of a project that sets none.
const DefaultBranchPrefix = "workqueue/"

// SourceBranchPrefix is the project's branch prefix, the default when
// unset.
func (p Project) SourceBranchPrefix() string {
	if p.BranchPrefix == nil {
		return DefaultBranchPrefix
	}
	return *p.BranchPrefix
}

// DeletesSourceBranch is the project's delete_source_branch, true when
// unset.
func (p Project) DeletesSourceBranch() bool {
	return p.DeleteSourceBranch == nil || *p.DeleteSourceBranch
}

var forgeName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// branchPrefix admits the start of a git branch name: no character git
// refuses in one, no leading - or / or ., no .. or // (git check-ref-format).
var branchPrefix = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_+=,@#%-]*(?:[./][A-Za-z0-9_+=,@#%-]+)*/?$`)

func (c Config) validateForges(known Known, bad func(field, format string, args ...any)) {
	names := map[string]bool{}
	for i, f := range c.Forges {
		field := fmt.Sprintf("forges[%d]", i)
		checkUniqueName(bad, field+".name", f.Name, forgeName, "lowercase letters, digits, - and _", names)
		if !slices.Contains(known.ForgeKinds, f.Kind) {
			kinds := slices.Sorted(slices.Values(known.ForgeKinds))
			bad(field+".kind", "want %s, got %q", oneOf(kinds), f.Kind)
		}
		if u, err := url.Parse(f.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			bad(field+".url", "want http(s)://host[:port][/path] without credentials, got %q", RedactURL(f.URL))
		}
		if (f.TokenEnv == "") == (f.TokenFile == "") {
			bad(field, "set exactly one of token_env and token_file")
		}
		if f.WebhookSecretEnv != "" && f.WebhookSecretFile != "" {
			bad(field, "set at most one of webhook_secret_env and webhook_secret_file")
		}
		if f.ReviewTokenEnv != "" && f.ReviewTokenFile != "" {
			bad(field, "set at most one of review_token_env and review_token_file")
		}
		if f.RequestsPerMinute < 0 {
			bad(field+".requests_per_minute", "want a number of requests a minute, or 0 for no ceiling, got %d", f.RequestsPerMinute)
		}
	}
	for i, p := range c.Projects {
		field := fmt.Sprintf("projects[%d]", i)
		if p.Match == "" || !doublestar.ValidatePattern(p.Match) {
			bad(field+".match", "want a glob such as group/* or group/**, got %q", p.Match)
		}
		if !names[p.Forge] {
			bad(field+".forge", "%q is not a configured forge", p.Forge)
		}
		if pre := p.SourceBranchPrefix(); pre != "" && !branchPrefix.MatchString(pre) {
			bad(field+".branch_prefix", "want the start of a branch name such as workqueue/ or bot-, got %q", pre)
		}
		switch p.ProtectedPaths.Mode {
		case "", ProtectedRefuse, ProtectedReview, ProtectedAllow:
		default:
			bad(field+".protected_paths.mode", "want refuse, review or allow, got %q", p.ProtectedPaths.Mode)
		}
		for j, g := range p.ProtectedPaths.Add {
			if g == "" || !doublestar.ValidatePattern(g) {
				bad(fmt.Sprintf("%s.protected_paths.add[%d]", field, j), "invalid glob %q", g)
			}
		}
		for j, g := range p.TargetBranches {
			if g == "" || !doublestar.ValidatePattern(g) {
				bad(fmt.Sprintf("%s.target_branches[%d]", field, j), "invalid glob %q", g)
			}
		}
		if p.MergeTrain.Enabled && p.SourceBranchPrefix() == "" {
			bad(field+".merge_train.enabled", "a merge train needs a branch_prefix: each merge request is built on the branch of the one ahead, which must be recognisably the service's")
		}
		if p.MergeTrain.BatchSize < 0 || p.MergeTrain.BatchSize > MaxTrainBatch {
			bad(field+".merge_train.batch_size", "want 1 to %d (0 or unset: %d), got %d", MaxTrainBatch, DefaultTrainBatch, p.MergeTrain.BatchSize)
		}
		if len(p.RequiredChecks) > MaxRequiredChecks {
			bad(field+".required_checks", "want at most %d checks, got %d", MaxRequiredChecks, len(p.RequiredChecks))
		}
		for j, g := range p.RequiredChecks {
			if strings.TrimSpace(g) == "" || len(g) > 255 || strings.ContainsAny(g, "\r\n") || !doublestar.ValidatePattern(g) {
				bad(fmt.Sprintf("%s.required_checks[%d]", field, j), "want a check context or glob such as ci/build or \"konflux / *\", got %q", g)
			} else if slices.Contains(p.RequiredChecks[:j], g) {
				bad(fmt.Sprintf("%s.required_checks[%d]", field, j), "%q is listed twice", g)
			}
		}
		if l := p.Tracking(); p.TrackLabel != nil && l != "" && (strings.TrimSpace(l) != l || strings.ContainsAny(l, ",\r\n") || len(l) > 100) {
			bad(field+".track_label", "want a label name without commas or surrounding space, or \"\" to turn tracking off, got %q", l)
		}
		if p.CallerLabels != nil {
			for j, g := range *p.CallerLabels {
				if strings.TrimSpace(g) == "" || !doublestar.ValidatePattern(g) {
					bad(fmt.Sprintf("%s.caller_labels[%d]", field, j), "want a label name or glob, got %q", g)
				}
			}
		}
		for j, g := range p.BlockedPaths {
			if g == "" || !doublestar.ValidatePattern(g) {
				bad(fmt.Sprintf("%s.blocked_paths[%d]", field, j), "invalid glob %q", g)
			}
		}
		if p.MaxFileBytes < 0 || p.MaxTotalBytes < 0 {
			bad(field, "max_file_bytes and max_total_bytes must not be negative")
		}
		for j, a := range p.SecretAllowlist {
			entry := fmt.Sprintf("%s.secret_allowlist[%d]", field, j)
			if len(a.Paths) == 0 {
				bad(entry+".paths", "want at least one glob: an allowlist entry is for some paths, never all (that is allow_secrets)")
			}
			for k, g := range a.Paths {
				if g == "" || !doublestar.ValidatePattern(g) {
					bad(fmt.Sprintf("%s.paths[%d]", entry, k), "invalid glob %q", g)
				}
			}
			for k, r := range a.Rules {
				if strings.TrimSpace(r) == "" {
					bad(fmt.Sprintf("%s.rules[%d]", entry, k), "want a rule name such as github-token, got %q", r)
				}
			}
		}
	}
}

// ProjectFor returns the first project entry that covers project on forge.
func (c Config) ProjectFor(forge, project string) (Project, bool) {
	for _, p := range c.Projects {
		if p.Forge != forge {
			continue
		}
		if ok, _ := doublestar.Match(p.Match, project); ok {
			return p, true
		}
	}
	return Project{}, false
}

// ForgeNamed returns the configured forge of that name.
func (c Config) ForgeNamed(name string) (Forge, bool) {
	i := slices.IndexFunc(c.Forges, func(f Forge) bool { return f.Name == name })
	if i < 0 {
		return Forge{}, false
	}
	return c.Forges[i], true
}

// Token reads the forge's API token from its environment variable or file.
func (f Forge) Token() (string, error) {
	return secret(f.TokenEnv, f.TokenFile, "forges["+f.Name+"].token")
}

// WebhookSecret reads the forge's webhook secret, "" if none is configured.
func (f Forge) WebhookSecret() (string, error) {
	return optionalSecret(f.WebhookSecretEnv, f.WebhookSecretFile, "forges["+f.Name+"].webhook_secret")
}

// ReviewToken reads the token of the forge's review identity (the
// adapters' ReviewToken), "" if none is configured.
func (f Forge) ReviewToken() (string, error) {
	return optionalSecret(f.ReviewTokenEnv, f.ReviewTokenFile, "forges["+f.Name+"].review_token")
}

// optionalSecret is secret, "" when neither env nor file is set.
func optionalSecret(env, file, field string) (string, error) {
	if env == "" && file == "" {
		return "", nil
	}
	return secret(env, file, field)
}

func secret(env, file, field string) (string, error) {
	if env != "" {
		v := os.Getenv(env)
		if v == "" {
			return "", fmt.Errorf("%s_env: environment variable %s is empty or unset", field, env)
		}
		return v, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s_file: %w", field, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s_file: %s is empty", field, file)
	}
	return v, nil
}

// SecretAllow is one entry of a project's secret_allowlist.
type SecretAllow struct {
	Paths []string `yaml:"paths"`
	Rules []string `yaml:"rules"`
}

// Defaults of a project's size limits: generous for source code and its
// lockfiles, well short of what a forge's file API takes in one call.
const (
	DefaultMaxFileBytes  = 10 << 20
	DefaultMaxTotalBytes = 20 << 20
)

// orDefault is v, or def when v is 0 (unset).
func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

// MRProject is how a project on a forge is configured for the mr item
// type's changes, with the defaults filled in, and false when no project
// entry covers it. The mr type's registration (mr/mrtype) reads it into
// the type's own mr.Project: config says what is configured, and links no
// item type.
func (c Config) MRProject(forgeName, project string) (ProjectSettings, bool) {
	p, ok := c.ProjectFor(forgeName, project)
	if !ok {
		return ProjectSettings{}, false
	}
	return ProjectSettings{
		Policy: PolicySettings{BlockedPaths: p.BlockedPaths,
			MaxFileBytes: orDefault(p.MaxFileBytes, DefaultMaxFileBytes), MaxTotalBytes: orDefault(p.MaxTotalBytes, DefaultMaxTotalBytes),
			AllowBinary: p.AllowBinary, AllowGitConfigFiles: p.AllowGitConfigFiles, AllowSecrets: p.AllowSecrets,
			SecretAllowlist: p.SecretAllowlist},
		AutoMerge:    p.AutoMerge,
		BranchPrefix: p.SourceBranchPrefix(),
		MergeTrain:   p.MergeTrain,
	}, true
}

// ProjectSettings are a project's settings for changes, resolved: the
// defaults filled in.
type ProjectSettings struct {
	Policy       PolicySettings
	AutoMerge    bool
	MergeTrain   MergeTrain
	BranchPrefix string // source branches the service may write start with it
}

// PolicySettings are a project's inspection policy, resolved.
type PolicySettings struct {
	BlockedPaths                                   []string
	MaxFileBytes, MaxTotalBytes                    int64
	AllowBinary, AllowGitConfigFiles, AllowSecrets bool
	SecretAllowlist                                []SecretAllow
}

// oneOf says "a, b or c".
func oneOf(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
