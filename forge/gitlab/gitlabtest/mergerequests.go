package gitlabtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"
)

type mergeRequest struct {
	iid                int64
	title, description string
	source, target     string
	sourceProjectID    int    // != the project's id for a fork's merge request
	forkHead           string // a fork's source head, fetched into the target project as GitLab does
	labels             []string
	state              string // opened, closed, merged, locked
	checked            bool   // mergeability computed since the last change
	baseSHA, startSHA  string // diff_refs of the latest diff: merge base, and the target head then
	mergeCommit        string
	mergedHead         string // the head at the merge: GitLab keeps a merged merge request's sha when its branch goes
	createdAt          time.Time
	updatedAt          time.Time
	closedAt, mergedAt time.Time // zero unless closed, merged
	notes              []*note
	author             string
	approvedBy         []string          // usernames, in the order they approved
	reviewers          map[string]string // username → reviewer state (unreviewed, reviewed, requested_changes, approved, unapproved)
}

// changesRequested reports whether a reviewer's state requests changes.
func (mr *mergeRequest) changesRequested() bool {
	for _, st := range mr.reviewers {
		if st == "requested_changes" {
			return true
		}
	}
	return false
}

// head is the merge request's source head ("" when the branch is gone),
// or for a merged one the head it was merged at.
func (mr *mergeRequest) head(p *project) string {
	if mr.forkHead != "" {
		return mr.forkHead
	}
	if mr.mergedHead != "" {
		return mr.mergedHead
	}
	return p.branches[mr.source]
}

// reloadDiff recomputes diff_refs, as GitLab does on creation and on every
// push to the source branch; a push to the target does not reload them, so
// base_sha stays the branch's fork point when the target moves.
func (mr *mergeRequest) reloadDiff(p *project) {
	head, target := mr.head(p), p.branches[mr.target]
	mr.baseSHA, mr.startSHA = p.mergeBase(target, head), target
}

// moveBranch points branch at sha after a push, and does what GitLab's
// refresh does for the merge requests concerned: a new diff for those from
// the branch, a recheck for those into it, and webhook events.
func (s *Server) moveBranch(p *project, branch, sha string) {
	oldrev := p.branches[branch]
	p.branches[branch] = sha
	s.runPipeline(p, branch, sha, oldrev)
	for _, mr := range p.mrs {
		if mr.state != "opened" {
			continue
		}
		switch {
		case mr.source == branch && mr.forkHead == "":
			mr.reloadDiff(p)
			mr.checked, mr.updatedAt = false, s.now()
			s.mergeRequestEvent(p, mr, "update", oldrev)
		case mr.target == branch:
			mr.checked = false // GitLab marks them unchecked; their diff stays
		}
	}
}

// detailedMergeStatus is GitLab's detailed_merge_status for an open merge
// request: the first failing check, in GitLab's order (commits, conflict,
// then rebase), once the asynchronous check ran.
func (s *Server) detailedMergeStatus(p *project, mr *mergeRequest) string {
	if mr.state != "opened" {
		return "not_open"
	}
	if !mr.checked {
		return "checking"
	}
	status := s.gitMergeStatus(p, mr)
	if status == "commits_status" {
		return status
	}
	if ci := s.ciMergeStatus(p, mr); ci != "" {
		return ci // GitLab checks CI before conflicts and rebases
	}
	if status != "mergeable" || !mr.changesRequested() {
		return status
	}
	// Requested changes block the merge (GitLab 17.x), and show only once
	// the checks before them pass.
	return "requested_changes"
}

// gitMergeStatus is what Git says of merging the merge request now.
func (s *Server) gitMergeStatus(p *project, mr *mergeRequest) string {
	head, target := mr.head(p), p.branches[mr.target]
	if head == "" || target == "" || head == target {
		return "commits_status"
	}
	if _, conflicts := s.mergeTrees(p, mr); len(conflicts) > 0 {
		return "conflict"
	}
	if p.mergeMethod != MergeMethodMerge && !p.isAncestor(target, head) {
		return "need_rebase"
	}
	return "mergeable"
}

// mergeTrees merges the source head into the target head from their
// merge base.
func (s *Server) mergeTrees(p *project, mr *mergeRequest) (map[string]file, []string) {
	head, target := p.commits[mr.head(p)], p.commits[p.branches[mr.target]]
	var base map[string]file
	if b := p.commits[p.mergeBase(target.sha, head.sha)]; b != nil {
		base = b.files
	}
	return merge3(base, target.files, head.files)
}

func (s *Server) mergeRequests(r *http.Request, p *project, rest []string) (int, any, *apiError) {
	if len(rest) == 0 {
		if r.Method == "POST" {
			return s.createMR(r, p)
		}
		q := r.URL.Query()
		out := []any{}
		for _, mr := range p.mrs { // by creation: iid order
			if (q.Get("source_branch") == "" || q.Get("source_branch") == mr.source) &&
				(q.Get("target_branch") == "" || q.Get("target_branch") == mr.target) &&
				(q.Get("state") == "" || q.Get("state") == "all" || q.Get("state") == mr.state) {
				out = append(out, s.mrJSON(p, mr, false))
			}
		}
		if q.Get("sort") != "asc" {
			slices.Reverse(out) // newest first, GitLab's default
		}
		return page(r, out)
	}
	iid, err := strconv.ParseInt(rest[0], 10, 64)
	if err != nil || iid < 1 || int(iid) > len(p.mrs) {
		return 0, nil, fail(404, "404 Not found")
	}
	mr := p.mrs[iid-1]
	switch {
	case len(rest) == 1 && r.Method == "GET":
		out := s.mrJSON(p, mr, true)
		mr.checked = true // the asynchronous check finishes after the first look
		return 200, out, nil
	case len(rest) == 1 && r.Method == "PUT":
		return s.updateMR(r, p, mr)
	case len(rest) == 2 && rest[1] == "merge" && r.Method == "PUT":
		return s.acceptMR(r, p, mr)
	case len(rest) == 2 && rest[1] == "approvals" && r.Method == "GET":
		return 200, s.approvalsJSON(p, mr, caller(r)), nil
	case len(rest) == 2 && rest[1] == "approve" && r.Method == "POST":
		return s.approveMR(r, p, mr)
	case len(rest) == 2 && rest[1] == "unapprove" && r.Method == "POST":
		if !s.unapprove(p, mr, caller(r)) {
			return 0, nil, fail(404, "404 Not Found")
		}
		return http.StatusCreated, s.approvalsJSON(p, mr, caller(r)), nil
	case len(rest) == 2 && rest[1] == "reviewers" && r.Method == "GET":
		out := []any{}
		for _, name := range slices.Sorted(maps.Keys(mr.reviewers)) {
			out = append(out, map[string]any{"user": s.userJSON(name), "state": mr.reviewers[name],
				"created_at": mr.updatedAt.UTC().Format(time.RFC3339Nano)})
		}
		return page(r, out)
	case len(rest) == 2 && rest[1] == "notes" && (r.Method == "POST" || r.Method == "GET"):
		return s.notes(r, p, &mr.notes, "MergeRequest", 1000+mr.iid, mr.iid, s.noteCommands(p, mr, caller(r)))
	case len(rest) == 3 && rest[1] == "notes" && r.Method == "PUT":
		id, _ := strconv.ParseInt(rest[2], 10, 64)
		i := slices.IndexFunc(mr.notes, func(n *note) bool { return n.id == id })
		if i < 0 {
			return 0, nil, fail(404, "404 Note Not Found")
		}
		var req struct {
			Body string `json:"body"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		n := mr.notes[i]
		// An edited note runs its quick actions as a new one does
		// (Notes::UpdateService); the model keeps a note left empty.
		n.body, _ = quickActions(req.Body, s.noteCommands(p, mr, caller(r)))
		n.updatedAt = s.now()
		return 200, s.noteJSON(p, n, "MergeRequest", 1000+mr.iid, mr.iid), nil
	}
	return 0, nil, fail(404, "404 Not found")
}

// noteCommands are the quick actions a note of user on mr runs: /close,
// and /request_changes for a reviewer of it.
func (s *Server) noteCommands(p *project, mr *mergeRequest, user string) map[string]func() {
	commands := map[string]func(){"close": func() { s.setMRState(p, mr, "close", nil) }}
	if _, ok := mr.reviewers[user]; ok {
		commands["request_changes"] = func() { s.requestChanges(p, mr, user) }
	}
	return commands
}

// approveMR answers POST …/merge_requests/:iid/approve as GitLab does:
// 409 when sha is given and is not the head, then 401 when the caller
// already approved.
func (s *Server) approveMR(r *http.Request, p *project, mr *mergeRequest) (int, any, *apiError) {
	var req struct {
		SHA string `json:"sha"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	if head := mr.head(p); req.SHA != "" && req.SHA != head {
		return 0, nil, fail(409, "SHA does not match HEAD of source branch: "+head)
	}
	if !s.approve(p, mr, caller(r)) {
		return 0, nil, fail(401, "401 Unauthorized")
	}
	return http.StatusCreated, s.approvalsJSON(p, mr, caller(r)), nil
}

// createMR follows MergeRequests::BuildService and the API's
// handle_merge_request_errors!: a missing branch is a base error, 422 with
// the messages as an array; another open merge request for the same
// branches is 409.
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
	var missing []string
	for _, b := range []struct{ name, which string }{{req.SourceBranch, "Source"}, {req.TargetBranch, "Target"}} {
		if _, ok := p.branches[b.name]; !ok {
			missing = append(missing, fmt.Sprintf("%s branch \"%s\" does not exist", b.which, b.name))
		}
	}
	if missing != nil {
		return 0, nil, fail(422, missing)
	}
	for _, mr := range p.mrs {
		if mr.state == "opened" && mr.source == req.SourceBranch && mr.target == req.TargetBranch && mr.sourceProjectID == p.id {
			return 0, nil, fail(409, []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", mr.iid)})
		}
	}
	// GitLab saves the description without its quick actions, then runs
	// them as the caller.
	description, commands := ExtractQuickActions(req.Description)
	mr := s.addMR(p, req.Title, description, req.SourceBranch, req.TargetBranch, labelList(req.Labels), caller(r))
	s.runQuickActions(p, fmt.Sprintf("!%d", mr.iid), caller(r), commands, s.mergeRequestQuickAction(p, mr, caller(r)))
	return http.StatusCreated, s.mrJSON(p, mr, true), nil
}

func (s *Server) addMR(p *project, title, description, source, target string, labels []string, author string) *mergeRequest {
	mr := &mergeRequest{iid: int64(len(p.mrs) + 1), title: title, description: description, source: source,
		target: target, state: "opened", labels: labels, sourceProjectID: p.id, createdAt: s.now(), updatedAt: s.now(), author: author}
	mr.reloadDiff(p)
	p.mrs = append(p.mrs, mr)
	s.mergeRequestEvent(p, mr, "open", "")
	return mr
}

func (s *Server) updateMR(r *http.Request, p *project, mr *mergeRequest) (int, any, *apiError) {
	var req struct {
		Title       *string  `json:"title"`
		Description *string  `json:"description"`
		StateEvent  string   `json:"state_event"`
		ReviewerIDs *[]int64 `json:"reviewer_ids"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	if req.Title == nil && req.Description == nil && req.StateEvent == "" && req.ReviewerIDs == nil {
		return 0, nil, fail(400, "at least one parameter must be provided")
	}
	if req.Title != nil {
		mr.title = *req.Title
	}
	var commands [][2]string
	if req.Description != nil {
		// An edited description runs its quick actions as a new one does.
		mr.description, commands = ExtractQuickActions(*req.Description)
	}
	var changes map[string]any
	if req.ReviewerIDs != nil {
		changes = s.setReviewers(mr, *req.ReviewerIDs)
	}
	s.setMRState(p, mr, req.StateEvent, changes)
	s.runQuickActions(p, fmt.Sprintf("!%d", mr.iid), caller(r), commands, s.mergeRequestQuickAction(p, mr, caller(r)))
	return 200, s.mrJSON(p, mr, true), nil
}

// setMRState applies a state_event (close, reopen, or "" for none) to an
// edited merge request, and sends the hook with the edit's changes.
func (s *Server) setMRState(p *project, mr *mergeRequest, event string, changes map[string]any) {
	action := "update"
	switch event {
	case "close":
		if mr.state == "opened" {
			mr.state, action, mr.closedAt = "closed", "close", s.now()
		}
	case "reopen":
		// GitLab reopens only while the source branch exists.
		if mr.state == "closed" && mr.head(p) != "" {
			mr.state, mr.checked, action, mr.closedAt = "opened", false, "reopen", time.Time{}
			mr.reloadDiff(p)
		}
	}
	mr.updatedAt = s.now()
	s.mergeRequestEventWith(p, mr, action, "", changes)
}

// setReviewers makes the users of ids the reviewers, as reviewer_ids
// does: a new reviewer is unreviewed, one who stays keeps their state,
// ids of no user are left out. It returns the hook's changes.
func (s *Server) setReviewers(mr *mergeRequest, ids []int64) map[string]any {
	before := s.reviewersPayload(mr)
	reviewers := map[string]string{}
	for _, id := range ids {
		if name := s.userNamed(id); name != "" {
			reviewers[name] = cmp.Or(mr.reviewers[name], "unreviewed")
		}
	}
	mr.reviewers = reviewers
	return map[string]any{"reviewers": map[string]any{"previous": before, "current": s.reviewersPayload(mr)}}
}

// acceptMR answers PUT …/merge_requests/:iid/merge as GitLab 17.x does:
// 405 unless the merge request is in a mergeable state (open, its source
// branch there), 422 "Branch cannot be merged" when Git cannot merge it
// (conflict, or a rebase needed in a fast-forward or semi-linear project),
// then 409 when sha is not the head. GitLab runs the mergeability check
// synchronously here, so a merge right after a push can succeed. Newer
// releases check the sha first and answer 405 for what 17.x answers 422;
// the adapter treats 405, 406 and 422 alike.
func (s *Server) acceptMR(r *http.Request, p *project, mr *mergeRequest) (int, any, *apiError) {
	var req struct {
		SHA string `json:"sha"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	head := mr.head(p)
	if mr.state != "opened" || head == "" {
		return 0, nil, fail(405, "405 Method Not Allowed")
	}
	mr.checked = true
	if mr.changesRequested() || s.ciMergeStatus(p, mr) != "" {
		return 0, nil, fail(405, "405 Method Not Allowed")
	}
	switch s.gitMergeStatus(p, mr) {
	case "mergeable":
	case "commits_status":
		return 0, nil, fail(405, "405 Method Not Allowed")
	default:
		return 0, nil, fail(422, "Branch cannot be merged")
	}
	if req.SHA != "" && req.SHA != head {
		return 0, nil, fail(409, "SHA does not match HEAD of source branch: "+head)
	}
	s.merge(p, mr)
	return 200, s.mrJSON(p, mr, true), nil
}

// merge lands the merge request with the project's merge method: a merge
// commit (merge, rebase_merge) or a fast-forward (ff).
func (s *Server) merge(p *project, mr *mergeRequest) {
	head := mr.head(p)
	if p.mergeMethod == MergeMethodFF {
		mr.mergeCommit = ""
		s.moveBranch(p, mr.target, head)
	} else {
		files, _ := s.mergeTrees(p, mr)
		c := s.newCommit(p, files, p.branches[mr.target], head)
		mr.mergeCommit = c.sha
		s.moveBranch(p, mr.target, c.sha)
	}
	mr.state, mr.updatedAt, mr.mergedAt, mr.mergedHead = "merged", s.now(), s.now(), head
	s.mergeRequestEvent(p, mr, "merge", "")
}

func (s *Server) mrJSON(p *project, mr *mergeRequest, full bool) map[string]any {
	head := mr.head(p)
	out := map[string]any{"id": 1000 + mr.iid, "iid": mr.iid, "project_id": p.id, "title": mr.title, "description": mr.description,
		"state": mr.state, "source_branch": mr.source, "target_branch": mr.target, "labels": orEmpty(mr.labels),
		"source_project_id": mr.sourceProjectID, "target_project_id": p.id, "sha": head,
		"updated_at": mr.updatedAt.UTC().Format(time.RFC3339Nano), "author": s.userJSON(mr.author), "draft": false,
		"detailed_merge_status": s.detailedMergeStatus(p, mr),
		"web_url":               fmt.Sprintf("%s/%s/-/merge_requests/%d", s.URL, p.path, mr.iid),
		"created_at":            mr.createdAt.UTC().Format(time.RFC3339Nano), "merged_at": timeJSON(mr.mergedAt),
		"closed_at": timeJSON(mr.closedAt), "merge_commit_sha": nil, "squash_commit_sha": nil, "work_in_progress": false,
		"assignees": []any{}, "assignee": nil, "user_notes_count": len(mr.notes),
		"references": map[string]any{"short": fmt.Sprintf("!%d", mr.iid), "relative": fmt.Sprintf("!%d", mr.iid),
			"full": fmt.Sprintf("%s!%d", p.path, mr.iid)}}
	if mr.mergeCommit != "" {
		out["merge_commit_sha"] = mr.mergeCommit
	}
	reviewers := []any{}
	for _, name := range slices.Sorted(maps.Keys(mr.reviewers)) {
		reviewers = append(reviewers, s.userJSON(name))
	}
	out["reviewers"] = reviewers
	if full {
		status := s.detailedMergeStatus(p, mr)
		out["has_conflicts"] = status == "conflict"
		out["diff_refs"] = map[string]any{"base_sha": mr.baseSHA, "head_sha": head, "start_sha": mr.startSHA}
		// GitLab always sends head_pipeline, null when there is none; a
		// merged or closed merge request keeps the pipeline of its head
		// (MergeRequest#diff_head_pipeline).
		out["head_pipeline"] = nil
		if pl := s.headPipeline(p, mr); pl != nil {
			out["head_pipeline"] = s.pipelineJSON(p, pl, true)
		}
	}
	return out
}

// SetMergeRequestState sets a merge request's state as GitLab would on
// its own: "locked" while a merge is in progress, "opened" again after.
func (s *Server) SetMergeRequestState(project string, iid int64, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.projects[project].mrs[iid-1].state = state
}

// CreateForkMergeRequest opens a merge request into target from a fork of
// the project whose branch has the same name as source: its source
// project is the fork, and its head (fetched into the project, as GitLab
// does) adds fork.txt to target. It returns the merge request's iid.
func (s *Server) CreateForkMergeRequest(project, source, target, title string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[project]
	base := p.commits[p.branches[target]]
	files := maps.Clone(base.files)
	files["fork.txt"] = file{content: "from a fork\n"}
	head := s.newCommit(p, files, base.sha)
	mr := &mergeRequest{iid: int64(len(p.mrs) + 1), title: title, source: source, target: target, state: "opened",
		sourceProjectID: 1000 + p.id, forkHead: head.sha, createdAt: s.now(), updatedAt: s.now(), author: "a-fork-owner"}
	mr.reloadDiff(p)
	p.mrs = append(p.mrs, mr)
	return mr.iid
}

// approvalsJSON answers GET …/merge_requests/:iid/approvals to user as
// GitLab Free does: no approval rules, so approved is whether anyone
// approved.
func (s *Server) approvalsJSON(p *project, mr *mergeRequest, user string) map[string]any {
	by := []any{}
	for _, name := range mr.approvedBy {
		by = append(by, map[string]any{"user": s.userJSON(name)})
	}
	return map[string]any{"id": 1000 + mr.iid, "iid": mr.iid, "project_id": p.id, "title": mr.title, "state": mr.state,
		"approved": len(mr.approvedBy) > 0, "approvals_required": 0, "approvals_left": 0, "approved_by": by,
		"user_has_approved": slices.Contains(mr.approvedBy, user), "user_can_approve": !slices.Contains(mr.approvedBy, user)}
}

// approve records user's approval, as GitLab's approval service does: a
// reviewer's state becomes approved, and the hook says "approved" (the
// approvals are enough: there are no rules). False if user already
// approved.
func (s *Server) approve(p *project, mr *mergeRequest, user string) bool {
	if slices.Contains(mr.approvedBy, user) {
		return false
	}
	mr.approvedBy = append(mr.approvedBy, user)
	if _, ok := mr.reviewers[user]; ok {
		mr.reviewers[user] = "approved"
	}
	s.mergeRequestEvent(p, mr, "approved", "")
	return true
}

// unapprove withdraws user's approval: "unapproved". False if user had
// not approved.
func (s *Server) unapprove(p *project, mr *mergeRequest, user string) bool {
	i := slices.Index(mr.approvedBy, user)
	if i < 0 {
		return false
	}
	mr.approvedBy = slices.Delete(mr.approvedBy, i, i+1)
	if _, ok := mr.reviewers[user]; ok {
		mr.reviewers[user] = "unapproved"
	}
	s.mergeRequestEvent(p, mr, "unapproved", "")
	return true
}

// Approve approves a merge request as user, a person other than the
// token's user.
func (s *Server) Approve(project string, iid int64, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[project]
	s.approve(p, p.mrs[iid-1], user)
}

// RequestChanges submits a review requesting changes as user, who becomes
// a reviewer if not one yet: their approval, if any, is withdrawn, and the
// hook says "update" with the reviewers' change, as GitLab does for a
// submitted review.
func (s *Server) RequestChanges(project string, iid int64, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[project]
	s.requestChanges(p, p.mrs[iid-1], user)
}

// requestChanges is RequestChanges, as the quick action runs it too.
func (s *Server) requestChanges(p *project, mr *mergeRequest, user string) {
	before := s.reviewersPayload(mr)
	if i := slices.Index(mr.approvedBy, user); i >= 0 {
		mr.approvedBy = slices.Delete(mr.approvedBy, i, i+1)
	}
	if mr.reviewers == nil {
		mr.reviewers = map[string]string{}
	}
	mr.reviewers[user] = "requested_changes"
	s.mergeRequestEventWith(p, mr, "update", "", map[string]any{"reviewers": map[string]any{"previous": before,
		"current": s.reviewersPayload(mr)}})
}
