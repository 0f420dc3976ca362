package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/workqueue-dev/workqueue/herder"
	"github.com/workqueue-dev/workqueue/internal/suggest"
)

// Problem is one thing wrong with a configuration file: the field it is
// about (a path such as forges[0].kind), the line of the file it was
// found on when known, and what to do about it. Its text never names a
// Go type: it is for the person editing the file.
type Problem struct {
	Field   string `json:"field,omitempty" yaml:"field,omitempty"`
	Line    int    `json:"line,omitempty" yaml:"line,omitempty"`
	Message string `json:"message" yaml:"message"`
	// Warning marks a problem that does not stop the service: a
	// configuration that works but probably not as meant.
	Warning bool `json:"warning,omitempty" yaml:"warning,omitempty"`
}

func (p *Problem) Error() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems is every problem of a configuration, in file order where the
// lines are known.
type Problems []*Problem

// Errors are the problems that are not warnings.
func (ps Problems) Errors() Problems {
	return slices.DeleteFunc(slices.Clone(ps), func(p *Problem) bool { return p.Warning })
}

// Warnings are the problems that are warnings.
func (ps Problems) Warnings() Problems {
	return slices.DeleteFunc(slices.Clone(ps), func(p *Problem) bool { return !p.Warning })
}

// Err joins the problems that are not warnings into one error, nil
// without any.
func (ps Problems) Err() error {
	var errs []error
	for _, p := range ps.Errors() {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}

// checkNode walks a decoded YAML document against the configuration's Go
// types, by their yaml tags, and reports every key no field has (with the
// nearest field name as a suggestion) and every value of the wrong shape,
// each with its line. decode reports these instead of the YAML library's
// messages, which name Go types and stop at the first unknown key.
func checkNode(n *yaml.Node, t reflect.Type, field string, out *Problems) {
	budget := maxWalkNodes
	walkNode(n, t, field, out, &budget)
}

// maxWalkNodes bounds the nodes checkNode visits: aliases repeating a
// subtree over and over must not make the walk run away (the decoder
// refuses such a document itself, after the walk).
const maxWalkNodes = 100000

func walkNode(n *yaml.Node, t reflect.Type, field string, out *Problems, budget *int) {
	if n == nil || n.Kind == 0 {
		return
	}
	if *budget--; *budget < 0 {
		if *budget == -1 {
			*out = append(*out, &Problem{Line: n.Line, Message: "the document is too large or repeats aliases too often"})
		}
		return
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			walkNode(c, t, field, out, budget)
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value keeps the default
	}
	bad := func(format string, args ...any) {
		*out = append(*out, &Problem{Field: field, Line: n.Line, Message: fmt.Sprintf(format, args...)})
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isDuration(t) {
		if _, err := time.ParseDuration(n.Value); n.Kind != yaml.ScalarNode || n.Tag != "!!str" || err != nil {
			bad("want a duration such as 30s, 5m or 1h30m, got %s", describeNode(n))
		}
		return
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		return // the type decodes itself, and the decoder reports its errors
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			bad("want a mapping of keys to values, got %s", describeNode(n))
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			ft, ok := fields[key.Value]
			if !ok {
				p := &Problem{Field: join(field, key.Value), Line: key.Line, Message: "unknown key"}
				if near := nearest(key.Value, fields); near != "" {
					p.Message += fmt.Sprintf("; did you mean %q?", near)
				}
				*out = append(*out, p)
				continue
			}
			walkNode(value, ft, join(field, key.Value), out, budget)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			bad("want a list, such as [a, b], got %s", describeNode(n))
			return
		}
		for i, c := range n.Content {
			walkNode(c, t.Elem(), fmt.Sprintf("%s[%d]", field, i), out, budget)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			bad("want a mapping of keys to values, got %s", describeNode(n))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			bad("want a string, got %s", describeNode(n))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			bad("want true or false, got %s", describeNode(n))
		}
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			bad("want a whole number, got %s", describeNode(n))
		}
	case reflect.Float64, reflect.Float32:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
			bad("want a number, got %s", describeNode(n))
		}
	}
}

// isDuration reports whether t is one of the duration types, written as
// strings such as 30s (this package's, and the herder's).
func isDuration(t reflect.Type) bool {
	return t == reflect.TypeFor[Duration]() || t == reflect.TypeFor[herder.Duration]()
}

// describeNode says what a value is, in the file's terms.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// yamlFields maps a struct's yaml keys to their field types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		if name, ok := yamlName(f); ok {
			fields[name] = f.Type
		}
	}
	return fields
}

// nearest is the key of fields closest to key, if it is close enough to
// be a likely typo, else "".
func nearest(key string, fields map[string]reflect.Type) string {
	return suggest.Nearest(key, slices.Collect(maps.Keys(fields)))
}

// lineOf finds the line of the value at a field path (processing.lease,
// forges[0].kind, forges[gitea].token) in a document, 0 when the file
// does not set it.
func lineOf(doc *yaml.Node, field string) int {
	n := doc
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, seg := range fieldSegments.FindAllStringSubmatch(field, -1) {
		if n == nil {
			return line
		}
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		switch {
		case seg[1] != "": // a key
			var next *yaml.Node
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == seg[1] {
						line, next = n.Content[i].Line, n.Content[i+1]
					}
				}
			}
			n = next
		default: // an index or a name in brackets
			var next *yaml.Node
			if n.Kind == yaml.SequenceNode {
				if i, err := strconv.Atoi(seg[2]); err == nil {
					if i < len(n.Content) {
						next = n.Content[i]
					}
				} else {
					for _, c := range n.Content {
						if c.Kind == yaml.MappingNode && mappingValue(c, "name") == seg[2] {
							next = c
						}
					}
				}
			}
			if next != nil {
				line = next.Line
			}
			n = next
		}
	}
	return line
}

// mappingValue is the scalar value of key in a mapping, "" if none.
func mappingValue(m *yaml.Node, key string) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1].Value
		}
	}
	return ""
}

var fieldSegments = regexp.MustCompile(`\.?([a-z0-9_]+)|\[([^\]]*)\]`)

// problemOf turns one of Validate's "field: message" errors into a
// problem, with the field's line when the file sets it.
func problemOf(err error, doc *yaml.Node) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	msg := err.Error()
	field, rest, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(field, " \n") {
		return &Problem{Message: msg}
	}
	return &Problem{Field: field, Line: lineOf(doc, field), Message: rest}
}

// yamlLine matches the YAML library's syntax and type errors, to take
// their line out.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlTypeError matches a type error of the YAML library, which names a
// Go type; the key walk reports these in the file's terms, so such a
// line is only a fallback.
var yamlTypeError = regexp.MustCompile("cannot unmarshal !!(\\w+) `(.*)` into (\\S+)")

// problemsOfYAML turns the YAML library's error into problems, without
// Go type names.
func problemsOfYAML(err error) Problems {
	var lines []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines = te.Errors
	} else {
		lines = strings.Split(err.Error(), "\n")
	}
	var out Problems
	for _, l := range lines {
		l = strings.TrimSpace(strings.TrimPrefix(l, "yaml: unmarshal errors:"))
		if l == "" {
			continue
		}
		p := &Problem{Message: l}
		if m := yamlLine.FindStringSubmatch(l); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			p.Message = m[2]
		}
		if m := yamlTypeError.FindStringSubmatch(p.Message); m != nil {
			p.Message = fmt.Sprintf("value %q has the wrong type here (a %s)", m[2], yamlKind(m[1]))
		}
		out = append(out, p)
	}
	return out
}

func yamlKind(tag string) string {
	switch tag {
	case "str":
		return "string"
	case "int", "float":
		return "number"
	case "bool":
		return "true or false"
	case "seq":
		return "list"
	case "map":
		return "mapping"
	}
	return tag
}

// decodeYAML decodes one YAML document into v (a pointer) as the
// configuration file is decoded: every unknown key and every value of
// the wrong shape is reported in the file's terms, with its line, all at
// once. For files the configuration names (incidents.projects_file).
func decodeYAML(body []byte, v any) Problems {
	var doc yaml.Node
	if err := yaml.Unmarshal(body, &doc); err != nil {
		return problemsOfYAML(err)
	}
	var problems Problems
	checkNode(&doc, reflect.TypeOf(v).Elem(), "", &problems)
	if len(problems) > 0 {
		return problems
	}
	if doc.Kind != 0 {
		if err := doc.Decode(v); err != nil {
			return problemsOfYAML(err)
		}
	}
	return nil
}

// yamlName is the key a struct field takes in YAML (its yaml tag, else its
// lowercased name); false for a field YAML skips.
func yamlName(f reflect.StructField) (string, bool) {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	switch name {
	case "-":
		return "", false
	case "":
		return strings.ToLower(f.Name), true
	}
	return name, true
}
