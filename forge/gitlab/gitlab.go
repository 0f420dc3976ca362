// Package gitlab is the Forge for GitLab (REST v4), through the official
// client (gitlab.com/gitlab-org/api/client-go). The client's own retries
// are off: it would retry POSTs, which are not idempotent, and the engine
// already backs off per item.
package gitlab

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Forge talks to one GitLab instance.
type Forge struct {
	client  *gl.Client
	timeout time.Duration
}

var _ wq.Forge = (*Forge)(nil)

// Options configure a Forge.
type Options struct {
	Timeout    time.Duration // per call; default 30s
	HTTPClient *http.Client
}

// New returns a Forge for the GitLab at baseURL (without /api/v4).
func New(baseURL, token string, opts Options) (*Forge, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, wq.Errorf(wq.EINVALID, "gitlab url: want http(s)://host, got %q", baseURL)
	}
	if token == "" {
		return nil, wq.Errorf(wq.EINVALID, "gitlab: empty token")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	copts := []gl.ClientOptionFunc{gl.WithBaseURL(strings.TrimRight(baseURL, "/") + "/api/v4"), gl.WithoutRetries()}
	if opts.HTTPClient != nil {
		copts = append(copts, gl.WithHTTPClient(opts.HTTPClient))
	}
	c, err := gl.NewClient(token, copts...)
	if err != nil {
		return nil, fmt.Errorf("gitlab client: %w", err)
	}
	return &Forge{client: c, timeout: opts.Timeout}, nil
}

// Kind returns "gitlab".
func (f *Forge) Kind() string { return wq.ForgeGitLab }

// call runs fn with a context bounded by the call timeout; what names
// the call in errors.
func (f *Forge) call(ctx context.Context, what string, fn func(opt gl.RequestOptionFunc) error) error {
	return f.callAs(ctx, forge.OpAny, what, fn)
}

// callAs is call for an operation the shared classifier treats apart.
func (f *Forge) callAs(ctx context.Context, op forge.Op, what string, fn func(opt gl.RequestOptionFunc) error) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return classify(op, "gitlab: "+what, fn(gl.WithContext(ctx)))
}

// classify turns a client error into a *ForgeError with the shared
// classifier: client-go reports a status as *gl.ErrorResponse, anything
// else (network, timeout, an unreadable answer) came without one.
func classify(op forge.Op, what string, err error) error {
	if err == nil {
		return nil
	}
	a := forge.Answer{Err: err}
	var er *gl.ErrorResponse
	if errors.As(err, &er) {
		a.Status, a.Message = er.StatusCode, er.Message
		if er.Response != nil {
			a.Header = er.Response.Header
		}
	}
	return forge.Classify(wq.ForgeGitLab, op, what, a)
}

// CommitFiles writes one commit on top of req.Base to req.Branch with the
// Commits API (start_branch + force). The base is read first so that a
// missing one is NotFound, as GitLab reports it only as a 400 message.
func (f *Forge) CommitFiles(ctx context.Context, req wq.CommitRequest) (wq.Commit, error) {
	if _, err := f.BranchHead(ctx, req.Project, req.Base); err != nil {
		return wq.Commit{}, err
	}
	opt := &gl.CreateCommitOptions{Branch: &req.Branch, StartBranch: &req.Base, CommitMessage: &req.Message, Force: gl.Ptr(true)}
	if req.Author.Name != "" {
		opt.AuthorName, opt.AuthorEmail = &req.Author.Name, &req.Author.Email
	}
	for _, ch := range req.Changes {
		a := &gl.CommitActionOptions{Action: gl.Ptr(gl.FileActionValue(ch.Action)), FilePath: gl.Ptr(ch.Path), ExecuteFilemode: ch.Executable}
		if ch.PreviousPath != "" {
			a.PreviousPath = gl.Ptr(ch.PreviousPath)
		}
		if ch.Content != nil {
			a.Content, a.Encoding = gl.Ptr(base64.StdEncoding.EncodeToString(ch.Content)), gl.Ptr("base64")
		}
		opt.Actions = append(opt.Actions, a)
	}
	var out wq.Commit
	err := f.call(ctx, "commit "+req.Project+"@"+req.Branch, func(o gl.RequestOptionFunc) error {
		c, _, err := f.client.Commits.CreateCommit(req.Project, opt, o)
		if err == nil {
			out.SHA = c.ID
		}
		return err
	})
	return out, err
}

// CommitChanges reads the commit's diff against its first parent (one
// page of 100 at a time). A rename is reported as the old path removed and
// the new one added, as on every forge.
func (f *Forge) CommitChanges(ctx context.Context, project, sha string) ([]wq.PathChange, error) {
	var out []wq.PathChange
	err := f.call(ctx, "commit diff "+project+"@"+sha, func(o gl.RequestOptionFunc) error {
		for page := int64(1); ; page++ {
			diffs, resp, err := f.client.Commits.GetCommitDiff(project, sha,
				&gl.GetCommitDiffOptions{ListOptions: gl.ListOptions{Page: page, PerPage: 100}}, o)
			if err != nil {
				return err
			}
			for _, d := range diffs {
				switch {
				case d.NewFile:
					out = append(out, wq.PathChange{Path: d.NewPath, Status: wq.PathAdded})
				case d.DeletedFile:
					out = append(out, wq.PathChange{Path: d.OldPath, Status: wq.PathRemoved})
				case d.RenamedFile:
					out = append(out, wq.PathChange{Path: d.OldPath, Status: wq.PathRemoved},
						wq.PathChange{Path: d.NewPath, Status: wq.PathAdded})
				default:
					out = append(out, wq.PathChange{Path: d.NewPath, Status: wq.PathModified})
				}
			}
			if resp == nil || resp.NextPage == 0 || len(diffs) == 0 {
				return nil
			}
		}
	})
	return out, err
}

// BranchHead returns the SHA at the head of branch.
func (f *Forge) BranchHead(ctx context.Context, project, branch string) (string, error) {
	var sha string
	err := f.call(ctx, "branch "+project+"@"+branch, func(o gl.RequestOptionFunc) error {
		b, _, err := f.client.Branches.GetBranch(project, branch, o)
		if err == nil && b.Commit != nil {
			sha = b.Commit.ID
		}
		return err
	})
	return sha, err
}

// DeleteBranch deletes branch; a missing one is fine.
func (f *Forge) DeleteBranch(ctx context.Context, project, branch string) error {
	err := f.call(ctx, "delete branch "+project+"@"+branch, func(o gl.RequestOptionFunc) error {
		_, err := f.client.Branches.DeleteBranch(project, branch, o)
		return err
	})
	if wq.IsForgeError(err, wq.ForgeNotFound) {
		return nil
	}
	return err
}

func toMergeRequest(mr *gl.MergeRequest) *wq.MergeRequest {
	out := &wq.MergeRequest{Number: mr.IID, URL: mr.WebURL, SourceBranch: mr.SourceBranch, TargetBranch: mr.TargetBranch,
		HeadSHA: mr.SHA, Title: mr.Title, Description: mr.Description, Labels: []string(mr.Labels),
		MergeStatus: mr.DetailedMergeStatus, Mergeable: mr.DetailedMergeStatus == "mergeable"}
	if mr.HeadPipeline != nil {
		out.HeadPipelineID = mr.HeadPipeline.ID
	}
	switch mr.State {
	case "merged":
		out.State = wq.MergeRequestMerged
	case "opened":
		out.State = wq.MergeRequestOpen
	default: // closed, locked
		out.State = wq.MergeRequestClosed
		out.Mergeable = false
	}
	return out
}

// FindMergeRequest returns the newest merge request from source into
// target, read whole (the list gives a basic entity only).
func (f *Forge) FindMergeRequest(ctx context.Context, project, source, target string) (*wq.MergeRequest, error) {
	var iid int64
	err := f.call(ctx, "find merge request "+project+" "+source+"→"+target, func(o gl.RequestOptionFunc) error {
		list, _, err := f.client.MergeRequests.ListProjectMergeRequests(project, &gl.ListProjectMergeRequestsOptions{
			SourceBranch: &source, TargetBranch: &target, State: gl.Ptr("all"), OrderBy: gl.Ptr("created_at"), Sort: gl.Ptr("desc")}, o)
		if err == nil && len(list) > 0 {
			iid = list[0].IID
		}
		return err
	})
	if err != nil || iid == 0 {
		return nil, err
	}
	return f.GetMergeRequest(ctx, project, iid)
}

// CreateMergeRequest opens a merge request; labels are names on GitLab.
func (f *Forge) CreateMergeRequest(ctx context.Context, req wq.MergeRequestCreate) (*wq.MergeRequest, error) {
	opt := &gl.CreateMergeRequestOptions{Title: &req.Title, Description: &req.Description, SourceBranch: &req.SourceBranch, TargetBranch: &req.TargetBranch}
	if len(req.Labels) > 0 {
		opt.Labels = gl.Ptr(gl.LabelOptions(req.Labels))
	}
	var out *wq.MergeRequest
	err := f.call(ctx, "create merge request "+req.Project+" "+req.SourceBranch+"→"+req.TargetBranch, func(o gl.RequestOptionFunc) error {
		mr, _, err := f.client.MergeRequests.CreateMergeRequest(req.Project, opt, o)
		if err == nil {
			out = toMergeRequest(mr)
		}
		return err
	})
	return out, err
}

// GetMergeRequest reads one merge request.
func (f *Forge) GetMergeRequest(ctx context.Context, project string, number int64) (*wq.MergeRequest, error) {
	var out *wq.MergeRequest
	err := f.call(ctx, fmt.Sprintf("get merge request %s!%d", project, number), func(o gl.RequestOptionFunc) error {
		mr, _, err := f.client.MergeRequests.GetMergeRequest(project, number, nil, o)
		if err == nil {
			out = toMergeRequest(mr)
		}
		return err
	})
	return out, err
}

// UpdateMergeRequest edits title and description, or closes or reopens.
func (f *Forge) UpdateMergeRequest(ctx context.Context, project string, number int64, u wq.MergeRequestUpdate) (*wq.MergeRequest, error) {
	opt := &gl.UpdateMergeRequestOptions{Title: u.Title, Description: u.Description}
	if u.State != nil {
		event := "reopen"
		if *u.State == wq.MergeRequestClosed {
			event = "close"
		}
		opt.StateEvent = &event
	}
	var out *wq.MergeRequest
	err := f.call(ctx, fmt.Sprintf("update merge request %s!%d", project, number), func(o gl.RequestOptionFunc) error {
		mr, _, err := f.client.MergeRequests.UpdateMergeRequest(project, number, opt, o)
		if err == nil {
			out = toMergeRequest(mr)
		}
		return err
	})
	return out, err
}

// MergeMergeRequest merges pinned to headSHA: GitLab answers 409 when the
// head moved, 405/406/422 when it cannot merge now.
func (f *Forge) MergeMergeRequest(ctx context.Context, project string, number int64, headSHA string) error {
	return f.callAs(ctx, forge.OpMerge, fmt.Sprintf("merge %s!%d", project, number), func(o gl.RequestOptionFunc) error {
		_, _, err := f.client.MergeRequests.AcceptMergeRequest(project, number, &gl.AcceptMergeRequestOptions{SHA: &headSHA}, o)
		return err
	})
}

// ReadFile reads path at ref.
func (f *Forge) ReadFile(ctx context.Context, project, ref, path string) ([]byte, bool, error) {
	var content []byte
	err := f.call(ctx, "read "+project+"@"+ref+":"+path, func(o gl.RequestOptionFunc) error {
		b, _, err := f.client.RepositoryFiles.GetRawFile(project, path, &gl.GetRawFileOptions{Ref: &ref}, o)
		content = b
		return err
	})
	if wq.IsForgeError(err, wq.ForgeNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return content, true, nil
}

// CreateNote comments on the merge request.
func (f *Forge) CreateNote(ctx context.Context, project string, number int64, body string) (int64, error) {
	var id int64
	err := f.call(ctx, fmt.Sprintf("note on %s!%d", project, number), func(o gl.RequestOptionFunc) error {
		n, _, err := f.client.Notes.CreateMergeRequestNote(project, number, &gl.CreateMergeRequestNoteOptions{Body: &body}, o)
		if err == nil {
			id = n.ID
		}
		return err
	})
	return id, err
}

// UpdateNote edits a note.
func (f *Forge) UpdateNote(ctx context.Context, project string, number, noteID int64, body string) error {
	return f.call(ctx, fmt.Sprintf("edit note %d on %s!%d", noteID, project, number), func(o gl.RequestOptionFunc) error {
		_, _, err := f.client.Notes.UpdateMergeRequestNote(project, number, noteID, &gl.UpdateMergeRequestNoteOptions{Body: &body}, o)
		return err
	})
}

// ListProjects returns the projects the token's user is a member of.
func (f *Forge) ListProjects(ctx context.Context) ([]string, error) {
	var out []string
	err := f.call(ctx, "list projects", func(o gl.RequestOptionFunc) error {
		for page := int64(1); ; page++ {
			ps, _, err := f.client.Projects.ListProjects(&gl.ListProjectsOptions{Membership: gl.Ptr(true),
				ListOptions: gl.ListOptions{Page: page, PerPage: 100}}, o)
			if err != nil {
				return err
			}
			for _, p := range ps {
				out = append(out, p.PathWithNamespace)
			}
			if len(ps) < 100 {
				return nil
			}
		}
	})
	return out, err
}

// EnsureWebhook makes a project hook to url send merge request, pipeline,
// job and note events with secret as its token.
func (f *Forge) EnsureWebhook(ctx context.Context, project, url, secret string) (wq.WebhookOutcome, error) {
	var found *gl.ProjectHook
	for page := int64(1); found == nil; page++ {
		var hooks []*gl.ProjectHook
		var resp *gl.Response
		err := f.call(ctx, "list hooks of "+project, func(o gl.RequestOptionFunc) (err error) {
			hooks, resp, err = f.client.Projects.ListProjectHooks(project,
				&gl.ListProjectHooksOptions{ListOptions: gl.ListOptions{Page: page, PerPage: 100}}, o)
			return err
		})
		if err != nil {
			return "", err
		}
		for _, h := range hooks {
			if h.URL == url {
				found = h
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
	}
	if found == nil {
		err := f.call(ctx, "create hook on "+project, func(o gl.RequestOptionFunc) error {
			_, _, err := f.client.Projects.AddProjectHook(project, &gl.AddProjectHookOptions{URL: &url, Token: &secret,
				MergeRequestsEvents: gl.Ptr(true), PipelineEvents: gl.Ptr(true), JobEvents: gl.Ptr(true), NoteEvents: gl.Ptr(true),
				PushEvents: gl.Ptr(false)}, o)
			return err
		})
		return wq.WebhookCreated, err
	}
	if found.MergeRequestsEvents && found.PipelineEvents && found.JobEvents && found.NoteEvents {
		return wq.WebhookFound, nil
	}
	err := f.call(ctx, "update hook on "+project, func(o gl.RequestOptionFunc) error {
		_, _, err := f.client.Projects.EditProjectHook(project, found.ID, &gl.EditProjectHookOptions{URL: &url, Token: &secret,
			MergeRequestsEvents: gl.Ptr(true), PipelineEvents: gl.Ptr(true), JobEvents: gl.Ptr(true), NoteEvents: gl.Ptr(true)}, o)
		return err
	})
	return wq.WebhookUpdated, err
}

// CompareTrees is not implemented yet.
func (f *Forge) CompareTrees(ctx context.Context, project, base, head string) ([]wq.PathChange, error) {
	return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "compare " + project, Message: "not implemented"}
}
