package mr

import (
	"fmt"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
)

// Against the target's tree: what a change means depends on what the
// target holds, so before the first write the directories of the target
// on the way to each path the change touches are read (wq.Forge.WalkTree,
// the directories treeDirs names), and each change is checked against
// them. That is all the checks below need, so a push reads what grows
// with the change, never the whole tree (issue 53).
//
//   - Modes are part of the submission. A move keeps its source's mode, an
//     update the path's, so a symbolic link stays a link and a submodule a
//     submodule; execute_filemode sets the executable bit of a regular
//     file. Making a link or a submodule a regular file takes replace_type
//     on the action; a chmod of one is refused. The modes go to the forge
//     with the change (FileChange.Mode), an adapter that cannot write one
//     refuses, and the after-push check compares them (CheckCommit).
//   - A path the change writes that differs only in case or Unicode
//     normalisation from one the target holds, at any directory, fails
//     with both spellings, under the folding rules a submission is
//     checked with (foldKey): a case-insensitive checkout would hold one.
//   - A file where the target has a directory, or a directory where it has
//     a file, fails: one commit cannot hold both.
//   - A delete, update or chmod of a directory fails: actions name files.

// treeDirs is the descend function of wq.Forge.WalkTree that reads what
// the checks need of the target: every directory whose path folds
// (foldPath) as the path of a directory on the way to a path chs touch.
// Its listing holds each path's own entry, or shows it absent; the names
// beside it, which collide when they fold alike; and, listed in every
// spelling, the entries of a directory that differs only in case from
// the one the change writes into.
func treeDirs(chs []wq.FileChange) func(dir string) bool {
	dirs := map[string]bool{}
	for p := range touchedPaths(chs) {
		for i := range len(p) {
			if p[i] == '/' {
				dirs[foldPath(p[:i])] = true
			}
		}
	}
	return func(dir string) bool { return dirs[foldPath(dir)] }
}

// targetTree is the target's tree as the checks need it: the entries
// WalkTree listed with treeDirs, or any larger part of the tree.
type targetTree struct {
	branch string
	modes  map[string]string // exact path → mode, directories included
	folded map[string]string // folded path → the target's spelling of it
}

func newTargetTree(branch string, entries []wq.TreeEntry) *targetTree {
	t := &targetTree{branch: branch, modes: make(map[string]string, len(entries)), folded: make(map[string]string, len(entries))}
	for _, e := range entries {
		t.modes[e.Path] = e.Mode
		// A forge that lists files only still gives their directories.
		for i := range len(e.Path) {
			if e.Path[i] == '/' {
				if _, ok := t.modes[e.Path[:i]]; !ok {
					t.modes[e.Path[:i]] = wq.ModeDir
				}
			}
		}
	}
	for p := range t.modes {
		if _, ok := t.folded[foldPath(p)]; !ok {
			t.folded[foldPath(p)] = p
		}
	}
	return t
}

// foldPath folds every component of p (foldKey).
func foldPath(p string) string {
	parts := strings.Split(p, "/")
	for i, c := range parts {
		parts[i] = foldKey(c)
	}
	return strings.Join(parts, "/")
}

func regular(mode string) bool { return mode == wq.ModeFile || mode == wq.ModeExecutable }

// planChanges checks chs (decoded from actions, in order) against the
// target's tree and sets each change's Mode and FromMode. The error is
// permanent and names the path.
func planChanges(actions []FileAction, chs []wq.FileChange, t *targetTree) error {
	for i := range chs {
		if err := t.plan(actions[i], &chs[i]); err != nil {
			return fmt.Errorf("%w: %s", wq.ErrPermanent, err)
		}
	}
	return nil
}

func (t *targetTree) plan(a FileAction, ch *wq.FileChange) error {
	mode, exists := t.modes[ch.Path]
	if mode == wq.ModeDir && ch.Action != ActionCreate && ch.Action != ActionMove {
		return fmt.Errorf("%s %q: %s holds a directory at that path; file actions name files, so %s each file under it",
			ch.Action, ch.Path, t.branch, ch.Action)
	}
	executable := func(from string) string {
		switch {
		case ch.Executable != nil && *ch.Executable:
			return wq.ModeExecutable
		case ch.Executable != nil:
			return wq.ModeFile
		case from == wq.ModeExecutable:
			return wq.ModeExecutable
		}
		return wq.ModeFile
	}
	switch ch.Action {
	case ActionDelete:
		ch.FromMode = mode
		return nil
	case ActionCreate:
		if err := t.collides(ch.Path, exists); err != nil {
			return fmt.Errorf("create %q: %w", ch.Path, err)
		}
		ch.Mode = executable("")
		return nil
	case ActionUpdate, ActionChmod:
		if !exists {
			return nil // the forge refuses it; a desired state held is seen then
		}
		ch.FromMode = mode
		switch {
		case regular(mode):
			ch.Mode = executable(mode)
		case ch.Action == ActionChmod:
			return fmt.Errorf("chmod %q: %s holds %s at that path, which has no executable bit", ch.Path, t.branch, wq.ModeName(mode))
		case !a.ReplaceType:
			return fmt.Errorf("update %q: %s holds %s at that path, and an update would make it a regular file; "+
				`set "replace_type": true on the action to replace it with a file, or delete it`, ch.Path, t.branch, wq.ModeName(mode))
		default:
			ch.Mode = executable("")
		}
		return nil
	case ActionMove:
		from, ok := t.modes[ch.PreviousPath]
		if !ok {
			return nil // the forge refuses it; a move held is seen then
		}
		if from == wq.ModeDir {
			return fmt.Errorf("move %q → %q: %s holds a directory at %q; a move names one file", ch.PreviousPath, ch.Path, t.branch, ch.PreviousPath)
		}
		if err := t.collides(ch.Path, exists); err != nil {
			return fmt.Errorf("move %q → %q: %w", ch.PreviousPath, ch.Path, err)
		}
		ch.FromMode = from
		switch {
		case regular(from):
			ch.Mode = executable(from)
		case a.ReplaceType:
			ch.Mode = executable("")
		case ch.Content != nil || ch.Executable != nil:
			return fmt.Errorf("move %q → %q: %s holds %s at %q, and content or execute_filemode would make it a regular file; "+
				`set "replace_type": true on the action to do that`, ch.PreviousPath, ch.Path, t.branch, wq.ModeName(from), ch.PreviousPath)
		default:
			ch.Mode = from // the link or submodule moves as it is
		}
		return nil
	}
	return nil
}

// collides reports a path the change adds that the target's tree cannot
// take beside what it holds: a spelling of one of its names that differs
// only in case or normalisation, a file under one of its files, or a file
// where it has a directory. A path the target holds exactly is left to
// the forge (a create over it is refused there).
func (t *targetTree) collides(p string, exists bool) error {
	if exists {
		if t.modes[p] == wq.ModeDir {
			return fmt.Errorf("%s holds a directory at that path", t.branch)
		}
		return nil
	}
	for end := 0; end <= len(p); end++ {
		if end < len(p) && p[end] != '/' {
			continue
		}
		prefix, dir := p[:end], end < len(p)
		what := "path"
		if dir {
			what = "directory"
		}
		if mode, ok := t.modes[prefix]; ok {
			if dir && mode != wq.ModeDir {
				return fmt.Errorf("%s holds %s at %q, where this path needs a directory", t.branch, wq.ModeName(mode), prefix)
			}
			continue
		}
		if theirs, ok := t.folded[foldPath(prefix)]; ok {
			return fmt.Errorf("%s %q differs only in case or Unicode normalisation from %q, which %s holds; "+
				"a case-insensitive file system (Windows, macOS) holds one of them", what, prefix, theirs, t.branch)
		}
		return nil // nothing of the target lies under a name it lacks
	}
	return nil
}
