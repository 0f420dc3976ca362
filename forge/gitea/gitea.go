// Package gitea is the Forge for Gitea (API v1), through the official SDK
// (code.gitea.io/sdk/gitea). The SDK's context is client-wide, so every
// call builds its own light client bound to the call's context; the server
// version is given up front so that no call probes /api/v1/version.
package gitea

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/internal/keylock"
)

// ServerVersion is the Gitea version the adapter is written and tested
// against. ForcePush on ChangeFiles needs at least 1.26.
const ServerVersion = "1.26.0"

// Forge talks to one Gitea server.
type Forge struct {
	url     string
	token   string
	http    *http.Client
	timeout time.Duration
	// labelMakers is held per repository while labels are made there
	// (makeLabels).
	labelMakers keylock.Set
	// reviewToken is Options.ReviewToken; reviewer caches the name of
	// the identity that reviews (reviewerName).
	reviewToken string
	reviewer    struct {
		sync.Mutex
		name string
	}
	// repos caches what a repository says of itself that the adapter
	// reads before writes (its merge style, its labels' ids), briefly:
	// a merge request's merge and creation would each read it again.
	repos struct {
		sync.Mutex
		m map[string]repoFacts
	}
	// self caches the name of the token's own user (selfName).
	self struct {
		sync.Mutex
		name string
	}
	// treePage is the page size of a directory's listing (TreePageSize;
	// smaller in tests, so that paging is seen without 1,000 files).
	treePage int
}

var _ wq.Forge = (*Forge)(nil)

// Options configure a Forge.
type Options = forge.Options

// New returns a Forge for the Gitea at baseURL (http(s)://host[:port][/prefix]).
func New(baseURL, token string, opts Options) (*Forge, error) {
	if err := opts.Check("gitea", baseURL, token); err != nil {
		return nil, err
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return &Forge{url: strings.TrimRight(baseURL, "/"), token: token, http: opts.HTTPClient, timeout: opts.Timeout,
		reviewToken: opts.ReviewToken, treePage: TreePageSize}, nil
}

// Kind returns "gitea".
func (f *Forge) Kind() string { return wq.ForgeGitea }

// call runs fn with an SDK client bound to a context with the call
// timeout; what names the call in errors.
func (f *Forge) call(ctx context.Context, what string, fn func(c *sdk.Client) (*sdk.Response, error)) error {
	return f.callAs(ctx, forge.OpAny, what, fn)
}

// callAs is call for an operation the shared classifier treats apart.
func (f *Forge) callAs(ctx context.Context, op forge.Op, what string, fn func(c *sdk.Client) (*sdk.Response, error)) error {
	return f.callWith(ctx, f.token, op, what, fn)
}

// callReviewing is call as the identity that gives review verdicts.
func (f *Forge) callReviewing(ctx context.Context, what string, fn func(c *sdk.Client) (*sdk.Response, error)) error {
	token := f.reviewToken
	if token == "" {
		token = f.token
	}
	return f.callWith(ctx, token, forge.OpAny, what, fn)
}

// callWith is callAs with the token of an identity.
func (f *Forge) callWith(ctx context.Context, token string, op forge.Op, what string, fn func(c *sdk.Client) (*sdk.Response, error)) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	c, err := sdk.NewClient(f.url, sdk.SetToken(token), sdk.SetHTTPClient(f.http),
		sdk.SetGiteaVersion(ServerVersion), sdk.SetContext(ctx))
	if err != nil {
		return &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: " + what, Err: err}
	}
	resp, err := fn(c)
	return classify(op, "gitea: "+what, resp, err)
}

// classify turns an SDK outcome into nil or a *ForgeError with the shared
// classifier. The SDK builds errors from the body's message and leaves the
// status in resp; some of its methods return no error for a 4xx at all, so
// the status decides.
func classify(op forge.Op, what string, resp *sdk.Response, err error) error {
	return classifyWith(op, what, resp, err, "")
}

// classifyWith is classify with the forge's message, when the SDK did not
// keep it.
func classifyWith(op forge.Op, what string, resp *sdk.Response, err error, message string) error {
	a := forge.Answer{Err: err, Message: message}
	if resp != nil && resp.Response != nil {
		a.Status, a.Header = resp.StatusCode, resp.Header
	}
	if a.Status < 400 {
		if err == nil {
			return nil
		}
		a.Status = 0 // a 2xx the SDK could not read is as good as no answer
	}
	return forge.Classify(wq.ForgeGitea, op, what, a)
}

func splitProject(project string) (owner, repo string, err error) {
	owner, repo, ok := strings.Cut(project, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return "", "", &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea", Message: fmt.Sprintf("project %q: want owner/name", project)}
	}
	return owner, repo, nil
}

// CommitFiles writes one commit on top of req.Base to req.Branch with
// ChangeFiles (new_branch + force_push, Gitea ≥ 1.26).
func (f *Forge) CommitFiles(ctx context.Context, req wq.CommitRequest) (wq.Commit, error) {
	owner, repo, err := splitProject(req.Project)
	if err != nil {
		return wq.Commit{}, err
	}
	if err := forge.CheckChanges("gitea: commit "+req.Project, req.Changes); err != nil {
		return wq.Commit{}, err
	}
	opt := sdk.ChangeFilesOptions{Message: req.Message, Branch: req.Base, NewBranch: req.Branch, ForcePush: true}
	if req.Author.Name != "" {
		opt.Author = sdk.Identity{Name: req.Author.Name, Email: req.Author.Email}
	}
	for _, ch := range req.Changes {
		if ch.Action == "chmod" || ch.Executable != nil {
			return wq.Commit{}, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: commit " + req.Project,
				Message: "Gitea's API cannot set a file's executable bit (" + ch.Path + ")"}
		}
		if ch.Action == "update" && ch.FromMode == wq.ModeSymlink {
			// ChangeFiles refuses to write at a link's path ("a symbolic
			// link exists where you're trying to create a subdirectory"),
			// and a delete and a create of one path in one commit are
			// each checked against the base.
			return wq.Commit{}, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: commit " + req.Project,
				Message: "Gitea's API cannot replace the symbolic link " + ch.Path + " with a file in one commit: delete it in one submission and create the file in the next"}
		}
		if want, writes := ch.Mode, giteaWrites(ch); want != "" && want != writes {
			return wq.Commit{}, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: commit " + req.Project,
				Message: fmt.Sprintf("Gitea's API writes only regular files: %s %s would write %s where the change keeps %s",
					ch.Action, ch.Path, wq.ModeName(writes), wq.ModeName(want))}
		}
		op := &sdk.ChangeFileOperation{Path: ch.Path}
		switch ch.Action {
		case "create":
			op.Operation = "create"
		case "update":
			op.Operation = "update"
		case "delete":
			op.Operation = "delete"
		case "move":
			op.Operation, op.FromPath = "rename", ch.PreviousPath
		default:
			return wq.Commit{}, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: commit " + req.Project, Message: "unknown action " + ch.Action}
		}
		if ch.Content != nil {
			op.Content = base64.StdEncoding.EncodeToString(ch.Content)
		}
		opt.Files = append(opt.Files, op)
	}
	var out wq.Commit
	err = f.call(ctx, "commit "+req.Project+"@"+req.Branch, func(c *sdk.Client) (*sdk.Response, error) {
		fr, resp, err := c.ChangeFiles(owner, repo, opt)
		if err == nil && fr != nil && fr.Commit != nil {
			out.SHA = fr.Commit.SHA
			if len(fr.Commit.Parents) > 0 && fr.Commit.Parents[0] != nil {
				out.Parent = fr.Commit.Parents[0].SHA
			}
		}
		return resp, err
	})
	return out, err
}

// giteaWrites is the mode ChangeFiles gives ch's path: a new file is
// 100644, and an update or a rename keeps the executable bit of the path
// it starts from and nothing else (a symbolic link or a submodule becomes
// a regular file holding what it is given).
func giteaWrites(ch wq.FileChange) string {
	if ch.Action != "create" && ch.FromMode == wq.ModeExecutable {
		return wq.ModeExecutable
	}
	return wq.ModeFile
}

// CommitChanges reads the commit's affected files. The SDK's type drops
// each file's status, so this one call is plain net/http; Gitea lists
// renames as removed plus added (it diffs with --no-renames), and leaves
// out a path whose type alone changed (git's status T: a symbolic link or
// a submodule made a file), which the mr type's verification reads back.
// The files carry no mode, so the directories of the commit's tree on the
// way to the added and modified paths are listed for them (WalkTree's
// calls): what it costs grows with the commit, not with the repository.
func (f *Forge) CommitChanges(ctx context.Context, project, sha string) ([]wq.PathChange, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	out, err := f.CommitPaths(ctx, project, sha)
	if err != nil {
		return nil, err
	}
	var written []string
	for _, c := range out {
		if c.Status != wq.PathRemoved {
			written = append(written, c.Path)
		}
	}
	if len(written) == 0 {
		return out, nil
	}
	modes := map[string]string{}
	if err := f.walkDirectories(ctx, owner, repo, sha, forge.OnTheWay(written), func(path string, e treeEntry) {
		modes[path] = wq.NormalMode(e.Mode)
	}); err != nil {
		return nil, err
	}
	for i, c := range out {
		if c.Status != wq.PathRemoved {
			out[i].Mode = modes[c.Path]
		}
	}
	return out, nil
}

// CommitPaths lists what commit sha changed, without modes
// (wq.CommitPathLister): the commit's files, one read, where its modes
// are a listing of every directory on the way to them.
func (f *Forge) CommitPaths(ctx context.Context, project, sha string) ([]wq.PathChange, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	op := "gitea: commit files " + project + "@" + sha
	var body struct {
		Files []struct {
			Filename string `json:"filename"`
			Status   string `json:"status"`
		} `json:"files"`
	}
	u := fmt.Sprintf("%s/api/v1/repos/%s/%s/git/commits/%s?stat=false&verification=false&files=true",
		f.url, url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(sha))
	if err := f.getJSON(ctx, op, u, &body); err != nil {
		return nil, err
	}
	out := make([]wq.PathChange, 0, len(body.Files))
	for _, file := range body.Files {
		status := file.Status
		switch status {
		case wq.PathAdded, wq.PathModified, wq.PathRemoved:
		case "deleted":
			status = wq.PathRemoved
		default:
			status = wq.PathModified // "changed", or a status a newer Gitea adds: the path did change
		}
		out = append(out, wq.PathChange{Path: file.Filename, Status: status})
	}
	return out, nil
}

// getJSON GETs an API URL with the token and decodes the JSON answer,
// classifying failures as the SDK calls are.
func (f *Forge) getJSON(ctx context.Context, op, u string, v any) error {
	return f.getJSONAs(ctx, forge.OpAny, op, u, v)
}

// getJSONAs is getJSON for an operation the shared classifier treats
// apart.
func (f *Forge) getJSONAs(ctx context.Context, kind forge.Op, op, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return &wq.ForgeError{Kind: wq.ForgePermanent, Op: op, Err: err}
	}
	req.Header.Set("Authorization", "token "+f.token)
	req.Header.Set("Accept", "application/json")
	resp, err := f.http.Do(req)
	if err != nil {
		return classify(kind, op, nil, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return classify(kind, op, &sdk.Response{Response: resp}, errors.New(strings.TrimSpace(string(msg))))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(v); err != nil {
		return &wq.ForgeError{Kind: wq.ForgeTransient, Op: op, Status: resp.StatusCode, Err: err}
	}
	return nil
}

// BranchHead returns the SHA at the head of branch.
func (f *Forge) BranchHead(ctx context.Context, project, branch string) (string, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return "", err
	}
	var sha string
	err = f.call(ctx, "branch "+project+"@"+branch, func(c *sdk.Client) (*sdk.Response, error) {
		b, resp, err := c.GetRepoBranch(owner, repo, branch)
		if err == nil && b != nil && b.Commit != nil {
			sha = b.Commit.ID
		}
		return resp, err
	})
	return sha, err
}

// DeleteBranch deletes branch; a missing one is fine.
func (f *Forge) DeleteBranch(ctx context.Context, project, branch string) error {
	owner, repo, err := splitProject(project)
	if err != nil {
		return err
	}
	err = f.call(ctx, "delete branch "+project+"@"+branch, func(c *sdk.Client) (*sdk.Response, error) {
		_, resp, err := c.DeleteRepoBranch(owner, repo, branch)
		return resp, err
	})
	if wq.IsForgeError(err, wq.ForgeNotFound) {
		return nil
	}
	return err
}

func toMergeRequest(pr *sdk.PullRequest) *wq.MergeRequest {
	mr := &wq.MergeRequest{Number: pr.Index, URL: pr.HTMLURL, Title: pr.Title, Description: pr.Body, MergeBase: pr.MergeBase,
		Blocker: wq.MergeOther}
	switch {
	case pr.HasMerged:
		mr.State = wq.MergeRequestMerged
		if pr.MergedCommitID != nil {
			mr.MergeCommitSHA = *pr.MergedCommitID
		}
	case pr.State == sdk.StateClosed:
		mr.State = wq.MergeRequestClosed
	default:
		mr.State, mr.Blocker = wq.MergeRequestOpen, blocker(pr)
	}
	mr.Mergeable = mr.State == wq.MergeRequestOpen && mr.Blocker == wq.MergeClear
	if pr.Head != nil {
		mr.SourceBranch, mr.HeadSHA = pr.Head.Ref, pr.Head.Sha
	}
	if pr.Base != nil {
		mr.TargetBranch = pr.Base.Ref
	}
	for _, l := range pr.Labels {
		mr.Labels = append(mr.Labels, l.Name)
	}
	switch {
	case pr.Mergeable:
		mr.MergeStatus = "mergeable"
	case mr.State == wq.MergeRequestOpen:
		mr.MergeStatus = "not_mergeable" // conflict, or still checking: Gitea does not say which
	}
	return mr
}

// blocker derives what keeps an open pull request from merging, as far as
// Gitea's API tells. Its mergeable is false while Gitea checks the merge
// (after every push to either branch), after a conflict, and after a
// failed check, with nothing to tell them apart (the status is not in the
// API): that is reported as MergeChecking, the blocker that is looked at
// again soon, so a conflict shows as a check that never ends. mergeable
// ignores required status checks and approvals: a protected target can
// still refuse the merge (405, not mergeable now). What Gitea does tell: a
// draft waits for a person, and a repository that merges fast-forward only
// needs the branch rebuilt once the target moved past the merge base
// (Gitea's own mergeable does not look at the merge style).
func blocker(pr *sdk.PullRequest) wq.MergeBlocker {
	switch {
	case pr.Draft:
		return wq.MergePeople
	case !pr.Mergeable:
		return wq.MergeChecking
	case needsRebase(pr):
		return wq.MergeRebase
	}
	return wq.MergeClear
}

// needsRebase reports whether pr can only be merged fast-forward and its
// target moved since the branch was made.
func needsRebase(pr *sdk.PullRequest) bool {
	if pr.Base == nil || pr.Base.Sha == "" || pr.MergeBase == "" {
		return false
	}
	return mergeStyle(pr.Base.Repository) == sdk.MergeStyleFastForwardOnly && pr.Base.Sha != pr.MergeBase
}

// mergeStyle is how the repository merges: its default merge style when
// that is allowed, else the first allowed one. A repository that reports
// no allowed style at all (an older Gitea) merges with a merge commit.
func mergeStyle(repo *sdk.Repository) sdk.MergeStyle {
	if repo == nil {
		return sdk.MergeStyleMerge
	}
	allowed := []struct {
		style sdk.MergeStyle
		on    bool
	}{
		{sdk.MergeStyleMerge, repo.AllowMerge},
		{sdk.MergeStyleRebase, repo.AllowRebase},
		{sdk.MergeStyleRebaseMerge, repo.AllowRebaseMerge},
		{sdk.MergeStyleSquash, repo.AllowSquash},
		{sdk.MergeStyleFastForwardOnly, repo.AllowFastForwardOnlyMerge},
	}
	first := sdk.MergeStyle("")
	for _, a := range allowed {
		if a.on && a.style == repo.DefaultMergeStyle {
			return a.style
		}
		if a.on && first == "" {
			first = a.style
		}
	}
	if first == "" {
		return sdk.MergeStyleMerge
	}
	return first
}

// FindMergeRequest returns the newest PR from source into target, or nil.
func (f *Forge) FindMergeRequest(ctx context.Context, project, source, target string) (*wq.MergeRequest, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	var out *wq.MergeRequest
	err = f.call(ctx, "find pull "+project+" "+source+"→"+target, func(c *sdk.Client) (*sdk.Response, error) {
		// A head without "owner:" names a branch of the repository itself,
		// so a fork's pull request with the same branch name is not found;
		// the repository ids are checked as well.
		pr, resp, err := c.GetPullRequestByBaseHead(owner, repo, target, source)
		if err == nil && pr != nil && (pr.Head == nil || pr.Base == nil || pr.Head.RepoID == pr.Base.RepoID) {
			out = toMergeRequest(pr)
		}
		return resp, err
	})
	if wq.IsForgeError(err, wq.ForgeNotFound) {
		return nil, nil
	}
	return out, err
}

// OpenMergeRequestsFrom lists the open pull requests whose head is branch
// of the repository itself (GET /repos/{o}/{r}/pulls?state=open, every
// page: Gitea cannot filter by head branch alone).
func (f *Forge) OpenMergeRequestsFrom(ctx context.Context, project, branch string) ([]wq.MergeRequest, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	prs, err := listAll(ctx, f, "list open pulls of "+project+" from "+branch, func(c *sdk.Client, page sdk.ListOptions) ([]*sdk.PullRequest, *sdk.Response, error) {
		return c.ListRepoPullRequests(owner, repo, sdk.ListPullRequestsOptions{ListOptions: page, State: sdk.StateOpen})
	})
	if err != nil {
		return nil, err
	}
	var out []wq.MergeRequest
	for _, pr := range prs {
		if pr.Head != nil && (branch == "" || pr.Head.Ref == branch) && (pr.Base == nil || pr.Head.RepoID == pr.Base.RepoID) {
			out = append(out, *toMergeRequest(pr))
		}
	}
	return out, nil
}

// CreateMergeRequest opens a PR, creating its labels on the repository if
// they are missing (Gitea takes label ids).
func (f *Forge) CreateMergeRequest(ctx context.Context, req wq.MergeRequestCreate) (*wq.MergeRequest, error) {
	owner, repo, err := splitProject(req.Project)
	if err != nil {
		return nil, err
	}
	ids, err := f.labelIDs(ctx, owner, repo, req.Labels, req.ExistingOnly)
	if err != nil {
		return nil, err
	}
	var out *wq.MergeRequest
	err = f.call(ctx, "create pull "+req.Project+" "+req.SourceBranch+"→"+req.TargetBranch, func(c *sdk.Client) (*sdk.Response, error) {
		pr, resp, err := c.CreatePullRequest(owner, repo, sdk.CreatePullRequestOption{
			Head: req.SourceBranch, Base: req.TargetBranch, Title: req.Title, Body: req.Description, Labels: ids})
		if err == nil && pr != nil {
			out = toMergeRequest(pr)
		}
		return resp, err
	})
	return out, err
}

// labelColor is the colour of the labels the adapter makes: a neutral
// grey, as it cannot know what a label means to people.
const labelColor = "#cccccc"

// labelIDs resolves label names to the ids of the repository's labels
// (Gitea takes ids where GitLab takes names), making those it lacks but
// for existingOnly's, which it refuses (Permanent). Its calls: the
// repository's labels (GET /repos/{o}/{r}/labels, 50 a page); a name
// missing there costs more (makeLabels).
func (f *Forge) labelIDs(ctx context.Context, owner, repo string, names, existingOnly []string) ([]int64, error) {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	if len(names) == 0 {
		return nil, nil
	}
	if slices.ContainsFunc(names, func(n string) bool { return strings.TrimSpace(n) == "" }) {
		// The SDK would refuse it before sending, without a status: not
		// to be mistaken for a network failure.
		return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: labels of " + owner + "/" + repo, Message: "empty label name"}
	}
	// Labels read moments ago that name every label asked for stand;
	// otherwise they are listed (a label made or deleted since is seen).
	byName := f.repoFacts(owner + "/" + repo).labels
	if slices.ContainsFunc(names, func(n string) bool { return byName[n] == 0 }) {
		var err error
		if byName, err = f.repoLabels(ctx, owner, repo); err != nil {
			return nil, err
		}
		f.keepRepoFacts(owner+"/"+repo, func(r *repoFacts) { r.labels = byName })
	}
	for _, n := range names {
		if byName[n] == 0 && slices.Contains(existingOnly, n) {
			return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: labels of " + owner + "/" + repo,
				Message: fmt.Sprintf("label %q does not exist on the repository, and the project does not let the service make it (create_labels)", n)}
		}
	}
	if slices.ContainsFunc(names, func(n string) bool { return byName[n] == 0 }) {
		var err error
		if byName, err = f.makeLabels(ctx, owner, repo, names); err != nil {
			return nil, err
		}
		f.keepRepoFacts(owner+"/"+repo, func(r *repoFacts) { r.labels = byName })
	}
	ids := make([]int64, len(names))
	for i, n := range names {
		ids[i] = byName[n]
	}
	return ids, nil
}

// repoLabels lists the repository's labels as name → id. Of labels that
// share a name the oldest (lowest id) stands for it, so that every caller
// picks the same one (see makeLabels).
func (f *Forge) repoLabels(ctx context.Context, owner, repo string) (map[string]int64, error) {
	labels, err := listCounted(ctx, f, "list labels of "+owner+"/"+repo, func(c *sdk.Client, page sdk.ListOptions) ([]*sdk.Label, *sdk.Response, error) {
		return c.ListRepoLabels(owner, repo, sdk.ListLabelsOptions{ListOptions: page})
	})
	if err != nil {
		return nil, err
	}
	byName := make(map[string]int64, len(labels))
	for _, l := range labels {
		if id, ok := byName[l.Name]; !ok || l.ID < id {
			byName[l.Name] = l.ID
		}
	}
	return byName, nil
}

// makeLabels makes the labels of names that the repository lacks, and
// returns its labels listed anew.
//
// Gitea keeps label names unique nowhere: a second label of a name is
// made without a word, so two callers that both found a name missing
// would both make it. Callers of one Forge take turns per repository and
// list again once it is their turn. Callers in other processes can still
// race; after making labels the list is read again, the oldest label of a
// name is used, as every caller does, and a label this call made that is
// not the oldest of its name is deleted. Only a caller that listed it
// before the older one was there could be using it, and a database that
// numbers rows in the order it commits them rules that out: Gitea's
// SQLite does, PostgreSQL and MySQL do but for the instant between
// numbering a row and committing it. A failed deletion leaves an unused
// label behind and is not an error.
//
// A 409 or a 422 on making a label (a Gitea that does keep names unique
// refusing a name another caller just made) is resolved by the same
// listing: the refusal stands only if the name is still missing.
func (f *Forge) makeLabels(ctx context.Context, owner, repo string, names []string) (map[string]int64, error) {
	project := owner + "/" + repo
	unlock, err := f.labelMakers.Lock(ctx, project)
	if err != nil {
		return nil, classify(forge.OpAny, "gitea: make labels on "+project, nil, err)
	}
	defer unlock()
	byName, err := f.repoLabels(ctx, owner, repo)
	if err != nil {
		return nil, err
	}
	made, refused := map[string]int64{}, map[string]error{}
	for _, name := range names {
		if byName[name] != 0 {
			continue
		}
		l, err := callGet(ctx, f, "create label "+name+" on "+project, func(c *sdk.Client) (*sdk.Label, *sdk.Response, error) {
			return c.CreateLabel(owner, repo, sdk.CreateLabelOption{Name: name, Color: labelColor, Description: "made by workqueue"})
		})
		var fe *wq.ForgeError
		switch {
		case err == nil:
			made[name] = l.ID
		case errors.As(err, &fe) && (fe.Kind == wq.ForgeConflict || fe.Status == http.StatusUnprocessableEntity):
			refused[name] = err
		default:
			return nil, err
		}
	}
	if len(made)+len(refused) == 0 {
		return byName, nil // another caller of this Forge made them
	}
	if byName, err = f.repoLabels(ctx, owner, repo); err != nil {
		return nil, err
	}
	for name, id := range made {
		switch oldest := byName[name]; {
		case oldest == 0: // a list that shifted while it was read
			byName[name] = id
		case oldest != id:
			_ = f.call(ctx, fmt.Sprintf("delete duplicate label %d on %s", id, project), func(c *sdk.Client) (*sdk.Response, error) {
				return c.DeleteLabel(owner, repo, id)
			})
		}
	}
	for name, err := range refused {
		if byName[name] == 0 {
			return nil, err
		}
	}
	return byName, nil
}

// GetMergeRequest reads one PR.
func (f *Forge) GetMergeRequest(ctx context.Context, project string, number int64) (*wq.MergeRequest, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	pr, err := f.getPull(ctx, owner, repo, number)
	if err != nil {
		return nil, err
	}
	return toMergeRequest(pr), nil
}

// getPull reads one pull request (GET /repos/{o}/{r}/pulls/{index}).
func (f *Forge) getPull(ctx context.Context, owner, repo string, number int64) (*sdk.PullRequest, error) {
	return callGet(ctx, f, fmt.Sprintf("get pull %s/%s!%d", owner, repo, number), func(c *sdk.Client) (*sdk.PullRequest, *sdk.Response, error) {
		return c.GetPullRequest(owner, repo, number)
	})
}

// UpdateMergeRequest edits title, body and state.
func (f *Forge) UpdateMergeRequest(ctx context.Context, project string, number int64, u wq.MergeRequestUpdate) (*wq.MergeRequest, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	opt := sdk.EditPullRequestOption{}
	if u.Title != nil {
		opt.Title = *u.Title
	}
	if u.Description != nil {
		opt.Body = u.Description
	}
	if u.State != nil {
		st := sdk.StateOpen
		if *u.State == wq.MergeRequestClosed {
			st = sdk.StateClosed
		}
		opt.State = &st
	}
	var out *wq.MergeRequest
	err = f.call(ctx, fmt.Sprintf("edit pull %s!%d", project, number), func(c *sdk.Client) (*sdk.Response, error) {
		pr, resp, err := c.EditPullRequest(owner, repo, number, opt)
		if err == nil && pr != nil {
			out = toMergeRequest(pr)
		}
		return resp, err
	})
	return out, err
}

// MergeMergeRequest merges in the repository's own merge style, pinned to
// headSHA (head_commit_id: Gitea answers 409 "head out of date" if it
// moved). The pull request is read first for that style: Gitea refuses a
// style the repository does not allow (405). In a fast-forward-only
// repository whose target moved, Gitea's merge fails with a 500 (its
// diverging fast-forward error has no status of its own), so that case is
// answered here: not mergeable now, the branch needs rebuilding.
func (f *Forge) MergeMergeRequest(ctx context.Context, project string, number int64, headSHA string) error {
	owner, repo, err := splitProject(project)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("merge pull %s!%d", project, number)
	// The pull request is read for the repository's merge style, and in
	// a fast-forward-only repository for whether its target moved; a
	// style read moments ago spares the read in any other repository,
	// where Gitea's own refusal says what a read would.
	style := f.repoFacts(project).style
	if style == "" || style == sdk.MergeStyleFastForwardOnly {
		pr, err := f.getPull(ctx, owner, repo, number)
		if err != nil {
			return err
		}
		if needsRebase(pr) {
			return &wq.ForgeError{Kind: wq.ForgeUnprocessable, Op: "gitea: " + what,
				Message: "the repository merges fast-forward only and its target moved: the branch needs rebuilding on it"}
		}
		style = sdk.MergeStyleMerge
		if pr.Base != nil {
			style = mergeStyle(pr.Base.Repository)
		}
		f.keepRepoFacts(project, func(r *repoFacts) { r.style = style })
	}
	// The SDK reports 405 and 409 as (false, resp, nil) and closes the
	// body unread; the refusal's message ("Please try again later" while
	// Gitea checks mergeability, a conflict, a head out of date) is what
	// tells an operator why, so a transport keeps it.
	keep := &refusalKeeper{next: f.http.Transport}
	hc := *f.http
	hc.Transport = keep
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	c, err := sdk.NewClient(f.url, sdk.SetToken(f.token), sdk.SetHTTPClient(&hc),
		sdk.SetGiteaVersion(ServerVersion), sdk.SetContext(ctx))
	if err != nil {
		return &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: " + what, Err: err}
	}
	_, resp, err := c.MergePullRequest(owner, repo, number, sdk.MergePullRequestOption{Style: style, HeadCommitId: headSHA})
	return classifyWith(forge.OpMerge, "gitea: "+what, resp, err, keep.message)
}

// refusalKeeper is a transport that keeps the message of a refusal (an
// answer of 400 or more) before its body reaches a caller that may drop it.
type refusalKeeper struct {
	next    http.RoundTripper // nil: http.DefaultTransport
	message string
}

// maxRefusalBody bounds how much of a refusal's body is read.
const maxRefusalBody = 16 << 10

func (k *refusalKeeper) RoundTrip(r *http.Request) (*http.Response, error) {
	next := k.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &m) == nil {
		k.message = m.Message
	}
	return resp, nil
}

// ReadFile reads path at ref.
func (f *Forge) ReadFile(ctx context.Context, project, ref, path string) ([]byte, bool, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, false, err
	}
	var content []byte
	err = f.call(ctx, "read "+project+"@"+ref+":"+path, func(c *sdk.Client) (*sdk.Response, error) {
		b, resp, err := c.GetFile(owner, repo, ref, path)
		content = b
		return resp, err
	})
	return forge.FileRead(content, err)
}

// CreateNote comments on the PR.
func (f *Forge) CreateNote(ctx context.Context, project string, number int64, body string) (int64, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return 0, err
	}
	var id int64
	err = f.call(ctx, fmt.Sprintf("comment on %s!%d", project, number), func(c *sdk.Client) (*sdk.Response, error) {
		cm, resp, err := c.CreateIssueComment(owner, repo, number, sdk.CreateIssueCommentOption{Body: body})
		if err == nil && cm != nil {
			id = cm.ID
		}
		return resp, err
	})
	return id, err
}

// UpdateNote edits a comment.
func (f *Forge) UpdateNote(ctx context.Context, project string, number, noteID int64, body string) error {
	owner, repo, err := splitProject(project)
	if err != nil {
		return err
	}
	return f.call(ctx, fmt.Sprintf("edit comment %d on %s!%d", noteID, project, number), func(c *sdk.Client) (*sdk.Response, error) {
		_, resp, err := c.EditIssueComment(owner, repo, noteID, sdk.EditIssueCommentOption{Body: body})
		return resp, err
	})
}

// ListProjects returns the repositories the token's user can reach.
func (f *Forge) ListProjects(ctx context.Context) ([]string, error) {
	var out []string
	err := f.call(ctx, "list repositories", func(c *sdk.Client) (*sdk.Response, error) {
		for page := 1; ; page++ {
			repos, resp, err := c.ListMyRepos(sdk.ListReposOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: 50}})
			if err != nil {
				return resp, err
			}
			for _, r := range repos {
				out = append(out, r.FullName)
			}
			if len(repos) < 50 {
				return resp, nil
			}
		}
	})
	return out, err
}

// HookEvents are the events a Gitea hook must send for the webhook
// package to read: "pull_request" subscribes the whole family, reviews
// included, and "issues" the issue family (opened, closed, edited,
// labelled; comments too, which are acknowledged and ignored).
var HookEvents = []string{"pull_request", "issues", "push", "status", "workflow_run", "workflow_job"}

// CompareTrees reads, in the trees of base and head, the directories on
// the way to paths (git/trees of each, not recursive: WalkTree's calls),
// and compares the paths' blob SHAs and modes: what it costs grows with
// the directories paths are in, twice, never with the repository. Gitea's
// compare endpoint cannot do this in one: with base..head it compares
// from base itself (Gitea 1.26 accepts "..") but answers only the commits
// of the range, each with its files against its own parent, so it misses
// what the target gained and lists paths changed and changed back. A
// rename is the old path removed and the new one added.
func (f *Forge) CompareTrees(ctx context.Context, project, base, head string, paths []string) ([]wq.PathChange, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	before, err := f.entriesOn(ctx, owner, repo, base, paths)
	if err != nil {
		return nil, err
	}
	after, err := f.entriesOn(ctx, owner, repo, head, paths)
	if err != nil {
		return nil, err
	}
	var out []wq.PathChange
	for _, path := range slices.Compact(slices.Sorted(slices.Values(paths))) {
		old, inBase := before[path]
		now, inHead := after[path]
		switch {
		case inHead && !inBase:
			out = append(out, wq.PathChange{Path: path, Status: wq.PathAdded})
		case inBase && !inHead:
			out = append(out, wq.PathChange{Path: path, Status: wq.PathRemoved})
		case inBase && old != now:
			out = append(out, wq.PathChange{Path: path, Status: wq.PathModified})
		}
	}
	return out, nil
}

// entriesOn reads the entries of paths at ref, as "mode sha" by path, from
// the directories on the way to them; a path that is absent, or a
// directory, has none (CompareTrees compares what a directory holds, not
// the directory).
func (f *Forge) entriesOn(ctx context.Context, owner, repo, ref string, paths []string) (map[string]string, error) {
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	entries := map[string]string{}
	err := f.walkDirectories(ctx, owner, repo, ref, forge.OnTheWay(paths), func(path string, e treeEntry) {
		if want[path] && e.Type != "tree" {
			entries[path] = e.Mode + " " + e.SHA
		}
	})
	return entries, err
}

// TreePageSize is how many entries one call lists of a directory: Gitea's
// largest page of a tree (setting API.DEFAULT_GIT_TREES_PER_PAGE, 1000 by
// default), which also caps what per_page may ask.
const TreePageSize = 1000

// WalkTree lists ref's tree a directory at a time (GET
// /repos/{o}/{r}/git/trees/{sha}, not recursive, TreePageSize entries a
// page): one call per directory listed and per further page of one. The
// root is read by ref, every later call by SHA (the commit's for the
// root's further pages, a subtree's for a directory), so that a branch
// moving meanwhile cannot mix two trees.
func (f *Forge) WalkTree(ctx context.Context, project, ref string, descend func(dir string) bool) ([]wq.TreeEntry, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	var out []wq.TreeEntry
	err = f.walkDirectories(ctx, owner, repo, ref, descend, func(path string, e treeEntry) {
		out = append(out, wq.TreeEntry{Path: path, Mode: wq.NormalMode(e.Mode)})
	})
	return out, err
}

// treeEntry is an entry of a git/trees answer: its name within the
// directory listed (its path from the root with recursive=true), mode,
// type (blob, tree, commit) and object SHA.
type treeEntry struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Type string `json:"type"`
	SHA  string `json:"sha"`
}

// walkDirectories calls fn for every entry of ref's root directory and of
// each directory under it that descend accepts, by full path (WalkTree).
// It is plain net/http: the SDK's ListTreeOptions sends its page size as
// limit, which git/trees ignores for per_page.
func (f *Forge) walkDirectories(ctx context.Context, owner, repo, ref string, descend func(string) bool, fn func(path string, e treeEntry)) error {
	type directory struct{ path, at string }
	for dirs := []directory{{"", ref}}; len(dirs) > 0; dirs = dirs[1:] {
		dir := dirs[0]
		for page := 1; ; page++ {
			var tr struct {
				SHA       string      `json:"sha"`
				Entries   []treeEntry `json:"tree"`
				Truncated bool        `json:"truncated"`
			}
			u := fmt.Sprintf("%s/api/v1/repos/%s/%s/git/trees/%s?page=%d&per_page=%d",
				f.url, url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(dir.at), page, f.treePage)
			if err := f.getJSONAs(ctx, forge.OpTree, "gitea: tree "+owner+"/"+repo+"@"+ref+":"+dir.path, u, &tr); err != nil {
				return err
			}
			for _, e := range tr.Entries {
				path := forge.JoinPath(dir.path, e.Path)
				fn(path, e)
				if e.Type == "tree" && descend(path) {
					dirs = append(dirs, directory{path, e.SHA})
				}
			}
			if !tr.Truncated || len(tr.Entries) == 0 {
				break
			}
			dir.at = tr.SHA
		}
	}
	return nil
}

// ReadTree lists ref's tree recursively (git/trees?recursive=true): one
// call per 1000 entries, Gitea's default page of a tree.
func (f *Forge) ReadTree(ctx context.Context, project, ref string) ([]wq.TreeEntry, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	var out []wq.TreeEntry
	err = f.walkTree(ctx, owner, repo, ref, func(e sdk.GitEntry) {
		out = append(out, wq.TreeEntry{Path: e.Path, Mode: wq.NormalMode(e.Mode)})
	})
	return out, err
}

// walkTree calls fn for every entry of ref's tree, recursively. Pages
// after the first name the tree by its SHA, so that a branch moving
// meanwhile cannot mix two trees.
func (f *Forge) walkTree(ctx context.Context, owner, repo, ref string, fn func(sdk.GitEntry)) error {
	at := ref
	for page := 1; ; page++ {
		var tr *sdk.GitTreeResponse
		err := f.callAs(ctx, forge.OpTree, "tree "+owner+"/"+repo+"@"+ref, func(c *sdk.Client) (resp *sdk.Response, err error) {
			tr, resp, err = c.GetTrees(owner, repo, sdk.ListTreeOptions{ListOptions: sdk.ListOptions{Page: page}, Ref: at, Recursive: true})
			return resp, err
		})
		if err != nil {
			return err
		}
		for _, e := range tr.Entries {
			fn(e)
		}
		if !tr.Truncated || len(tr.Entries) == 0 {
			return nil
		}
		at = tr.SHA
	}
}

// WorkPageSize is the page size of the inventory's list calls: Gitea's
// default MAX_RESPONSE_ITEMS. A server configured smaller answers smaller
// pages, which the Link header's next page still follows.
const WorkPageSize = 50

// ListOpenWork returns every open issue and open pull request of project.
// Its calls: the open issues, page by page (GET /repos/{o}/{r}/issues
// ?state=open&type=issues, 50 a page), the open pull requests likewise
// (GET /repos/{o}/{r}/pulls?state=open&sort=oldest, 50 a page), each list
// followed to its end by the Link header's next page, and one call per
// open pull request for its reviews (GET …/pulls/{index}/reviews, 50 a
// page: a second only past 50 reviews). A pull request that closes or
// merges between two pages can shift a later one onto a page already
// read; the inventory re-reads what it misses (GetWork).
func (f *Forge) ListOpenWork(ctx context.Context, project string) ([]wq.WorkInfo, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	issues, err := listAll(ctx, f, "list open issues of "+project, func(c *sdk.Client, page sdk.ListOptions) ([]*sdk.Issue, *sdk.Response, error) {
		return c.ListRepoIssues(owner, repo, sdk.ListIssueOption{ListOptions: page, State: sdk.StateOpen, Type: sdk.IssueTypeIssue})
	})
	if err != nil {
		return nil, err
	}
	var out []wq.WorkInfo
	for _, is := range issues {
		if is.PullRequest == nil {
			out = append(out, issueWork(is))
		}
	}
	prs, err := listAll(ctx, f, "list open pulls of "+project, func(c *sdk.Client, page sdk.ListOptions) ([]*sdk.PullRequest, *sdk.Response, error) {
		return c.ListRepoPullRequests(owner, repo, sdk.ListPullRequestsOptions{ListOptions: page, State: sdk.StateOpen, Sort: "oldest"})
	})
	if err != nil {
		return nil, err
	}
	for _, pr := range prs {
		w, err := f.pullWork(ctx, owner, repo, pr)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// listAll calls list for every page, WorkPageSize a page, following the
// Link header's next page until there is none; each page has the call
// timeout.
func listAll[T any](ctx context.Context, f *Forge, what string, list func(c *sdk.Client, page sdk.ListOptions) ([]T, *sdk.Response, error)) ([]T, error) {
	var out []T
	for page := 1; page > 0; {
		err := f.call(ctx, what, func(c *sdk.Client) (*sdk.Response, error) {
			items, resp, err := list(c, sdk.ListOptions{Page: page, PageSize: WorkPageSize})
			out = append(out, items...)
			if resp == nil || resp.NextPage <= page {
				page = 0
			} else {
				page = resp.NextPage
			}
			return resp, err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GetWork reads one issue (GET /repos/{o}/{r}/issues/{index}) or pull
// request (GET …/pulls/{index}, then its reviews) in any state. NotFound
// also when number is the other kind: Gitea numbers issues and pull
// requests in one sequence.
func (f *Forge) GetWork(ctx context.Context, project, kind string, number int64) (*wq.WorkInfo, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("get %s %s#%d", kind, project, number)
	switch kind {
	case wq.WorkIssue:
		is, err := f.issueOf(ctx, owner, repo, wq.WorkIssue, number, what)
		if err != nil {
			return nil, err
		}
		w := issueWork(is)
		return &w, nil
	case wq.WorkPR:
		pr, err := f.getPull(ctx, owner, repo, number)
		if err != nil {
			return nil, err
		}
		w, err := f.pullWork(ctx, owner, repo, pr)
		if err != nil {
			return nil, err
		}
		return &w, nil
	}
	return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: " + what, Message: "unknown kind of work " + kind}
}

// CreateIssue opens an issue (POST /repos/{o}/{r}/issues) with its labels
// by id (labelIDs: the repository's labels listed first, a name it lacks
// made). It returns the issue as Gitea answered: Gitea drops the labels
// of a token that may not write issues, and those are not reported.
func (f *Forge) CreateIssue(ctx context.Context, req wq.IssueCreate) (*wq.WorkInfo, error) {
	owner, repo, err := splitProject(req.Project)
	if err != nil {
		return nil, err
	}
	what := "create issue on " + req.Project
	if strings.TrimSpace(req.Title) == "" {
		// Refused by the SDK before sending, like an empty label name.
		return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: " + what, Message: "empty title"}
	}
	ids, err := f.labelIDs(ctx, owner, repo, req.Labels, req.ExistingOnly)
	if err != nil {
		return nil, err
	}
	is, err := callGet(ctx, f, what, func(c *sdk.Client) (*sdk.Issue, *sdk.Response, error) {
		return c.CreateIssue(owner, repo, sdk.CreateIssueOption{Title: req.Title, Body: req.Body, Labels: ids})
	})
	if err != nil {
		return nil, err
	}
	w := issueWork(is)
	return &w, nil
}

// issueOf reads issue or pull request number (GET
// /repos/{o}/{r}/issues/{index}, which serves both: Gitea numbers them in
// one sequence) and checks that it is of kind (WorkIssue or WorkPR):
// NotFound if it is the other kind.
func (f *Forge) issueOf(ctx context.Context, owner, repo, kind string, number int64, what string) (*sdk.Issue, error) {
	if kind != wq.WorkIssue && kind != wq.WorkPR {
		return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "gitea: " + what, Message: "unknown kind of work " + kind}
	}
	is, err := callGet(ctx, f, what, func(c *sdk.Client) (*sdk.Issue, *sdk.Response, error) { return c.GetIssue(owner, repo, number) })
	switch {
	case err != nil:
		return nil, err
	case is.PullRequest != nil && kind == wq.WorkIssue:
		return nil, &wq.ForgeError{Kind: wq.ForgeNotFound, Op: "gitea: " + what, Message: "a pull request, not an issue"}
	case is.PullRequest == nil && kind == wq.WorkPR:
		return nil, &wq.ForgeError{Kind: wq.ForgeNotFound, Op: "gitea: " + what, Message: "an issue, not a pull request"}
	}
	return is, nil
}

// CommentOnWork comments on an issue or pull request (POST
// /repos/{o}/{r}/issues/{index}/comments, which serves both) after
// reading it to tell which it is (issueOf): the number of one kind must
// not put the comment on work of the other.
func (f *Forge) CommentOnWork(ctx context.Context, project, kind string, number int64, body string) (int64, error) {
	owner, repo, err := splitProject(project)
	if err != nil {
		return 0, err
	}
	what := fmt.Sprintf("comment on %s %s#%d", kind, project, number)
	if err := forge.CheckComment("gitea: "+what, body); err != nil {
		return 0, err
	}
	if _, err := f.issueOf(ctx, owner, repo, kind, number, what); err != nil {
		return 0, err
	}
	cm, err := callGet(ctx, f, what, func(c *sdk.Client) (*sdk.Comment, *sdk.Response, error) {
		return c.CreateIssueComment(owner, repo, number, sdk.CreateIssueCommentOption{Body: body})
	})
	if err != nil {
		return 0, err
	}
	return cm.ID, nil
}

// CloseIssue reads the issue (issueOf: editing a pull request's number
// would close the pull request) and closes it (PATCH
// /repos/{o}/{r}/issues/{index}, state closed) unless it is closed.
func (f *Forge) CloseIssue(ctx context.Context, project string, number int64) error {
	owner, repo, err := splitProject(project)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("close issue %s#%d", project, number)
	is, err := f.issueOf(ctx, owner, repo, wq.WorkIssue, number, what)
	if err != nil || is.State == sdk.StateClosed {
		return err
	}
	closed := sdk.StateClosed
	return f.call(ctx, what, func(c *sdk.Client) (*sdk.Response, error) {
		_, resp, err := c.EditIssue(owner, repo, number, sdk.EditIssueOption{State: &closed})
		return resp, err
	})
}

// ReviewPullRequest gives a verdict as the review identity (POST
// /repos/{o}/{r}/pulls/{index}/reviews, event APPROVED or
// REQUEST_CHANGES, with body and commit_id).
//
// Gitea 1.26 does not refuse a commit_id that is no longer the head: it
// records the verdict and marks it stale (and answers 500 for a commit it
// does not know). So the pull request is read first, for its state, head
// and author; the verdict is given with commit_id headSHA; and the head is
// read again: if it moved meanwhile, the verdict is withdrawn (a reviewer
// may delete their own review) and the answer is a conflict. Gitea
// refuses an author's verdict on their own pull request (422 "approve
// your own pull is not allowed", "reject your own pull is not allowed"):
// that is answered before sending, naming the configuration that is
// missing (forge.SelfReview). Its calls: the pull request twice, the
// review, and once per Forge the review identity's name (GET /user).
func (f *Forge) ReviewPullRequest(ctx context.Context, project string, number int64, verdict, body, headSHA string) error {
	owner, repo, err := splitProject(project)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("review pull %s!%d", project, number)
	op := "gitea: " + what
	if err := forge.CheckReview(op, verdict, body, headSHA); err != nil {
		return err
	}
	state := sdk.ReviewStateApproved
	if verdict == wq.ReviewChangesRequested {
		state = sdk.ReviewStateRequestChanges
	}
	pr, err := f.getPull(ctx, owner, repo, number)
	if err != nil {
		return err
	}
	if err := forge.CheckReviewable(op, toMergeRequest(pr), headSHA); err != nil {
		return err
	}
	reviewer, err := f.reviewerName(ctx)
	if err != nil {
		return err
	}
	if pr.Poster != nil && strings.EqualFold(pr.Poster.UserName, reviewer) {
		return forge.SelfReview(op, reviewer, f.reviewToken != "")
	}
	var review *sdk.PullReview
	err = f.callReviewing(ctx, what, func(c *sdk.Client) (resp *sdk.Response, err error) {
		review, resp, err = c.CreatePullReview(owner, repo, number, sdk.CreatePullReviewOptions{State: state, Body: body, CommitID: headSHA})
		return resp, err
	})
	if err != nil {
		return err
	}
	after, err := f.getPull(ctx, owner, repo, number)
	if err != nil {
		return err
	}
	head := toMergeRequest(after).HeadSHA
	if head == headSHA {
		return nil
	}
	moved := forge.HeadMoved(op, headSHA, head)
	if err := f.callReviewing(ctx, fmt.Sprintf("withdraw review %d of %s!%d", review.ID, project, number), func(c *sdk.Client) (*sdk.Response, error) {
		return c.DeletePullReview(owner, repo, number, review.ID)
	}); err != nil {
		moved.Message += fmt.Sprintf("; the verdict given meanwhile (review %d) stays, marked stale: %v", review.ID, err)
	}
	return moved
}

// reviewerName is the review identity's username, read once (GET /user).
func (f *Forge) reviewerName(ctx context.Context) (string, error) {
	f.reviewer.Lock()
	defer f.reviewer.Unlock()
	if f.reviewer.name != "" {
		return f.reviewer.name, nil
	}
	err := f.callReviewing(ctx, "read the review identity", func(c *sdk.Client) (*sdk.Response, error) {
		u, resp, err := c.GetMyUserInfo()
		if err == nil {
			f.reviewer.name = u.UserName
		}
		return resp, err
	})
	return f.reviewer.name, err
}

func issueWork(is *sdk.Issue) wq.WorkInfo {
	w := wq.WorkInfo{Kind: wq.WorkIssue, Number: is.Index, State: wq.MergeRequestOpen, Title: is.Title, URL: is.HTMLURL,
		UpdatedAt: is.Updated.UTC()}
	if is.State == sdk.StateClosed {
		w.State = wq.MergeRequestClosed
	}
	if is.Poster != nil {
		w.Author = is.Poster.UserName
	}
	for _, l := range is.Labels {
		w.Labels = append(w.Labels, l.Name)
	}
	return w
}

// pullWork is pr as work, its review verdict read with one more call.
func (f *Forge) pullWork(ctx context.Context, owner, repo string, pr *sdk.PullRequest) (wq.WorkInfo, error) {
	mr := toMergeRequest(pr)
	w := wq.WorkInfo{Kind: wq.WorkPR, Number: pr.Index, State: mr.State, Title: pr.Title, Labels: mr.Labels, URL: mr.URL,
		HeadSHA: mr.HeadSHA, Mergeable: mr.Mergeable, LinkedIssues: forge.ClosingIssues(pr.Body)}
	if pr.Poster != nil {
		w.Author = pr.Poster.UserName
	}
	if pr.Updated != nil {
		w.UpdatedAt = pr.Updated.UTC()
	}
	reviews, err := listCounted(ctx, f, fmt.Sprintf("list reviews of %s/%s!%d", owner, repo, pr.Index),
		func(c *sdk.Client, page sdk.ListOptions) ([]*sdk.PullReview, *sdk.Response, error) {
			return c.ListPullReviews(owner, repo, pr.Index, sdk.ListPullReviewsOptions{ListOptions: page})
		})
	if err != nil {
		return wq.WorkInfo{}, err
	}
	w.ReviewState = ReviewVerdict(reviews, mr.HeadSHA)
	return w, nil
}

// listCounted is listAll for the lists Gitea pages with X-Total-Count
// alone, without a Link header (reviews, labels): pages are read until
// they hold the total, or one comes back empty.
func listCounted[T any](ctx context.Context, f *Forge, what string, list func(c *sdk.Client, page sdk.ListOptions) ([]T, *sdk.Response, error)) ([]T, error) {
	var out []T
	for page := 1; ; page++ {
		var items []T
		var resp *sdk.Response
		err := f.call(ctx, what, func(c *sdk.Client) (_ *sdk.Response, err error) {
			items, resp, err = list(c, sdk.ListOptions{Page: page, PageSize: WorkPageSize})
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		total, _ := strconv.Atoi(resp.Header.Get("X-Total-Count"))
		if len(items) == 0 || len(out) >= total {
			return out, nil
		}
	}
}

// ReviewVerdict is a pull request's review verdict from its reviews: the
// latest verdict of each reviewer counts (an approval or a request for
// changes; a comment leaves the verdict before it standing, a new request
// for review withdraws it), dismissed reviews and pending ones do not.
// Changes requested by anyone win over approvals; an approval by anyone
// else is approved; otherwise none. A verdict counts only for the commit
// it was given on: a review Gitea marks stale, or whose commit_id is not
// head, is left out, so a push leaves the pull request with no verdict
// until it is reviewed again ("" head: not checked, for callers that do
// not know it). Gitea's own required-approvals count (official reviews
// only) stays the forge's business: an approved pull request it would not
// merge is not Mergeable.
func ReviewVerdict(reviews []*sdk.PullReview, head string) string {
	reviews = slices.Clone(reviews)
	slices.SortFunc(reviews, func(a, b *sdk.PullReview) int { return cmp.Compare(a.ID, b.ID) })
	latest := map[int64]sdk.ReviewStateType{}
	for _, r := range reviews {
		if r.Reviewer == nil || r.Dismissed {
			continue
		}
		if r.State != sdk.ReviewStateRequestReview && (r.Stale || head != "" && r.CommitID != head) {
			continue // a verdict on another commit
		}
		switch r.State {
		case sdk.ReviewStateApproved, sdk.ReviewStateRequestChanges, sdk.ReviewStateRequestReview:
			latest[r.Reviewer.ID] = r.State
		}
	}
	verdict := wq.ReviewNone
	for _, s := range latest {
		switch s {
		case sdk.ReviewStateRequestChanges:
			return wq.ReviewChangesRequested
		case sdk.ReviewStateApproved:
			verdict = wq.ReviewApproved
		}
	}
	return verdict
}

// callGet is f.call for a read that returns one value.
func callGet[T any](ctx context.Context, f *Forge, what string, get func(c *sdk.Client) (T, *sdk.Response, error)) (T, error) {
	var v T
	err := f.call(ctx, what, func(c *sdk.Client) (resp *sdk.Response, err error) {
		v, resp, err = get(c)
		return resp, err
	})
	return v, err
}

// repoFactsFor is how long what a repository said of itself is kept.
const repoFactsFor = time.Minute

// repoFacts is what a repository said of itself, and when.
type repoFacts struct {
	style  sdk.MergeStyle
	labels map[string]int64
	at     time.Time
}

// repoFacts returns what project said of itself within repoFactsFor;
// the zero facts otherwise.
func (f *Forge) repoFacts(project string) repoFacts {
	f.repos.Lock()
	defer f.repos.Unlock()
	r, ok := f.repos.m[project]
	if !ok || time.Since(r.at) > repoFactsFor {
		return repoFacts{}
	}
	return r
}

// keepRepoFacts records what project said of itself now.
func (f *Forge) keepRepoFacts(project string, set func(*repoFacts)) {
	f.repos.Lock()
	defer f.repos.Unlock()
	if f.repos.m == nil {
		f.repos.m = map[string]repoFacts{}
	}
	r := f.repos.m[project]
	if time.Since(r.at) > repoFactsFor {
		r = repoFacts{}
	}
	set(&r)
	r.at = time.Now()
	f.repos.m[project] = r
	if len(f.repos.m) > 10000 {
		clear(f.repos.m) // bounded: a service of that many repositories reads them again
	}
}
