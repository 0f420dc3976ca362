package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/secrets"
)

// Caller is who a write is made for.
type Caller struct {
	// Identity is the authenticated caller ("" for the service's own
	// housekeeping, see Service).
	Identity string
	// AgentOnly says the caller writes to the project only through the
	// control plane (permission agent without submit): its labels and
	// closing references are held to its assignment.
	AgentOnly bool
	// Assignment is what the caller's write is for, when it has one.
	Assignment *Assignment
	// Service marks a write the service makes on its own for work it
	// accepted earlier (an item's push, its merge request, its status
	// note): what depends on the caller was checked when the work was
	// accepted; what the forge receives is checked again.
	Service bool
}

// Assignment is a control-plane assignment as the policy needs it.
type Assignment struct {
	ID string
	// Issue is the issue the assignment is for (0 for a pull request's):
	// the only issue an agent's change may close.
	Issue int64
}

// Project is a project's outbound policy, resolved from configuration.
type Project struct {
	Protected Protected
	// TargetBranches are the globs a change may target; empty: the
	// repository's default branch only.
	TargetBranches []string
	// CallerLabels are the labels (globs) callers may set; nil: none for
	// agent-only callers, any for others.
	CallerLabels []string
	// CreateLabels lets the service make a label the repository lacks.
	CreateLabels bool
	// ServiceLabels are the labels the service sets itself (the managed
	// label, the review label): never a caller's to set, always the
	// service's.
	ServiceLabels []string
	// SteeringLabels steer the control plane (blocked, priority): nobody
	// sets them through the service.
	SteeringLabels []string
	// BranchPrefix starts every branch the service owns ("": none).
	BranchPrefix string
	// AllowSecrets and SecretAllowlist are push protection's opt-outs for
	// file contents (never for the other fields).
	AllowSecrets    bool
	SecretAllowlist []SecretAllow
}

// SecretAllow lets push protection's findings in file contents through:
// those in files matching one of Paths, of one of Rules (all when empty).
type SecretAllow struct {
	Paths []string
	Rules []string
}

// Allows reports whether a finding of rule in file path is let through.
func (a SecretAllow) Allows(path, rule string) bool {
	if len(a.Rules) > 0 && !slices.Contains(a.Rules, rule) {
		return false
	}
	for _, g := range a.Paths {
		if ok, _ := doublestar.Match(g, path); ok {
			return true
		}
	}
	return false
}

// Op is the kind of a write.
type Op string

// The writes.
const (
	OpSubmit       Op = "submit"       // a change's desired state, before anything is stored
	OpCommit       Op = "commit"       // a push of a change's commit
	OpOpenMR       Op = "open_mr"      // a merge request opened
	OpUpdateMR     Op = "update_mr"    // a merge request's title, description or state
	OpMerge        Op = "merge"        // a merge
	OpComment      Op = "comment"      // a comment on an issue or pull request
	OpReview       Op = "review"       // a review verdict's body
	OpNote         Op = "note"         // the service's note on a merge request
	OpCreateIssue  Op = "create_issue" // an issue opened
	OpCloseIssue   Op = "close_issue"  // an issue closed
	OpDeleteBranch Op = "delete_branch"
	OpRetryJob     Op = "retry_job"
	OpWebhook      Op = "webhook"
)

// File is one file action of a write.
type File struct {
	Action       string // create, update, delete, move, chmod
	Path         string
	PreviousPath string
	// Content is the decoded content, when the write carries it (nil at
	// submission, where the item type scans contents itself).
	Content []byte
}

// Write is one write to a forge, in the forge's neutral words, with
// every text the forge will receive.
type Write struct {
	Op      Op
	Project string // the repository's full path
	// SourceBranch and TargetBranch are a change's branches.
	SourceBranch string
	TargetBranch string
	// DefaultBranch is the repository's default branch, "" when not
	// known here (the default target rule is then checked where it is).
	DefaultBranch string
	// TargetIsSource names what uses TargetBranch as its source branch
	// (another item), "" when nothing does.
	TargetIsSource string
	Title          string
	Description    string
	Message        string // commit message
	Body           string // comment, review, note or issue body
	Labels         []string
	Files          []File
}

// Decision is the policy's answer to a write.
type Decision struct {
	// Refusals, when any, refuse the write whole.
	Refusals wq.Refusals
	// Review lists the protected paths the change touches that the
	// project lets through for a person's review (ProtectedReview).
	Review []string
}

// Err is the decision as an error: nil when nothing is refused.
func (d Decision) Err() error {
	if len(d.Refusals) == 0 {
		return nil
	}
	return d.Refusals
}

// Refusal rules of the outbound policy (docs/policy.md lists them all).
const (
	RuleSecret           = "secret_detected"
	RuleProtectedPath    = "protected_path"
	RuleClosingReference = "closing_reference"
	RuleTargetNotAllowed = "target_not_allowed"
	RuleTargetIsSource   = "target_is_source"
	RuleTargetOwned      = "target_in_branch_prefix"
	RuleLabelNotAllowed  = "label_not_allowed"
	RuleLabelReserved    = "label_reserved"
)

// MaxRefusals bounds the refusals of one decision.
const MaxRefusals = 100

// Check decides whether w may reach the forge for c under p. It is pure
// and cheap enough to run at submission and again before the adapter's
// call. The order of checks is docs/policy.md's: secrets in every text,
// protected paths, closing references, the target, the labels. A
// refusal names the field (and the file, line and rule where they
// apply), never a secret.
func Check(c Caller, p Project, w Write) Decision {
	var d Decision
	add := func(r *wq.Refusal) bool {
		if len(d.Refusals) < MaxRefusals {
			d.Refusals = append(d.Refusals, r)
		}
		return len(d.Refusals) < MaxRefusals
	}
	d.Refusals = Secrets(w)
	for i, f := range w.Files {
		if f.Content == nil || p.AllowSecrets {
			continue
		}
		for _, s := range secrets.Scan(f.Content) {
			if slices.ContainsFunc(p.SecretAllowlist, func(a SecretAllow) bool { return a.Allows(f.Path, s.Rule) }) {
				continue
			}
			if !add(&wq.Refusal{Index: i, Path: f.Path, Field: fmt.Sprintf("file_actions[%d].content", i), Rule: RuleSecret,
				Message: fmt.Sprintf("line %d, column %d: a secret (rule %s); remove it, or allow it for this path in the project's secret_allowlist", s.Line, s.Column, s.Rule)}) {
				return d
			}
		}
	}
	if len(d.Refusals) > 0 {
		// The other rules quote what they refuse; a text that holds a
		// secret is never quoted, not even as the path a refusal names.
		flagged := map[string]bool{}
		for _, r := range d.Refusals {
			if strings.HasSuffix(r.Field, "_path") {
				flagged[r.Path] = true
			}
		}
		for _, r := range d.Refusals {
			if flagged[r.Path] {
				r.Path = ""
			}
		}
		return d
	}
	mode := p.Protected.mode()
	for i, f := range w.Files {
		for _, path := range []string{f.Path, f.PreviousPath} {
			if path == "" || mode == ProtectedAllow {
				continue
			}
			glob, reader := protectedMatch(path, p.Protected.Add)
			if glob == "" {
				continue
			}
			if mode == ProtectedReview {
				if !slices.Contains(d.Review, path) {
					d.Review = append(d.Review, path)
				}
				continue
			}
			if !add(&wq.Refusal{Index: i, Path: path, Rule: RuleProtectedPath, Message: fmt.Sprintf(
				"%s %q is a protected path (%q: %s); the project refuses changes to it (protected_paths.mode: refuse, the default; review lets a person approve it)",
				f.Action, path, glob, reader)}) {
				return d
			}
		}
	}
	// Gitea reads closing keywords in a pull request's title too.
	for _, field := range []struct{ name, text string }{{"title", w.Title}, {"description", w.Description}, {"commit_message", w.Message}} {
		for _, ref := range forge.ClosingReferences(field.text) {
			if msg := closingRefused(c, w.Project, ref); msg != "" {
				if !add(&wq.Refusal{Index: -1, Field: field.name, Rule: RuleClosingReference, Message: msg}) {
					return d
				}
			}
		}
	}
	if w.TargetBranch != "" && (w.Op == OpSubmit || w.Op == OpCommit || w.Op == OpOpenMR) {
		if r := checkTarget(p, w); r != nil && !add(r) {
			return d
		}
	}
	for i, l := range w.Labels {
		if r := checkLabel(c, p, w.Op, l); r != nil {
			r.Field = fmt.Sprintf("labels[%d]", i)
			if !add(r) {
				return d
			}
		}
	}
	return d
}

// Secrets is Check's first stage alone: the secrets in every text of w
// (not its files' contents). A caller runs it before anything else reads
// or records w's texts, such as the gate logging a branch name.
func Secrets(w Write) wq.Refusals {
	var out wq.Refusals
	for _, t := range w.texts() {
		for _, f := range find(t) {
			out = append(out, &wq.Refusal{Index: t.index, Path: t.path, Field: t.field, Rule: RuleSecret,
				Message: fmt.Sprintf("line %d, column %d: a secret (rule %s); nothing holding it is sent to the forge or stored", f.Line, f.Column, f.Rule)})
			if len(out) == MaxRefusals {
				return out
			}
		}
	}
	return out
}

// text is one text of a write that the forge receives.
type text struct {
	field, path string
	index       int
	text        string
	// path says the text is a path or a branch name, whose components
	// are words of their own: "/" is also a letter of base64, so an
	// encoded secret after "dir/" is read as one word with the directory.
	pathLike bool
}

// find is the secrets of t: as written, and for a path, also component
// by component (the same offsets, "/" read as a space).
func find(t text) []secrets.Finding {
	found := secrets.Find(t.text)
	if !t.pathLike || !strings.Contains(t.text, "/") {
		return found
	}
	for _, f := range secrets.Find(strings.ReplaceAll(t.text, "/", " ")) {
		if !slices.ContainsFunc(found, func(g secrets.Finding) bool { return g.Rule == f.Rule }) {
			found = append(found, f)
		}
	}
	return found
}

func (w Write) texts() []text {
	out := []text{
		{field: "source_branch", text: w.SourceBranch, index: -1, pathLike: true},
		{field: "target_branch", text: w.TargetBranch, index: -1, pathLike: true},
		{field: "title", text: w.Title, index: -1},
		{field: "description", text: w.Description, index: -1},
		{field: "commit_message", text: w.Message, index: -1},
		{field: "body", text: w.Body, index: -1},
	}
	for i, l := range w.Labels {
		out = append(out, text{field: fmt.Sprintf("labels[%d]", i), text: l, index: -1, pathLike: true})
	}
	for i, f := range w.Files {
		out = append(out, text{field: fmt.Sprintf("file_actions[%d].file_path", i), path: f.Path, index: i, text: f.Path, pathLike: true})
		if f.PreviousPath != "" {
			out = append(out, text{field: fmt.Sprintf("file_actions[%d].previous_path", i), path: f.PreviousPath, index: i, text: f.PreviousPath, pathLike: true})
		}
	}
	return slices.DeleteFunc(out, func(t text) bool { return t.text == "" })
}

// closingRefused says why a closing reference may not be sent, "" when
// it may: another repository's issue is never closed by what a caller
// wrote; an agent-only caller closes only the issue of its assignment.
func closingRefused(c Caller, project string, ref forge.ClosingRef) string {
	if ref.Repo != "" && !strings.EqualFold(ref.Repo, project) {
		return fmt.Sprintf("%q would close an issue of another repository (%s); a change may close issues of its own repository only", ref.Text, ref.Repo)
	}
	if !c.AgentOnly || c.Service {
		return ""
	}
	if c.Assignment == nil || c.Assignment.Issue == 0 {
		return fmt.Sprintf("%q would close issue #%d; an agent's change closes only the issue of its assignment, and this one is for no issue", ref.Text, ref.Number)
	}
	if ref.Number != c.Assignment.Issue {
		return fmt.Sprintf("%q would close issue #%d; an agent's change closes only the issue of its assignment (#%d)", ref.Text, ref.Number, c.Assignment.Issue)
	}
	return ""
}

// checkTarget holds a change's target to the project's target_branches
// (the default branch when none are set), never a branch the service
// owns or another change's source.
func checkTarget(p Project, w Write) *wq.Refusal {
	refuse := func(rule, format string, args ...any) *wq.Refusal {
		return &wq.Refusal{Index: -1, Field: "target_branch", Rule: rule, Message: fmt.Sprintf(format, args...)}
	}
	t := w.TargetBranch
	if p.BranchPrefix != "" && strings.HasPrefix(t, p.BranchPrefix) {
		return refuse(RuleTargetOwned, "%q starts with the branch prefix %q: it is a branch of the service's, never a target", t, p.BranchPrefix)
	}
	if w.TargetIsSource != "" {
		return refuse(RuleTargetIsSource, "%q is the source branch of %s; a change never targets another change's branch", t, w.TargetIsSource)
	}
	if len(p.TargetBranches) > 0 {
		for _, g := range p.TargetBranches {
			if ok, _ := doublestar.Match(g, t); ok {
				return nil
			}
		}
		return refuse(RuleTargetNotAllowed, "%q is not one of the project's target_branches %v", t, p.TargetBranches)
	}
	if w.DefaultBranch != "" && t != w.DefaultBranch {
		return refuse(RuleTargetNotAllowed, "%q is not the repository's default branch %q, the only target a project without target_branches allows", t, w.DefaultBranch)
	}
	return nil
}

// checkLabel holds one label to who may set it: the issues the service
// files for incidents carry the labels the operator configured.
func checkLabel(c Caller, p Project, op Op, l string) *wq.Refusal {
	refuse := func(rule, format string, args ...any) *wq.Refusal {
		return &wq.Refusal{Index: -1, Rule: rule, Message: fmt.Sprintf(format, args...)}
	}
	if c.Service && op == OpCreateIssue {
		return nil // the operator's labels of an incident's issue (incidents.projects[].labels)
	}
	if slices.ContainsFunc(p.SteeringLabels, func(s string) bool { return strings.EqualFold(s, l) }) {
		return refuse(RuleLabelReserved, "%q steers the control plane (blocked, priority): no write through the service sets it", l)
	}
	if slices.ContainsFunc(p.ServiceLabels, func(s string) bool { return strings.EqualFold(s, l) }) {
		if c.Service {
			return nil
		}
		return refuse(RuleLabelReserved, "%q is the service's own label: the service sets it, callers do not", l)
	}
	if c.Service {
		return nil // the labels of work accepted earlier, checked then
	}
	if p.CallerLabels == nil {
		if c.AgentOnly {
			return refuse(RuleLabelNotAllowed, "%q: agent-only callers set no labels unless the project lists them in caller_labels", l)
		}
		return nil
	}
	for _, g := range p.CallerLabels {
		if ok, _ := doublestar.Match(g, l); ok {
			return nil
		}
	}
	return refuse(RuleLabelNotAllowed, "%q is not one of the project's caller_labels %v", l, p.CallerLabels)
}
