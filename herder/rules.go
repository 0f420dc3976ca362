package herder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Matcher is one node of the rules tree, as written in YAML; see the
// package documentation for what each field means. Pointer and nil fields
// are unset and inherit from the parent matcher.
type Matcher struct {
	// Name identifies the matcher among its siblings; the path of names
	// from the top ("infra/runner-system-failure") names it in verdicts.
	Name string `yaml:"name"`
	// Description says in words what failure the matcher recognises.
	Description string `yaml:"description,omitempty"`
	// JobName must equal the job's name, or match it when /regex/.
	JobName string `yaml:"job_name,omitempty"`
	// FailureReason must equal the forge's failure reason
	// (runner_system_failure, script_failure, ...), or match when /regex/.
	FailureReason string `yaml:"failure_reason,omitempty"`
	// Messages are searched for in the log's last TailLines lines; any
	// one of them is enough. Literal substrings, or /regex/.
	Messages []string `yaml:"messages,omitempty"`
	// TailLines bounds the messages search to the log's last lines; 0
	// searches all of it.
	TailLines *int `yaml:"tail_lines,omitempty"`
	// RetryDelays are the waits before the first, second, ... retry;
	// empty inherits the parent's. Write [0s] to retry at once.
	RetryDelays []Duration `yaml:"retry_delays,omitempty"`
	// RetryLimit is how many times a job may be retried; 0 never.
	RetryLimit *int `yaml:"retry_limit,omitempty"`
	// Matchers make this matcher a group whose children narrow it.
	Matchers []Matcher `yaml:"matchers,omitempty"`
}

// Rules is a whole rules document: the matchers and the retry settings
// a matcher takes when neither it nor an ancestor sets its own. Unset,
// RetryLimit is DefaultRetryLimit and RetryDelays empty: retry at once.
type Rules struct {
	Matchers    []Matcher  `yaml:"matchers"`
	RetryDelays []Duration `yaml:"retry_delays,omitempty"`
	RetryLimit  *int       `yaml:"retry_limit,omitempty"`
}

// DefaultRetryLimit is the retry limit when the rules set none, as CKI's
// herder documents it.
const DefaultRetryLimit = 3

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

const durationWant = "want a duration such as 30s or 5m"

// UnmarshalYAML accepts only duration strings: a bare number has no unit
// and would silently mean nanoseconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, ok := parseDurationNode(n)
	if !ok {
		return fmt.Errorf("line %d: %s, got %q", n.Line, durationWant, n.Value)
	}
	*d = Duration(v)
	return nil
}

func parseDurationNode(n *yaml.Node) (time.Duration, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return 0, false
	}
	v, err := time.ParseDuration(n.Value)
	return v, err == nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// String returns the duration as Go writes it.
func (d Duration) String() string { return time.Duration(d).String() }

// FieldError is one problem of a rules document. Field is the path of the
// offending field from the document's top ("matchers[2].messages[1]"), so
// a caller embedding the rules in a larger file can prefix it.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// FieldErrors returns the *FieldError problems err holds (as Parse and
// Compile join them), in order; nil when it holds none.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		if fe, ok := err.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// maxDocument bounds a rules document: it is read whole.
const maxDocument = 1 << 20

// Parse decodes a rules document strictly: unknown keys, values of the
// wrong type and more than one YAML document are errors, each a
// *FieldError naming its field where the field can be named. Parse does
// not check the rules' meaning; Compile does.
func Parse(data []byte) (Rules, error) {
	if len(data) > maxDocument {
		return Rules{}, &FieldError{Field: "(document)", Problem: fmt.Sprintf("larger than %d bytes", maxDocument)}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Rules{}, nil
		}
		return Rules{}, &FieldError{Field: "(document)", Problem: err.Error()}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Rules{}, &FieldError{Field: "(document)", Problem: "want one YAML document, found more"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return Rules{}, nil
	}
	w := shapeWalker{budget: maxNodes}
	w.check(root, "", rulesKeys, 0)
	if len(w.errs) > 0 {
		return Rules{}, errors.Join(w.errs...)
	}
	// The shape is right, so a strict decode can fail only on a value
	// the walk let through; KnownFields keeps it honest all the same.
	var rules Rules
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&rules); err != nil {
		return Rules{}, &FieldError{Field: "(document)", Problem: err.Error()}
	}
	return rules, nil
}

type valueKind int

const (
	kindString valueKind = iota
	kindInt
	kindStrings
	kindDurations
	kindMatchers
)

var rulesKeys = map[string]valueKind{
	"matchers":     kindMatchers,
	"retry_delays": kindDurations,
	"retry_limit":  kindInt,
}

var matcherKeys = map[string]valueKind{
	"name":           kindString,
	"description":    kindString,
	"job_name":       kindString,
	"failure_reason": kindString,
	"messages":       kindStrings,
	"tail_lines":     kindInt,
	"retry_delays":   kindDurations,
	"retry_limit":    kindInt,
	"matchers":       kindMatchers,
}

// maxDepth bounds nesting: a rules tree deeper than this is a mistake,
// and the bound keeps the walk's recursion small.
const maxDepth = 16

// maxNodes bounds the mappings the shape walk visits, so that aliases
// repeating a subtree many times over cannot make it run away.
const maxNodes = 10000

// shapeWalker walks a rules document's nodes and reports, by field path,
// the keys it does not know and the values of the wrong type, so that a
// typo deep in the tree is reported where it is rather than by YAML line
// alone.
type shapeWalker struct {
	errs   []error
	budget int
}

func (w *shapeWalker) check(n *yaml.Node, path string, keys map[string]valueKind, depth int) {
	bad := func(field, format string, args ...any) {
		w.errs = append(w.errs, &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	if w.budget--; w.budget < 0 {
		if w.budget == -1 {
			bad("(document)", "more than %d matchers, counting those aliases repeat", maxNodes)
		}
		return
	}
	at := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		field := path
		if field == "" {
			field = "(document)"
		}
		bad(field, "line %d: want a mapping of %s", n.Line, keyList(keys))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		kind, ok := keys[k.Value]
		if k.Kind != yaml.ScalarNode || !ok {
			name := k.Value
			if k.Kind != yaml.ScalarNode || !namePattern.MatchString(name) {
				name = fmt.Sprintf("%q", name) // show an odd key for what it is
			}
			bad(at(name), "line %d: unknown key; want one of %s", k.Line, keyList(keys))
			continue
		}
		if seen[k.Value] {
			bad(at(k.Value), "line %d: set twice", k.Line)
			continue
		}
		seen[k.Value] = true
		field := at(k.Value)
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue // unset, as if absent
		}
		switch kind {
		case kindString:
			if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
				bad(field, "line %d: want a string", v.Line)
			}
		case kindInt:
			if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
				bad(field, "line %d: want a whole number, got %q", v.Line, v.Value)
			} else {
				var x int
				if err := v.Decode(&x); err != nil {
					bad(field, "line %d: want a whole number, got %q", v.Line, v.Value)
				}
			}
		case kindStrings, kindDurations, kindMatchers:
			if v.Kind != yaml.SequenceNode {
				bad(field, "line %d: want a list", v.Line)
				continue
			}
			for j, item := range v.Content {
				item = deref(item)
				itemField := fmt.Sprintf("%s[%d]", field, j)
				switch kind {
				case kindStrings:
					if item.Kind != yaml.ScalarNode || item.Tag != "!!str" {
						bad(itemField, "line %d: want a string", item.Line)
					}
				case kindDurations:
					if _, ok := parseDurationNode(item); !ok {
						bad(itemField, "line %d: %s, got %q", item.Line, durationWant, item.Value)
					}
				case kindMatchers:
					if depth+1 > maxDepth {
						bad(itemField, "line %d: nested deeper than %d levels", item.Line, maxDepth)
						continue
					}
					w.check(item, itemField, matcherKeys, depth+1)
				}
			}
		}
	}
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func keyList(keys map[string]valueKind) string {
	// A fixed order keeps error messages stable.
	order := []string{"name", "description", "job_name", "failure_reason", "messages", "tail_lines", "retry_delays", "retry_limit", "matchers"}
	var out []string
	for _, k := range order {
		if _, ok := keys[k]; ok {
			out = append(out, k)
		}
	}
	return strings.Join(out, ", ")
}
