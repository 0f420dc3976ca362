package mr

import (
	"fmt"

	wq "github.com/workqueue-dev/workqueue"
)

// CheckCommit compares the paths a pushed commit changed with the file
// actions it was asked to make (DESIGN section 6: the tree that gets
// committed is the tree that was submitted). It returns a problem when the
// commit changed a path no action names, removed a path an action writes,
// or left out a delete or the old side of a move. Actions that write a
// path the commit did not change are returned as unchanged: the target may
// have held that content already, or the forge may have dropped the path,
// and only reading the pushed tree tells which (see verifyPush). modes are
// the modes the paths must have (wq.FileChange.Mode): a changed path the
// forge reports with another mode is a problem, such as a symbolic link
// written as a regular file.
func CheckCommit(actions []FileAction, changed []wq.PathChange, modes map[string]string) (unchanged []FileAction, problem string) {
	status := make(map[string]string, len(changed))
	for _, c := range changed {
		status[c.Path] = c.Status
	}
	named := make(map[string]bool, len(actions))
	for _, a := range actions {
		named[a.FilePath] = true
		if a.Action == ActionMove {
			named[a.PreviousPath] = true
		}
	}
	for _, c := range changed {
		if !named[c.Path] {
			return nil, fmt.Sprintf("it %s %q, which no file action names", c.Status, c.Path)
		}
		if want := modes[c.Path]; want != "" && c.Mode != "" && c.Status != wq.PathRemoved && c.Mode != want {
			return nil, fmt.Sprintf("it wrote %q as %s (mode %s), where the change keeps %s (mode %s)",
				c.Path, wq.ModeName(c.Mode), c.Mode, wq.ModeName(want), want)
		}
	}
	for _, a := range actions {
		got, touched := status[a.FilePath]
		switch a.Action {
		case ActionDelete:
			if got != wq.PathRemoved {
				return nil, fmt.Sprintf("delete %q is not in it", a.FilePath)
			}
			continue
		case ActionMove:
			if status[a.PreviousPath] != wq.PathRemoved {
				return nil, fmt.Sprintf("move %q → %q left %q in place", a.PreviousPath, a.FilePath, a.PreviousPath)
			}
		case ActionChmod:
			if got == wq.PathRemoved {
				return nil, fmt.Sprintf("chmod %q removed the file", a.FilePath)
			}
			continue // a mode change alone may not show in a forge's diff
		}
		switch {
		case got == wq.PathRemoved:
			return nil, fmt.Sprintf("%s %q removed the file", a.Action, a.FilePath)
		case !touched:
			unchanged = append(unchanged, a)
		}
	}
	return unchanged, ""
}
