package gitlabtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"time"
)

// file is one blob in a tree: its content and whether it is executable
// (git mode 100755 rather than 100644).
type file struct {
	content string
	exec    bool
}

func (f file) mode() string {
	if f.exec {
		return "100755"
	}
	return "100644"
}

// commit is a commit of a project: a whole tree and its parents (two for a
// merge commit).
type commit struct {
	sha      string
	at       time.Time // authored and committed
	parents  []string
	files    map[string]file
	pipeline int64 // the CI pipeline GitLab would run for it
}

func (s *Server) newCommit(p *project, files map[string]file, parents ...string) *commit {
	s.seq++
	sum := sha1.Sum(fmt.Appendf(nil, "%s/%d/%v", p.path, s.seq, parents))
	c := &commit{sha: hex.EncodeToString(sum[:]), at: s.now(), parents: parents, files: files, pipeline: PipelineBase + int64(s.seq)}
	p.commits[c.sha] = c
	return c
}

// resolve turns a branch name or a full commit SHA into a commit.
func (p *project) resolve(ref string) *commit {
	if sha, ok := p.branches[ref]; ok {
		return p.commits[sha]
	}
	return p.commits[ref]
}

// ancestors returns sha and every commit reachable from it, each with its
// distance from sha.
func (p *project) ancestors(sha string) map[string]int {
	seen := map[string]int{}
	queue := []string{sha}
	seen[sha] = 0
	for len(queue) > 0 {
		c := p.commits[queue[0]]
		queue = queue[1:]
		if c == nil {
			continue
		}
		for _, parent := range c.parents {
			if _, ok := seen[parent]; !ok {
				seen[parent] = seen[c.sha] + 1
				queue = append(queue, parent)
			}
		}
	}
	return seen
}

// mergeBase is the nearest common ancestor of a and b ("" if none), as
// git merge-base finds it for the linear and merge histories made here.
func (p *project) mergeBase(a, b string) string {
	inA := p.ancestors(a)
	best, bestDist := "", -1
	for sha, dist := range p.ancestors(b) {
		if _, ok := inA[sha]; ok && (bestDist < 0 || dist < bestDist || (dist == bestDist && sha < best)) {
			best, bestDist = sha, dist
		}
	}
	return best
}

// isAncestor reports whether a is b or one of b's ancestors.
func (p *project) isAncestor(a, b string) bool {
	_, ok := p.ancestors(b)[a]
	return ok
}

// merge3 merges theirs into ours from their common base, path by path: a
// path only one side changed takes that side; both sides changing a path
// differently is a conflict (GitLab, like git, refuses the merge).
func merge3(base, ours, theirs map[string]file) (map[string]file, []string) {
	out := map[string]file{}
	var conflicts []string
	paths := slices.Sorted(maps.Keys(unionKeys(base, ours, theirs)))
	for _, path := range paths {
		b, inBase := base[path]
		o, inOurs := ours[path]
		t, inTheirs := theirs[path]
		same := func(x file, xIn bool, y file, yIn bool) bool { return xIn == yIn && (!xIn || x == y) }
		var keep file
		var present bool
		switch {
		case same(t, inTheirs, b, inBase):
			keep, present = o, inOurs
		case same(o, inOurs, b, inBase), same(o, inOurs, t, inTheirs):
			keep, present = t, inTheirs
		default:
			conflicts = append(conflicts, path)
			continue
		}
		if present {
			out[path] = keep
		}
	}
	return out, conflicts
}

func unionKeys(ms ...map[string]file) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

// treeDiff lists what differs from the tree before to the tree after, as
// GitLab's diff entries, sorted by path. With renames, a path removed and
// another added with the same blob and mode is one renamed_file entry, as
// GitLab's rename detection reports an unchanged move.
func treeDiff(before, after map[string]file, renames bool) []map[string]any {
	entry := func(oldPath, newPath string, a, b *file) map[string]any {
		e := map[string]any{"old_path": oldPath, "new_path": newPath, "a_mode": "0", "b_mode": "0",
			"new_file": a == nil, "deleted_file": b == nil, "renamed_file": oldPath != newPath, "diff": "",
			"collapsed": false, "too_large": false}
		if a != nil {
			e["a_mode"] = a.mode()
		}
		if b != nil {
			e["b_mode"] = b.mode()
		}
		return e
	}
	var added, removed []string
	var out []map[string]any
	for _, path := range slices.Sorted(maps.Keys(unionKeys(before, after))) {
		a, inBefore := before[path]
		b, inAfter := after[path]
		switch {
		case !inBefore:
			added = append(added, path)
		case !inAfter:
			removed = append(removed, path)
		case a != b:
			out = append(out, entry(path, path, &a, &b))
		}
	}
	for _, oldPath := range removed {
		a := before[oldPath]
		if renames {
			if i := slices.IndexFunc(added, func(p string) bool { return after[p] == a }); i >= 0 {
				b := after[added[i]]
				out = append(out, entry(oldPath, added[i], &a, &b))
				added = slices.Delete(added, i, i+1)
				continue
			}
		}
		out = append(out, entry(oldPath, oldPath, &a, nil))
	}
	for _, path := range added {
		b := after[path]
		out = append(out, entry(path, path, nil, &b))
	}
	slices.SortFunc(out, func(x, y map[string]any) int {
		if c := compareStrings(x["new_path"].(string), y["new_path"].(string)); c != 0 {
			return c
		}
		return compareStrings(x["old_path"].(string), y["old_path"].(string))
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// FileMode returns the git mode of path at ref ("" if it is not there).
func (s *Server) FileMode(project, ref, path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.projects[project].resolve(ref); c != nil {
		if f, ok := c.files[path]; ok {
			return f.mode()
		}
	}
	return ""
}
