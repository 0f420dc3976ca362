// Package gitlab is the Forge for GitLab (REST v4), through the official
// client (gitlab.com/gitlab-org/api/client-go). The client's own retries
// are off: it would retry POSTs, which are not idempotent, and the engine
// already backs off per item. So is its own pacing (it reads the
// RateLimit-Limit of its first answer and paces that one client): the
// service paces every client of a forge together, in the transport of
// the HTTP client it gives (forge/budget).
package gitlab

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Forge talks to one GitLab instance.
type Forge struct {
	client  *gl.Client
	timeout time.Duration
	// reviewing gives review verdicts: the client of Options.ReviewToken,
	// else client. reviewer caches who it is (reviewerUser).
	reviewing         *gl.Client
	dedicatedReviewer bool
	reviewer          struct {
		sync.Mutex
		user *gl.User
	}
}

var _ wq.Forge = (*Forge)(nil)

// Options configure a Forge.
type Options = forge.Options

// New returns a Forge for the GitLab at baseURL (without /api/v4).
func New(baseURL, token string, opts Options) (*Forge, error) {
	if err := opts.Check("gitlab", baseURL, token); err != nil {
		return nil, err
	}
	copts := []gl.ClientOptionFunc{gl.WithBaseURL(strings.TrimRight(baseURL, "/") + "/api/v4"), gl.WithoutRetries(),
		gl.WithCustomLimiter(unpaced{})}
	if opts.HTTPClient != nil {
		copts = append(copts, gl.WithHTTPClient(opts.HTTPClient))
	}
	c, err := gl.NewClient(token, copts...)
	if err != nil {
		return nil, fmt.Errorf("gitlab client: %w", err)
	}
	f := &Forge{client: c, timeout: opts.Timeout, reviewing: c}
	if opts.ReviewToken != "" {
		if f.reviewing, err = gl.NewClient(opts.ReviewToken, copts...); err != nil {
			return nil, fmt.Errorf("gitlab review client: %w", err)
		}
		f.dedicatedReviewer = true
	}
	return f, nil
}

// unpaced is client-go's rate limiter that never waits: the forge's
// budget, shared by the service's and the reviewer's clients and every
// caller, paces the requests instead.
type unpaced struct{}

func (unpaced) Wait(context.Context) error { return nil }

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
// Commits API (start_branch + force). GitLab reports a missing base only
// as a 400 message, so a 400 has the base read, and a missing one is
// NotFound; the base is not read before a commit that succeeds (issue 53:
// the caller has just listed it, and a push paid a read more).
func (f *Forge) CommitFiles(ctx context.Context, req wq.CommitRequest) (wq.Commit, error) {
	if err := forge.CheckChanges("gitlab: commit "+req.Project, req.Changes); err != nil {
		return wq.Commit{}, err
	}
	c, err := f.commit(ctx, req)
	if fe, ok := errors.AsType[*wq.ForgeError](err); ok && fe.Status == http.StatusBadRequest {
		if _, berr := f.BranchHead(ctx, req.Project, req.Base); wq.IsForgeError(berr, wq.ForgeNotFound) {
			return wq.Commit{}, berr
		}
	}
	return c, err
}

func (f *Forge) commit(ctx context.Context, req wq.CommitRequest) (wq.Commit, error) {
	opt := &gl.CreateCommitOptions{Branch: &req.Branch, StartBranch: &req.Base, CommitMessage: &req.Message, Force: gl.Ptr(true)}
	if req.Author.Name != "" {
		opt.AuthorName, opt.AuthorEmail = &req.Author.Name, &req.Author.Email
	}
	for _, ch := range req.Changes {
		opt.Actions = append(opt.Actions, commitActions(ch)...)
	}
	var out wq.Commit
	err := f.call(ctx, "commit "+req.Project+"@"+req.Branch, func(o gl.RequestOptionFunc) error {
		c, _, err := f.client.Commits.CreateCommit(req.Project, opt, o)
		if err == nil {
			out.SHA = c.ID
			if len(c.ParentIDs) > 0 {
				out.Parent = c.ParentIDs[0]
			}
		}
		return err
	})
	return out, err
}

// commitActions are the Commits API actions for one change. GitLab applies
// execute_filemode on create and chmod only: on update and move it is
// dropped without a word, so a mode there is sent as a chmod of its own
// after the change, in the same commit.
//
// An update that makes a symbolic link or a submodule a regular file
// (ch.Mode regular, ch.FromMode not) is a delete and a create of the path:
// GitLab's update keeps the entry's mode.
func commitActions(ch wq.FileChange) []*gl.CommitActionOptions {
	if ch.Action == "update" && !regularMode(ch.FromMode) && ch.FromMode != "" && regularMode(ch.Mode) {
		create := ch
		create.Action, create.FromMode = "create", ""
		if ch.Mode == wq.ModeExecutable {
			create.Executable = gl.Ptr(true)
		}
		return append([]*gl.CommitActionOptions{{Action: gl.Ptr(gl.FileDelete), FilePath: gl.Ptr(ch.Path)}}, commitActions(create)...)
	}
	a := &gl.CommitActionOptions{Action: gl.Ptr(gl.FileActionValue(ch.Action)), FilePath: gl.Ptr(ch.Path), ExecuteFilemode: ch.Executable}
	if ch.PreviousPath != "" {
		a.PreviousPath = gl.Ptr(ch.PreviousPath)
	}
	if ch.Content != nil {
		a.Content, a.Encoding = gl.Ptr(base64.StdEncoding.EncodeToString(ch.Content)), gl.Ptr("base64")
	}
	if ch.Executable == nil || (ch.Action != "update" && ch.Action != "move") {
		return []*gl.CommitActionOptions{a}
	}
	a.ExecuteFilemode = nil
	return []*gl.CommitActionOptions{a, {Action: gl.Ptr(gl.FileChmod), FilePath: gl.Ptr(ch.Path), ExecuteFilemode: ch.Executable}}
}

func regularMode(mode string) bool { return mode == wq.ModeFile || mode == wq.ModeExecutable }

// ReadTree lists ref's tree recursively (GET /projects/:id/repository/tree
// ?recursive=true), 100 entries a page with keyset pagination, which
// GitLab recommends for trees: offset pages of a large tree are slow and
// capped. Every entry carries its mode.
func (f *Forge) ReadTree(ctx context.Context, project, ref string) ([]wq.TreeEntry, error) {
	return f.listTree(ctx, "tree "+project+"@"+ref, project, &gl.ListTreeOptions{Ref: &ref, Recursive: gl.Ptr(true),
		ListOptions: gl.ListOptions{Pagination: "keyset", PerPage: 100}})
}

// WalkTree lists ref's tree a directory at a time (GET
// /projects/:id/repository/tree?path=DIR&ref=REF, not recursive), each
// directory 100 entries a page with keyset pagination as ReadTree's: one
// call per directory listed and per further 100 entries of one. The ref
// is read by name at each listing, so a directory listed a moment ago
// can be gone when the branch moved meanwhile: GitLab answers 404 (older
// releases an empty list), which is Transient here, since the same walk
// again reads one tree.
func (f *Forge) WalkTree(ctx context.Context, project, ref string, descend func(dir string) bool) ([]wq.TreeEntry, error) {
	var out []wq.TreeEntry
	for dirs := []string{""}; len(dirs) > 0; dirs = dirs[1:] {
		dir := dirs[0]
		entries, err := f.listDirectory(ctx, project, ref, dir)
		if dir != "" && wq.IsForgeError(err, wq.ForgeNotFound) {
			return nil, &wq.ForgeError{Kind: wq.ForgeTransient, Op: "gitlab: tree " + project + "@" + ref,
				Message: fmt.Sprintf("directory %q went away while the tree was read: %s moved", dir, ref), Err: err}
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Mode == wq.ModeDir && descend(e.Path) {
				dirs = append(dirs, e.Path)
			}
		}
		out = append(out, entries...)
	}
	return out, nil
}

// listDirectory lists the entries of one directory of ref's tree ("" the
// root), paged through to its end within one call's timeout.
func (f *Forge) listDirectory(ctx context.Context, project, ref, dir string) ([]wq.TreeEntry, error) {
	opt := &gl.ListTreeOptions{Ref: &ref, ListOptions: gl.ListOptions{Pagination: "keyset", PerPage: 100}}
	if dir != "" {
		opt.Path = &dir
	}
	return f.listTree(ctx, "tree "+project+"@"+ref+":"+dir, project, opt)
}

// listTree lists the entries opt asks for, 100 a page with keyset
// pagination, to their end within one call's timeout (a retried call
// starts over).
func (f *Forge) listTree(ctx context.Context, what, project string, opt *gl.ListTreeOptions) ([]wq.TreeEntry, error) {
	var out []wq.TreeEntry
	err := f.call(ctx, what, func(o gl.RequestOptionFunc) error {
		out = out[:0]
		opts := []gl.RequestOptionFunc{o}
		for {
			nodes, resp, err := f.client.Repositories.ListTree(project, opt, opts...)
			if err != nil {
				return err
			}
			for _, n := range nodes {
				out = append(out, wq.TreeEntry{Path: n.Path, Mode: wq.NormalMode(n.Mode)})
			}
			if resp == nil || resp.NextLink == "" || len(nodes) == 0 {
				return nil
			}
			opts = []gl.RequestOptionFunc{o, gl.WithKeysetPaginationParameters(resp.NextLink)}
		}
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
			out = append(out, pathChanges(diffs)...)
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
		MergeStatus: mr.DetailedMergeStatus, MergeBase: mr.DiffRefs.BaseSha, MergeCommitSHA: cmp.Or(mr.MergeCommitSHA, mr.SquashCommitSHA)}
	if mr.State == "merged" && out.MergeCommitSHA == "" {
		out.MergeCommitSHA = mr.SHA // a fast-forward: the head is what the target holds
	}
	if mr.HeadPipeline != nil {
		out.HeadPipelineID = mr.HeadPipeline.ID
	}
	switch mr.State {
	case "merged":
		out.State, out.Blocker = wq.MergeRequestMerged, wq.MergeOther
	case "opened":
		out.State, out.Blocker = wq.MergeRequestOpen, Blocker(mr.DetailedMergeStatus)
	case "locked":
		// GitLab locks a merge request while it merges it: open, and
		// merged moments later (or open again if the merge fails).
		out.State, out.Blocker = wq.MergeRequestOpen, wq.MergeMerging
	default: // closed
		out.State, out.Blocker = wq.MergeRequestClosed, wq.MergeOther
	}
	out.Mergeable = out.State == wq.MergeRequestOpen && out.Blocker == wq.MergeClear
	return out
}

// Blocker maps GitLab's detailed_merge_status to what keeps the merge
// request from merging. GitLab reports the first check that fails, in the
// order open, merge time, draft, commits, discussions, CI, locks, conflict,
// rebase (and the Premium checks: approvals, blocking merge requests,
// status checks, Jira, security policies); unknown words are MergeOther.
func Blocker(detailedMergeStatus string) wq.MergeBlocker {
	switch detailedMergeStatus {
	case "mergeable":
		return wq.MergeClear
	case "checking", "unchecked", "preparing", "approvals_syncing":
		// GitLab is still computing: Git is testing the merge, the diff is
		// being made, or approvals are being recounted after a push.
		return wq.MergeChecking
	case "ci_must_pass", "ci_still_running", "status_checks_must_pass", "external_status_checks":
		return wq.MergeCI
	case "need_rebase":
		// Fast-forward and semi-linear projects whenever the target moved.
		return wq.MergeRebase
	case "conflict", "broken_status":
		// broken_status: the source branch cannot be merged as it stands
		// (older GitLab): a rebuild on the target is what helps.
		return wq.MergeConflict
	case "not_approved", "discussions_not_resolved", "draft_status", "requested_changes", "merge_request_blocked",
		"jira_association_missing", "security_policy_violations", "locked_paths", "locked_lfs_files":
		// A person must approve, resolve, mark ready, unblock, link an
		// issue or release a lock.
		return wq.MergePeople
	default:
		// not_open, merge_time (not before merge_after), commits_status
		// (the source branch is missing or holds nothing new), and words a
		// newer GitLab adds.
		return wq.MergeOther
	}
}

// FindMergeRequest returns the newest merge request from source into
// target whose source branch is in the project itself, read whole (the
// list gives a basic entity only). Merge requests from forks are left out.
func (f *Forge) FindMergeRequest(ctx context.Context, project, source, target string) (*wq.MergeRequest, error) {
	var iid int64
	err := f.call(ctx, "find merge request "+project+" "+source+"→"+target, func(o gl.RequestOptionFunc) error {
		list, _, err := f.client.MergeRequests.ListProjectMergeRequests(project, &gl.ListProjectMergeRequestsOptions{
			SourceBranch: &source, TargetBranch: &target, State: gl.Ptr("all"), OrderBy: gl.Ptr("created_at"), Sort: gl.Ptr("desc")}, o)
		for _, mr := range list {
			// A fork's merge request can carry the same branch name: it is
			// never ours, whatever it proposes.
			if mr.SourceProjectID == mr.TargetProjectID {
				iid = mr.IID
				break
			}
		}
		return err
	})
	if err != nil || iid == 0 {
		return nil, err
	}
	return f.GetMergeRequest(ctx, project, iid)
}

// OpenMergeRequestsFrom lists the opened merge requests from branch (GET
// /projects/:id/merge_requests?source_branch=&state=opened, every page),
// forks' left out.
func (f *Forge) OpenMergeRequestsFrom(ctx context.Context, project, branch string) ([]wq.MergeRequest, error) {
	var out []wq.MergeRequest
	opt := &gl.ListProjectMergeRequestsOptions{State: gl.Ptr("opened"), ListOptions: gl.ListOptions{PerPage: 100}}
	if branch != "" {
		opt.SourceBranch = &branch
	}
	for page := int64(1); page > 0; {
		opt.Page = page
		err := f.call(ctx, "list open merge requests of "+project+" from "+branch, func(o gl.RequestOptionFunc) error {
			list, resp, err := f.client.MergeRequests.ListProjectMergeRequests(project, opt, o)
			for _, mr := range list {
				if mr.SourceProjectID == mr.TargetProjectID {
					out = append(out, *toMergeRequest(&gl.MergeRequest{BasicMergeRequest: *mr}))
				}
			}
			page = 0
			if err == nil && resp != nil && resp.NextPage > opt.Page {
				page = resp.NextPage
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CreateMergeRequest opens a merge request; labels are names on GitLab.
// The description is made inert (see Inert): GitLab runs the quick
// actions of a description as the service's account when it saves it.
// The title is sent as it is: GitLab runs quick actions in descriptions
// and comments only.
func (f *Forge) CreateMergeRequest(ctx context.Context, req wq.MergeRequestCreate) (*wq.MergeRequest, error) {
	if err := f.labelsExist(ctx, req.Project, req.Labels, req.ExistingOnly); err != nil {
		return nil, err
	}
	description := Inert(req.Description)
	opt := &gl.CreateMergeRequestOptions{Title: &req.Title, Description: &description, SourceBranch: &req.SourceBranch, TargetBranch: &req.TargetBranch}
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
	mr, err := f.getMergeRequest(ctx, project, number)
	if err != nil {
		return nil, err
	}
	return toMergeRequest(mr), nil
}

// getMergeRequest reads one merge request as GitLab has it (GET
// /projects/:id/merge_requests/:iid).
func (f *Forge) getMergeRequest(ctx context.Context, project string, number int64) (mr *gl.MergeRequest, err error) {
	err = f.call(ctx, fmt.Sprintf("get merge request %s!%d", project, number), func(o gl.RequestOptionFunc) (err error) {
		mr, _, err = f.client.MergeRequests.GetMergeRequest(project, number, nil, o)
		return err
	})
	return mr, err
}

// UpdateMergeRequest edits title and description, or closes or reopens.
// The description is made inert (see Inert) on every edit: GitLab runs
// the quick actions of an edited description as it does a new one's.
func (f *Forge) UpdateMergeRequest(ctx context.Context, project string, number int64, u wq.MergeRequestUpdate) (*wq.MergeRequest, error) {
	opt := &gl.UpdateMergeRequestOptions{Title: u.Title}
	if u.Description != nil {
		opt.Description = gl.Ptr(Inert(*u.Description))
	}
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
	return forge.FileRead(content, err)
}

// CreateNote comments on the merge request, the body made inert (see
// Inert): the service's note renders text a caller wrote (a title), and
// a note runs quick actions as a description does.
func (f *Forge) CreateNote(ctx context.Context, project string, number int64, body string) (int64, error) {
	return f.note(ctx, f.client, project, wq.WorkPR, number, Inert(body), fmt.Sprintf("note on %s!%d", project, number))
}

// note adds a note to an issue (POST /projects/:id/issues/:iid/notes) or a
// merge request (…/merge_requests/:iid/notes) as c's user, body as it is.
func (f *Forge) note(ctx context.Context, c *gl.Client, project, kind string, number int64, body, what string) (int64, error) {
	var n *gl.Note
	err := f.call(ctx, what, func(o gl.RequestOptionFunc) (err error) {
		switch kind {
		case wq.WorkIssue:
			n, _, err = c.Notes.CreateIssueNote(project, number, &gl.CreateIssueNoteOptions{Body: &body}, o)
		case wq.WorkPR:
			n, _, err = c.Notes.CreateMergeRequestNote(project, number, &gl.CreateMergeRequestNoteOptions{Body: &body}, o)
		default:
			err = errUnknownKind
		}
		return err
	})
	if errors.Is(err, errUnknownKind) {
		return 0, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitlab: " + what, Message: "unknown kind of work " + kind}
	}
	if err != nil {
		return 0, err
	}
	return n.ID, nil
}

var errUnknownKind = errors.New("unknown kind of work")

// Inert returns text with no line GitLab would run as a quick action: the
// form in which the adapter sends every text GitLab interprets (merge
// request descriptions on creation and on every edit, issue descriptions,
// notes, review bodies). Titles, commit messages, labels and branch names
// are sent as they are: GitLab runs quick actions in descriptions and
// comments only.
//
// GitLab runs a line of a description or a note that starts with "/" and
// a command's name ("/close", "/merge", "/approve"; any case) as the
// author of the text, and drops it from the text
// (lib/gitlab/quick_actions/extractor.rb). Which lines it reads has
// changed between releases (outside code blocks, then only in Markdown
// paragraphs, outside inline code); a line that does not start with "/"
// is never read in any of them. So every line that starts with "/" gets
// one leading space, inside code blocks too: guessing which lines a given
// release skips would let a command through where the guess is wrong.
// Markdown shows a paragraph's line the same with the space; in a code
// block the line shows one space indented, the only visible change.
// Carriage returns are dropped first, as GitLab drops them before it
// looks ("\r/close" runs) and stores the text without them.
//
// Inert is idempotent (Inert(Inert(x)) == Inert(x)), so a policy may
// record and inspect Inert's form of a text before the adapter sends it:
// the adapter's second pass then changes nothing, and what GitLab stores is
// what was recorded (Forge.InertText).
func Inert(text string) string {
	lines := strings.Split(strings.ReplaceAll(text, "\r", ""), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "/") {
			lines[i] = " " + l
		}
	}
	return strings.Join(lines, "\n")
}

// InertText is Inert: the form in which the adapter sends a text GitLab
// interprets (wq.InertTexter).
func (f *Forge) InertText(text string) string { return Inert(text) }

// SetsFileModes is true: the commits API's execute_filemode sets a
// file's executable bit (wq.FileModeSetter).
func (f *Forge) SetsFileModes() bool { return true }

// UpdateNote edits a note, the body made inert (see Inert): GitLab runs
// the quick actions of an edited note too.
func (f *Forge) UpdateNote(ctx context.Context, project string, number, noteID int64, body string) error {
	body = Inert(body)
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

// CompareTrees lists which of paths differ between the trees of base and
// head with one straight compare (from=base, to=head, straight=true:
// base..head, tree against tree; the default would diff from the merge
// base), whatever the number of paths, and keeps the paths asked about.
// GitLab reports a rename as one renamed_file entry: it is the old path
// removed and the new one added, as in CommitChanges; a mode change is
// modified. When the diff is larger than GitLab's diff limits
// (compare_timeout: the list is cut short) the answer is incomplete and
// the call fails for good.
func (f *Forge) CompareTrees(ctx context.Context, project, base, head string, paths []string) ([]wq.PathChange, error) {
	var out []wq.PathChange
	what := "compare " + project + " " + base + ".." + head
	err := f.call(ctx, what, func(o gl.RequestOptionFunc) error {
		cmp, _, err := f.client.Repositories.Compare(project, &gl.CompareOptions{From: &base, To: &head, Straight: gl.Ptr(true)}, o)
		if err != nil {
			return err
		}
		if cmp.CompareTimeout {
			return errCompareTooLarge
		}
		out = forge.OnPaths(pathChanges(cmp.Diffs), paths)
		for i := range out {
			out[i].Mode = "" // CompareTrees says what differs, not what it became
		}
		return nil
	})
	if errors.Is(err, errCompareTooLarge) {
		return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitlab: " + what, Err: err}
	}
	return out, err
}

var errCompareTooLarge = errors.New("the compare exceeds GitLab's diff limits (compare_timeout): the list of paths is incomplete")

// pathChanges turns GitLab diffs into path changes: a rename is the old
// path removed and the new one added.
func pathChanges(diffs []*gl.Diff) []wq.PathChange {
	var out []wq.PathChange
	for _, d := range diffs {
		switch {
		case d.NewFile:
			out = append(out, wq.PathChange{Path: d.NewPath, Status: wq.PathAdded, Mode: d.BMode})
		case d.DeletedFile:
			out = append(out, wq.PathChange{Path: d.OldPath, Status: wq.PathRemoved})
		case d.RenamedFile:
			out = append(out, wq.PathChange{Path: d.OldPath, Status: wq.PathRemoved},
				wq.PathChange{Path: d.NewPath, Status: wq.PathAdded, Mode: d.BMode})
		default:
			out = append(out, wq.PathChange{Path: d.NewPath, Status: wq.PathModified, Mode: d.BMode})
		}
	}
	return out
}

// WorkPageSize is the page size of the inventory's list calls: GitLab's
// largest.
const WorkPageSize = 100

// ListOpenWork returns every open issue and open merge request of
// project. Its calls: the open issues, page by page (GET
// /projects/:id/issues?state=opened&issue_type=issue&confidential=false,
// 100 a page), the open merge requests likewise (GET
// /projects/:id/merge_requests?state=opened, 100 a page), each list
// followed to its end by X-Next-Page, and one call per open merge request
// for its approvals (GET …/merge_requests/:iid/approvals).
//
// Incidents, test cases and tasks are not issues here (issue_type): the
// inventory holds assignable work only. Confidential issues are left out:
// the hook does not subscribe their events either, and their text is not
// for every agent the project's visibility would show the rest to.
//
// UpdatedAt is to the second, as GitLab's hooks give it (the API gives
// milliseconds): the inventory orders a sync's answer and a hook's by it,
// and an update must not look older in the hook than in the API.
//
// The review verdict: changes requested when detailed_merge_status says
// requested_changes, else approved when someone approved and GitLab counts
// the approvals as enough (approved), else none. GitLab reports requested
// changes in detailed_merge_status only once the checks before it pass
// (draft, discussions, CI, conflicts): the Merge Request Hook's reviewer
// states tell the inventory sooner (see the webhook package).
func (f *Forge) ListOpenWork(ctx context.Context, project string) ([]wq.WorkInfo, error) {
	issues, err := listAll(ctx, f, "list open issues of "+project, func(page gl.ListOptions, o gl.RequestOptionFunc) ([]*gl.Issue, *gl.Response, error) {
		return f.client.Issues.ListProjectIssues(project, &gl.ListProjectIssuesOptions{ListOptions: page, State: gl.Ptr("opened"),
			IssueType: gl.Ptr("issue"), Confidential: gl.Ptr(false), OrderBy: gl.Ptr("created_at"), Sort: gl.Ptr("asc")}, o)
	})
	if err != nil {
		return nil, err
	}
	var out []wq.WorkInfo
	for _, is := range issues {
		if isWork(is) {
			out = append(out, issueWork(is))
		}
	}
	mrs, err := listAll(ctx, f, "list open merge requests of "+project, func(page gl.ListOptions, o gl.RequestOptionFunc) ([]*gl.BasicMergeRequest, *gl.Response, error) {
		return f.client.MergeRequests.ListProjectMergeRequests(project, &gl.ListProjectMergeRequestsOptions{ListOptions: page,
			State: gl.Ptr("opened"), OrderBy: gl.Ptr("created_at"), Sort: gl.Ptr("asc")}, o)
	})
	if err != nil {
		return nil, err
	}
	for _, mr := range mrs {
		w, err := f.mergeRequestWork(ctx, project, mr)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// listAll calls list for every page, WorkPageSize a page, following
// X-Next-Page until there is none; each page has the call timeout.
func listAll[T any](ctx context.Context, f *Forge, what string, list func(page gl.ListOptions, o gl.RequestOptionFunc) ([]T, *gl.Response, error)) ([]T, error) {
	var out []T
	for page := int64(1); page > 0; {
		err := f.call(ctx, what, func(o gl.RequestOptionFunc) error {
			items, resp, err := list(gl.ListOptions{Page: page, PerPage: WorkPageSize}, o)
			out = append(out, items...)
			if resp == nil || resp.NextPage <= page {
				page = 0
			} else {
				page = resp.NextPage
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// isWork reports whether a GitLab issue is assignable work: an issue
// (not an incident, test case or task) that is not confidential.
func isWork(is *gl.Issue) bool {
	return !is.Confidential && (is.IssueType == nil || *is.IssueType == "" || *is.IssueType == "issue")
}

// GetWork reads one issue (GET /projects/:id/issues/:iid) or merge
// request (GET …/merge_requests/:iid, then its approvals) in any state.
// An issue that is not work (an incident, a confidential issue: see
// ListOpenWork) is NotFound.
func (f *Forge) GetWork(ctx context.Context, project, kind string, number int64) (*wq.WorkInfo, error) {
	what := fmt.Sprintf("get %s %s#%d", kind, project, number)
	switch kind {
	case wq.WorkIssue:
		var is *gl.Issue
		err := f.call(ctx, what, func(o gl.RequestOptionFunc) (err error) {
			is, _, err = f.client.Issues.GetIssue(project, number, o)
			return err
		})
		if err != nil {
			return nil, err
		}
		if !isWork(is) {
			return nil, &wq.ForgeError{Kind: wq.ForgeNotFound, Op: "gitlab: " + what, Message: "not assignable work (confidential, or not of type issue)"}
		}
		w := issueWork(is)
		return &w, nil
	case wq.WorkPR:
		mr, err := f.getMergeRequest(ctx, project, number)
		if err != nil {
			return nil, err
		}
		w, err := f.mergeRequestWork(ctx, project, &mr.BasicMergeRequest)
		if err != nil {
			return nil, err
		}
		return &w, nil
	}
	return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitlab: " + what, Message: "unknown kind of work " + kind}
}

// CreateIssue opens an issue (POST /projects/:id/issues) of type issue,
// the only type that is work (see ListOpenWork). Labels are names on
// GitLab, and GitLab makes a label the project lacks itself.
func (f *Forge) CreateIssue(ctx context.Context, req wq.IssueCreate) (*wq.WorkInfo, error) {
	// The body is text only: the incident bridge files what a monitoring
	// provider observed, and a line of it must not run as a quick action.
	if err := f.labelsExist(ctx, req.Project, req.Labels, req.ExistingOnly); err != nil {
		return nil, err
	}
	body := Inert(req.Body)
	opt := &gl.CreateIssueOptions{Title: &req.Title, Description: &body, IssueType: gl.Ptr("issue")}
	if len(req.Labels) > 0 {
		opt.Labels = gl.Ptr(gl.LabelOptions(req.Labels))
	}
	var is *gl.Issue
	err := f.call(ctx, "create issue on "+req.Project, func(o gl.RequestOptionFunc) (err error) {
		is, _, err = f.client.Issues.CreateIssue(req.Project, opt, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	w := issueWork(is)
	return &w, nil
}

// CommentOnWork adds a note to an issue or merge request (note), made
// inert first: a comment does nothing but comment. Issues and merge
// requests have iid sequences of their own, so the kind names the
// resource; an issue that is not work (see ListOpenWork) is not read to
// be told apart.
func (f *Forge) CommentOnWork(ctx context.Context, project, kind string, number int64, body string) (int64, error) {
	what := fmt.Sprintf("comment on %s %s#%d", kind, project, number)
	if err := forge.CheckComment("gitlab: "+what, body); err != nil {
		return 0, err
	}
	return f.note(ctx, f.client, project, kind, number, Inert(body), what)
}

// CloseIssue closes the issue (PUT /projects/:id/issues/:iid, state_event
// close); GitLab answers a closed issue as it is.
func (f *Forge) CloseIssue(ctx context.Context, project string, number int64) error {
	return f.call(ctx, fmt.Sprintf("close issue %s#%d", project, number), func(o gl.RequestOptionFunc) error {
		_, _, err := f.client.Issues.UpdateIssue(project, number, &gl.UpdateIssueOptions{StateEvent: gl.Ptr("close")}, o)
		return err
	})
}

// ReviewPullRequest gives a verdict as the review identity. The merge
// request is read first, for its state, head and author.
//
// The author's own verdict is refused as on Gitea (forge.SelfReview),
// though GitLab lets an author approve unless the project prevents it
// (a Premium setting, then 401): it is no review, and the service opened
// the merge request.
//
// An approval is POST …/merge_requests/:iid/approve with sha, which GitLab
// pins (409 when the head moved); the body follows as a note. GitLab
// answers 401 to an approval its user already gave as to one it may not
// give: when the approvals say this user approved (a retry), the verdict
// stands and the body is noted (again, on a retry).
//
// GitLab's REST API has no call that requests changes: its one way is the
// /request_changes quick action in a note (GitLab 17.x), which it runs
// only for a reviewer of the merge request. So the review identity is
// made a reviewer when it is not (PUT …/merge_requests/:iid reviewer_ids,
// the present ones kept), and the note holds the body and the action.
// GitLab answers the note without saying whether the action ran: the
// reviewers' states are read back (GET …/merge_requests/:iid/reviewers),
// and a state other than requested_changes is a permanent error (a GitLab
// without the action; the body stays as a note). A note cannot be pinned:
// the head is checked before it, and a request for changes on a head that
// moved meanwhile keeps the merge request from merging until it is
// reviewed again, the safe side.
//
// Its calls: the merge request; the approval and, with a body, a note; or
// the note (with the reviewer set first when needed) and the reviewers'
// states; once per Forge the review identity (GET /user).
func (f *Forge) ReviewPullRequest(ctx context.Context, project string, number int64, verdict, body, headSHA string) error {
	what := fmt.Sprintf("review merge request %s!%d", project, number)
	op := "gitlab: " + what
	if err := forge.CheckReview(op, verdict, body, headSHA); err != nil {
		return err
	}
	mr, err := f.getMergeRequest(ctx, project, number)
	if err != nil {
		return err
	}
	if err := forge.CheckReviewable(op, toMergeRequest(mr), headSHA); err != nil {
		return err
	}
	who, err := f.reviewerUser(ctx)
	if err != nil {
		return err
	}
	if mr.Author != nil && mr.Author.ID == who.ID {
		return forge.SelfReview(op, who.Username, f.dedicatedReviewer)
	}
	if verdict == wq.ReviewApproved {
		return f.approve(ctx, project, number, body, headSHA, what)
	}
	return f.requestChanges(ctx, project, mr, who, body, what)
}

// approve approves as the review identity, pinned to headSHA, and notes
// the body (see ReviewPullRequest).
func (f *Forge) approve(ctx context.Context, project string, number int64, body, headSHA, what string) error {
	err := f.call(ctx, what, func(o gl.RequestOptionFunc) error {
		_, _, err := f.reviewing.MergeRequestApprovals.ApproveMergeRequest(project, number, &gl.ApproveMergeRequestOptions{SHA: &headSHA}, o)
		return err
	})
	var fe *wq.ForgeError
	if errors.As(err, &fe) && fe.Status == http.StatusUnauthorized {
		var approvals *gl.MergeRequestApprovals
		read := f.call(ctx, fmt.Sprintf("approvals of %s!%d", project, number), func(o gl.RequestOptionFunc) (err error) {
			approvals, _, err = f.reviewing.MergeRequestApprovals.GetConfiguration(project, number, o)
			return err
		})
		if read == nil && approvals.UserHasApproved {
			err = nil
		}
	}
	if err != nil || strings.TrimSpace(body) == "" {
		return err
	}
	_, err = f.note(ctx, f.reviewing, project, wq.WorkPR, number, Inert(body), what)
	return err
}

// requestChanges requests changes as the review identity who, with body
// (see ReviewPullRequest).
func (f *Forge) requestChanges(ctx context.Context, project string, mr *gl.MergeRequest, who *gl.User, body, what string) error {
	ids := make([]int64, 0, len(mr.Reviewers)+1)
	for _, r := range mr.Reviewers {
		ids = append(ids, r.ID)
	}
	if !slices.Contains(ids, who.ID) {
		ids = append(ids, who.ID)
		err := f.call(ctx, fmt.Sprintf("make %s a reviewer of %s!%d", who.Username, project, mr.IID), func(o gl.RequestOptionFunc) error {
			_, _, err := f.client.MergeRequests.UpdateMergeRequest(project, mr.IID, &gl.UpdateMergeRequestOptions{ReviewerIDs: &ids}, o)
			return err
		})
		if err != nil {
			return err
		}
	}
	if _, err := f.note(ctx, f.reviewing, project, wq.WorkPR, mr.IID, Inert(body)+"\n\n/request_changes", what); err != nil {
		return err
	}
	// Every page of the reviewers: GitLab pages them (20 by default), and
	// the review identity may be past the first.
	var reviewers []*gl.MergeRequestReviewer
	err := f.call(ctx, fmt.Sprintf("reviewers of %s!%d", project, mr.IID), func(o gl.RequestOptionFunc) error {
		reviewers = reviewers[:0]
		for page := int64(1); page > 0; {
			list, resp, err := f.reviewing.MergeRequests.GetMergeRequestReviewers(project, mr.IID, o, gl.WithOffsetPaginationParameters(page))
			if err != nil {
				return err
			}
			reviewers = append(reviewers, list...)
			page = 0
			if resp != nil && resp.NextPage > 0 && len(list) > 0 {
				page = resp.NextPage
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range reviewers {
		if r.User != nil && r.User.ID == who.ID && r.State == "requested_changes" {
			return nil
		}
	}
	return &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitlab: " + what,
		Message: "GitLab did not record the request for changes: its /request_changes quick action (GitLab 17.x) did not run; the body stays as a note"}
}

// reviewerUser is the review identity, read once (GET /user).
func (f *Forge) reviewerUser(ctx context.Context) (*gl.User, error) {
	f.reviewer.Lock()
	defer f.reviewer.Unlock()
	if f.reviewer.user != nil {
		return f.reviewer.user, nil
	}
	err := f.call(ctx, "read the review identity", func(o gl.RequestOptionFunc) error {
		u, _, err := f.reviewing.Users.CurrentUser(o)
		f.reviewer.user = u
		return err
	})
	if err != nil {
		f.reviewer.user = nil
		return nil, err
	}
	return f.reviewer.user, nil
}

func issueWork(is *gl.Issue) wq.WorkInfo {
	w := wq.WorkInfo{Kind: wq.WorkIssue, Number: is.IID, State: wq.MergeRequestOpen, Title: is.Title, Labels: []string(is.Labels),
		URL: is.WebURL}
	if is.State == "closed" {
		w.State = wq.MergeRequestClosed
	}
	if is.Author != nil {
		w.Author = is.Author.Username
	}
	if is.UpdatedAt != nil {
		w.UpdatedAt = is.UpdatedAt.UTC().Truncate(time.Second)
	}
	return w
}

// mergeRequestWork is mr as work, its approvals read with one more call.
func (f *Forge) mergeRequestWork(ctx context.Context, project string, mr *gl.BasicMergeRequest) (wq.WorkInfo, error) {
	m := toMergeRequest(&gl.MergeRequest{BasicMergeRequest: *mr})
	w := wq.WorkInfo{Kind: wq.WorkPR, Number: mr.IID, State: m.State, Title: mr.Title, Labels: []string(mr.Labels), URL: mr.WebURL,
		HeadSHA: mr.SHA, Mergeable: m.Mergeable, LinkedIssues: forge.ClosingIssues(mr.Description)}
	if mr.Author != nil {
		w.Author = mr.Author.Username
	}
	if mr.UpdatedAt != nil {
		w.UpdatedAt = mr.UpdatedAt.UTC().Truncate(time.Second)
	}
	var approvals *gl.MergeRequestApprovals
	err := f.call(ctx, fmt.Sprintf("approvals of %s!%d", project, mr.IID), func(o gl.RequestOptionFunc) (err error) {
		approvals, _, err = f.client.MergeRequestApprovals.GetConfiguration(project, mr.IID, o)
		return err
	})
	if err != nil {
		return wq.WorkInfo{}, err
	}
	switch {
	case mr.DetailedMergeStatus == "requested_changes":
		w.ReviewState = wq.ReviewChangesRequested
	case approvals.Approved && len(approvals.ApprovedBy) > 0:
		w.ReviewState = wq.ReviewApproved
	default:
		w.ReviewState = wq.ReviewNone
	}
	return w, nil
}
