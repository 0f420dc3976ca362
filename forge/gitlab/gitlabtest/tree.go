package gitlabtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// listTree answers GET /projects/:id/repository/tree as GitLab does: the
// entries of the directory path names (the root without it), or with
// recursive=true every entry under it, each with its id, name, type
// (blob, tree), path from the root and mode, directories included, sorted
// by path. A path that is no directory of the ref's tree is 404, as
// GitLab answers since 16.x (earlier releases answered an empty list). It
// pages with per_page (at most 100) by keyset (pagination=keyset,
// page_token: the path after which the next page starts, answered in a
// Link rel="next" header) or by offset (page, with X-Next-Page).
// The keyset token is the last path of the page (GitLab's is an entry id):
// it is opaque to a client that follows the Link header.
func (s *Server) listTree(r *http.Request, p *project) (int, any, *apiError) {
	q := r.URL.Query()
	c := p.resolve(q.Get("ref"))
	if c == nil {
		return 0, nil, fail(404, "404 Tree Not Found")
	}
	recursive := q.Get("recursive") == "true"
	under := strings.Trim(q.Get("path"), "/")
	if under != "" {
		under += "/"
	}
	type entry struct{ path, mode, kind string }
	dirs := map[string]bool{}
	var all []entry
	found := under == ""
	for path, f := range c.files {
		if !strings.HasPrefix(path, under) {
			continue
		}
		found = true
		rest := path[len(under):]
		if !recursive {
			if name, _, deeper := strings.Cut(rest, "/"); deeper {
				if !dirs[under+name] {
					dirs[under+name] = true
					all = append(all, entry{under + name, "040000", "tree"})
				}
				continue
			}
			all = append(all, entry{path, f.mode(), "blob"})
			continue
		}
		for i := range len(rest) {
			if rest[i] == '/' && !dirs[under+rest[:i]] {
				dirs[under+rest[:i]] = true
				all = append(all, entry{under + rest[:i], "040000", "tree"})
			}
		}
		all = append(all, entry{path, f.mode(), "blob"})
	}
	if !found {
		return 0, nil, fail(404, "404 Tree Not Found")
	}
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	items := make([]any, 0, len(all))
	for _, e := range all {
		name := e.path[strings.LastIndexByte(e.path, '/')+1:]
		sum := sha1.Sum([]byte(e.mode + " " + e.path))
		items = append(items, map[string]any{"id": hex.EncodeToString(sum[:]), "name": name, "type": e.kind, "path": e.path, "mode": e.mode})
	}
	if q.Get("pagination") != "keyset" {
		return page(r, items)
	}
	size, _ := strconv.Atoi(q.Get("per_page"))
	if size < 1 {
		size = 20
	}
	size = min(size, 100)
	from := 0
	if tok := q.Get("page_token"); tok != "" {
		from, _ = slices.BinarySearchFunc(all, tok, func(e entry, t string) int { return strings.Compare(e.path, t) })
		if from < len(all) && all[from].path == tok {
			from++
		}
	}
	to := min(from+size, len(all))
	h := http.Header{}
	if to < len(all) {
		next := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path}
		nq := r.URL.Query()
		nq.Set("page_token", all[to-1].path)
		next.RawQuery = nq.Encode()
		h.Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", next.String()))
	}
	return 200, paged{items: items[from:to], header: h}, nil
}
