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

// listTree answers GET /projects/:id/repository/tree?recursive=true as
// GitLab does: every entry of the ref's tree with its id, name, type
// (blob, tree), path and mode, directories included, sorted by path. It
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
	if q.Get("recursive") != "true" {
		return 0, nil, fail(400, "gitlabtest: only recursive tree listings are modelled")
	}
	type entry struct{ path, mode, kind string }
	dirs := map[string]bool{}
	var all []entry
	for path, f := range c.files {
		for i := range len(path) {
			if path[i] == '/' && !dirs[path[:i]] {
				dirs[path[:i]] = true
				all = append(all, entry{path[:i], "040000", "tree"})
			}
		}
		all = append(all, entry{path, f.mode(), "blob"})
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
