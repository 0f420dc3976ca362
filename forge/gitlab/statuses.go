package gitlab

import (
	"cmp"
	"context"
	"slices"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
)

// CommitStatuses lists the latest status of each check of commit sha
// (wq.CommitStatusReader): GET /projects/:id/repository/commits/:sha/
// statuses, every page. GitLab lists a status per name and pipeline, its
// jobs' and external ones alike, without the runs a retry replaced: the
// newest of a name is its state. A job allowed to fail that failed does
// not fail the check, as it does not fail GitLab's pipeline.
func (f *Forge) CommitStatuses(ctx context.Context, project, sha string) ([]wq.CommitStatus, error) {
	if sha == "" {
		return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitlab: statuses of " + project, Message: "empty commit sha"}
	}
	list, err := listAll(ctx, f, "statuses of "+project+"@"+sha, func(page gl.ListOptions, o gl.RequestOptionFunc) ([]*gl.CommitStatus, *gl.Response, error) {
		return f.client.Commits.GetCommitStatuses(project, sha, &gl.GetCommitStatusesOptions{ListOptions: page}, o)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b *gl.CommitStatus) int { return cmp.Compare(b.ID, a.ID) }) // newest first
	var out []wq.CommitStatus
	seen := map[string]bool{}
	for _, s := range list {
		if s == nil || seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		state := checkState(s.Status)
		if state == wq.CheckFailed && s.Status == "failed" && s.AllowFailure {
			state = wq.CheckSuccess
		}
		out = append(out, wq.CommitStatus{Context: s.Name, State: state, ForgeState: s.Status, URL: s.TargetURL})
	}
	return out, nil
}

// checkState is a GitLab commit status in neutral words: success;
// failed, canceled and skipped will not succeed as they stand; created,
// waiting_for_resource, preparing, pending, running, manual and
// scheduled are not decided yet.
func checkState(s string) string {
	switch s {
	case "success":
		return wq.CheckSuccess
	case "failed", "canceled", "skipped":
		return wq.CheckFailed
	}
	return wq.CheckPending
}
