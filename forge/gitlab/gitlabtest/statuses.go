package gitlabtest

import (
	"encoding/json"
	"net/http"
	"slices"
)

// Commit statuses, as GitLab's commits API has them
// (lib/api/commit_statuses.rb): every job of a commit's pipelines is one,
// named by the job, and a person or an external system sets more with
// POST /projects/:id/statuses/:sha (state pending, running, success,
// failed or canceled, name default "default"); setting a name again
// replaces its state. GET /projects/:id/repository/commits/:sha/statuses
// lists them without the runs a retry replaced (all=false), paged. The
// external pipeline GitLab makes for them, and its hook, are not
// modelled.

// statusBase is added to an external status's sequence number to make
// its id, apart from job ids as GitLab's share one table.
const statusBase = 900000

type extStatus struct {
	id                           int64
	sha, name, status, targetURL string
}

// SetStatus sets commit sha's status name, as an external system does
// through the API.
func (s *Server) SetStatus(path, sha, name, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setStatus(s.projects[path], sha, name, state, "")
}

func (s *Server) setStatus(p *project, sha, name, state, target string) *extStatus {
	for _, st := range p.statuses {
		if st.sha == sha && st.name == name {
			st.status, st.targetURL = state, target
			return st
		}
	}
	st := &extStatus{id: statusBase + int64(len(p.statuses)) + 1, sha: sha, name: name, status: state, targetURL: target}
	p.statuses = append(p.statuses, st)
	return st
}

// postStatus answers POST /projects/:id/statuses/:sha.
func (s *Server) postStatus(r *http.Request, p *project, sha string) (int, any, *apiError) {
	var req struct {
		State     string `json:"state"`
		Name      string `json:"name"`
		Context   string `json:"context"`
		TargetURL string `json:"target_url"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return 0, nil, fail(400, "400 Bad request - "+err.Error())
	}
	if p.commits[sha] == nil {
		return 0, nil, fail(404, "404 References for commit Not Found")
	}
	if !slices.Contains([]string{"pending", "running", "success", "failed", "canceled"}, req.State) {
		return 0, nil, fail(400, "state does not have a valid value")
	}
	name := req.Name
	if name == "" {
		name = req.Context
	}
	if name == "" {
		name = "default"
	}
	st := s.setStatus(p, sha, name, req.State, req.TargetURL)
	return http.StatusCreated, statusJSON(st.id, sha, name, st.status, st.targetURL, false), nil
}

// commitStatuses answers GET /projects/:id/repository/commits/:sha/statuses.
func (s *Server) commitStatuses(r *http.Request, p *project, sha string) (int, any, *apiError) {
	if p.commits[sha] == nil {
		return 0, nil, fail(404, "404 Commit Not Found")
	}
	out := []any{}
	for _, pl := range p.pipelines {
		if pl.sha != sha {
			continue
		}
		for _, j := range pl.jobs {
			if !j.retried || r.URL.Query().Get("all") == "true" {
				out = append(out, statusJSON(j.id, sha, j.name, j.status, "", j.allowFailure))
			}
		}
	}
	for _, st := range p.statuses {
		if st.sha == sha {
			out = append(out, statusJSON(st.id, sha, st.name, st.status, st.targetURL, false))
		}
	}
	return page(r, out)
}

func statusJSON(id int64, sha, name, status, target string, allowFailure bool) map[string]any {
	var t any
	if target != "" {
		t = target
	}
	return map[string]any{"id": id, "sha": sha, "ref": nil, "status": status, "name": name, "target_url": t,
		"description": nil, "allow_failure": allowFailure, "coverage": nil, "created_at": nil, "started_at": nil, "finished_at": nil}
}
