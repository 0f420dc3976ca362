package metrics

import (
	"net/http"
	"strings"
	"time"
)

// ForgeTransport returns next (nil: http.DefaultTransport) counting and
// timing every request to the configured forge name of the given kind.
// On a nil *Metrics it returns next unchanged.
func (m *Metrics) ForgeTransport(forge, kind string, next http.RoundTripper) http.RoundTripper {
	if m == nil {
		return next
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &forgeTransport{m: m, forge: forge, kind: kind, next: next}
}

type forgeTransport struct {
	m           *Metrics
	forge, kind string
	next        http.RoundTripper
}

func (t *forgeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	op := Operation(r.Method, r.URL.EscapedPath())
	t.m.forgeRequests.WithLabelValues(t.forge, t.kind, op, statusClass(resp, err)).Inc()
	t.m.forgeSeconds.WithLabelValues(t.forge, t.kind, op).Observe(time.Since(start).Seconds())
	return resp, err
}

// apiWords are the path segments of the Gitea and GitLab REST APIs that
// Operation keeps; every other segment (an owner, a repository, a number,
// a branch, a commit) becomes {}. The set is closed, so operations are a
// bounded set whatever the paths.
var apiWords = map[string]bool{
	"repos": true, "projects": true, "user": true, "users": true, "version": true, "orgs": true, "groups": true,
	"pulls": true, "pull": true, "merge_requests": true, "merge": true, "issues": true, "comments": true, "notes": true,
	"reviews": true, "requested_reviewers": true, "approve": true, "approvals": true, "approval_state": true,
	"unapprove": true, "discussions": true, "labels": true, "hooks": true, "statuses": true, "status": true,
	"commits": true, "commit": true, "diff": true, "git": true, "trees": true, "tree": true, "refs": true,
	"compare": true, "contents": true, "files": true, "raw": true, "branches": true, "repository": true,
	"actions": true, "runs": true, "jobs": true, "tasks": true, "logs": true, "trace": true, "pipelines": true,
	"retry": true, "rerun": true, "cancel": true, "state_event": true, "blobs": true, "contributors": true,
	"search": true, "pipeline": true, "workflows": true, "artifacts": true, "update": true, "rebase": true,
	"reopen": true, "close": true, "search_issues": true, "collaborators": true, "permission": true, "members": true,
	"all": true,
}

// nameTails are words after which the rest of a path is one name that may
// hold slashes (a file path, a branch, a ref, a compare range): the
// operation ends with {} there.
var nameTails = map[string]bool{"contents": true, "files": true, "raw": true, "refs": true, "compare": true, "blobs": true}

// maxOperationDepth bounds an operation's segments after the API prefix.
const maxOperationDepth = 8

// Operation names a forge request for a label: the method and the API
// path after /api/v1/ (Gitea) or /api/v4/ (GitLab) with every segment
// that is not an API word replaced by {} (runs of them by one), e.g.
// "GET repos/{}/pulls/{}" or "PUT projects/{}/merge_requests/{}/merge".
// A path outside the APIs is "other" (git's HTTP protocol, raw files).
func Operation(method, escapedPath string) string {
	var rest string
	for _, prefix := range []string{"/api/v1/", "/api/v4/"} {
		if i := strings.Index(escapedPath, prefix); i >= 0 {
			rest = escapedPath[i+len(prefix):]
			break
		}
	}
	if rest == "" {
		return methodWord(method) + " other"
	}
	var out []string
	for seg := range strings.SplitSeq(strings.Trim(rest, "/"), "/") {
		if len(out) == maxOperationDepth {
			break
		}
		if !apiWords[seg] {
			if len(out) == 0 || out[len(out)-1] != "{}" {
				out = append(out, "{}")
			}
			continue
		}
		out = append(out, seg)
		if nameTails[seg] {
			out = append(out, "{}")
			break
		}
	}
	return methodWord(method) + " " + strings.Join(out, "/")
}

// methodWord keeps the label bounded against odd methods.
func methodWord(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return m
	}
	return "OTHER"
}
