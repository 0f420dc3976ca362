package incident

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/workqueue-dev/workqueue/cptype/incidenttype"
)

// MaxIssueTitle bounds a filed issue's title (both forges take 255).
const MaxIssueTitle = 255

// IssuePlan is the forge issue the bridge files (or would file) for an
// observation, declared once in package incidenttype.
type IssuePlan = incidenttype.IssuePlan

// Marker is the line every filed issue's body ends with: an HTML comment
// (invisible once rendered) naming the provider issue, stable across
// versions, so that an operator or a later tool finds the forge issues of
// a provider issue by searching for it.
func Marker(k Key) string {
	v := url.QueryEscape
	return fmt.Sprintf("<!-- workqueue-incident provider=%s organization=%s project=%s environment=%s fingerprint=%s -->",
		v(k.Provider), v(k.Organization), v(k.Project), v(k.Environment), v(k.Fingerprint))
}

// planIssue renders the issue for a redacted observation of project p.
// Every text of the observation is shown in a code span, so that nothing
// it holds renders as a link, a mention or HTML.
func planIssue(obs Observation, p Project) IssuePlan {
	name := providerName(obs.Provider)
	title := obs.Title
	if title == "" {
		title = fmt.Sprintf("issue %s", obs.Fingerprint)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s observed this incident in %s; the workqueue incident bridge filed it here.\n\n",
		name, codeSpan(strings.Trim(obs.Organization+"/"+obs.Project, "/")))
	line := func(label, value string) {
		if value != "" {
			fmt.Fprintf(&b, "- %s: %s\n", label, value)
		}
	}
	line("Title", codeSpan(obs.Title))
	line("Culprit", codeSpan(obs.Culprit))
	line("Level", codeSpan(obs.Level))
	line("Status", codeSpan(obs.Status))
	if obs.EventCount > 0 {
		line("Events", strconv.FormatInt(obs.EventCount, 10))
	}
	line("First seen", timeText(obs.FirstSeen))
	line("Last seen", timeText(obs.LastSeen))
	line("Environment", codeSpan(obs.Environment))
	if obs.Permalink != "" {
		line("Permalink", "<"+obs.Permalink+">")
	}
	for _, pr := range obs.LinkedPRs {
		line("Linked pull request", fmt.Sprintf("#%d", pr))
	}
	b.WriteString("\n" + Marker(obs.Key) + "\n")
	return IssuePlan{
		Title:  truncate(fmt.Sprintf("[%s] %s", name, title), MaxIssueTitle),
		Body:   b.String(),
		Labels: p.Labels,
	}
}

func providerName(provider string) string {
	switch provider {
	case ProviderSentry:
		return "Sentry"
	case ProviderGlitchTip:
		return "GlitchTip"
	}
	return provider
}

// codeSpan is s as a Markdown code span, fenced by one backtick more than
// the longest run of them in s; "" for "".
func codeSpan(s string) string {
	if s == "" {
		return ""
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
