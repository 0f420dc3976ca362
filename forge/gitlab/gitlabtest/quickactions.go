package gitlabtest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// QuickAction is one quick action the server ran from a description: on
// which issue ("#4") or merge request ("!3") of which project, by whom,
// with which argument.
type QuickAction struct {
	Project, Target string
	Name, Arg       string
	By              string
}

func (q QuickAction) String() string {
	s := fmt.Sprintf("%s%s /%s", q.Project, q.Target, q.Name)
	if q.Arg != "" {
		s += " " + q.Arg
	}
	return s + " by " + q.By
}

// QuickActions returns the quick actions the server ran from descriptions
// of merge requests and issues, on creation and on edits, in order.
func (s *Server) QuickActions() []QuickAction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ranActions)
}

// quickActionNames are the names (and aliases) of the quick actions GitLab
// runs on issues and merge requests (doc/user/project/quick_actions.md,
// lib/gitlab/quick_actions/*_actions.rb). A line that starts with "/" and
// one of them is a command; a line with any other word after "/" is text.
// The substitutions (/shrug, /tableflip) and /cc, which GitLab leaves in
// the text, are not here.
var quickActionNames = []string{
	"add_child", "add_contacts", "add_email", "approve", "assign", "assign_reviewer", "award", "blocked_by", "blocks",
	"board_move", "child_epic", "clear_health_status", "clear_weight", "clone", "close", "confidential", "convert_to_ticket",
	"copy_metadata", "create_merge_request", "done", "draft", "due", "duplicate", "epic", "estimate", "estimate_time",
	"health_status", "iteration", "label", "labels", "link", "lock", "merge", "milestone", "move", "parent_epic", "promote",
	"promote_to", "promote_to_incident", "publish", "ready", "reassign", "reassign_reviewer", "rebase", "react", "relabel",
	"relate", "remove_child", "remove_child_epic", "remove_contacts", "remove_due_date", "remove_epic", "remove_estimate",
	"remove_iteration", "remove_label", "remove_milestone", "remove_parent", "remove_parent_epic", "remove_reviewer",
	"remove_time_spent", "remove_estimate_time", "remove_zoom", "reopen", "request_changes", "request_review", "reviewer",
	"reviewers", "set_parent", "severity", "spend", "spent", "spend_time", "status", "submit_review", "subscribe",
	"summarize_diff", "target_branch", "timeline", "title", "todo", "type", "unapprove", "unassign", "unassign_reviewer",
	"unlabel", "unlink", "unlock", "unrelate", "unsubscribe", "weight", "wip", "zoom",
}

// quickActionLine finds, in one Markdown paragraph, what GitLab's
// extractor skips (inline code, which may span the paragraph's lines, and
// an HTML block) and the commands: a line that starts with "/", a name
// (any case), then a space and the argument or the line's end; the
// blank space after it goes with it.
var quickActionLine = regexp.MustCompile(`(?msi)(?P<skip>` + "`.+?`" + `|^<[^>]+?>\n.+?\n</[^>]+?>$)|^/(?P<cmd>` +
	strings.Join(quickActionNames, "|") + `)(?:[ ](?P<arg>[^\n]*))?(?:\s*\n|$)`)

// ExtractQuickActions is what GitLab does to a description or a note
// before it saves it: it finds the quick actions, which it runs, and
// drops them from the text. It returns the text as GitLab stores it
// (carriage returns dropped, trailing blank space trimmed) and the
// commands found, each its name in lower case and its argument.
//
// GitLab reads commands in Markdown paragraphs only, outside inline code
// and HTML (lib/gitlab/quick_actions/extractor.rb with its Markdown
// pipeline; older releases skipped code blocks, HTML blocks and >>>
// quotes with one regular expression). The model finds paragraphs with
// the block rules that matter here: fenced code blocks (``` and ~~~, up
// to their closing fence or the end), >>> quotes, lines of a blockquote
// (">"), and blank lines between paragraphs; any other line belongs to a
// paragraph. Where its blocks and GitLab's differ (a lazy continuation
// line of a quote, an HTML block without its closing tag), the model
// runs a command GitLab would leave as text, never the other way round,
// so that a test of text made inert can only be stricter than GitLab.
func ExtractQuickActions(text string) (string, [][2]string) {
	lines := strings.SplitAfter(strings.ReplaceAll(text, "\r", ""), "\n")
	var out strings.Builder
	var commands [][2]string
	var para []string
	flush := func() {
		if len(para) == 0 {
			return
		}
		p := strings.Join(para, "")
		para = nil
		last := 0
		for _, m := range quickActionLine.FindAllStringSubmatchIndex(p, -1) {
			if m[2] >= 0 { // skipped
				continue
			}
			out.WriteString(p[last:m[0]])
			last = m[1]
			c := [2]string{strings.ToLower(p[m[4]:m[5]]), ""}
			if m[6] >= 0 {
				c[1] = strings.TrimSpace(p[m[6]:m[7]])
			}
			commands = append(commands, c)
		}
		out.WriteString(p[last:])
	}
	fence := "" // the opening fence of the code block we are in
	quote := false
	for i, l := range lines {
		bare := strings.TrimRight(l, "\n")
		indented := strings.TrimLeft(bare, " ")
		block := len(bare)-len(indented) <= 3
		switch {
		case fence != "":
			out.WriteString(l)
			if block && strings.HasPrefix(indented, fence) && strings.Trim(indented, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		case quote:
			out.WriteString(l)
			if strings.HasPrefix(bare, ">>>") {
				quote = false
			}
			continue
		}
		switch {
		case block && (strings.HasPrefix(indented, "```") || strings.HasPrefix(indented, "~~~")):
			flush()
			fence = indented[:len(indented)-len(strings.TrimLeft(indented, indented[:1]))]
			out.WriteString(l)
		case strings.HasPrefix(bare, ">>>") && closes(lines[i+1:]):
			flush()
			quote = true
			out.WriteString(l)
		case block && strings.HasPrefix(indented, ">"):
			flush()
			out.WriteString(l)
		case strings.TrimSpace(bare) == "":
			// A paragraph takes the blank line after it, as GitLab's
			// extractor does: a command's trailing blank space goes.
			para = append(para, l)
			flush()
		default:
			para = append(para, l)
		}
	}
	flush()
	return strings.TrimRight(out.String(), " \t\n\v\f\x00"), commands
}

// closes reports whether one of lines closes a >>> quote: without its
// closing line, ">>>" is a blockquote's line.
func closes(lines []string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, ">>>") })
}

// runQuickActions records the commands of a description written by user
// on the issue or merge request target ("#4", "!3") of p and runs each
// with run, in order, as GitLab does once it saved the description
// without them.
func (s *Server) runQuickActions(p *project, target, user string, commands [][2]string, run func(name, arg string)) {
	for _, c := range commands {
		s.ranActions = append(s.ranActions, QuickAction{Project: p.path, Target: target, Name: c[0], Arg: c[1], By: user})
		run(c[0], c[1])
	}
}

// labelArgs reads the labels of a /label argument: ~name or ~"two words",
// or bare names.
func labelArgs(arg string) []string {
	var out []string
	for arg = strings.TrimSpace(arg); arg != ""; arg = strings.TrimSpace(arg) {
		arg = strings.TrimPrefix(arg, "~")
		var name string
		if rest, ok := strings.CutPrefix(arg, `"`); ok {
			name, arg, _ = strings.Cut(rest, `"`)
		} else {
			name, arg, _ = strings.Cut(arg, " ")
		}
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// withLabels returns labels with add added and remove removed, sorted.
func withLabels(labels, add, remove []string) []string {
	out := slices.DeleteFunc(slices.Clone(labels), func(l string) bool { return slices.Contains(remove, l) })
	for _, l := range add {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// mergeRequestQuickAction runs one quick action of a merge request's
// description, as user: the ones that change what the API shows (state,
// merge, approvals, title, draft, labels, target branch); the others are
// recorded only.
func (s *Server) mergeRequestQuickAction(p *project, mr *mergeRequest, user string) func(name, arg string) {
	return func(name, arg string) {
		switch name {
		case "close":
			s.setMRState(p, mr, "close", nil)
		case "reopen":
			s.setMRState(p, mr, "reopen", nil)
		case "merge":
			mr.checked = true
			if mr.state == "opened" && !mr.changesRequested() && s.ciMergeStatus(p, mr) == "" && s.gitMergeStatus(p, mr) == "mergeable" {
				s.merge(p, mr)
			}
		case "approve":
			s.approve(p, mr, user)
		case "unapprove":
			s.unapprove(p, mr, user)
		case "title":
			if arg != "" {
				mr.title = arg
			}
		case "draft", "wip":
			if !strings.HasPrefix(mr.title, "Draft: ") {
				mr.title = "Draft: " + mr.title
			}
		case "ready":
			mr.title = strings.TrimPrefix(mr.title, "Draft: ")
		case "label", "labels":
			mr.labels = withLabels(mr.labels, labelArgs(arg), nil)
		case "unlabel", "remove_label":
			if arg == "" {
				mr.labels = nil
			} else {
				mr.labels = withLabels(mr.labels, nil, labelArgs(arg))
			}
		case "relabel":
			mr.labels = withLabels(nil, labelArgs(arg), nil)
		case "target_branch":
			if _, ok := p.branches[arg]; ok && arg != mr.source {
				mr.target = arg
				mr.reloadDiff(p)
			}
		}
	}
}

// issueQuickAction runs one quick action of an issue's description, as
// user: state, title, labels and confidentiality; the others are
// recorded only.
func (s *Server) issueQuickAction(p *project, is *issue) func(name, arg string) {
	return func(name, arg string) {
		switch name {
		case "close":
			s.setIssueState(p, is, "close")
		case "reopen":
			s.setIssueState(p, is, "reopen")
		case "title":
			if arg != "" {
				is.title = arg
			}
		case "label", "labels":
			is.labels = withLabels(is.labels, labelArgs(arg), nil)
		case "unlabel", "remove_label":
			if arg == "" {
				is.labels = nil
			} else {
				is.labels = withLabels(is.labels, nil, labelArgs(arg))
			}
		case "relabel":
			is.labels = withLabels(nil, labelArgs(arg), nil)
		case "confidential":
			is.confidential = true
		}
	}
}
