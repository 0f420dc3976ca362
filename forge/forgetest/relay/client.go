package relay

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Forge is the relay's client: a minimal one of its own, on net/http and
// encoding/json, of the REST API the relay speaks (GitLab's v4 shapes,
// which the test server forge/gitlab/gitlabtest serves). It links neither
// GitLab's client library nor the GitLab kind: a kind brings its own
// client, and the conformance suite holds it to the same contract.
//
// What it leaves out, being minimal: the optional capabilities (CI jobs,
// the default branch). Texts the server interprets are sent inert
// (InertText), as the contract asks of every kind.
type Forge struct {
	base    string // .../api/v4
	token   string
	review  string // the review identity's token; token when none
	http    *http.Client
	timeout time.Duration
	// dedicatedReviewer says review is a token of its own.
	dedicatedReviewer bool

	mu       sync.Mutex
	reviewer *user // the review identity, read once
}

var _ wq.Forge = (*Forge)(nil)

// PageSize is the page size of the client's list calls.
const PageSize = 100

func open(c forge.Config) (wq.Forge, error) {
	opts := forge.Options{ReviewToken: c.ReviewToken, HTTPClient: c.HTTPClient}
	if err := opts.Check(Kind, c.URL, c.Token); err != nil {
		return nil, err
	}
	f := &Forge{base: strings.TrimRight(c.URL, "/") + "/api/v4", token: c.Token, review: c.Token, http: opts.HTTPClient, timeout: opts.Timeout}
	if f.http == nil {
		f.http = &http.Client{}
	}
	if c.ReviewToken != "" {
		f.review, f.dedicatedReviewer = c.ReviewToken, true
	}
	return f, nil
}

// Kind returns Kind.
func (*Forge) Kind() string { return Kind }

// InertText returns text with no line the server would run as a command
// (one that starts with "/", GitLab's quick actions): each such line is
// indented by one space, carriage returns dropped first. It is idempotent
// (wq.InertTexter), and applied to every description, note, comment,
// issue body and review body the client sends.
func (*Forge) InertText(text string) string {
	var b strings.Builder
	for i, line := range strings.Split(strings.ReplaceAll(text, "\r", ""), "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		if strings.HasPrefix(line, "/") {
			b.WriteByte(' ')
		}
		b.WriteString(line)
	}
	return b.String()
}

// request is one call: its operation for the shared classifier, what it
// is in errors, and the HTTP request.
type request struct {
	op     forge.Op
	what   string
	method string
	path   string // below /api/v4, its parts escaped
	query  url.Values
	body   any // sent as JSON; nil: none
	token  string
}

// do makes the call and decodes a 2xx answer into out (nil: the body is
// dropped); anything else is a *wq.ForgeError by the shared classifier,
// as GitLab's adapter classifies (the relay speaks GitLab's API).
func (f *Forge) do(ctx context.Context, r request, out any) (http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	u := f.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, forge.Classify(wq.ForgeGitLab, r.op, "relay: "+r.what, forge.Answer{Err: err})
	}
	token := r.token
	if token == "" {
		token = f.token
	}
	req.Header.Set("PRIVATE-TOKEN", token)
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, forge.Classify(wq.ForgeGitLab, r.op, "relay: "+r.what, forge.Answer{Err: err})
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, forge.Classify(wq.ForgeGitLab, r.op, "relay: "+r.what, forge.Answer{Err: err})
	}
	if resp.StatusCode/100 != 2 {
		return nil, forge.Classify(wq.ForgeGitLab, r.op, "relay: "+r.what,
			forge.Answer{Status: resp.StatusCode, Header: resp.Header, Message: message(data)})
	}
	if out == nil {
		return resp.Header, nil
	}
	if b, ok := out.(*[]byte); ok {
		*b = data
		return resp.Header, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, forge.Classify(wq.ForgeGitLab, r.op, "relay: "+r.what, forge.Answer{Err: fmt.Errorf("unreadable answer: %w", err)})
	}
	return resp.Header, nil
}

// message is an error answer's message ({"message": …} or {"error": …}),
// or its body cut short.
func message(data []byte) string {
	var m struct {
		Message any    `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(data, &m) == nil {
		if m.Message != nil {
			return fmt.Sprint(m.Message)
		}
		if m.Error != "" {
			return m.Error
		}
	}
	if len(data) > 200 {
		data = data[:200]
	}
	return string(data)
}

// proj is a project's path as the API's :id.
func proj(project string) string { return "/projects/" + url.PathEscape(project) }

// nextPage is the X-Next-Page of an answer, 0 for none.
func nextPage(h http.Header) int {
	n, _ := strconv.Atoi(h.Get("X-Next-Page"))
	return n
}

// pages calls one page after another from 1, PageSize a page, until the
// answer names no next page.
func pages[T any](ctx context.Context, f *Forge, r request) ([]T, error) {
	var out []T
	for page := 1; page > 0; {
		q := url.Values{}
		for k, v := range r.query {
			q[k] = v
		}
		q.Set("page", strconv.Itoa(page))
		q.Set("per_page", strconv.Itoa(PageSize))
		r := r
		r.query = q
		var items []T
		h, err := f.do(ctx, r, &items)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next := nextPage(h); next > page && len(items) > 0 {
			page = next
		} else {
			page = 0
		}
	}
	return out, nil
}

// The API's shapes, as far as the client reads them.
type (
	user struct {
		ID       int64  `json:"id"`
		Username string `json:"username"`
	}
	mergeRequest struct {
		IID                 int64      `json:"iid"`
		WebURL              string     `json:"web_url"`
		SourceBranch        string     `json:"source_branch"`
		TargetBranch        string     `json:"target_branch"`
		SourceProjectID     int64      `json:"source_project_id"`
		TargetProjectID     int64      `json:"target_project_id"`
		SHA                 string     `json:"sha"`
		Title               string     `json:"title"`
		Description         string     `json:"description"`
		Labels              []string   `json:"labels"`
		State               string     `json:"state"`
		DetailedMergeStatus string     `json:"detailed_merge_status"`
		Author              *user      `json:"author"`
		Reviewers           []user     `json:"reviewers"`
		UpdatedAt           *time.Time `json:"updated_at"`
		DiffRefs            struct {
			BaseSHA string `json:"base_sha"`
		} `json:"diff_refs"`
		HeadPipeline *struct {
			ID int64 `json:"id"`
		} `json:"head_pipeline"`
	}
	issue struct {
		IID          int64      `json:"iid"`
		Title        string     `json:"title"`
		Labels       []string   `json:"labels"`
		State        string     `json:"state"`
		WebURL       string     `json:"web_url"`
		Confidential bool       `json:"confidential"`
		IssueType    string     `json:"issue_type"`
		Author       *user      `json:"author"`
		UpdatedAt    *time.Time `json:"updated_at"`
	}
	diff struct {
		OldPath     string `json:"old_path"`
		NewPath     string `json:"new_path"`
		BMode       string `json:"b_mode"`
		NewFile     bool   `json:"new_file"`
		RenamedFile bool   `json:"renamed_file"`
		DeletedFile bool   `json:"deleted_file"`
	}
	hook struct {
		ID                  int64      `json:"id"`
		URL                 string     `json:"url"`
		MergeRequestsEvents bool       `json:"merge_requests_events"`
		IssuesEvents        bool       `json:"issues_events"`
		PushEvents          bool       `json:"push_events"`
		PipelineEvents      bool       `json:"pipeline_events"`
		JobEvents           bool       `json:"job_events"`
		NoteEvents          bool       `json:"note_events"`
		AlertStatus         string     `json:"alert_status"`
		DisabledUntil       *time.Time `json:"disabled_until"`
	}
	approvals struct {
		Approved        bool   `json:"approved"`
		ApprovedBy      []any  `json:"approved_by"`
		UserHasApproved bool   `json:"user_has_approved"`
		State           string `json:"state"`
	}
)

// CommitFiles writes one commit on top of req.Base to req.Branch (the
// commits API with start_branch and force); a missing base is read first,
// so that it is NotFound.
func (f *Forge) CommitFiles(ctx context.Context, req wq.CommitRequest) (wq.Commit, error) {
	if err := forge.CheckChanges("relay: commit "+req.Project, req.Changes); err != nil {
		return wq.Commit{}, err
	}
	if _, err := f.BranchHead(ctx, req.Project, req.Base); err != nil {
		return wq.Commit{}, err
	}
	body := map[string]any{"branch": req.Branch, "start_branch": req.Base, "commit_message": req.Message, "force": true}
	if req.Author.Name != "" {
		body["author_name"], body["author_email"] = req.Author.Name, req.Author.Email
	}
	var actions []map[string]any
	for _, ch := range req.Changes {
		actions = append(actions, actionsOf(ch)...)
	}
	body["actions"] = actions
	var c struct {
		ID      string   `json:"id"`
		Parents []string `json:"parent_ids"`
	}
	_, err := f.do(ctx, request{what: "commit " + req.Project + "@" + req.Branch, method: "POST",
		path: proj(req.Project) + "/repository/commits", body: body}, &c)
	out := wq.Commit{SHA: c.ID}
	if len(c.Parents) > 0 {
		out.Parent = c.Parents[0]
	}
	return out, err
}

// actionsOf are the commits API's actions for one change. A mode rides on
// create and chmod only, so an update or a move that sets one is followed
// by a chmod; an update that makes a link or a submodule a regular file
// is a delete and a create, the API's update keeping the entry's mode.
func actionsOf(ch wq.FileChange) []map[string]any {
	regular := func(m string) bool { return m == wq.ModeFile || m == wq.ModeExecutable }
	if ch.Action == "update" && ch.FromMode != "" && !regular(ch.FromMode) && regular(ch.Mode) {
		create := ch
		create.Action, create.FromMode = "create", ""
		if ch.Mode == wq.ModeExecutable {
			create.Executable = new(true)
		}
		return append([]map[string]any{{"action": "delete", "file_path": ch.Path}}, actionsOf(create)...)
	}
	a := map[string]any{"action": ch.Action, "file_path": ch.Path}
	if ch.PreviousPath != "" {
		a["previous_path"] = ch.PreviousPath
	}
	if ch.Content != nil {
		a["content"], a["encoding"] = base64.StdEncoding.EncodeToString(ch.Content), "base64"
	}
	if ch.Executable == nil {
		return []map[string]any{a}
	}
	if ch.Action != "update" && ch.Action != "move" {
		a["execute_filemode"] = *ch.Executable
		return []map[string]any{a}
	}
	return []map[string]any{a, {"action": "chmod", "file_path": ch.Path, "execute_filemode": *ch.Executable}}
}

// ReadTree lists ref's tree recursively, with keyset pages followed by
// their Link header.
func (f *Forge) ReadTree(ctx context.Context, project, ref string) ([]wq.TreeEntry, error) {
	return f.tree(ctx, project, ref, url.Values{"recursive": {"true"}})
}

// WalkTree lists ref's tree a directory at a time: each directory a
// listing of its own (path=DIR, not recursive), its keyset pages followed
// as ReadTree's. A directory gone between two listings (ref moved) is
// Transient.
func (f *Forge) WalkTree(ctx context.Context, project, ref string, descend func(dir string) bool) ([]wq.TreeEntry, error) {
	var out []wq.TreeEntry
	for dirs := []string{""}; len(dirs) > 0; dirs = dirs[1:] {
		q := url.Values{}
		if dirs[0] != "" {
			q.Set("path", dirs[0])
		}
		entries, err := f.tree(ctx, project, ref, q)
		if dirs[0] != "" && wq.IsForgeError(err, wq.ForgeNotFound) {
			return nil, &wq.ForgeError{Kind: wq.ForgeTransient, Op: "relay: tree " + project + "@" + ref,
				Message: "directory " + dirs[0] + " went away while the tree was read", Err: err}
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

// tree reads one listing of ref's tree (query adds path or recursive),
// every keyset page of it.
func (f *Forge) tree(ctx context.Context, project, ref string, query url.Values) ([]wq.TreeEntry, error) {
	var out []wq.TreeEntry
	q := url.Values{"ref": {ref}, "pagination": {"keyset"}, "per_page": {strconv.Itoa(PageSize)}}
	for k, v := range query {
		q[k] = v
	}
	r := request{what: "tree " + project + "@" + ref, method: "GET", path: proj(project) + "/repository/tree", query: q}
	for {
		var nodes []struct {
			Path string `json:"path"`
			Mode string `json:"mode"`
		}
		h, err := f.do(ctx, r, &nodes)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			out = append(out, wq.TreeEntry{Path: n.Path, Mode: wq.NormalMode(n.Mode)})
		}
		next := nextLink(h.Get("Link"))
		if next == "" || len(nodes) == 0 {
			return out, nil
		}
		u, err := url.Parse(next)
		if err != nil {
			return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "relay: " + r.what, Message: "unreadable next page link"}
		}
		r.query = u.Query()
	}
}

var linkNext = regexp.MustCompile(`<([^>]+)>;\s*rel="next"`)

// nextLink is the rel="next" URL of a Link header, "" for none.
func nextLink(link string) string {
	if m := linkNext.FindStringSubmatch(link); m != nil {
		return m[1]
	}
	return ""
}

// CommitChanges reads the commit's diff against its first parent, every
// page; a rename is the old path removed and the new one added.
func (f *Forge) CommitChanges(ctx context.Context, project, sha string) ([]wq.PathChange, error) {
	diffs, err := pages[diff](ctx, f, request{what: "commit diff " + project + "@" + sha, method: "GET",
		path: proj(project) + "/repository/commits/" + url.PathEscape(sha) + "/diff"})
	return pathChanges(diffs), err
}

// pathChanges are diffs as path changes.
func pathChanges(diffs []diff) []wq.PathChange {
	var out []wq.PathChange
	for _, d := range diffs {
		switch {
		case d.NewFile:
			out = append(out, wq.PathChange{Path: d.NewPath, Status: wq.PathAdded, Mode: d.BMode})
		case d.DeletedFile:
			out = append(out, wq.PathChange{Path: d.OldPath, Status: wq.PathRemoved})
		case d.RenamedFile:
			out = append(out, wq.PathChange{Path: d.OldPath, Status: wq.PathRemoved}, wq.PathChange{Path: d.NewPath, Status: wq.PathAdded, Mode: d.BMode})
		default:
			out = append(out, wq.PathChange{Path: d.NewPath, Status: wq.PathModified, Mode: d.BMode})
		}
	}
	return out
}

// BranchHead returns the SHA at the head of branch.
func (f *Forge) BranchHead(ctx context.Context, project, branch string) (string, error) {
	var b struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	_, err := f.do(ctx, request{what: "branch " + project + "@" + branch, method: "GET",
		path: proj(project) + "/repository/branches/" + url.PathEscape(branch)}, &b)
	return b.Commit.ID, err
}

// DeleteBranch deletes branch; a missing one is fine.
func (f *Forge) DeleteBranch(ctx context.Context, project, branch string) error {
	_, err := f.do(ctx, request{what: "delete branch " + project + "@" + branch, method: "DELETE",
		path: proj(project) + "/repository/branches/" + url.PathEscape(branch)}, nil)
	if wq.IsForgeError(err, wq.ForgeNotFound) {
		return nil
	}
	return err
}

// blockers are what keeps a merge request from merging, by its
// detailed_merge_status; a word not here is MergeOther.
var blockers = map[string]wq.MergeBlocker{
	"mergeable": wq.MergeClear,
	"checking":  wq.MergeChecking, "unchecked": wq.MergeChecking, "preparing": wq.MergeChecking, "approvals_syncing": wq.MergeChecking,
	"ci_must_pass": wq.MergeCI, "ci_still_running": wq.MergeCI, "status_checks_must_pass": wq.MergeCI, "external_status_checks": wq.MergeCI,
	"need_rebase": wq.MergeRebase,
	"conflict":    wq.MergeConflict, "broken_status": wq.MergeConflict,
	"not_approved": wq.MergePeople, "discussions_not_resolved": wq.MergePeople, "draft_status": wq.MergePeople,
	"requested_changes": wq.MergePeople, "merge_request_blocked": wq.MergePeople,
}

func (m *mergeRequest) merge() *wq.MergeRequest {
	out := &wq.MergeRequest{Number: m.IID, URL: m.WebURL, SourceBranch: m.SourceBranch, TargetBranch: m.TargetBranch,
		HeadSHA: m.SHA, Title: m.Title, Description: m.Description, Labels: m.Labels, MergeStatus: m.DetailedMergeStatus,
		MergeBase: m.DiffRefs.BaseSHA}
	if m.HeadPipeline != nil {
		out.HeadPipelineID = m.HeadPipeline.ID
	}
	switch m.State {
	case "merged":
		out.State, out.Blocker = wq.MergeRequestMerged, wq.MergeOther
	case "opened":
		b, ok := blockers[m.DetailedMergeStatus]
		if !ok {
			b = wq.MergeOther
		}
		out.State, out.Blocker = wq.MergeRequestOpen, b
	case "locked":
		out.State, out.Blocker = wq.MergeRequestOpen, wq.MergeMerging
	default:
		out.State, out.Blocker = wq.MergeRequestClosed, wq.MergeOther
	}
	out.Mergeable = out.State == wq.MergeRequestOpen && out.Blocker == wq.MergeClear
	return out
}

// FindMergeRequest returns the newest merge request from source into
// target within the project (a fork's is never ours), read whole.
func (f *Forge) FindMergeRequest(ctx context.Context, project, source, target string) (*wq.MergeRequest, error) {
	var list []mergeRequest
	_, err := f.do(ctx, request{what: "find merge request " + project + " " + source + "→" + target, method: "GET",
		path: proj(project) + "/merge_requests", query: url.Values{"source_branch": {source}, "target_branch": {target},
			"state": {"all"}, "order_by": {"created_at"}, "sort": {"desc"}}}, &list)
	if err != nil {
		return nil, err
	}
	for _, m := range list {
		if m.SourceProjectID == m.TargetProjectID {
			return f.GetMergeRequest(ctx, project, m.IID)
		}
	}
	return nil, nil
}

// OpenMergeRequestsFrom lists the open merge requests from branch (every
// branch for ""), forks' left out.
func (f *Forge) OpenMergeRequestsFrom(ctx context.Context, project, branch string) ([]wq.MergeRequest, error) {
	q := url.Values{"state": {"opened"}}
	if branch != "" {
		q.Set("source_branch", branch)
	}
	list, err := pages[mergeRequest](ctx, f, request{what: "list open merge requests of " + project, method: "GET",
		path: proj(project) + "/merge_requests", query: q})
	if err != nil {
		return nil, err
	}
	var out []wq.MergeRequest
	for _, m := range list {
		if m.SourceProjectID == m.TargetProjectID {
			out = append(out, *m.merge())
		}
	}
	return out, nil
}

// CreateMergeRequest opens a merge request.
func (f *Forge) CreateMergeRequest(ctx context.Context, req wq.MergeRequestCreate) (*wq.MergeRequest, error) {
	if err := f.labelsExist(ctx, req.Project, req.Labels, req.ExistingOnly); err != nil {
		return nil, err
	}
	body := map[string]any{"title": req.Title, "description": f.InertText(req.Description), "source_branch": req.SourceBranch, "target_branch": req.TargetBranch}
	if len(req.Labels) > 0 {
		body["labels"] = strings.Join(req.Labels, ",")
	}
	var m mergeRequest
	if _, err := f.do(ctx, request{what: "create merge request " + req.Project + " " + req.SourceBranch + "→" + req.TargetBranch,
		method: "POST", path: proj(req.Project) + "/merge_requests", body: body}, &m); err != nil {
		return nil, err
	}
	return m.merge(), nil
}

// labelsExist refuses a label of existingOnly the project lacks: the API
// makes a label it is given, and the outbound policy lets the service
// make only its own.
func (f *Forge) labelsExist(ctx context.Context, project string, labels, existingOnly []string) error {
	for _, name := range labels {
		if !slices.Contains(existingOnly, name) {
			continue
		}
		_, err := f.do(ctx, request{what: "label " + name + " of " + project, method: "GET",
			path: proj(project) + "/labels/" + url.PathEscape(name)}, nil)
		if wq.IsForgeError(err, wq.ForgeNotFound) {
			return &wq.ForgeError{Kind: wq.ForgePermanent, Op: "relay: labels of " + project,
				Message: fmt.Sprintf("label %q does not exist on the project, and the project does not let the service make it (create_labels)", name)}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// GetMergeRequest reads one merge request.
func (f *Forge) GetMergeRequest(ctx context.Context, project string, number int64) (*wq.MergeRequest, error) {
	m, err := f.mergeRequest(ctx, project, number)
	if err != nil {
		return nil, err
	}
	return m.merge(), nil
}

func (f *Forge) mergeRequest(ctx context.Context, project string, number int64) (*mergeRequest, error) {
	var m mergeRequest
	_, err := f.do(ctx, request{what: fmt.Sprintf("get merge request %s!%d", project, number), method: "GET",
		path: fmt.Sprintf("%s/merge_requests/%d", proj(project), number)}, &m)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// UpdateMergeRequest edits title and description, or closes or reopens.
func (f *Forge) UpdateMergeRequest(ctx context.Context, project string, number int64, u wq.MergeRequestUpdate) (*wq.MergeRequest, error) {
	body := map[string]any{}
	if u.Title != nil {
		body["title"] = *u.Title
	}
	if u.Description != nil {
		body["description"] = f.InertText(*u.Description)
	}
	if u.State != nil {
		body["state_event"] = "reopen"
		if *u.State == wq.MergeRequestClosed {
			body["state_event"] = "close"
		}
	}
	var m mergeRequest
	if _, err := f.do(ctx, request{what: fmt.Sprintf("update merge request %s!%d", project, number), method: "PUT",
		path: fmt.Sprintf("%s/merge_requests/%d", proj(project), number), body: body}, &m); err != nil {
		return nil, err
	}
	return m.merge(), nil
}

// MergeMergeRequest merges pinned to headSHA.
func (f *Forge) MergeMergeRequest(ctx context.Context, project string, number int64, headSHA string) error {
	_, err := f.do(ctx, request{op: forge.OpMerge, what: fmt.Sprintf("merge %s!%d", project, number), method: "PUT",
		path: fmt.Sprintf("%s/merge_requests/%d/merge", proj(project), number), body: map[string]any{"sha": headSHA}}, nil)
	return err
}

// ReadFile reads path at ref.
func (f *Forge) ReadFile(ctx context.Context, project, ref, path string) ([]byte, bool, error) {
	var content []byte
	_, err := f.do(ctx, request{what: "read " + project + "@" + ref + ":" + path, method: "GET",
		path: proj(project) + "/repository/files/" + url.PathEscape(path) + "/raw", query: url.Values{"ref": {ref}}}, &content)
	return forge.FileRead(content, err)
}

// CreateNote comments on the merge request.
func (f *Forge) CreateNote(ctx context.Context, project string, number int64, body string) (int64, error) {
	return f.note(ctx, f.token, project, wq.WorkPR, number, f.InertText(body), fmt.Sprintf("note on %s!%d", project, number))
}

// note adds a note to an issue or a merge request as token's user.
func (f *Forge) note(ctx context.Context, token, project, kind string, number int64, body, what string) (int64, error) {
	resource := map[string]string{wq.WorkIssue: "issues", wq.WorkPR: "merge_requests"}[kind]
	if resource == "" {
		return 0, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "relay: " + what, Message: "unknown kind of work " + kind}
	}
	var n struct {
		ID int64 `json:"id"`
	}
	_, err := f.do(ctx, request{what: what, method: "POST", path: fmt.Sprintf("%s/%s/%d/notes", proj(project), resource, number),
		body: map[string]any{"body": body}, token: token}, &n)
	return n.ID, err
}

// UpdateNote edits a note on a merge request.
func (f *Forge) UpdateNote(ctx context.Context, project string, number, noteID int64, body string) error {
	_, err := f.do(ctx, request{what: fmt.Sprintf("edit note %d on %s!%d", noteID, project, number), method: "PUT",
		path: fmt.Sprintf("%s/merge_requests/%d/notes/%d", proj(project), number, noteID), body: map[string]any{"body": f.InertText(body)}}, nil)
	return err
}

// ListProjects returns the projects the token's user is a member of.
func (f *Forge) ListProjects(ctx context.Context) ([]string, error) {
	ps, err := pages[struct {
		Path string `json:"path_with_namespace"`
	}](ctx, f, request{what: "list projects", method: "GET", path: "/projects", query: url.Values{"membership": {"true"}}})
	var out []string
	for _, p := range ps {
		out = append(out, p.Path)
	}
	return out, err
}

// hookEvents are the events the relay's hook sends.
var hookEvents = map[string]any{"merge_requests_events": true, "issues_events": true, "push_events": true,
	"pipeline_events": true, "job_events": true, "note_events": false}

// EnsureWebhook makes the project's hook to url send the events above
// with secret as its token; a hook the server disabled after failing
// deliveries is replaced.
func (f *Forge) EnsureWebhook(ctx context.Context, project, hookURL, secret string) (wq.WebhookOutcome, error) {
	hooks, err := pages[hook](ctx, f, request{what: "list hooks of " + project, method: "GET", path: proj(project) + "/hooks"})
	if err != nil {
		return "", err
	}
	i := slices.IndexFunc(hooks, func(h hook) bool { return h.URL == hookURL })
	add := func() error {
		body := map[string]any{"url": hookURL, "token": secret}
		for k, v := range hookEvents {
			body[k] = v
		}
		_, err := f.do(ctx, request{what: "create hook on " + project, method: "POST", path: proj(project) + "/hooks", body: body}, nil)
		return err
	}
	if i < 0 {
		return wq.WebhookCreated, add()
	}
	h := hooks[i]
	if (h.AlertStatus != "" && h.AlertStatus != "executable") || (h.DisabledUntil != nil && h.DisabledUntil.After(time.Now())) {
		_, err := f.do(ctx, request{what: fmt.Sprintf("delete disabled hook %d on %s", h.ID, project), method: "DELETE",
			path: fmt.Sprintf("%s/hooks/%d", proj(project), h.ID)}, nil)
		if err != nil && !wq.IsForgeError(err, wq.ForgeNotFound) {
			return "", err
		}
		return wq.WebhookUpdated, add()
	}
	if h.MergeRequestsEvents && h.IssuesEvents && h.PushEvents && h.PipelineEvents && h.JobEvents && !h.NoteEvents {
		return wq.WebhookFound, nil
	}
	body := map[string]any{"url": hookURL, "token": secret}
	for k, v := range hookEvents {
		body[k] = v
	}
	_, err = f.do(ctx, request{what: "update hook on " + project, method: "PUT", path: fmt.Sprintf("%s/hooks/%d", proj(project), h.ID), body: body}, nil)
	return wq.WebhookUpdated, err
}

// CompareTrees lists which of paths differ between the trees of base and
// head, in one straight compare.
func (f *Forge) CompareTrees(ctx context.Context, project, base, head string, paths []string) ([]wq.PathChange, error) {
	what := "compare " + project + " " + base + ".." + head
	var cmp struct {
		Diffs          []diff `json:"diffs"`
		CompareTimeout bool   `json:"compare_timeout"`
	}
	if _, err := f.do(ctx, request{what: what, method: "GET", path: proj(project) + "/repository/compare",
		query: url.Values{"from": {base}, "to": {head}, "straight": {"true"}}}, &cmp); err != nil {
		return nil, err
	}
	if cmp.CompareTimeout {
		return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "relay: " + what, Message: "the compare exceeds the server's diff limits"}
	}
	out := forge.OnPaths(pathChanges(cmp.Diffs), paths)
	for i := range out {
		out[i].Mode = "" // what differs, not what it became
	}
	return out, nil
}

// ListOpenWork returns every open issue (of type issue, not confidential)
// and open merge request of project, and each merge request's approvals.
func (f *Forge) ListOpenWork(ctx context.Context, project string) ([]wq.WorkInfo, error) {
	issues, err := pages[issue](ctx, f, request{what: "list open issues of " + project, method: "GET", path: proj(project) + "/issues",
		query: url.Values{"state": {"opened"}, "issue_type": {"issue"}, "confidential": {"false"}, "order_by": {"created_at"}, "sort": {"asc"}}})
	if err != nil {
		return nil, err
	}
	var out []wq.WorkInfo
	for _, is := range issues {
		if is.work() {
			out = append(out, is.info())
		}
	}
	mrs, err := pages[mergeRequest](ctx, f, request{what: "list open merge requests of " + project, method: "GET",
		path: proj(project) + "/merge_requests", query: url.Values{"state": {"opened"}, "order_by": {"created_at"}, "sort": {"asc"}}})
	if err != nil {
		return nil, err
	}
	for _, m := range mrs {
		w, err := f.mergeRequestWork(ctx, project, &m)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

func (is issue) work() bool {
	return !is.Confidential && (is.IssueType == "" || is.IssueType == "issue")
}

func (is issue) info() wq.WorkInfo {
	w := wq.WorkInfo{Kind: wq.WorkIssue, Number: is.IID, State: wq.MergeRequestOpen, Title: is.Title, Labels: is.Labels, URL: is.WebURL}
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

// mergeRequestWork is m as work, its approvals read with one more call.
func (f *Forge) mergeRequestWork(ctx context.Context, project string, m *mergeRequest) (wq.WorkInfo, error) {
	mr := m.merge()
	w := wq.WorkInfo{Kind: wq.WorkPR, Number: m.IID, State: mr.State, Title: m.Title, Labels: m.Labels, URL: m.WebURL,
		HeadSHA: m.SHA, Mergeable: mr.Mergeable, LinkedIssues: forge.ClosingIssues(m.Description)}
	if m.Author != nil {
		w.Author = m.Author.Username
	}
	if m.UpdatedAt != nil {
		w.UpdatedAt = m.UpdatedAt.UTC().Truncate(time.Second)
	}
	var a approvals
	if _, err := f.do(ctx, request{what: fmt.Sprintf("approvals of %s!%d", project, m.IID), method: "GET",
		path: fmt.Sprintf("%s/merge_requests/%d/approvals", proj(project), m.IID)}, &a); err != nil {
		return wq.WorkInfo{}, err
	}
	switch {
	case m.DetailedMergeStatus == "requested_changes":
		w.ReviewState = wq.ReviewChangesRequested
	case a.Approved && len(a.ApprovedBy) > 0:
		w.ReviewState = wq.ReviewApproved
	default:
		w.ReviewState = wq.ReviewNone
	}
	return w, nil
}

// GetWork reads one issue or merge request in any state; an issue that is
// not work is NotFound.
func (f *Forge) GetWork(ctx context.Context, project, kind string, number int64) (*wq.WorkInfo, error) {
	what := fmt.Sprintf("get %s %s#%d", kind, project, number)
	switch kind {
	case wq.WorkIssue:
		var is issue
		if _, err := f.do(ctx, request{what: what, method: "GET", path: fmt.Sprintf("%s/issues/%d", proj(project), number)}, &is); err != nil {
			return nil, err
		}
		if !is.work() {
			return nil, &wq.ForgeError{Kind: wq.ForgeNotFound, Op: "relay: " + what, Message: "not assignable work"}
		}
		w := is.info()
		return &w, nil
	case wq.WorkPR:
		m, err := f.mergeRequest(ctx, project, number)
		if err != nil {
			return nil, err
		}
		w, err := f.mergeRequestWork(ctx, project, m)
		if err != nil {
			return nil, err
		}
		return &w, nil
	}
	return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "relay: " + what, Message: "unknown kind of work " + kind}
}

// CreateIssue opens an issue of type issue.
func (f *Forge) CreateIssue(ctx context.Context, req wq.IssueCreate) (*wq.WorkInfo, error) {
	if err := f.labelsExist(ctx, req.Project, req.Labels, req.ExistingOnly); err != nil {
		return nil, err
	}
	body := map[string]any{"title": req.Title, "description": f.InertText(req.Body), "issue_type": "issue"}
	if len(req.Labels) > 0 {
		body["labels"] = strings.Join(req.Labels, ",")
	}
	var is issue
	if _, err := f.do(ctx, request{what: "create issue on " + req.Project, method: "POST", path: proj(req.Project) + "/issues", body: body}, &is); err != nil {
		return nil, err
	}
	w := is.info()
	return &w, nil
}

// CommentOnWork adds a note to an issue or a merge request.
func (f *Forge) CommentOnWork(ctx context.Context, project, kind string, number int64, body string) (int64, error) {
	what := fmt.Sprintf("comment on %s %s#%d", kind, project, number)
	if err := forge.CheckComment("relay: "+what, body); err != nil {
		return 0, err
	}
	return f.note(ctx, f.token, project, kind, number, f.InertText(body), what)
}

// CloseIssue closes the issue.
func (f *Forge) CloseIssue(ctx context.Context, project string, number int64) error {
	_, err := f.do(ctx, request{what: fmt.Sprintf("close issue %s#%d", project, number), method: "PUT",
		path: fmt.Sprintf("%s/issues/%d", proj(project), number), body: map[string]any{"state_event": "close"}}, nil)
	return err
}

// ReviewPullRequest gives a verdict as the review identity: an approval
// pinned to headSHA (its body as a note), or a request for changes (the
// identity made a reviewer, the /request_changes action in a note, its
// state read back). The merge request is read first for its state, head
// and author; the author's own verdict is refused.
func (f *Forge) ReviewPullRequest(ctx context.Context, project string, number int64, verdict, body, headSHA string) error {
	what := fmt.Sprintf("review merge request %s!%d", project, number)
	op := "relay: " + what
	if err := forge.CheckReview(op, verdict, body, headSHA); err != nil {
		return err
	}
	m, err := f.mergeRequest(ctx, project, number)
	if err != nil {
		return err
	}
	if err := forge.CheckReviewable(op, m.merge(), headSHA); err != nil {
		return err
	}
	who, err := f.reviewIdentity(ctx)
	if err != nil {
		return err
	}
	if m.Author != nil && m.Author.ID == who.ID {
		return forge.SelfReview(op, who.Username, f.dedicatedReviewer)
	}
	if verdict == wq.ReviewApproved {
		return f.approve(ctx, project, number, body, headSHA, what)
	}
	return f.requestChanges(ctx, project, m, who, body, what)
}

func (f *Forge) approve(ctx context.Context, project string, number int64, body, headSHA, what string) error {
	_, err := f.do(ctx, request{what: what, method: "POST", path: fmt.Sprintf("%s/merge_requests/%d/approve", proj(project), number),
		body: map[string]any{"sha": headSHA}, token: f.review}, nil)
	var fe *wq.ForgeError
	if errors.As(err, &fe) && fe.Status == http.StatusUnauthorized {
		// Already approved by this identity (a retry) reads as refused.
		var a approvals
		if _, read := f.do(ctx, request{what: fmt.Sprintf("approvals of %s!%d", project, number), method: "GET",
			path: fmt.Sprintf("%s/merge_requests/%d/approvals", proj(project), number), token: f.review}, &a); read == nil && a.UserHasApproved {
			err = nil
		}
	}
	if err != nil || strings.TrimSpace(body) == "" {
		return err
	}
	_, err = f.note(ctx, f.review, project, wq.WorkPR, number, f.InertText(body), what)
	return err
}

func (f *Forge) requestChanges(ctx context.Context, project string, m *mergeRequest, who *user, body, what string) error {
	ids := make([]int64, 0, len(m.Reviewers)+1)
	for _, r := range m.Reviewers {
		ids = append(ids, r.ID)
	}
	if !slices.Contains(ids, who.ID) {
		ids = append(ids, who.ID)
		if _, err := f.do(ctx, request{what: fmt.Sprintf("make %s a reviewer of %s!%d", who.Username, project, m.IID), method: "PUT",
			path: fmt.Sprintf("%s/merge_requests/%d", proj(project), m.IID), body: map[string]any{"reviewer_ids": ids}}, nil); err != nil {
			return err
		}
	}
	if _, err := f.note(ctx, f.review, project, wq.WorkPR, m.IID, f.InertText(body)+"\n\n/request_changes", what); err != nil {
		return err
	}
	reviewers, err := pages[struct {
		User  *user  `json:"user"`
		State string `json:"state"`
	}](ctx, f, request{what: fmt.Sprintf("reviewers of %s!%d", project, m.IID), method: "GET",
		path: fmt.Sprintf("%s/merge_requests/%d/reviewers", proj(project), m.IID), token: f.review})
	if err != nil {
		return err
	}
	for _, r := range reviewers {
		if r.User != nil && r.User.ID == who.ID && r.State == "requested_changes" {
			return nil
		}
	}
	return &wq.ForgeError{Kind: wq.ForgePermanent, Op: "relay: " + what, Message: "the server did not record the request for changes; the body stays as a note"}
}

// reviewIdentity is the review token's user, read once.
func (f *Forge) reviewIdentity(ctx context.Context) (*user, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reviewer != nil {
		return f.reviewer, nil
	}
	var u user
	if _, err := f.do(ctx, request{what: "read the review identity", method: "GET", path: "/user", token: f.review}, &u); err != nil {
		return nil, err
	}
	f.reviewer = &u
	return f.reviewer, nil
}
