package forge

import (
	"strings"

	wq "github.com/workqueue-dev/workqueue"
)

// What the adapters share to read a tree on given paths only
// (wq.Forge.WalkTree, CompareTrees): what that costs grows with the paths,
// not with the repository (issue 53).

// OnTheWay returns the descend function of wq.Forge.WalkTree that lists
// exactly the directories on the way to each of paths: "a" and "a/b" for
// "a/b/c.txt" (the root is always listed). The directories' entries then
// hold each path's own entry, or show that it is absent.
func OnTheWay(paths []string) func(dir string) bool {
	dirs := map[string]bool{}
	for _, p := range paths {
		for i := range len(p) {
			if p[i] == '/' {
				dirs[p[:i]] = true
			}
		}
	}
	return func(dir string) bool { return dirs[dir] }
}

// OnPaths keeps the changes to paths, in their order: a compare that lists
// every path that differs, cut down to CompareTrees's answer.
func OnPaths(changes []wq.PathChange, paths []string) []wq.PathChange {
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	out := changes[:0:0]
	for _, c := range changes {
		if want[c.Path] {
			out = append(out, c)
		}
	}
	return out
}

// JoinPath is the full path of name in directory dir ("" the root).
func JoinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}
