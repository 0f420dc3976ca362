package gitlabtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// issue is a project's issue. Issues have their own iid sequence, apart
// from merge requests'.
type issue struct {
	iid                int64
	title, description string
	labels             []string
	author             string
	state              string // opened, closed
	issueType          string // issue, incident, test_case, task
	confidential       bool
	createdAt          time.Time
	updatedAt          time.Time
	closedAt           time.Time // zero unless closed
	notes              []*note
}

// workItemType is the hook's "type" of the issue: GitLab's work item type
// name.
func (is *issue) workItemType() string {
	switch is.issueType {
	case "incident":
		return "Incident"
	case "test_case":
		return "TestCase"
	case "task":
		return "Task"
	}
	return "Issue"
}

func (s *Server) issueJSON(p *project, is *issue) map[string]any {
	return map[string]any{"id": 2000 + is.iid, "iid": is.iid, "project_id": p.id, "title": is.title, "description": is.description,
		"state": is.state, "labels": orEmpty(is.labels), "author": s.userJSON(is.author), "issue_type": is.issueType,
		"type":         map[string]string{"issue": "ISSUE", "incident": "INCIDENT", "test_case": "TEST_CASE", "task": "TASK"}[is.issueType],
		"confidential": is.confidential, "created_at": is.createdAt.UTC().Format(time.RFC3339Nano),
		"updated_at": is.updatedAt.UTC().Format(time.RFC3339Nano), "closed_at": timeJSON(is.closedAt),
		"assignees": []any{}, "assignee": nil, "user_notes_count": len(is.notes),
		"references": map[string]any{"short": fmt.Sprintf("#%d", is.iid), "relative": fmt.Sprintf("#%d", is.iid),
			"full": fmt.Sprintf("%s#%d", p.path, is.iid)},
		"web_url": fmt.Sprintf("%s/%s/-/issues/%d", s.URL, p.path, is.iid)}
}

// issues answers /projects/:id/issues[/:iid]: the list (state, issue_type
// and confidential filters, order_by created_at or updated_at, paged),
// one issue, creation (as the token's user) and edits (title,
// description, labels, state_event close or reopen), and its notes, whose
// /close closes it.
func (s *Server) issues(r *http.Request, p *project, rest []string) (int, any, *apiError) {
	if len(rest) == 0 {
		switch r.Method {
		case "GET":
			return s.listIssues(r, p)
		case "POST":
			var req struct {
				Title        string `json:"title"`
				Description  string `json:"description"`
				Labels       any    `json:"labels"`
				IssueType    string `json:"issue_type"`
				Confidential bool   `json:"confidential"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || strings.TrimSpace(req.Title) == "" {
				return 0, nil, fail(400, "title is missing")
			}
			it := req.IssueType
			if it == "" {
				it = "issue"
			}
			if !slices.Contains([]string{"issue", "incident", "test_case", "task"}, it) {
				return 0, nil, fail(400, "issue_type does not have a valid value")
			}
			now := s.now()
			description, commands := ExtractQuickActions(req.Description)
			is := &issue{iid: int64(len(p.issues) + 1), title: req.Title, description: description, labels: labelList(req.Labels),
				author: caller(r), state: "opened", issueType: it, confidential: req.Confidential, createdAt: now, updatedAt: now}
			p.issues = append(p.issues, is)
			s.issueEvent(p, is, "open")
			s.runQuickActions(p, fmt.Sprintf("#%d", is.iid), caller(r), commands, s.issueQuickAction(p, is))
			return http.StatusCreated, s.issueJSON(p, is), nil
		}
		return 0, nil, fail(404, "404 Not Found")
	}
	iid, err := strconv.ParseInt(rest[0], 10, 64)
	if err == nil && iid >= 1 && int(iid) <= len(p.issues) && len(rest) == 3 && rest[1] == "notes" && r.Method == "PUT" {
		// An edit of a note (PUT …/issues/:iid/notes/:note_id): its quick
		// actions run as a new note's do.
		is := p.issues[iid-1]
		id, _ := strconv.ParseInt(rest[2], 10, 64)
		i := slices.IndexFunc(is.notes, func(n *note) bool { return n.id == id })
		if i < 0 {
			return 0, nil, fail(404, "404 Note Not Found")
		}
		var req struct {
			Body string `json:"body"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		n := is.notes[i]
		n.body, _ = quickActions(req.Body, map[string]func(){"close": func() { s.setIssueState(p, is, "close") }})
		n.updatedAt = s.now()
		return 200, s.noteJSON(p, n, "Issue", 2000+is.iid, is.iid), nil
	}
	if err != nil || iid < 1 || int(iid) > len(p.issues) || len(rest) > 2 || (len(rest) == 2 && rest[1] != "notes") {
		return 0, nil, fail(404, "404 Not found")
	}
	is := p.issues[iid-1]
	if len(rest) == 2 {
		return s.notes(r, p, &is.notes, "Issue", 2000+is.iid, is.iid, map[string]func(){"close": func() { s.setIssueState(p, is, "close") }})
	}
	switch r.Method {
	case "GET":
		return 200, s.issueJSON(p, is), nil
	case "PUT":
		var req struct {
			Title       *string `json:"title"`
			Description *string `json:"description"`
			Labels      any     `json:"labels"`
			StateEvent  string  `json:"state_event"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Title != nil {
			is.title = *req.Title
		}
		var commands [][2]string
		if req.Description != nil {
			is.description, commands = ExtractQuickActions(*req.Description)
		}
		if req.Labels != nil {
			is.labels = labelList(req.Labels)
		}
		s.setIssueState(p, is, req.StateEvent)
		s.runQuickActions(p, fmt.Sprintf("#%d", is.iid), caller(r), commands, s.issueQuickAction(p, is))
		return 200, s.issueJSON(p, is), nil
	}
	return 0, nil, fail(404, "404 Not Found")
}

// setIssueState applies a state_event (close, reopen, or "" for none) to
// an edited issue: an event that changes nothing is an update, as
// closing a closed issue is on GitLab.
func (s *Server) setIssueState(p *project, is *issue, event string) {
	action := "update"
	switch {
	case event == "close" && is.state == "opened":
		is.state, action, is.closedAt = "closed", "close", s.now()
	case event == "reopen" && is.state == "closed":
		is.state, action, is.closedAt = "opened", "reopen", time.Time{}
	}
	is.updatedAt = s.now()
	s.issueEvent(p, is, action)
}

func (s *Server) listIssues(r *http.Request, p *project) (int, any, *apiError) {
	q := r.URL.Query()
	list := slices.Clone(p.issues)
	if q.Get("order_by") == "updated_at" {
		slices.SortStableFunc(list, func(a, b *issue) int { return a.updatedAt.Compare(b.updatedAt) })
	}
	if q.Get("sort") != "asc" {
		slices.Reverse(list) // newest first, GitLab's default
	}
	out := []any{}
	for _, is := range list {
		if st := q.Get("state"); st != "" && st != "all" && st != is.state {
			continue
		}
		if it := q.Get("issue_type"); it != "" && it != is.issueType {
			continue
		}
		if c := q.Get("confidential"); c != "" && c != strconv.FormatBool(is.confidential) {
			continue
		}
		out = append(out, s.issueJSON(p, is))
	}
	return page(r, out)
}

// CreateIssueOfType makes an issue of another type than issue (incident,
// test_case, task), or a confidential one, as a person in GitLab's UI
// would, and returns its iid.
func (s *Server) CreateIssueOfType(project, title, issueType string, confidential bool) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[project]
	now := s.now()
	is := &issue{iid: int64(len(p.issues) + 1), title: title, author: s.User, state: "opened", issueType: issueType,
		confidential: confidential, createdAt: now, updatedAt: now}
	p.issues = append(p.issues, is)
	s.issueEvent(p, is, "open")
	return is.iid
}
