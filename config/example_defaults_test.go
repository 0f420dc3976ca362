package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gopkg.in/yaml.v3"

	"github.com/workqueue-dev/workqueue/config"
)

// commentedKey is a line of the example that shows a key commented out:
// "# key: value" or "#   - key: value" at any indentation (the key
// "example" names the example item type's section and starts prose).
var commentedKey = regexp.MustCompile(`^(\s*)# ?(\s*)((?:- )?[a-z_]+:(?:\s|$).*)$`)

// uncomment turns every commented-out key of the example into YAML, so
// that the values it shows as defaults are read as the file's.
func uncomment(example string) string {
	lines := strings.Split(example, "\n")
	for i, l := range lines {
		m := commentedKey.FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(m[3], "example:") {
			continue
		}
		lines[i] = m[1] + m[2] + m[3]
	}
	return strings.Join(lines, "\n")
}

// dropExamples removes from a mapping every entry whose comments say
// "example:" (the example's convention for a value that is not the
// default), recursively.
func dropExamples(n *yaml.Node) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			dropExamples(c)
		}
	case yaml.MappingNode:
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if isExample(k.HeadComment) || isExample(k.LineComment) || isExample(v.LineComment) || isExample(v.HeadComment) {
				continue
			}
			dropExamples(v)
			kept = append(kept, k, v)
		}
		n.Content = kept
	}
}

func isExample(comment string) bool {
	for _, l := range strings.Split(comment, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, "# \t"), "example:") {
			return true
		}
	}
	return false
}

// Every value the example configuration shows, commented out or not,
// is the default an empty file resolves to, unless its comment starts
// with "example:" (issue 48: a documented default that was not one).
func TestEveryValueTheExampleShowsIsTheResolvedDefault(t *testing.T) {
	b, err := os.ReadFile("../workqueue.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(uncomment(string(b))), &doc); err != nil {
		t.Fatalf("the example with its commented keys shown: %v", err)
	}
	dropExamples(&doc)
	shown, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(strings.NewReader(string(shown)), known)
	if err != nil {
		t.Fatalf("the example's defaults do not load: %v\n%s", err, shown)
	}
	if diff := cmp.Diff(config.DefaultFor(known), cfg, cmpopts.EquateEmpty(), unresolved); diff != "" {
		t.Errorf("the example shows values that are not the defaults (-default +shown):\n%s\nfrom:\n%s", diff, shown)
	}
}
