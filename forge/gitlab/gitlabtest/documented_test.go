package gitlabtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
)

// The members of GitLab's answers the project's clients of the fake read:
// the adapter (forge/gitlab) and the test fixtures (internal/testforge).
// Each list names where it is read.
var (
	// toMergeRequest (and OpenMergeRequestsFrom, FindMergeRequest).
	mergeRequestReads = []string{"iid", "web_url", "source_branch", "target_branch", "sha", "title", "description", "labels",
		"detailed_merge_status", "state", "diff_refs.base_sha", "head_pipeline.id"}
	// getMergeRequest: toMergeRequest, ReviewPullRequest (author, reviewers)
	// and mergeRequestWork (author, updated_at).
	mergeRequestGetReads = append(mergeRequestReads[:len(mergeRequestReads):len(mergeRequestReads)],
		"author.id", "author.username", "reviewers[].id", "updated_at")
	// ListProjectMergeRequests: FindMergeRequest and OpenMergeRequestsFrom
	// tell forks apart, ListOpenWork makes work of them.
	mergeRequestListReads = elements("iid", "source_project_id", "target_project_id", "web_url", "source_branch", "target_branch",
		"sha", "title", "description", "labels", "detailed_merge_status", "state", "author.username", "updated_at")
	// issueWork and isWork.
	issueReads = []string{"iid", "state", "title", "labels", "web_url", "author.username", "updated_at", "confidential", "issue_type"}
	// pathChanges (CommitChanges, CompareTrees).
	diffReads = []string{"old_path", "new_path", "b_mode", "new_file", "renamed_file", "deleted_file"}
	// toCIJob, Job.
	jobReads = []string{"id", "name", "stage", "status", "allow_failure", "web_url", "failure_reason", "finished_at", "pipeline.id"}
	// EnsureWebhook, hookDisabled.
	hookReads = []string{"id", "url", "alert_status", "disabled_until", "merge_requests_events", "issues_events", "push_events",
		"pipeline_events", "job_events", "note_events"}
)

// approvalsUndocumented are the approval members the adapter reads
// (mergeRequestWork, approve) that GitLab's example, written for
// Premium, leaves out: the entity GitLab presents on every tier exposes
// them (lib/api/entities/merge_request_approvals.rb, documentation
// type boolean).
var approvalsUndocumented = map[string]undocumented{
	"approved":          {"boolean", "API::Entities::MergeRequestApprovals#approved"},
	"user_has_approved": {"boolean", "API::Entities::MergeRequestApprovals#user_has_approved"},
}

func elements(paths ...string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = "[]." + p
	}
	return out
}

// world is a fake GitLab with one project, driven over HTTP as a client
// would, each answer held against GitLab's documented shape.
type world struct {
	t       *testing.T
	srv     *gitlabtest.Server
	project string // URL-encoded path
	checked map[string]bool
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("%s: %v", a.body, err)
	}
}

func (w *world) do(token, method, path string, body any) answer {
	w.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			w.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, w.srv.URL+"/api/v4"+strings.ReplaceAll(path, ":id", w.project), r)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("PRIVATE-TOKEN", token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// endpoint is one of GitLab's endpoints as GitLab documents it.
type endpoint struct {
	name   string // "POST /projects/:id/repository/commits"
	status int    // the documented status of success
	docs   []doc  // the documented examples of its answer
	paged  bool   // a list with GitLab's offset pagination headers
	contract
}

// doc is a documented example: a fixture, or (list) a list of the values
// of an entity a fixture documents, or (elem) the element of a documented
// list.
type doc struct {
	file string
	as   string // "", "list", "elem"
}

func (d doc) shape(t *testing.T) shape {
	s := documented(t, d.file)
	switch d.as {
	case "list":
		return s.rebase("", "[]")
	case "elem":
		return s.rebase("[]", "")
	}
	return s
}

// check holds an answer against the endpoint's documented shape, status
// and headers.
func (w *world) check(e endpoint, a answer) {
	w.t.Helper()
	w.checked[e.name] = true
	if a.status != e.status {
		w.t.Errorf("%s: status %d, GitLab answers %d (%s)", e.name, a.status, e.status, a.body)
		return
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		w.t.Errorf("%s: Content-Type %q, GitLab answers application/json", e.name, ct)
	}
	fake, err := shapeOf(a.body)
	if err != nil {
		w.t.Errorf("%s: %v: %s", e.name, err, a.body)
		return
	}
	docShape, files := newShape(), []string{}
	for _, d := range e.docs {
		docShape.merge(d.shape(w.t))
		files = append(files, d.file)
	}
	for _, problem := range conform(fake, docShape, e.contract) {
		w.t.Errorf("%s: %s (documented in testdata/documented/%s)", e.name, problem, strings.Join(files, ", "))
	}
	if e.paged {
		// GitLab's offset pagination (doc/api/rest/_index.md, Pagination
		// link headers): X-Next-Page and X-Prev-Page are empty at the ends.
		for _, h := range []string{"X-Page", "X-Per-Page", "X-Next-Page", "X-Prev-Page", "X-Total", "X-Total-Pages", "Link"} {
			if _, ok := a.header[http.CanonicalHeaderKey(h)]; !ok {
				w.t.Errorf("%s: no %s header: GitLab paginates this list", e.name, h)
			}
		}
	}
}

// checkStatus holds an answer without a body against its documented status.
func (w *world) checkStatus(name string, want int, a answer) {
	w.t.Helper()
	w.checked[name] = true
	if a.status != want {
		w.t.Errorf("%s: status %d, GitLab answers %d (%s)", name, a.status, want, a.body)
	}
}

// TestDocumentedShapes drives the fake through every endpoint the adapter
// and the test fixtures call and holds each answer against GitLab's
// documented example (testdata/documented): the members a client reads
// must be there with GitLab's types, every member both have must agree in
// type, lists must page as GitLab's do, and statuses must be GitLab's.
func TestDocumentedShapes(t *testing.T) {
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	const path = "group/demo"
	srv.CreateProject(path)
	srv.SetPipelineJobs(path, gitlabtest.JobSpec{Name: "build", Stage: "build"}, gitlabtest.JobSpec{Name: "lint", Stage: "test", AllowFailure: true})
	w := &world{t: t, srv: srv, project: url.PathEscape(path), checked: map[string]bool{}}
	tok := srv.Token

	// Commits, diffs, compare, tree, branches, files.
	commitCreate := endpoint{name: "POST /projects/:id/repository/commits", status: 201,
		docs: []doc{{"commit_create.json", ""}}, contract: contract{reads: []string{"id"}}}
	a := w.do(tok, "POST", "/projects/:id/repository/commits", map[string]any{"branch": "feature", "start_branch": "main",
		"commit_message": "Add files", "author_name": "A Person", "author_email": "person@example.com", "actions": []map[string]any{
			{"action": "create", "file_path": "a.txt", "content": "a\n"},
			{"action": "create", "file_path": "dir/b.txt", "content": "b\n", "execute_filemode": true}}})
	w.check(commitCreate, a)
	a = w.do(tok, "POST", "/projects/:id/repository/commits", map[string]any{"branch": "feature", "commit_message": "Change files",
		"actions": []map[string]any{
			{"action": "update", "file_path": "a.txt", "content": "a2\n"},
			{"action": "move", "previous_path": "dir/b.txt", "file_path": "dir/c.txt"},
			{"action": "create", "file_path": "d.txt", "content": "d\n"}}})
	w.check(commitCreate, a)
	var head struct {
		ID string `json:"id"`
	}
	a.json(t, &head)

	diff := endpoint{name: "GET /projects/:id/repository/commits/:sha/diff", status: 200, paged: true,
		docs: []doc{{"commit_diff.json", ""}}, contract: contract{reads: elements(diffReads...)}}
	a = w.do(tok, "GET", "/projects/:id/repository/commits/"+head.ID+"/diff?per_page=2", nil)
	w.check(diff, a)
	if got := a.header.Get("X-Next-Page"); got != "2" {
		t.Errorf("%s: X-Next-Page %q with 3 changes 2 a page, want 2", diff.name, got)
	}
	compareReads := []string{"compare_timeout"}
	for _, p := range diffReads {
		compareReads = append(compareReads, "diffs[]."+p)
	}
	w.check(endpoint{name: "GET /projects/:id/repository/compare", status: 200, docs: []doc{{"compare.json", ""}},
		contract: contract{reads: compareReads}},
		w.do(tok, "GET", "/projects/:id/repository/compare?from=main&to=feature&straight=true", nil))

	tree := endpoint{name: "GET /projects/:id/repository/tree", status: 200, docs: []doc{{"tree.json", ""}},
		contract: contract{reads: elements("path", "mode")}}
	a = w.do(tok, "GET", "/projects/:id/repository/tree?ref=feature&recursive=true&pagination=keyset&per_page=2", nil)
	w.check(tree, a)
	if !strings.Contains(a.header.Get("Link"), `rel="next"`) {
		t.Errorf("%s with pagination=keyset: Link %q, want a rel=\"next\" link", tree.name, a.header.Get("Link"))
	}
	tree.paged = true
	w.check(tree, w.do(tok, "GET", "/projects/:id/repository/tree?ref=feature&recursive=true&per_page=2", nil))
	// One directory, as a push lists those on the way to its paths: the
	// documented example is such a listing (path=files).
	tree.paged = false
	a = w.do(tok, "GET", "/projects/:id/repository/tree?ref=feature&path=dir&pagination=keyset&per_page=100", nil)
	w.check(tree, a)
	var listed []struct{ Path, Type string }
	a.json(t, &listed)
	if len(listed) != 1 || listed[0].Path != "dir/c.txt" || listed[0].Type != "blob" {
		t.Errorf("%s?path=dir = %+v, want dir/c.txt alone, by its path from the root", tree.name, listed)
	}
	w.checkStatus("GET /projects/:id/repository/tree?path=no-such-dir", 404,
		w.do(tok, "GET", "/projects/:id/repository/tree?ref=feature&path=no-such-dir", nil))

	w.check(endpoint{name: "GET /projects/:id/repository/branches/:branch", status: 200, docs: []doc{{"branch_single.json", ""}},
		contract: contract{reads: []string{"commit.id"}}},
		w.do(tok, "GET", "/projects/:id/repository/branches/feature", nil))
	a = w.do(tok, "GET", "/projects/:id/repository/files/"+url.PathEscape("dir/c.txt")+"/raw?ref=feature", nil)
	w.checkStatus("GET /projects/:id/repository/files/:file_path/raw", 200, a)
	if string(a.body) != "b\n" {
		t.Errorf("raw file: %q, want %q", a.body, "b\n")
	}

	// Pipelines and jobs: the feature head's pipeline, one job failed and
	// retried, one passed.
	pipelines := endpoint{name: "GET /projects/:id/pipelines", status: 200, paged: true,
		docs: []doc{{"pipelines_list.json", ""}}, contract: contract{reads: elements("id", "sha")}}
	a = w.do(tok, "GET", "/projects/:id/pipelines?sha="+head.ID+"&order_by=id&sort=desc&per_page=1", nil)
	w.check(pipelines, a)
	var pls []struct {
		ID int64 `json:"id"`
	}
	a.json(t, &pls)
	if len(pls) != 1 {
		t.Fatalf("pipelines of %s: %s", head.ID, a.body)
	}
	pl := pls[0].ID
	var build, lint int64
	for _, j := range srv.PipelineJobs(path, pl) {
		switch j.Name {
		case "build":
			build = j.ID
		case "lint":
			lint = j.ID
		}
	}
	srv.StartJob(path, build)
	srv.FinishJob(path, build, "failed", "script_failure", "build log\n")
	srv.StartJob(path, lint)
	srv.FinishJob(path, lint, "success", "", "")
	w.check(endpoint{name: "GET /projects/:id/pipelines/:pipeline_id", status: 200, docs: []doc{{"pipeline_single.json", ""}}},
		w.do(tok, "GET", fmt.Sprintf("/projects/:id/pipelines/%d", pl), nil))

	jobDocs := []doc{{"job_single.json", ""}, {"job_keep_artifacts.json", ""}}
	jobContract := contract{reads: jobReads, nullable: []string{"finished_at"}, optional: []string{"failure_reason"}}
	retry := endpoint{name: "POST /projects/:id/jobs/:job_id/retry", status: 201, docs: jobDocs, contract: contract{reads: []string{"id"}}}
	w.check(retry, w.do(tok, "POST", fmt.Sprintf("/projects/:id/jobs/%d/retry", build), nil))
	w.check(endpoint{name: "GET /projects/:id/pipelines/:pipeline_id/jobs", status: 200, paged: true,
		docs:     []doc{{"jobs_pipeline_list.json", ""}, {"job_keep_artifacts.json", "list"}},
		contract: contract{reads: elements(jobReads...), nullable: elements("finished_at"), optional: elements("failure_reason")}},
		w.do(tok, "GET", fmt.Sprintf("/projects/:id/pipelines/%d/jobs?include_retried=true&per_page=100", pl), nil))
	w.check(endpoint{name: "GET /projects/:id/jobs/:job_id", status: 200, docs: jobDocs, contract: jobContract},
		w.do(tok, "GET", fmt.Sprintf("/projects/:id/jobs/%d", build), nil))
	a = w.do(tok, "GET", fmt.Sprintf("/projects/:id/jobs/%d/trace", build), nil)
	w.checkStatus("GET /projects/:id/jobs/:job_id/trace", 200, a)
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || string(a.body) != "build log\n" {
		t.Errorf("trace: %q (%s), want the log as text/plain", a.body, ct)
	}

	// A merge request, reviewed and approved by another user.
	a = w.do(tok, "POST", "/projects/:id/merge_requests", map[string]any{"source_branch": "feature", "target_branch": "main",
		"title": "Feature", "description": "Closes #1", "labels": "bug,ui"})
	w.check(endpoint{name: "POST /projects/:id/merge_requests", status: 201,
		docs:     []doc{{"merge_request_create.json", ""}, {"merge_request_single.json", ""}},
		contract: contract{reads: mergeRequestReads, nullable: []string{"head_pipeline"}}}, a)
	var mr struct {
		IID int64 `json:"iid"`
	}
	a.json(t, &mr)
	mrPath := fmt.Sprintf("/projects/:id/merge_requests/%d", mr.IID)

	reviewerToken := srv.AddUser("reviewer")
	user := endpoint{name: "GET /user", status: 200, docs: []doc{{"user_current.json", ""}},
		contract: contract{reads: []string{"id", "username"}}}
	a = w.do(reviewerToken, "GET", "/user", nil)
	w.check(user, a)
	var reviewer struct {
		ID int64 `json:"id"`
	}
	a.json(t, &reviewer)
	w.check(endpoint{name: "PUT /projects/:id/merge_requests/:merge_request_iid", status: 200,
		docs:     []doc{{"merge_request_update.json", ""}, {"merge_request_single.json", ""}},
		contract: contract{reads: mergeRequestReads, nullable: []string{"head_pipeline"}}},
		w.do(tok, "PUT", mrPath, map[string]any{"reviewer_ids": []int64{reviewer.ID}}))
	w.check(endpoint{name: "POST /projects/:id/merge_requests/:merge_request_iid/approve", status: 201,
		docs: []doc{{"merge_request_approve.json", ""}}},
		w.do(reviewerToken, "POST", mrPath+"/approve", map[string]any{"sha": head.ID}))
	w.check(endpoint{name: "GET /projects/:id/merge_requests/:merge_request_iid/approvals", status: 200,
		docs:     []doc{{"merge_request_approvals.json", ""}},
		contract: contract{reads: []string{"approved_by", "approved", "user_has_approved"}, undocumented: approvalsUndocumented}},
		w.do(tok, "GET", mrPath+"/approvals", nil))
	w.check(endpoint{name: "GET /projects/:id/merge_requests/:merge_request_iid/reviewers", status: 200, paged: true,
		docs: []doc{{"merge_request_reviewers.json", ""}}, contract: contract{reads: elements("user.id", "state")}},
		w.do(tok, "GET", mrPath+"/reviewers", nil))
	// The merge request has a head pipeline: here it must be there.
	w.check(endpoint{name: "GET /projects/:id/merge_requests/:merge_request_iid", status: 200,
		docs:     []doc{{"merge_request_single.json", ""}, {"merge_requests_list.json", "elem"}},
		contract: contract{reads: mergeRequestGetReads}},
		w.do(tok, "GET", mrPath, nil))
	mrList := endpoint{name: "GET /projects/:id/merge_requests", status: 200, paged: true,
		docs: []doc{{"merge_requests_list.json", ""}}, contract: contract{reads: mergeRequestListReads}}
	w.check(mrList, w.do(tok, "GET", "/projects/:id/merge_requests?state=opened&order_by=created_at&sort=asc&per_page=100", nil))
	w.check(mrList, w.do(tok, "GET", "/projects/:id/merge_requests?source_branch=feature&target_branch=main&state=all&order_by=created_at&sort=desc", nil))

	// Notes on the merge request.
	noteDocs := []doc{{"note_merge_request_single.json", ""}, {"notes_issue_list.json", "elem"}}
	a = w.do(tok, "POST", mrPath+"/notes", map[string]any{"body": "Looks good"})
	w.check(endpoint{name: "POST /projects/:id/merge_requests/:merge_request_iid/notes", status: 201, docs: noteDocs,
		contract: contract{reads: []string{"id"}}}, a)
	var note struct {
		ID int64 `json:"id"`
	}
	a.json(t, &note)
	w.check(endpoint{name: "PUT /projects/:id/merge_requests/:merge_request_iid/notes/:note_id", status: 200, docs: noteDocs},
		w.do(tok, "PUT", fmt.Sprintf("%s/notes/%d", mrPath, note.ID), map[string]any{"body": "Looks good to me"}))
	w.check(endpoint{name: "GET /projects/:id/merge_requests/:merge_request_iid/notes", status: 200, paged: true,
		docs: []doc{{"notes_issue_list.json", ""}, {"note_merge_request_single.json", "list"}}},
		w.do(tok, "GET", mrPath+"/notes", nil))

	// An issue, its notes, and its closing.
	a = w.do(tok, "POST", "/projects/:id/issues", map[string]any{"title": "It breaks", "description": "Steps", "labels": "bug",
		"issue_type": "issue"})
	w.check(endpoint{name: "POST /projects/:id/issues", status: 201,
		docs:     []doc{{"issue_create.json", ""}, {"issue_single.json", ""}},
		contract: contract{reads: issueReads}}, a)
	var is struct {
		IID int64 `json:"iid"`
	}
	a.json(t, &is)
	issuePath := fmt.Sprintf("/projects/:id/issues/%d", is.IID)
	w.check(endpoint{name: "GET /projects/:id/issues/:issue_iid", status: 200, docs: []doc{{"issue_single.json", ""}},
		contract: contract{reads: issueReads}}, w.do(tok, "GET", issuePath, nil))
	w.check(endpoint{name: "GET /projects/:id/issues", status: 200, paged: true, docs: []doc{{"issues_list.json", ""}},
		contract: contract{reads: elements(issueReads...)}},
		w.do(tok, "GET", "/projects/:id/issues?state=opened&issue_type=issue&confidential=false&order_by=created_at&sort=asc&per_page=100", nil))
	w.check(endpoint{name: "POST /projects/:id/issues/:issue_iid/notes", status: 201, docs: []doc{{"notes_issue_list.json", "elem"}},
		contract: contract{reads: []string{"id"}}}, w.do(tok, "POST", issuePath+"/notes", map[string]any{"body": "Seen it"}))
	w.check(endpoint{name: "GET /projects/:id/issues/:issue_iid/notes", status: 200, paged: true,
		docs: []doc{{"notes_issue_list.json", ""}}}, w.do(tok, "GET", issuePath+"/notes", nil))
	w.check(endpoint{name: "PUT /projects/:id/issues/:issue_iid", status: 200,
		docs: []doc{{"issue_edit.json", ""}, {"issue_single.json", ""}}},
		w.do(tok, "PUT", issuePath, map[string]any{"state_event": "close"}))

	// A project hook.
	hookDocs := []doc{{"project_hook_single.json", ""}}
	a = w.do(tok, "POST", "/projects/:id/hooks", map[string]any{"url": "http://127.0.0.1:1/hook", "token": "s3cret",
		"merge_requests_events": true, "issues_events": true, "pipeline_events": true, "job_events": true, "note_events": false,
		"push_events": true})
	w.check(endpoint{name: "POST /projects/:id/hooks", status: 201, docs: hookDocs}, a)
	var hook struct {
		ID int64 `json:"id"`
	}
	a.json(t, &hook)
	w.check(endpoint{name: "GET /projects/:id/hooks", status: 200, paged: true, docs: []doc{{"project_hook_single.json", "list"}},
		contract: contract{reads: elements(hookReads...)}}, w.do(tok, "GET", "/projects/:id/hooks?page=1&per_page=100", nil))
	w.check(endpoint{name: "PUT /projects/:id/hooks/:hook_id", status: 200, docs: hookDocs},
		w.do(tok, "PUT", fmt.Sprintf("/projects/:id/hooks/%d", hook.ID), map[string]any{"url": "http://127.0.0.1:1/hook",
			"token": "s3cret", "note_events": false}))
	w.checkStatus("DELETE /projects/:id/hooks/:hook_id", 204, w.do(tok, "DELETE", fmt.Sprintf("/projects/:id/hooks/%d", hook.ID), nil))

	// Projects and the token's user.
	w.check(endpoint{name: "GET /projects", status: 200, paged: true, docs: []doc{{"project_single.json", "list"}},
		contract: contract{reads: elements("path_with_namespace")}},
		w.do(tok, "GET", "/projects?membership=true&page=1&per_page=100", nil))
	projectDocs := []doc{{"project_single.json", ""}}
	w.check(endpoint{name: "GET /projects/:id", status: 200, docs: projectDocs, contract: contract{reads: []string{"default_branch"}}},
		w.do(tok, "GET", "/projects/:id", nil))
	w.check(endpoint{name: "PUT /projects/:id", status: 200, docs: projectDocs},
		w.do(tok, "PUT", "/projects/:id", map[string]any{"merge_method": "merge"}))
	w.check(user, w.do(tok, "GET", "/user", nil))

	// The merge, and the source branch deleted after it.
	w.check(endpoint{name: "PUT /projects/:id/merge_requests/:merge_request_iid/merge", status: 200,
		docs:     []doc{{"merge_request_merge.json", ""}, {"merge_request_single.json", ""}},
		contract: contract{reads: mergeRequestReads, nullable: []string{"head_pipeline"}}},
		w.do(tok, "PUT", mrPath+"/merge", map[string]any{"sha": head.ID}))
	w.checkStatus("DELETE /projects/:id/repository/branches/:branch", 204,
		w.do(tok, "DELETE", "/projects/:id/repository/branches/feature", nil))

	t.Logf("%d endpoints held against GitLab's documented shapes", len(w.checked))
}
