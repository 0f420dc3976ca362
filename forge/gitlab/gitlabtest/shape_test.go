package gitlabtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A shape is the JSON type of every path of a JSON value: "" is the value
// itself, "a.b" member b of member a, "a[]" every element of array a. The
// elements of an array share one path, so their shapes merge: a path
// holds the kinds seen there, and how often.
type shape struct {
	kinds   map[string]map[string]bool // path → kinds seen (object, array, string, integer, number, boolean, null)
	count   map[string]int             // path → values seen there
	objects map[string]int             // path → objects seen there: a member of one is always present when seen as often
}

func newShape() shape {
	return shape{kinds: map[string]map[string]bool{}, count: map[string]int{}, objects: map[string]int{}}
}

// shapeOf is the shape of a JSON document.
func shapeOf(raw []byte) (shape, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return shape{}, err
	}
	s := newShape()
	s.add("", v)
	return s, nil
}

func child(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (s shape) add(path string, v any) {
	k := kindOf(v)
	if s.kinds[path] == nil {
		s.kinds[path] = map[string]bool{}
	}
	s.kinds[path][k] = true
	s.count[path]++
	switch v := v.(type) {
	case map[string]any:
		s.objects[path]++
		for key, e := range v {
			s.add(child(path, key), e)
		}
	case []any:
		for _, e := range v {
			s.add(path+"[]", e)
		}
	}
}

// kindOf is a JSON value's type. A number written without a fraction or an
// exponent is an integer: a client that decodes it into an integer field
// fails on 1.5.
func kindOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if strings.ContainsAny(v.String(), ".eE") {
			return "number"
		}
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	panic(fmt.Sprintf("kindOf %T", v))
}

// merge adds o's paths to s, as if its values were seen at the same paths.
func (s shape) merge(o shape) shape {
	for p, ks := range o.kinds {
		if s.kinds[p] == nil {
			s.kinds[p] = map[string]bool{}
		}
		maps.Copy(s.kinds[p], ks)
		s.count[p] += o.count[p]
		s.objects[p] += o.objects[p]
	}
	return s
}

// rebase moves the paths under from to under to: rebase("[]", "") is the
// shape of a list's elements, rebase("", "[]") the shape of a list of
// values of s.
func (s shape) rebase(from, to string) shape {
	out := newShape()
	for p := range s.kinds {
		if !strings.HasPrefix(p, from) {
			continue
		}
		rest := p[len(from):]
		switch {
		case rest == "" || strings.HasPrefix(rest, "[]") || strings.HasPrefix(rest, "."):
		case from == "":
			rest = "." + rest
		default:
			continue // a sibling whose name starts with from's
		}
		if to == "" {
			rest = strings.TrimPrefix(rest, ".")
		}
		q := to + rest
		out.kinds[q] = maps.Clone(s.kinds[p])
		out.count[q] = s.count[p]
		out.objects[q] = s.objects[p]
	}
	return out
}

func kindList(ks map[string]bool) string {
	return strings.Join(slices.Sorted(maps.Keys(ks)), "|")
}

func pathName(p string) string {
	if p == "" {
		return "(the body)"
	}
	return p
}

// allows reports whether GitLab's kinds at a path admit kind k: a number
// admits an integer; a path GitLab documents only as null admits anything.
func allows(doc map[string]bool, k string) bool {
	if doc[k] || (k == "integer" && doc["number"]) {
		return true
	}
	return len(doc) == 1 && doc["null"]
}

// contract is what one endpoint's answer must hold against GitLab's
// documented shape.
type contract struct {
	// reads are the paths a client of the fake reads (the adapter, the
	// test fixtures): each must be in GitLab's documented shape, and in
	// every answer of the fake with a documented kind.
	reads []string
	// nullable are paths GitLab documents as possibly null: there the fake
	// may send null where the example shows a value, and the reads under
	// them are absent with them.
	nullable []string
	// optional are reads GitLab sends for some values only (failure_reason
	// of a failed job): present in some elements, absent in others.
	optional []string
	// undocumented are reads no documented example shows, with their kind
	// and where GitLab defines them.
	undocumented map[string]undocumented
}

type undocumented struct{ kind, where string }

// conform lists how fake, an answer of the fake, departs from doc, GitLab's
// documented shape, on the paths that matter: every path both have must
// agree in kind (a null from the fake is fine where nothing reads it: it
// decodes into any field), and every read path must be there.
func conform(fake, doc shape, c contract) []string {
	var out []string
	nullable := func(p string) bool { return slices.Contains(c.nullable, p) }
	reads := func(p string) bool { return slices.Contains(c.reads, p) }
	for _, p := range slices.Sorted(maps.Keys(fake.kinds)) {
		dk, ok := doc.kinds[p]
		if u, undoc := c.undocumented[p]; undoc && !ok {
			dk, ok = map[string]bool{u.kind: true}, true
		}
		if !ok {
			continue // a member GitLab's example lacks and nothing reads
		}
		for k := range fake.kinds[p] {
			switch {
			case k == "null" && (dk["null"] || nullable(p) || !reads(p)):
			case k != "null" && allows(dk, k):
			default:
				out = append(out, fmt.Sprintf("%s is %s, GitLab documents %s", pathName(p), kindList(fake.kinds[p]), kindList(dk)))
			}
		}
	}
	for _, p := range c.reads {
		_, documented := doc.kinds[p]
		if _, undoc := c.undocumented[p]; !documented && !undoc {
			out = append(out, fmt.Sprintf("%s is read, but GitLab's documented example lacks it", pathName(p)))
		}
		if _, ok := fake.kinds[p]; !ok {
			if !underNull(fake, p, nullable) {
				out = append(out, fmt.Sprintf("%s is missing (GitLab documents %s)", pathName(p), kindList(doc.kinds[p])))
			}
			continue
		}
		if parent := parentObject(p); !slices.Contains(c.optional, p) && fake.count[p] < fake.objects[parent] &&
			!underNull(fake, p, nullable) {
			out = append(out, fmt.Sprintf("%s is missing from %d of %d objects", pathName(p), fake.objects[parent]-fake.count[p], fake.objects[parent]))
		}
	}
	return out
}

// parentObject is the path of the object whose member p is.
func parentObject(p string) string {
	i := strings.LastIndexByte(p, '.')
	if i < 0 {
		if strings.HasPrefix(p, "[]") {
			return "[]"
		}
		return ""
	}
	return p[:i]
}

// underNull reports whether a path is absent because an ancestor GitLab
// documents as nullable is null in the fake.
func underNull(fake shape, p string, nullable func(string) bool) bool {
	for q := parentObject(p); ; q = parentObject(q) {
		if nullable(q) && fake.kinds[q]["null"] {
			return true
		}
		if q == "" || q == "[]" {
			return false
		}
	}
}

// documented is the shape of a fixture of testdata/documented.
func documented(t *testing.T, name string) shape {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "documented", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := shapeOf(raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func TestShapeOf(t *testing.T) {
	s, err := shapeOf([]byte(`{"a": 1, "b": [{"c": "x"}, {"c": null, "d": 1.5}], "e": {"f": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"": "object", "a": "integer", "b": "array", "b[]": "object", "b[].c": "null|string",
		"b[].d": "number", "e": "object", "e.f": "boolean"}
	got := map[string]string{}
	for p, ks := range s.kinds {
		got[p] = kindList(ks)
	}
	if !maps.Equal(got, want) {
		t.Errorf("shape = %v, want %v", got, want)
	}
	if s.count["b[].d"] != 1 || s.objects["b[]"] != 2 {
		t.Errorf("count b[].d = %d, objects b[] = %d; want 1, 2", s.count["b[].d"], s.objects["b[]"])
	}
	if e := s.rebase("b[]", ""); kindList(e.kinds["c"]) != "null|string" || e.objects[""] != 2 {
		t.Errorf("rebase b[] → \"\": %v", e.kinds)
	}
	if l := s.rebase("", "[]"); kindList(l.kinds["[].b[].c"]) != "null|string" || kindList(l.kinds["[]"]) != "object" {
		t.Errorf("rebase \"\" → []: %v", l.kinds)
	}
}

func TestConform(t *testing.T) {
	doc, _ := shapeOf([]byte(`{"id": 1, "name": "x", "when": null, "user": {"id": 1}, "list": [{"n": 1.5}]}`))
	for _, tc := range []struct {
		name, fake string
		c          contract
		want       []string
	}{
		{"same shape", `{"id": 2, "name": "y", "when": "t", "user": {"id": 3}, "list": [{"n": 2}]}`,
			contract{reads: []string{"id", "user.id", "list[].n"}}, nil},
		{"members GitLab lacks are fine", `{"id": 2, "extra": [1]}`, contract{reads: []string{"id"}}, nil},
		{"a wrong kind", `{"id": "2", "list": [{"n": 1}]}`, contract{},
			[]string{`id is string, GitLab documents integer`}},
		{"a fraction where GitLab has an integer", `{"id": 2.5}`, contract{},
			[]string{`id is number, GitLab documents integer`}},
		{"an object where GitLab has an array", `{"list": {}}`, contract{},
			[]string{`list is object, GitLab documents array`}},
		{"a read member missing", `{"name": "y"}`, contract{reads: []string{"id"}},
			[]string{`id is missing (GitLab documents integer)`}},
		{"a read member null", `{"id": null}`, contract{reads: []string{"id"}},
			[]string{`id is null, GitLab documents integer`}},
		{"null where GitLab documents it nullable", `{"id": 1, "user": null}`,
			contract{reads: []string{"id", "user.id"}, nullable: []string{"user"}}, nil},
		{"null where nothing reads it", `{"name": null}`, contract{}, nil},
		{"a read member missing from one element", `{"list": [{"n": 1}, {}]}`, contract{reads: []string{"list[].n"}},
			[]string{`list[].n is missing from 1 of 2 objects`}},
		{"an optional read present in one element", `{"list": [{"n": 1}, {}]}`,
			contract{reads: []string{"list[].n"}, optional: []string{"list[].n"}}, nil},
		{"a read the docs lack", `{"secret": 1}`, contract{reads: []string{"secret"}},
			[]string{`secret is read, but GitLab's documented example lacks it`}},
		{"an undocumented read of the wrong kind", `{"approved": "yes"}`,
			contract{reads: []string{"approved"}, undocumented: map[string]undocumented{"approved": {"boolean", "an entity"}}},
			[]string{`approved is string, GitLab documents boolean`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, err := shapeOf([]byte(tc.fake))
			if err != nil {
				t.Fatal(err)
			}
			if got := conform(fake, doc, tc.c); !slices.Equal(got, tc.want) {
				t.Errorf("conform = %q, want %q", got, tc.want)
			}
		})
	}
}
