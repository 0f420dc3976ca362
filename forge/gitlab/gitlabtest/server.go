// Package gitlabtest is an in-process HTTP server that behaves like GitLab
// (REST v4) for the calls workqueue makes, and for the calls a person makes
// in an end-to-end test. GitLab cannot run here; this lets the GitLab
// adapter pass the same conformance suite as the real Gitea. It follows
// GitLab's own source where the documentation is silent:
//
//   - commits with start_branch and force; execute_filemode is applied on
//     create and chmod only, dropped on update and move;
//   - merge requests with detailed_merge_status computed as GitLab does
//     (checking after a push, conflict, need_rebase in fast-forward and
//     semi-linear projects once the target moved), diff_refs, state
//     locked while a merge is in progress, fork merge requests;
//   - merges answered as GitLab 17.x: 405 when the merge request is not
//     in a mergeable state, 422 "Branch cannot be merged" when Git cannot
//     merge it (conflict, rebase needed), 409 when the sha is not the head;
//   - creating a merge request into a missing branch is 422 with GitLab's
//     message; a duplicate is 409 with the message as an array;
//   - straight and merge-base compares;
//   - project hooks that GitLab disables after four failing deliveries
//     (alert_status, disabled_until), re-enabled only by a 2xx delivery,
//     and deliveries that are never retried;
//   - issues (their own iid sequence, issue_type, confidential) and their
//     Issue Hook; merge request approvals and reviewer states (requested
//     changes show in detailed_merge_status once Git's checks pass), in
//     the Merge Request Hook as GitLab sends them;
//   - offset pagination of every list GitLab pages (issues, merge
//     requests, their notes and reviewers, pipelines, jobs, a commit's
//     diff, trees, hooks, projects): page, per_page up to 100,
//     X-Next-Page and the other X- headers, and Link;
//   - more users than the token's, each with a token of its own (AddUser),
//     who approve as themselves, with the sha pinned (409 when the head
//     moved, 401 for a second approval), and are made reviewers with
//     reviewer_ids;
//   - branch pipelines on every push, with the jobs a test gives them,
//     run and retried as GitLab does, their Pipeline and Job Hooks, and
//     only_allow_merge_if_pipeline_succeeds (see jobs.go);
//   - quick actions in the descriptions of merge requests and issues, on
//     creation and on every edit: found as GitLab finds them (outside
//     code blocks, quotes and inline code), dropped from the description
//     it stores, run as the caller where they change what the API shows
//     (state, merge, approval, title, labels, target branch) and recorded
//     (QuickActions; see quickactions.go);
//   - notes on issues and merge requests, with the quick actions /close
//     and, for a reviewer of the merge request, /request_changes run and
//     dropped from the text as GitLab does (202 when nothing is left),
//     on creation and, for a merge request's note, on an edit.
//
// Its answers have the shapes GitLab's API documentation gives:
// documented_test.go holds each one against GitLab's documented example
// (testdata/documented), member by member.
//
// See ../../shared/reference/forge-apis.md, "Checklist for faithful fakes"
// and its addendum.
package gitlabtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PipelineBase is added to a commit's sequence number to make the id of
// its pipeline, which merge requests report as head_pipeline.
const PipelineBase = 5000

// Merge methods of a project, as GitLab names them (merge_method).
const (
	MergeMethodMerge       = "merge"        // a merge commit
	MergeMethodRebaseMerge = "rebase_merge" // a merge commit, the branch first rebased (semi-linear)
	MergeMethodFF          = "ff"           // fast-forward only
)

// Server is a GitLab-shaped server with in-memory projects.
type Server struct {
	URL   string
	Token string
	// User is the username of the token's user: the author of what the
	// API creates, and the approver of its approvals.
	User string

	mu       sync.Mutex
	srv      *httptest.Server
	projects map[string]*project
	seq      int
	now      func() time.Time

	jobSeq int64 // the last job's sequence number (jobs.go)

	ranActions []QuickAction // the quick actions run from descriptions (quickactions.go)

	hooks  *deliverer
	users  map[string]int    // username → id, for payloads that name users by id
	tokens map[string]string // token → username

	// version is what GET /version answers (SetVersion); freeTier makes
	// the approvals API answer 404, as GitLab Free does (SetFreeTier).
	version  string
	freeTier bool
}

// DefaultVersion is the version the server reports until SetVersion.
const DefaultVersion = "17.5.0-ee"

// SetVersion changes what GET /version reports, as an upgrade or a
// downgrade of the instance would.
func (s *Server) SetVersion(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = v
}

// SetFreeTier makes the approvals API (GitLab Premium) answer 404, as it
// does on GitLab Free, or answer again.
func (s *Server) SetFreeTier(free bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeTier = free
}

type project struct {
	id            int
	path          string
	defaultBranch string
	mergeMethod   string
	hooks         []*hook
	branches      map[string]string // name → commit sha
	commits       map[string]*commit
	mrs           []*mergeRequest
	issues        []*issue
	notes         int64
	// CI (jobs.go): pipelines by creation, the jobs a new one runs, and
	// only_allow_merge_if_pipeline_succeeds.
	pipelines                        []*pipeline
	ciJobs                           []JobSpec
	onlyAllowMergeIfPipelineSucceeds bool
	// labels are the labels made on the project (AddLabel); GitLab also
	// makes every label a merge request or an issue is given.
	labels []string
	// resetApprovalsOnPush is the approval configuration's
	// reset_approvals_on_push (GitLab's default for a new project: on).
	resetApprovalsOnPush bool
	// statuses are the commit statuses set through the API (statuses.go).
	statuses []*extStatus
}

// AddLabel makes a label on the project, as a person does.
func (s *Server) AddLabel(path, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[path]
	p.labels = append(p.labels, name)
}

// hasLabel says whether the project has a label of name: made, or
// given to one of its merge requests or issues (which makes it).
func (p *project) hasLabel(name string) bool {
	if slices.Contains(p.labels, name) {
		return true
	}
	for _, mr := range p.mrs {
		if slices.Contains(mr.labels, name) {
			return true
		}
	}
	for _, is := range p.issues {
		if slices.Contains(is.labels, name) {
			return true
		}
	}
	return false
}

// New starts a server; Close stops it.
func New() *Server {
	s := &Server{Token: "glpat-test-token", User: "workqueue", projects: map[string]*project{}, now: time.Now, users: map[string]int{},
		tokens: map[string]string{}, version: DefaultVersion}
	s.tokens[s.Token] = s.User
	s.hooks = newDeliverer()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server and its webhook deliveries.
func (s *Server) Close() {
	s.srv.Close()
	s.hooks.close()
}

// AddUser makes a user with write access to every project and returns
// its token.
func (s *Server) AddUser(name string) (token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	token = fmt.Sprintf("glpat-%s-%d", name, len(s.tokens))
	s.tokens[token] = name
	s.userID(name)
	return token
}

type callerKey struct{}

// caller is the username of the token r came with.
func caller(r *http.Request) string { return r.Context().Value(callerKey{}).(string) }

// CreateProject makes a project whose main branch holds README.md.
func (s *Server) CreateProject(path string) {
	s.CreateProjectWith(path, "main", map[string]string{"README.md": "# " + path + "\n"})
}

// CreateProjectWith makes a project whose default branch holds files.
func (s *Server) CreateProjectWith(path, defaultBranch string, files map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &project{id: len(s.projects) + 1, path: path, defaultBranch: defaultBranch, mergeMethod: MergeMethodMerge, resetApprovalsOnPush: true,
		branches: map[string]string{}, commits: map[string]*commit{}}
	tree := map[string]file{}
	for k, v := range files {
		tree[k] = file{content: v}
	}
	p.branches[defaultBranch] = s.newCommit(p, tree).sha
	s.projects[path] = p
}

type apiError struct {
	status  int
	message any
}

func fail(status int, message any) *apiError { return &apiError{status, message} }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	user, ok := s.tokens[r.Header.Get("PRIVATE-TOKEN")]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401 Unauthorized"})
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), callerKey{}, user))
	// Route on the escaped path: :id and branch names arrive percent-encoded.
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/api/v4/"), "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	s.mu.Lock()
	status, body, err := s.route(r, parts)
	s.mu.Unlock()
	switch {
	case err != nil:
		writeJSON(w, err.status, map[string]any{"message": err.message})
	case body == nil:
		w.WriteHeader(status)
	default:
		if pg, ok := body.(paged); ok {
			for k, v := range pg.header {
				w.Header()[k] = v
			}
			body = pg.items
		}
		if raw, ok := body.([]byte); ok {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(status)
			w.Write(raw)
			return
		}
		writeJSON(w, status, body)
	}
}

func (s *Server) route(r *http.Request, parts []string) (int, any, *apiError) {
	if len(parts) == 1 && parts[0] == "projects" && r.Method == "GET" {
		out := []any{}
		for _, p := range s.projects {
			out = append(out, s.projectJSON(p))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].(map[string]any)["id"].(int) < out[j].(map[string]any)["id"].(int) })
		return page(r, out)
	}
	if len(parts) == 1 && parts[0] == "version" && r.Method == "GET" {
		return 200, map[string]any{"version": s.version, "revision": "0123456789a"}, nil
	}
	if len(parts) == 1 && parts[0] == "user" && r.Method == "GET" {
		return 200, s.userJSON(caller(r)), nil
	}
	if len(parts) < 2 || parts[0] != "projects" {
		return 0, nil, fail(404, "404 Not Found")
	}
	p := s.project(parts[1])
	if p == nil {
		return 0, nil, fail(404, "404 Project Not Found")
	}
	rest := parts[2:]
	m, path := r.Method, strings.Join(rest, "/")
	switch {
	case len(rest) == 0 && m == "GET":
		return 200, s.projectJSON(p), nil
	case len(rest) == 0 && m == "PUT":
		return s.editProject(r, p)
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
		return 200, s.branchJSON(p, rest[2], sha), nil
	case m == "GET" && len(rest) == 4 && rest[0] == "repository" && rest[1] == "files" && rest[3] == "raw":
		c := p.resolve(r.URL.Query().Get("ref"))
		if c == nil {
			return 0, nil, fail(404, "404 Commit Not Found")
		}
		f, ok := c.files[rest[2]]
		if !ok {
			return 0, nil, fail(404, "404 File Not Found")
		}
		return 200, []byte(f.content), nil
	case m == "GET" && len(rest) == 4 && rest[0] == "repository" && rest[1] == "commits" && rest[3] == "diff":
		return s.commitDiff(r, p, rest[2])
	case m == "GET" && len(rest) == 4 && rest[0] == "repository" && rest[1] == "commits" && rest[3] == "statuses":
		return s.commitStatuses(r, p, rest[2])
	case m == "POST" && len(rest) == 2 && rest[0] == "statuses":
		return s.postStatus(r, p, rest[1])
	case m == "GET" && path == "repository/tree":
		return s.listTree(r, p)
	case m == "GET" && path == "repository/compare":
		return s.compare(r, p)
	case m == "GET" && len(rest) == 2 && rest[0] == "labels":
		if !p.hasLabel(rest[1]) {
			return 0, nil, fail(404, "404 Label Not Found")
		}
		return 200, map[string]any{"id": len(rest[1]), "name": rest[1]}, nil
	case len(rest) > 0 && rest[0] == "merge_requests":
		return s.mergeRequests(r, p, rest[1:])
	case path == "approvals" && (m == "GET" || m == "POST"):
		return s.approvalConfiguration(r, p)
	case len(rest) > 0 && rest[0] == "hooks":
		return s.projectHooks(r, p, rest[1:])
	case len(rest) > 0 && rest[0] == "issues":
		return s.issues(r, p, rest[1:])
	case len(rest) > 0 && rest[0] == "pipelines":
		return s.pipelines(r, p, rest[1:])
	case len(rest) > 0 && rest[0] == "jobs":
		return s.jobs(r, p, rest[1:])
	}
	return 0, nil, fail(404, "404 Not Found")
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

// branchJSON is GitLab's Branch entity (branch protection not modelled:
// every branch is unprotected and open to pushes).
func (s *Server) branchJSON(p *project, name, sha string) map[string]any {
	c := p.commits[sha]
	at := c.at.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	return map[string]any{"name": name, "merged": name != p.defaultBranch && p.isAncestor(sha, p.branches[p.defaultBranch]),
		"protected": false, "default": name == p.defaultBranch, "developers_can_push": true, "developers_can_merge": true,
		"can_push": true, "web_url": fmt.Sprintf("%s/%s/-/tree/%s", s.URL, p.path, url.PathEscape(name)),
		"commit": map[string]any{"id": sha, "short_id": sha[:8], "parent_ids": orEmpty(c.parents), "created_at": at,
			"authored_date": at, "committed_date": at,
			"web_url": fmt.Sprintf("%s/%s/-/commit/%s", s.URL, p.path, sha)}}
}

func (s *Server) projectJSON(p *project) map[string]any {
	return map[string]any{"id": p.id, "path_with_namespace": p.path, "default_branch": p.defaultBranch,
		"merge_method": p.mergeMethod, "web_url": s.URL + "/" + p.path,
		"only_allow_merge_if_pipeline_succeeds": p.onlyAllowMergeIfPipelineSucceeds}
}

// editProject answers PUT /projects/:id for the settings the tests change.
func (s *Server) editProject(r *http.Request, p *project) (int, any, *apiError) {
	var req struct {
		MergeMethod                      *string `json:"merge_method"`
		OnlyAllowMergeIfPipelineSucceeds *bool   `json:"only_allow_merge_if_pipeline_succeeds"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return 0, nil, fail(400, "400 Bad request - "+err.Error())
	}
	if req.MergeMethod != nil {
		switch *req.MergeMethod {
		case MergeMethodMerge, MergeMethodRebaseMerge, MergeMethodFF:
			p.mergeMethod = *req.MergeMethod
		default:
			return 0, nil, fail(400, "merge_method does not have a valid value")
		}
		for _, mr := range p.mrs {
			mr.checked = false // the merge method changes what is mergeable
		}
	}
	if req.OnlyAllowMergeIfPipelineSucceeds != nil {
		p.onlyAllowMergeIfPipelineSucceeds = *req.OnlyAllowMergeIfPipelineSucceeds
	}
	return 200, s.projectJSON(p), nil
}

// approvalConfiguration answers GET and POST /projects/:id/approvals
// (GitLab Premium; 404 on Free): the project's approval configuration,
// of which reset_approvals_on_push is modelled.
func (s *Server) approvalConfiguration(r *http.Request, p *project) (int, any, *apiError) {
	if s.freeTier {
		return 0, nil, fail(404, "404 Not Found")
	}
	if r.Method == "POST" {
		var req struct {
			ResetApprovalsOnPush *bool `json:"reset_approvals_on_push"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return 0, nil, fail(400, "400 Bad request - "+err.Error())
		}
		if req.ResetApprovalsOnPush != nil {
			p.resetApprovalsOnPush = *req.ResetApprovalsOnPush
		}
	}
	return 200, map[string]any{"approvers": []any{}, "approver_groups": []any{}, "approvals_before_merge": 0,
		"reset_approvals_on_push": p.resetApprovalsOnPush, "selective_code_owner_removals": false,
		"disable_overriding_approvers_per_merge_request": false, "merge_requests_author_approval": false,
		"merge_requests_disable_committers_approval": false, "require_password_to_approve": false,
		"require_reauthentication_to_approve": false}, nil
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

// labelList reads labels given as a comma string or an array.
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

// userID is the id of a user by name, made up on first use.
func (s *Server) userID(name string) int {
	if id, ok := s.users[name]; ok {
		return id
	}
	s.users[name] = 100 + len(s.users)
	return s.users[name]
}

func (s *Server) userJSON(name string) map[string]any {
	return map[string]any{"id": s.userID(name), "username": name, "name": name, "state": "active"}
}

// userNamed is the name of the user with id, "" if there is none.
func (s *Server) userNamed(id int64) string {
	for name, n := range s.users {
		if int64(n) == id {
			return name
		}
	}
	return ""
}

// note is a note on an issue or a merge request.
type note struct {
	id                   int64
	body, author         string
	createdAt, updatedAt time.Time
}

// noteJSON is GitLab's Note entity of a note on noteable (Issue,
// MergeRequest) iid, whose global id is noteableID.
func (s *Server) noteJSON(p *project, n *note, noteable string, noteableID, iid int64) map[string]any {
	return map[string]any{"id": n.id, "body": n.body, "attachment": nil, "author": s.userJSON(n.author),
		"created_at": n.createdAt.UTC().Format(time.RFC3339Nano), "updated_at": n.updatedAt.UTC().Format(time.RFC3339Nano),
		"system": false, "noteable_id": noteableID, "noteable_type": noteable, "project_id": p.id, "noteable_iid": iid,
		"resolvable": false, "confidential": false, "internal": false, "imported": false, "imported_from": "none"}
}

// notes answers …/notes of an issue or a merge request: the list, and a
// new note whose quick actions (commands: name → action, for the
// commands whose condition holds) run first and leave the text (see
// quickActions). p numbers the notes of both.
func (s *Server) notes(r *http.Request, p *project, on *[]*note, noteable string, noteableID, iid int64, commands map[string]func()) (int, any, *apiError) {
	if r.Method == "GET" {
		out := []any{}
		for _, n := range *on {
			out = append(out, s.noteJSON(p, n, noteable, noteableID, iid))
		}
		return page(r, out)
	}
	var req struct {
		Body string `json:"body"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	if strings.TrimSpace(req.Body) == "" {
		return 0, nil, fail(400, "body is missing")
	}
	text, ran := quickActions(req.Body, commands)
	if text == "" {
		return http.StatusAccepted, map[string]any{"commands_changes": map[string]any{}, "summary": ran}, nil
	}
	p.notes++
	now := s.now()
	n := &note{id: p.notes, body: text, author: caller(r), createdAt: now, updatedAt: now}
	*on = append(*on, n)
	return http.StatusCreated, s.noteJSON(p, n, noteable, noteableID, iid), nil
}

// quickActions runs the quick actions of body, as GitLab does for a note:
// a line that starts with "/" and the name of a command whose condition
// holds (one of commands) is run and dropped from the text; any other
// line, "/anything else" included, stays text. It returns the text left,
// trimmed at the end, and the commands run. Code blocks, inside which
// GitLab runs nothing, are not modelled.
func quickActions(body string, commands map[string]func()) (text string, ran []string) {
	var kept []string
	for _, line := range strings.Split(strings.ReplaceAll(body, "\r", ""), "\n") {
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
		name = strings.ToLower(strings.TrimSpace(name))
		if run, ok := commands[name]; ok && strings.HasPrefix(line, "/") {
			run()
			ran = append(ran, name)
			continue
		}
		kept = append(kept, line)
	}
	return strings.TrimRight(strings.Join(kept, "\n"), " \t\n"), ran
}

// paged is one page of a list with GitLab's offset pagination headers.
type paged struct {
	items  []any
	header http.Header
}

// page answers one page of items as GitLab's offset pagination does
// (doc/api/rest/_index.md, Pagination link headers): page from 1,
// per_page 20 by default and at most 100, X-Next-Page empty on the last
// page, X-Prev-Page on the first, and a Link header with the first, last,
// next and previous pages.
func page(r *http.Request, items []any) (int, any, *apiError) {
	q := r.URL.Query()
	n, _ := strconv.Atoi(q.Get("page"))
	size, _ := strconv.Atoi(q.Get("per_page"))
	n = max(n, 1)
	if size < 1 {
		size = 20
	}
	size = min(size, 100)
	pages := max((len(items)+size-1)/size, 1)
	from, to := min((n-1)*size, len(items)), min(n*size, len(items))
	h := http.Header{}
	h.Set("X-Page", strconv.Itoa(n))
	h.Set("X-Per-Page", strconv.Itoa(size))
	h.Set("X-Total", strconv.Itoa(len(items)))
	h.Set("X-Total-Pages", strconv.Itoa(pages))
	h.Set("X-Next-Page", "")
	if n < pages {
		h.Set("X-Next-Page", strconv.Itoa(n+1))
	}
	h.Set("X-Prev-Page", "")
	if n > 1 {
		h.Set("X-Prev-Page", strconv.Itoa(n-1))
	}
	link := func(page int, rel string) string {
		u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path}
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page))
		q.Set("per_page", strconv.Itoa(size))
		u.RawQuery = q.Encode()
		return fmt.Sprintf("<%s>; rel=\"%s\"", u.String(), rel)
	}
	var links []string
	if n > 1 {
		links = append(links, link(n-1, "prev"))
	}
	if n < pages {
		links = append(links, link(n+1, "next"))
	}
	links = append(links, link(1, "first"), link(pages, "last"))
	h.Set("Link", strings.Join(links, ", "))
	out := items[from:to]
	if out == nil {
		out = []any{}
	}
	return 200, paged{items: out, header: h}, nil
}
