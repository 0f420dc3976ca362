package gitea

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	wq "github.com/workqueue-dev/workqueue"
)

// statusPageSize is the page of a commit's combined status read at once:
// Gitea's largest.
const statusPageSize = 50

// CommitStatuses lists the latest status of each context of commit sha
// (wq.CommitStatusReader): GET /repos/{o}/{r}/commits/{sha}/status, the
// combined status, which holds one status a context, paged. Actions'
// jobs report there too, as "workflow / job (event)". A commit nothing
// reported on is an empty list (Gitea answers it with an empty body).
func (f *Forge) CommitStatuses(ctx context.Context, project, sha string) ([]wq.CommitStatus, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	op := "gitea: statuses of " + project + "@" + sha
	if sha == "" {
		return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: op, Message: "empty commit sha"}
	}
	var out []wq.CommitStatus
	seen := map[string]bool{}
	for page := 1; ; page++ {
		var body struct {
			Statuses []struct {
				Context   string `json:"context"`
				Status    string `json:"status"`
				TargetURL string `json:"target_url"`
			} `json:"statuses"`
			TotalCount int `json:"total_count"`
		}
		u := fmt.Sprintf("%s/api/v1/repos/%s/%s/commits/%s/status?page=%d&limit=%d", f.url, url.PathEscape(owner),
			url.PathEscape(repo), url.PathEscape(sha), page, statusPageSize)
		if err := f.getJSON(ctx, op, u, &body); errors.Is(err, io.EOF) {
			return out, nil // an empty body: no status at all
		} else if err != nil {
			return nil, err
		}
		for _, s := range body.Statuses {
			if seen[s.Context] {
				continue
			}
			seen[s.Context] = true
			out = append(out, wq.CommitStatus{Context: s.Context, State: checkState(s.Status), ForgeState: s.Status, URL: s.TargetURL})
		}
		if len(body.Statuses) < statusPageSize || len(out) >= body.TotalCount || page >= maxStatusPages {
			return out, nil
		}
	}
}

// maxStatusPages bounds the pages of one commit's statuses read: 1,000
// contexts is far beyond any project's checks.
const maxStatusPages = 20

// checkState is a Gitea commit status state in neutral words: pending
// and warning are not decided (a warning is not a success to merge on);
// error, failure and skipped will not succeed as they stand.
func checkState(s string) string {
	switch s {
	case "success":
		return wq.CheckSuccess
	case "error", "failure", "skipped":
		return wq.CheckFailed
	}
	return wq.CheckPending
}
