// Package gitlabtest is an in-process HTTP server that follows GitLab's
// documented REST v4 contracts for the calls workqueue makes (commits with
// start_branch and force, branches, raw files, merge requests with
// detailed_merge_status, merge pinned by sha, notes). GitLab cannot run
// here; this lets the GitLab adapter pass the same conformance suite as
// the real Gitea. See ../../shared/reference/forge-apis.md, "Checklist for
// faithful fakes".
package gitlabtest

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Server is a GitLab-shaped server with in-memory projects.
// PipelineBase is added to a commit's sequence number to make the id of
// its pipeline, which merge requests report as head_pipeline.
const PipelineBase = 5000

type Server struct {
	URL   string
	Token string

	mu       sync.Mutex
	srv      *httptest.Server
	projects map[string]*project
	seq      int
}

type commit struct {
	sha      string
	parent   string
	files    map[string]string
	pipeline int64 // the CI pipeline GitLab would run for it
}

type mergeRequest struct {
	iid                int64
	title, description string
	source, target     string
	labels             []string
	state              string // opened, closed, merged
	checked            bool   // mergeability computed since the last push
	notes              map[int64]string
}

type project struct {
	id       int
	path     string
	hooks    []map[string]any
	branches map[string]string // name → commit sha
	commits  map[string]*commit
	mrs      []*mergeRequest
	notes    int64
}

// New starts a server; Close stops it.
func New() *Server {
	s := &Server{Token: "glpat-test-token", projects: map[string]*project{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// CreateProject makes a project whose main branch holds README.md.
func (s *Server) CreateProject(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &project{id: len(s.projects) + 1, path: path, branches: map[string]string{}, commits: map[string]*commit{}}
	c := s.newCommit(p, "", map[string]string{"README.md": "# " + path + "\n"})
	p.branches["main"] = c.sha
	s.projects[path] = p
}

func (s *Server) newCommit(p *project, parent string, files map[string]string) *commit {
	s.seq++
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/%d/%s", p.path, s.seq, parent)))
	c := &commit{sha: hex.EncodeToString(sum[:]), parent: parent, files: files, pipeline: PipelineBase + int64(s.seq)}
	p.commits[c.sha] = c
	return c
}

type apiError struct {
	status  int
	message any
}

func fail(status int, message any) *apiError { return &apiError{status, message} }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("PRIVATE-TOKEN") != s.Token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401 Unauthorized"})
		return
	}
	// Route on the escaped path: :id and branch names arrive percent-encoded.
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/api/v4/"), "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	if len(parts) == 1 && parts[0] == "projects" && r.Method == "GET" {
		s.mu.Lock()
		defer s.mu.Unlock()
		var out []any
		for _, p := range s.projects {
			out = append(out, map[string]any{"id": p.id, "path_with_namespace": p.path})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	if len(parts) < 3 || parts[0] != "projects" {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not Found"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.project(parts[1])
	if p == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
		return
	}
	status, body, err := s.route(r, p, parts[2:])
	if err != nil {
		writeJSON(w, err.status, map[string]any{"message": err.message})
		return
	}
	if raw, ok := body.([]byte); ok {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		w.Write(raw)
		return
	}
	if body == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, body)
}

func (s *Server) project(id string) *project {
	if n, err := strconv.Atoi(id); err == nil {
		for _, p := range s.projects {
			if p.id == n {
				return p
			}
		}
		return nil
	}
	return s.projects[id]
}

func (s *Server) route(r *http.Request, p *project, rest []string) (int, any, *apiError) {
	m, path := r.Method, strings.Join(rest, "/")
	switch {
	case m == "POST" && path == "repository/commits":
		return s.createCommit(r, p)
	case len(rest) == 3 && rest[0] == "repository" && rest[1] == "branches":
		sha, ok := p.branches[rest[2]]
		if !ok {
			return 0, nil, fail(404, "404 Branch Not Found")
		}
		if m == "DELETE" {
			delete(p.branches, rest[2])
			return http.StatusNoContent, nil, nil
		}
		return 200, map[string]any{"name": rest[2], "commit": map[string]any{"id": sha}}, nil
	case m == "GET" && len(rest) == 4 && rest[0] == "repository" && rest[1] == "files" && rest[3] == "raw":
		c := p.commits[p.branches[r.URL.Query().Get("ref")]]
		if c == nil {
			return 0, nil, fail(404, "404 Commit Not Found")
		}
		content, ok := c.files[rest[2]]
		if !ok {
			return 0, nil, fail(404, "404 File Not Found")
		}
		return 200, []byte(content), nil
	case m == "GET" && len(rest) == 4 && rest[0] == "repository" && rest[1] == "commits" && rest[3] == "diff":
		return s.commitDiff(r, p, rest[2])
	case rest[0] == "merge_requests":
		return s.mergeRequests(r, p, rest[1:])
	case path == "hooks" && m == "GET":
		out := []any{}
		for _, h := range p.hooks {
			out = append(out, hookJSON(h))
		}
		return 200, out, nil
	case path == "hooks" && m == "POST":
		var h map[string]any
		if err := json.NewDecoder(r.Body).Decode(&h); err != nil || h["url"] == nil {
			return 0, nil, fail(400, "url is missing")
		}
		h["id"] = len(p.hooks) + 1
		p.hooks = append(p.hooks, h)
		return http.StatusCreated, hookJSON(h), nil
	case rest[0] == "hooks" && len(rest) == 2 && m == "PUT":
		id, err := strconv.Atoi(rest[1])
		if err != nil || id < 1 || id > len(p.hooks) {
			return 0, nil, fail(404, "404 Not found")
		}
		var edit map[string]any
		if err := json.NewDecoder(r.Body).Decode(&edit); err != nil || edit["url"] == nil {
			return 0, nil, fail(400, "url is missing")
		}
		for k, v := range edit {
			p.hooks[id-1][k] = v
		}
		return 200, hookJSON(p.hooks[id-1]), nil
	}
	return 0, nil, fail(404, "404 Not Found")
}

type actionBody struct {
	Action          string  `json:"action"`
	FilePath        string  `json:"file_path"`
	PreviousPath    string  `json:"previous_path"`
	Content         *string `json:"content"`
	Encoding        string  `json:"encoding"`
	ExecuteFilemode *bool   `json:"execute_filemode"`
}

// createCommit follows Commits::CreateService's branch-state decision table.
func (s *Server) createCommit(r *http.Request, p *project) (int, any, *apiError) {
	var req struct {
		Branch        string       `json:"branch"`
		CommitMessage string       `json:"commit_message"`
		StartBranch   string       `json:"start_branch"`
		StartSHA      string       `json:"start_sha"`
		Force         bool         `json:"force"`
		Actions       []actionBody `json:"actions"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return 0, nil, fail(400, "400 Bad request - "+err.Error())
	}
	switch {
	case req.Branch == "":
		return 0, nil, fail(400, "branch is missing")
	case req.CommitMessage == "":
		return 0, nil, fail(400, "commit_message is missing")
	case len(req.Actions) == 0:
		return 0, nil, fail(400, "actions is empty")
	case req.StartBranch != "" && req.StartSHA != "":
		return 0, nil, fail(400, "start_branch, start_sha are mutually exclusive")
	}
	if req.StartBranch == "" && req.StartSHA == "" {
		req.StartBranch = req.Branch
	}
	start := req.StartSHA
	if req.StartBranch != "" {
		start = p.branches[req.StartBranch]
	}
	base := p.commits[start]
	if base == nil {
		return 0, nil, fail(400, "You can only create or edit files when you are on a branch")
	}
	_, exists := p.branches[req.Branch]
	different := req.StartBranch != req.Branch || req.StartSHA != ""
	if exists && different && !req.Force {
		return 0, nil, fail(400, fmt.Sprintf("A branch called '%s' already exists. Switch to that branch in order to make changes", req.Branch))
	}
	files := map[string]string{}
	for k, v := range base.files {
		files[k] = v
	}
	for i, a := range req.Actions {
		content := ""
		if a.Content != nil {
			content = *a.Content
			switch a.Encoding {
			case "", "text":
			case "base64":
				b, err := base64.StdEncoding.DecodeString(content)
				if err != nil {
					return 0, nil, fail(400, fmt.Sprintf("actions[%d][content] is not valid base64", i))
				}
				content = string(b)
			default:
				return 0, nil, fail(400, fmt.Sprintf("actions[%d][encoding] must be text or base64", i))
			}
		}
		_, has := files[a.FilePath]
		switch a.Action {
		case "create":
			if has {
				return 0, nil, fail(400, "A file with this name already exists")
			}
			files[a.FilePath] = content
		case "update":
			if !has {
				return 0, nil, fail(400, "A file with this name doesn't exist")
			}
			if a.Content == nil {
				return 0, nil, fail(400, fmt.Sprintf("actions[%d][content] is required for update action", i))
			}
			files[a.FilePath] = content
		case "delete":
			if !has {
				return 0, nil, fail(400, "A file with this name doesn't exist")
			}
			delete(files, a.FilePath)
		case "move":
			old, ok := files[a.PreviousPath]
			if a.PreviousPath == "" {
				return 0, nil, fail(400, fmt.Sprintf("actions[%d][previous_path] is required for move action", i))
			}
			if !ok {
				return 0, nil, fail(400, "A file with this name doesn't exist")
			}
			delete(files, a.PreviousPath)
			if a.Content != nil {
				old = content
			}
			files[a.FilePath] = old
		case "chmod":
			if !has {
				return 0, nil, fail(400, "A file with this name doesn't exist")
			}
			if a.ExecuteFilemode == nil {
				return 0, nil, fail(400, fmt.Sprintf("actions[%d][execute_filemode] is missing", i))
			}
		default:
			return 0, nil, fail(400, fmt.Sprintf("actions[%d][action] must be one of: create, update, move, delete, chmod", i))
		}
	}
	c := s.newCommit(p, base.sha, files)
	p.branches[req.Branch] = c.sha
	for _, mr := range p.mrs {
		if mr.source == req.Branch {
			mr.checked = false // a push makes GitLab check mergeability again
		}
	}
	return http.StatusCreated, map[string]any{"id": c.sha, "short_id": c.sha[:8], "title": req.CommitMessage,
		"message": req.CommitMessage, "parent_ids": []string{base.sha}}, nil
}

func (s *Server) mergeRequests(r *http.Request, p *project, rest []string) (int, any, *apiError) {
	if len(rest) == 0 {
		if r.Method == "POST" {
			return s.createMR(r, p)
		}
		q := r.URL.Query()
		var out []any
		for i := len(p.mrs) - 1; i >= 0; i-- { // newest first
			mr := p.mrs[i]
			if (q.Get("source_branch") == "" || q.Get("source_branch") == mr.source) &&
				(q.Get("target_branch") == "" || q.Get("target_branch") == mr.target) &&
				(q.Get("state") == "" || q.Get("state") == "all" || q.Get("state") == mr.state) {
				out = append(out, s.mrJSON(p, mr, false))
			}
		}
		if out == nil {
			out = []any{}
		}
		return 200, out, nil
	}
	iid, err := strconv.ParseInt(rest[0], 10, 64)
	if err != nil || iid < 1 || int(iid) > len(p.mrs) {
		return 0, nil, fail(404, "404 Not found")
	}
	mr := p.mrs[iid-1]
	switch {
	case len(rest) == 1 && r.Method == "GET":
		out := s.mrJSON(p, mr, true)
		mr.checked = true // the async check finishes after the first look
		return 200, out, nil
	case len(rest) == 1 && r.Method == "PUT":
		var req struct {
			Title       *string `json:"title"`
			Description *string `json:"description"`
			StateEvent  string  `json:"state_event"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Title == nil && req.Description == nil && req.StateEvent == "" {
			return 0, nil, fail(400, "at least one parameter must be provided")
		}
		if req.Title != nil {
			mr.title = *req.Title
		}
		if req.Description != nil {
			mr.description = *req.Description
		}
		switch req.StateEvent {
		case "close":
			if mr.state == "opened" {
				mr.state = "closed"
			}
		case "reopen":
			if mr.state == "closed" {
				mr.state, mr.checked = "opened", false
			}
		}
		return 200, s.mrJSON(p, mr, true), nil
	case len(rest) == 2 && rest[1] == "merge" && r.Method == "PUT":
		var req struct {
			SHA string `json:"sha"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		head := p.branches[mr.source]
		if req.SHA != "" && req.SHA != head {
			return 0, nil, fail(409, "SHA does not match HEAD of source branch: "+head)
		}
		if mr.state != "opened" || !mr.checked || head == "" {
			return 0, nil, fail(405, "405 Method Not Allowed")
		}
		s.merge(p, mr)
		return 200, s.mrJSON(p, mr, true), nil
	case len(rest) == 2 && rest[1] == "notes" && r.Method == "POST":
		var req struct {
			Body string `json:"body"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Body == "" {
			return 0, nil, fail(400, "body is missing")
		}
		p.notes++
		if mr.notes == nil {
			mr.notes = map[int64]string{}
		}
		mr.notes[p.notes] = req.Body
		return http.StatusCreated, map[string]any{"id": p.notes, "body": req.Body, "noteable_type": "MergeRequest", "noteable_iid": mr.iid}, nil
	case len(rest) == 3 && rest[1] == "notes" && r.Method == "PUT":
		id, _ := strconv.ParseInt(rest[2], 10, 64)
		if _, ok := mr.notes[id]; !ok {
			return 0, nil, fail(404, "404 Note Not Found")
		}
		var req struct {
			Body string `json:"body"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		mr.notes[id] = req.Body
		return 200, map[string]any{"id": id, "body": req.Body}, nil
	}
	return 0, nil, fail(404, "404 Not found")
}

func (s *Server) createMR(r *http.Request, p *project) (int, any, *apiError) {
	var req struct {
		Title        string `json:"title"`
		Description  string `json:"description"`
		SourceBranch string `json:"source_branch"`
		TargetBranch string `json:"target_branch"`
		Labels       any    `json:"labels"` // a comma string or an array
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return 0, nil, fail(400, err.Error())
	}
	if req.Title == "" || req.SourceBranch == "" || req.TargetBranch == "" {
		return 0, nil, fail(400, "title, source_branch, target_branch are missing")
	}
	if req.SourceBranch == req.TargetBranch {
		return 0, nil, fail(422, []string{"You can't use same project/branch for source and target"})
	}
	if _, ok := p.branches[req.SourceBranch]; !ok {
		return 0, nil, fail(400, map[string]any{"source_branch": []string{"is invalid"}})
	}
	for _, mr := range p.mrs {
		if mr.state == "opened" && mr.source == req.SourceBranch && mr.target == req.TargetBranch {
			return 0, nil, fail(409, []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", mr.iid)})
		}
	}
	mr := &mergeRequest{iid: int64(len(p.mrs) + 1), title: req.Title, description: req.Description, source: req.SourceBranch,
		target: req.TargetBranch, state: "opened", labels: labelList(req.Labels)}
	p.mrs = append(p.mrs, mr)
	return http.StatusCreated, s.mrJSON(p, mr, true), nil
}

func labelList(v any) []string {
	var out []string
	switch l := v.(type) {
	case string:
		for _, s := range strings.Split(l, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	case []any:
		for _, s := range l {
			out = append(out, fmt.Sprint(s))
		}
	}
	sort.Strings(out)
	return out
}

// merge applies the source head's change over its parent onto the target.
func (s *Server) merge(p *project, mr *mergeRequest) {
	head := p.commits[p.branches[mr.source]]
	parent := p.commits[head.parent]
	target := p.commits[p.branches[mr.target]]
	files := map[string]string{}
	for k, v := range target.files {
		files[k] = v
	}
	for k, v := range head.files {
		if old, ok := parent.files[k]; !ok || old != v {
			files[k] = v
		}
	}
	for k := range parent.files {
		if _, ok := head.files[k]; !ok {
			delete(files, k)
		}
	}
	c := s.newCommit(p, target.sha, files)
	p.branches[mr.target] = c.sha
	mr.state = "merged"
}

func (s *Server) mrJSON(p *project, mr *mergeRequest, full bool) map[string]any {
	status := "mergeable"
	switch {
	case mr.state != "opened":
		status = "not_open"
	case !mr.checked:
		status = "checking"
	}
	out := map[string]any{"id": 1000 + mr.iid, "iid": mr.iid, "project_id": p.id, "title": mr.title, "description": mr.description,
		"state": mr.state, "source_branch": mr.source, "target_branch": mr.target, "labels": orEmpty(mr.labels),
		"sha": p.branches[mr.source], "web_url": fmt.Sprintf("%s/%s/-/merge_requests/%d", s.URL, p.path, mr.iid)}
	if full {
		out["detailed_merge_status"] = status
		if c := p.commits[p.branches[mr.source]]; c != nil && mr.state == "opened" {
			out["head_pipeline"] = map[string]any{"id": c.pipeline, "sha": c.sha, "ref": mr.source, "status": "success"}
		}
	}
	return out
}

// hookJSON renders a hook as GitLab lists it: never its token.
func hookJSON(h map[string]any) map[string]any {
	out := map[string]any{"id": h["id"], "url": h["url"]}
	for _, k := range []string{"merge_requests_events", "pipeline_events", "job_events", "note_events", "push_events"} {
		out[k] = h[k] == true
	}
	return out
}

// SetHookEvent sets one event flag of a project's hook, as a person
// editing it in GitLab would.
func (s *Server) SetHookEvent(project, url, event string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.projects[project].hooks {
		if h["url"] == url {
			h[event] = on
		}
	}
}

// HookEvents returns the event flags of a project's hook to url.
func (s *Server) HookEvents(project, url string) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.projects[project].hooks {
		if h["url"] == url {
			out := map[string]bool{}
			for k, v := range hookJSON(h) {
				if b, ok := v.(bool); ok {
					out[k] = b
				}
			}
			return out
		}
	}
	return nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// commitDiff answers GET /projects/:id/repository/commits/:sha/diff: the
// commit's files against its parent's, sorted by path, paginated with
// page and per_page. Renames are not detected (GitLab would report one
// renamed_file entry; the adapter turns both forms into removed + added).
func (s *Server) commitDiff(r *http.Request, p *project, sha string) (int, any, *apiError) {
	c := p.commits[sha]
	if c == nil {
		return 0, nil, fail(404, "404 Commit Not Found")
	}
	var before map[string]string
	if parent := p.commits[c.parent]; parent != nil {
		before = parent.files
	}
	var diffs []map[string]any
	for path, content := range c.files {
		old, had := before[path]
		switch {
		case !had:
			diffs = append(diffs, map[string]any{"old_path": path, "new_path": path, "new_file": true, "renamed_file": false, "deleted_file": false})
		case old != content:
			diffs = append(diffs, map[string]any{"old_path": path, "new_path": path, "new_file": false, "renamed_file": false, "deleted_file": false})
		}
	}
	for path := range before {
		if _, has := c.files[path]; !has {
			diffs = append(diffs, map[string]any{"old_path": path, "new_path": path, "new_file": false, "renamed_file": false, "deleted_file": true})
		}
	}
	sort.Slice(diffs, func(i, j int) bool { return diffs[i]["new_path"].(string) < diffs[j]["new_path"].(string) })
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if page < 1 {
		page = 1
	}
	if perPage < 1 {
		perPage = 20
	}
	start := min((page-1)*perPage, len(diffs))
	end := min(start+perPage, len(diffs))
	out := diffs[start:end]
	if out == nil {
		out = []map[string]any{}
	}
	return 200, out, nil
}
