package mr_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	wq "github.com/workqueue-dev/workqueue"
)

// fakeForge is an in-memory forge holding one repository (whatever the
// project is called) that behaves as the real ones do for the calls the
// mr type makes, and counts every call. Tests act as people and other
// processes through its unexported helpers, which are not counted.
type fakeForge struct {
	mu       sync.Mutex
	calls    map[string]int
	commits  map[string]*fakeCommit
	branches map[string]string // name → commit sha
	mrs      []*fakeMR
	notes    int64
	seq      int
	// noteBodies are the notes' bodies by id, as last written.
	noteBodies map[int64]string

	// blocker is what an open merge request reports when nothing else
	// blocks it; MergeClear: mergeable.
	blocker wq.MergeBlocker
	// fastForward is the project's merge method: a merge needs the branch
	// on top of the target, or the merge request reports MergeRebase.
	fastForward bool
	// refuseMerges is how many merges to refuse although the merge request
	// is mergeable, as Gitea does while it recomputes ("try again later").
	refuseMerges int
	// failures are errors the next calls of a method return, by method.
	failures map[string][]error
	// closedWhileMerging is how many reads of a merged merge request
	// answer closed, not merged.
	closedWhileMerging int
	// lostCreates is how many merge requests to make whose answer is lost
	// (a 502 after the forge made it).
	lostCreates int
	// statuses are the commits' checks, by sha (setStatus).
	statuses map[string][]wq.CommitStatus
	// armed are failures that a call of a method (the key) puts in
	// failures (failNextAfter).
	armed map[string]armedFailure
	// unlisted are paths CommitChanges leaves out although the commit
	// changed them, as Gitea leaves out a path whose type changed.
	unlisted map[string]bool
}

type armedFailure struct {
	method string
	err    error
}

// CommitStatuses lists sha's checks (wq.CommitStatusReader).
func (f *fakeForge) CommitStatuses(_ context.Context, _, sha string) ([]wq.CommitStatus, error) {
	defer f.call("CommitStatuses")()
	if err := f.failure("CommitStatuses"); err != nil {
		return nil, err
	}
	return slices.Clone(f.statuses[sha]), nil
}

// setStatus sets sha's check context to state (a wq.Check* word).
func (f *fakeForge) setStatus(sha, context, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.statuses == nil {
		f.statuses = map[string][]wq.CommitStatus{}
	}
	list := slices.DeleteFunc(f.statuses[sha], func(s wq.CommitStatus) bool { return s.Context == context })
	f.statuses[sha] = append(list, wq.CommitStatus{Context: context, State: state, ForgeState: state})
}

type fakeFile struct {
	content string
	exec    bool
}

func (f fakeFile) mode() string {
	if f.exec {
		return wq.ModeExecutable
	}
	return wq.ModeFile
}

type fakeCommit struct {
	sha, parent string
	tree        map[string]fakeFile
}

type fakeMR struct {
	mr         wq.MergeRequest // the fields a person or the service set
	mergedHead string          // the head when merged
	mergedAs   string          // the target's head the merge left
	notes      []string
}

func newFakeForge() *fakeForge {
	f := &fakeForge{calls: map[string]int{}, commits: map[string]*fakeCommit{}, branches: map[string]string{}}
	f.branches["main"] = f.newCommit("", map[string]fakeFile{"README.md": {content: "# r\n"}}).sha
	return f
}

// calls returns how often method was called, or all calls with "".
func (f *fakeForge) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if method != "" {
		return f.calls[method]
	}
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

func (f *fakeForge) resetCounts() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.calls)
}

// call counts a call and takes the lock for it.
func (f *fakeForge) call(method string) func() {
	f.mu.Lock()
	f.calls[method]++
	if a, ok := f.armed[method]; ok {
		delete(f.armed, method)
		f.failNextLocked(a.method, a.err)
	}
	return f.mu.Unlock
}

// failure is the error the test made this call of method return, if any.
func (f *fakeForge) failure(method string) error {
	if len(f.failures[method]) == 0 {
		return nil
	}
	err := f.failures[method][0]
	f.failures[method] = f.failures[method][1:]
	return err
}

// failNext makes the next call of method return err.
func (f *fakeForge) failNext(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNextLocked(method, err)
}

func (f *fakeForge) failNextLocked(method string, err error) {
	if f.failures == nil {
		f.failures = map[string][]error{}
	}
	f.failures[method] = append(f.failures[method], err)
}

// failNextAfter makes the next call of method that follows a call of
// after return err: a failure placed in the middle of a run.
func (f *fakeForge) failNextAfter(method, after string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed == nil {
		f.armed = map[string]armedFailure{}
	}
	f.armed[after] = armedFailure{method: method, err: err}
}

func (f *fakeForge) newCommit(parent string, tree map[string]fakeFile) *fakeCommit {
	f.seq++
	c := &fakeCommit{sha: fmt.Sprintf("%040x", f.seq), parent: parent, tree: tree}
	f.commits[c.sha] = c
	return c
}

// resolve reads a ref: a branch name or a commit sha.
func (f *fakeForge) resolve(ref string) (*fakeCommit, bool) {
	if sha, ok := f.branches[ref]; ok {
		ref = sha
	}
	c, ok := f.commits[ref]
	return c, ok
}

func fakeError(kind wq.ForgeErrorKind, status int, op, message string) error {
	return &wq.ForgeError{Kind: kind, Op: "fake: " + op, Status: status, Message: message}
}

// badGateway is a transient failure of op, as a proxy in front of a forge
// answers while the forge restarts.
func badGateway(op string) error {
	return fakeError(wq.ForgeTransient, 502, op, "bad gateway")
}

func (f *fakeForge) Kind() string { return wq.ForgeGitLab }

func (f *fakeForge) CommitFiles(_ context.Context, req wq.CommitRequest) (wq.Commit, error) {
	defer f.call("CommitFiles")()
	base, ok := f.resolve(req.Base)
	if !ok {
		return wq.Commit{}, fakeError(wq.ForgeNotFound, 404, "commit", "base branch not found")
	}
	tree := maps.Clone(base.tree)
	for _, ch := range req.Changes {
		old, exists := tree[ch.Path]
		switch ch.Action {
		case "create":
			if exists {
				return wq.Commit{}, fakeError(wq.ForgeUnprocessable, 422, "commit", "file already exists: "+ch.Path)
			}
		case "update", "delete", "chmod":
			if !exists {
				return wq.Commit{}, fakeError(wq.ForgeNotFound, 404, "commit", "file does not exist: "+ch.Path)
			}
		case "move":
			prev, found := tree[ch.PreviousPath]
			if !found {
				return wq.Commit{}, fakeError(wq.ForgeNotFound, 404, "commit", "file does not exist: "+ch.PreviousPath)
			}
			if exists {
				return wq.Commit{}, fakeError(wq.ForgeUnprocessable, 422, "commit", "file already exists: "+ch.Path)
			}
			delete(tree, ch.PreviousPath)
			old = prev
		}
		switch ch.Action {
		case "delete":
			delete(tree, ch.Path)
			continue
		case "create", "update":
			old.content = string(ch.Content)
		case "move":
			if ch.Content != nil {
				old.content = string(ch.Content)
			}
		}
		if ch.Executable != nil {
			old.exec = *ch.Executable
		}
		tree[ch.Path] = old
	}
	c := f.newCommit(base.sha, tree)
	f.branches[req.Branch] = c.sha
	return wq.Commit{SHA: c.sha, Parent: base.sha}, nil
}

// diffTrees lists what differs from a to b, by path.
func diffTrees(a, b map[string]fakeFile) []wq.PathChange {
	var out []wq.PathChange
	for _, p := range slices.Sorted(maps.Keys(a)) {
		if nf, ok := b[p]; !ok {
			out = append(out, wq.PathChange{Path: p, Status: wq.PathRemoved})
		} else if nf != a[p] {
			out = append(out, wq.PathChange{Path: p, Status: wq.PathModified, Mode: nf.mode()})
		}
	}
	for _, p := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[p]; !ok {
			out = append(out, wq.PathChange{Path: p, Status: wq.PathAdded, Mode: b[p].mode()})
		}
	}
	return out
}

func (f *fakeForge) CommitChanges(_ context.Context, _, sha string) ([]wq.PathChange, error) {
	defer f.call("CommitChanges")()
	if err := f.failure("CommitChanges"); err != nil {
		return nil, err
	}
	c, ok := f.commits[sha]
	if !ok {
		return nil, fakeError(wq.ForgeNotFound, 404, "commit changes", "commit not found")
	}
	var parent map[string]fakeFile
	if p, ok := f.commits[c.parent]; ok {
		parent = p.tree
	}
	var out []wq.PathChange
	for _, ch := range diffTrees(parent, c.tree) {
		if !f.unlisted[ch.Path] {
			out = append(out, ch)
		}
	}
	return out, nil
}

func (f *fakeForge) CompareTrees(_ context.Context, _, base, head string, paths []string) ([]wq.PathChange, error) {
	defer f.call("CompareTrees")()
	if err := f.failure("CompareTrees"); err != nil {
		return nil, err
	}
	b, okb := f.resolve(base)
	h, okh := f.resolve(head)
	if !okb || !okh {
		return nil, fakeError(wq.ForgeNotFound, 404, "compare", "ref not found")
	}
	var out []wq.PathChange
	for _, c := range diffTrees(b.tree, h.tree) {
		if slices.Contains(paths, c.Path) {
			c.Mode = "" // what differs, not what it became
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeForge) BranchHead(_ context.Context, _, branch string) (string, error) {
	defer f.call("BranchHead")()
	sha, ok := f.branches[branch]
	if !ok {
		return "", fakeError(wq.ForgeNotFound, 404, "branch head", "branch not found")
	}
	return sha, nil
}

func (f *fakeForge) DeleteBranch(_ context.Context, _, branch string) error {
	defer f.call("DeleteBranch")()
	delete(f.branches, branch)
	return nil
}

func (f *fakeForge) FindMergeRequest(_ context.Context, _, source, target string) (*wq.MergeRequest, error) {
	defer f.call("FindMergeRequest")()
	for _, m := range slices.Backward(f.mrs) {
		if m.mr.SourceBranch == source && m.mr.TargetBranch == target {
			return f.view(m), nil
		}
	}
	return nil, nil
}

func (f *fakeForge) OpenMergeRequestsFrom(_ context.Context, _, branch string) ([]wq.MergeRequest, error) {
	defer f.call("OpenMergeRequestsFrom")()
	var out []wq.MergeRequest
	for _, m := range f.mrs {
		if v := f.view(m); (branch == "" || v.SourceBranch == branch) && v.State == wq.MergeRequestOpen {
			out = append(out, *v)
		}
	}
	return out, nil
}

func (f *fakeForge) CreateMergeRequest(_ context.Context, req wq.MergeRequestCreate) (*wq.MergeRequest, error) {
	defer f.call("CreateMergeRequest")()
	if _, ok := f.branches[req.SourceBranch]; !ok {
		return nil, fakeError(wq.ForgeUnprocessable, 422, "create merge request", "source branch does not exist")
	}
	for _, m := range f.mrs {
		if m.mr.State == wq.MergeRequestOpen && m.mr.SourceBranch == req.SourceBranch && m.mr.TargetBranch == req.TargetBranch {
			return nil, fakeError(wq.ForgeConflict, 409, "create merge request", "another open merge request already exists")
		}
	}
	n := int64(len(f.mrs) + 1)
	m := &fakeMR{mr: wq.MergeRequest{Number: n, URL: fmt.Sprintf("https://forge.test/o/r/-/merge_requests/%d", n),
		State: wq.MergeRequestOpen, SourceBranch: req.SourceBranch, TargetBranch: req.TargetBranch,
		Title: req.Title, Description: req.Description, Labels: slices.Clone(req.Labels)}}
	f.mrs = append(f.mrs, m)
	if f.lostCreates > 0 {
		// Made, and the answer lost on its way back.
		f.lostCreates--
		return nil, fakeError(wq.ForgeTransient, 502, "create merge request", "bad gateway")
	}
	return f.view(m), nil
}

// view is the merge request as the forge reports it now: its head is the
// branch's, its merge base the head's parent (every branch here is one
// commit on top of where it started), and its blocker what the project
// and the test say.
func (f *fakeForge) view(m *fakeMR) *wq.MergeRequest {
	out := m.mr
	out.Labels = slices.Clone(m.mr.Labels)
	out.HeadSHA = f.branches[m.mr.SourceBranch]
	if m.mergedHead != "" {
		out.HeadSHA, out.MergeCommitSHA = m.mergedHead, m.mergedAs
	}
	if c, ok := f.commits[out.HeadSHA]; ok {
		out.MergeBase = c.parent
	}
	if out.State == wq.MergeRequestOpen {
		switch {
		case f.fastForward && out.MergeBase != f.branches[out.TargetBranch]:
			out.Blocker = wq.MergeRebase
		default:
			out.Blocker = f.blocker
		}
		out.Mergeable = out.Blocker == wq.MergeClear
		out.MergeStatus = string(out.Blocker)
	}
	return &out
}

func (f *fakeForge) find(number int64) (*fakeMR, error) {
	if number < 1 || number > int64(len(f.mrs)) {
		return nil, fakeError(wq.ForgeNotFound, 404, "merge request", "not found")
	}
	return f.mrs[number-1], nil
}

func (f *fakeForge) GetMergeRequest(_ context.Context, _ string, number int64) (*wq.MergeRequest, error) {
	defer f.call("GetMergeRequest")()
	if err := f.failure("GetMergeRequest"); err != nil {
		return nil, err
	}
	m, err := f.find(number)
	if err != nil {
		return nil, err
	}
	v := f.view(m)
	if v.State == wq.MergeRequestMerged && f.closedWhileMerging > 0 {
		// As Gitea can answer for a moment while it merges.
		f.closedWhileMerging--
		v.State = wq.MergeRequestClosed
	}
	return v, nil
}

func (f *fakeForge) UpdateMergeRequest(_ context.Context, _ string, number int64, u wq.MergeRequestUpdate) (*wq.MergeRequest, error) {
	defer f.call("UpdateMergeRequest")()
	m, err := f.find(number)
	if err != nil {
		return nil, err
	}
	if m.mr.State == wq.MergeRequestMerged {
		return nil, fakeError(wq.ForgeUnprocessable, 422, "update merge request", "merged")
	}
	if u.Title != nil {
		m.mr.Title = *u.Title
	}
	if u.Description != nil {
		m.mr.Description = *u.Description
	}
	if u.State != nil {
		if _, ok := f.branches[m.mr.SourceBranch]; !ok && *u.State == wq.MergeRequestOpen {
			return nil, fakeError(wq.ForgeUnprocessable, 422, "reopen merge request", "source branch does not exist")
		}
		m.mr.State = *u.State
	}
	return f.view(m), nil
}

func (f *fakeForge) MergeMergeRequest(_ context.Context, _ string, number int64, headSHA string) error {
	defer f.call("MergeMergeRequest")()
	m, err := f.find(number)
	if err != nil {
		return err
	}
	v := f.view(m)
	switch {
	case v.State != wq.MergeRequestOpen:
		return fakeError(wq.ForgeUnprocessable, 405, "merge", "not open")
	case v.HeadSHA != headSHA:
		return fakeError(wq.ForgeConflict, 409, "merge", "SHA does not match HEAD of source branch")
	case !v.Mergeable:
		return fakeError(wq.ForgeUnprocessable, 405, "merge", "not mergeable: "+string(v.Blocker))
	case f.refuseMerges > 0:
		f.refuseMerges--
		return fakeError(wq.ForgeUnprocessable, 405, "merge", "please try again later")
	}
	f.mergeInto(v.TargetBranch, v.HeadSHA)
	m.mr.State, m.mergedHead, m.mergedAs = wq.MergeRequestMerged, v.HeadSHA, f.branches[v.TargetBranch]
	return nil
}

// mergeInto merges commit head into branch: a fast-forward when head is
// on top of it, else a merge commit holding head's change over the
// branch's tree.
func (f *fakeForge) mergeInto(branch, head string) {
	h := f.commits[head]
	if h.parent == f.branches[branch] {
		f.branches[branch] = head
		return
	}
	target, _ := f.resolve(branch)
	tree := maps.Clone(target.tree)
	var parent map[string]fakeFile
	if p, ok := f.commits[h.parent]; ok {
		parent = p.tree
	}
	for _, c := range diffTrees(parent, h.tree) {
		if c.Status == wq.PathRemoved {
			delete(tree, c.Path)
		} else {
			tree[c.Path] = h.tree[c.Path]
		}
	}
	f.branches[branch] = f.newCommit(target.sha, tree).sha
}

// WalkTree lists the directories descend accepts, each one call of
// "ListDirectory" (a forge's listing of one directory); "WalkTree" counts
// the walks.
func (f *fakeForge) WalkTree(_ context.Context, _, ref string, descend func(dir string) bool) ([]wq.TreeEntry, error) {
	defer f.call("WalkTree")()
	if err := f.failure("WalkTree"); err != nil {
		return nil, err
	}
	c, ok := f.resolve(ref)
	if !ok {
		return nil, fakeError(wq.ForgeNotFound, 404, "walk tree", "ref not found")
	}
	var out []wq.TreeEntry
	for dirs := []string{""}; len(dirs) > 0; dirs = dirs[1:] {
		f.calls["ListDirectory"]++
		under := dirs[0]
		if under != "" {
			under += "/"
		}
		seen := map[string]bool{}
		for _, p := range slices.Sorted(maps.Keys(c.tree)) {
			rest, ok := strings.CutPrefix(p, under)
			if !ok {
				continue
			}
			name, _, deeper := strings.Cut(rest, "/")
			switch {
			case !deeper:
				out = append(out, wq.TreeEntry{Path: p, Mode: c.tree[p].mode()})
			case !seen[name]:
				seen[name] = true
				out = append(out, wq.TreeEntry{Path: under + name, Mode: wq.ModeDir})
				if descend(under + name) {
					dirs = append(dirs, under+name)
				}
			}
		}
	}
	return out, nil
}

func (f *fakeForge) ReadTree(_ context.Context, _, ref string) ([]wq.TreeEntry, error) {
	defer f.call("ReadTree")()
	if err := f.failure("ReadTree"); err != nil {
		return nil, err
	}
	c, ok := f.resolve(ref)
	if !ok {
		return nil, fakeError(wq.ForgeNotFound, 404, "read tree", "ref not found")
	}
	dirs := map[string]bool{}
	var out []wq.TreeEntry
	for _, p := range slices.Sorted(maps.Keys(c.tree)) {
		for i := range len(p) {
			if p[i] == '/' && !dirs[p[:i]] {
				dirs[p[:i]] = true
				out = append(out, wq.TreeEntry{Path: p[:i], Mode: wq.ModeDir})
			}
		}
		out = append(out, wq.TreeEntry{Path: p, Mode: c.tree[p].mode()})
	}
	return out, nil
}

func (f *fakeForge) ReadFile(_ context.Context, _, ref, path string) ([]byte, bool, error) {
	defer f.call("ReadFile")()
	c, ok := f.resolve(ref)
	if !ok {
		return nil, false, fakeError(wq.ForgeNotFound, 404, "read file", "ref not found")
	}
	file, ok := c.tree[path]
	if !ok {
		return nil, false, nil
	}
	return []byte(file.content), true, nil
}

func (f *fakeForge) CreateNote(_ context.Context, _ string, number int64, body string) (int64, error) {
	defer f.call("CreateNote")()
	m, err := f.find(number)
	if err != nil {
		return 0, err
	}
	m.notes = append(m.notes, body)
	f.notes++
	if f.noteBodies == nil {
		f.noteBodies = map[int64]string{}
	}
	f.noteBodies[f.notes] = body
	return f.notes, nil
}

func (f *fakeForge) UpdateNote(_ context.Context, _ string, _, noteID int64, body string) error {
	defer f.call("UpdateNote")()
	if _, ok := f.noteBodies[noteID]; !ok {
		return fakeError(wq.ForgeNotFound, 404, "update note", "no such note")
	}
	f.noteBodies[noteID] = body
	return nil
}

// noteBody is a note's body as last written.
func (f *fakeForge) noteBody(id int64) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.noteBodies[id]
}

func (f *fakeForge) ListProjects(context.Context) ([]string, error) {
	defer f.call("ListProjects")()
	return []string{"o/r"}, nil
}

func (f *fakeForge) EnsureWebhook(context.Context, string, string, string) (wq.WebhookOutcome, error) {
	defer f.call("EnsureWebhook")()
	return wq.WebhookFound, nil
}

// ListOpenWork, GetWork, CreateIssue, CommentOnWork, ReviewPullRequest
// and CloseIssue are the control plane's calls, which the mr type never
// makes: stubs.
func (f *fakeForge) ListOpenWork(context.Context, string) ([]wq.WorkInfo, error) {
	defer f.call("ListOpenWork")()
	return nil, nil
}

func (f *fakeForge) GetWork(context.Context, string, string, int64) (*wq.WorkInfo, error) {
	defer f.call("GetWork")()
	return nil, &wq.ForgeError{Kind: wq.ForgeNotFound, Op: "fake: get work"}
}

func (f *fakeForge) CreateIssue(context.Context, wq.IssueCreate) (*wq.WorkInfo, error) {
	defer f.call("CreateIssue")()
	return nil, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "fake: create issue", Message: "not kept by this fake"}
}

func (f *fakeForge) CommentOnWork(context.Context, string, string, int64, string) (int64, error) {
	defer f.call("CommentOnWork")()
	return 0, &wq.ForgeError{Kind: wq.ForgePermanent, Op: "fake: comment", Message: "not kept by this fake"}
}

func (f *fakeForge) ReviewPullRequest(context.Context, string, int64, string, string, string) error {
	defer f.call("ReviewPullRequest")()
	return &wq.ForgeError{Kind: wq.ForgePermanent, Op: "fake: review", Message: "not kept by this fake"}
}

func (f *fakeForge) CloseIssue(context.Context, string, int64) error {
	defer f.call("CloseIssue")()
	return &wq.ForgeError{Kind: wq.ForgePermanent, Op: "fake: close issue", Message: "not kept by this fake"}
}

// What tests do as people and other processes: not counted.

// edit commits onto branch directly, as a person would, whatever edit
// makes of its tree: the branch moves, and is created from main if
// missing. It returns the new head.
func (f *fakeForge) edit(branch string, edit func(tree map[string]fakeFile)) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	base, ok := f.resolve(branch)
	if !ok {
		base, _ = f.resolve("main")
	}
	tree := maps.Clone(base.tree)
	edit(tree)
	c := f.newCommit(base.sha, tree)
	f.branches[branch] = c.sha
	return c.sha
}

// push writes files onto branch directly.
func (f *fakeForge) push(branch string, files map[string]string) string {
	return f.edit(branch, func(tree map[string]fakeFile) {
		for p, content := range files {
			tree[p] = fakeFile{content: content, exec: tree[p].exec}
		}
	})
}

func (f *fakeForge) setBlocker(b wq.MergeBlocker) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocker = b
}

func (f *fakeForge) setRefuseMerges(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuseMerges = n
}

// mergeByPerson merges merge request number as a person would, whatever
// blocks it.
func (f *fakeForge) mergeByPerson(number int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.mrs[number-1]
	head := f.branches[m.mr.SourceBranch]
	f.mergeInto(m.mr.TargetBranch, head)
	m.mr.State, m.mergedHead = wq.MergeRequestMerged, head
}

func (f *fakeForge) setFastForward(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fastForward = on
}

// mergeRequest is merge request number as the forge shows it, with its
// notes.
func (f *fakeForge) mergeRequest(number int64) (wq.MergeRequest, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.find(number)
	if err != nil {
		return wq.MergeRequest{}, nil
	}
	return *f.view(m), slices.Clone(m.notes)
}

// head is branch's head, "" if it does not exist.
func (f *fakeForge) head(branch string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.branches[branch]
}

// file is path's content on ref, and whether it exists.
func (f *fakeForge) file(ref, path string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.resolve(ref)
	if !ok {
		return "", false
	}
	file, ok := c.tree[path]
	return file.content, ok
}

// parent is commit sha's parent.
func (f *fakeForge) parent(sha string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.commits[sha]; ok {
		return c.parent
	}
	return ""
}

// setLabels replaces a merge request's labels, as a person does.
func (f *fakeForge) setLabels(number int64, labels []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.mrs {
		if m.mr.Number == number {
			m.mr.Labels = labels
		}
	}
}

// treeOf is the set of paths commit sha holds.
func (f *fakeForge) treeOf(sha string) map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	if c, ok := f.commits[sha]; ok {
		for p := range c.tree {
			out[p] = true
		}
	}
	return out
}

// notesOnMR are the notes posted on merge request number, as posted.
func (f *fakeForge) notesOnMR(number int64) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.mrs {
		if m.mr.Number == number {
			return slices.Clone(m.notes)
		}
	}
	return nil
}

// closeByPerson closes a merge request as a person does.
func (f *fakeForge) closeByPerson(number int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mrs[number-1].mr.State = wq.MergeRequestClosed
}
