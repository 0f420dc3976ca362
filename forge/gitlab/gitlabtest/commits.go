package gitlabtest

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
)

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
		AuthorName    string       `json:"author_name"`
		AuthorEmail   string       `json:"author_email"`
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
	files := maps.Clone(base.files)
	for i, a := range req.Actions {
		if err := applyAction(files, i, a); err != nil {
			return 0, nil, err
		}
	}
	c := s.newCommit(p, files, base.sha)
	s.moveBranch(p, req.Branch, c.sha)
	title, _, _ := strings.Cut(req.CommitMessage, "\n")
	at := c.at.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	authorName, authorEmail := cmp.Or(req.AuthorName, caller(r)), cmp.Or(req.AuthorEmail, caller(r)+"@example.com")
	return http.StatusCreated, map[string]any{"id": c.sha, "short_id": c.sha[:8], "title": title,
		"message": req.CommitMessage, "parent_ids": c.parents, "author_name": authorName, "author_email": authorEmail,
		"committer_name": caller(r), "committer_email": caller(r) + "@example.com", "created_at": at, "authored_date": at,
		"committed_date": at, "status": nil,
		"web_url": fmt.Sprintf("%s/%s/-/commit/%s", s.URL, p.path, c.sha)}, nil
}

// applyAction applies one commit action to files, as Gitaly does: the
// commit is atomic, so the first error refuses the whole request.
func applyAction(files map[string]file, i int, a actionBody) *apiError {
	content := ""
	if a.Content != nil {
		content = *a.Content
		switch a.Encoding {
		case "", "text":
		case "base64":
			b, err := base64.StdEncoding.DecodeString(content)
			if err != nil {
				return fail(400, fmt.Sprintf("actions[%d][content] is not valid base64", i))
			}
			content = string(b)
		default:
			return fail(400, fmt.Sprintf("actions[%d][encoding] must be text or base64", i))
		}
	}
	old, has := files[a.FilePath]
	switch a.Action {
	case "create":
		if has {
			return fail(400, "A file with this name already exists")
		}
		files[a.FilePath] = file{content: content, exec: a.ExecuteFilemode != nil && *a.ExecuteFilemode}
	case "update":
		if !has {
			return fail(400, "A file with this name doesn't exist")
		}
		if a.Content == nil {
			return fail(400, fmt.Sprintf("actions[%d][content] is required for update action", i))
		}
		// execute_filemode is not applied on update: the mode stays.
		files[a.FilePath] = file{content: content, exec: old.exec}
	case "delete":
		if !has {
			return fail(400, "A file with this name doesn't exist")
		}
		delete(files, a.FilePath)
	case "move":
		if a.PreviousPath == "" {
			return fail(400, fmt.Sprintf("actions[%d][previous_path] is required for move action", i))
		}
		moved, ok := files[a.PreviousPath]
		if !ok {
			return fail(400, "A file with this name doesn't exist")
		}
		if _, taken := files[a.FilePath]; taken && a.FilePath != a.PreviousPath {
			return fail(400, "A file with this name already exists")
		}
		delete(files, a.PreviousPath)
		if a.Content != nil {
			moved.content = content
		}
		// execute_filemode is not applied on move: the mode moves along.
		files[a.FilePath] = moved
	case "chmod":
		if !has {
			return fail(400, "A file with this name doesn't exist")
		}
		if a.ExecuteFilemode == nil {
			return fail(400, fmt.Sprintf("actions[%d][execute_filemode] is missing", i))
		}
		files[a.FilePath] = file{content: old.content, exec: *a.ExecuteFilemode}
	default:
		return fail(400, fmt.Sprintf("actions[%d][action] must be one of: create, update, move, delete, chmod", i))
	}
	return nil
}

// commitDiff answers GET /projects/:id/repository/commits/:sha/diff: the
// commit's tree against its first parent's, a page at a time as GitLab's
// offset pagination has it (Kaminari.paginate_array: every X- header).
func (s *Server) commitDiff(r *http.Request, p *project, sha string) (int, any, *apiError) {
	c := p.commits[sha]
	if c == nil {
		return 0, nil, fail(404, "404 Commit Not Found")
	}
	var before map[string]file
	if len(c.parents) > 0 {
		before = p.commits[c.parents[0]].files
	}
	diffs := []any{}
	for _, d := range treeDiff(before, c.files, true) {
		diffs = append(diffs, d)
	}
	return page(r, diffs)
}

// compare answers GET /projects/:id/repository/compare. straight=true
// diffs the tree of from against the tree of to (from..to); the default
// diffs from their merge base (from...to), as GitLab does.
func (s *Server) compare(r *http.Request, p *project) (int, any, *apiError) {
	q := r.URL.Query()
	from, to := p.resolve(q.Get("from")), p.resolve(q.Get("to"))
	if from == nil || to == nil {
		return 0, nil, fail(404, "404 Ref Not Found")
	}
	base := from
	if q.Get("straight") != "true" {
		base = p.commits[p.mergeBase(from.sha, to.sha)]
		if base == nil {
			base = &commit{}
		}
	}
	var commits []any
	for sha := range p.ancestors(to.sha) {
		if !p.isAncestor(sha, base.sha) {
			commits = append(commits, map[string]any{"id": sha, "short_id": sha[:8]})
		}
	}
	diffs := treeDiff(base.files, to.files, true)
	if diffs == nil {
		diffs = []map[string]any{}
	}
	if commits == nil {
		commits = []any{}
	}
	return 200, map[string]any{"commit": map[string]any{"id": to.sha, "short_id": to.sha[:8]}, "commits": commits, "diffs": diffs,
		"compare_timeout": false, "compare_same_ref": from.sha == to.sha,
		"web_url": fmt.Sprintf("%s/%s/-/compare/%s...%s", s.URL, p.path, from.sha, to.sha)}, nil
}
