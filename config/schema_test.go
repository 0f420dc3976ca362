package config_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/workqueue-dev/workqueue/config"
)

var update = flag.Bool("update", false, "rewrite docs/config.schema.json")

const schemaFile = "../docs/config.schema.json"

// sectionDirs hold the item types' sections the schema documents, beside
// this package's own types.
var sectionDirs = map[string]string{".": "config", "../mr/mrtype": "mrtype", "../example": "example"}

// fieldDocs collects the doc comments of struct fields of this package and
// of the item types' sections, by "Type.Field": a comment above the field,
// else one at the line's end.
func fieldDocs(t *testing.T) map[string]string {
	t.Helper()
	docs := map[string]string{}
	for dir, name := range sectionDirs {
		fieldDocsOf(t, dir, name, docs)
	}
	return docs
}

func fieldDocsOf(t *testing.T, dir, name string, docs map[string]string) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pkgs[name].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				text := field.Doc.Text()
				if text == "" {
					text = field.Comment.Text()
				}
				text = strings.Join(strings.Fields(text), " ")
				for _, name := range field.Names {
					if text != "" {
						docs[ts.Name.Name+"."+name.Name] = text
					}
				}
			}
			return false
		})
	}
}

func generatedSchema(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(config.Schema(fieldDocs(t), known)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestConfigSchemaIsUpToDate(t *testing.T) {
	got := generatedSchema(t)
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: the config types changed; run go test ./config -run ConfigSchema -update", schemaFile)
	}
}

// resolvedSchema is the published schema, ready to validate with.
func resolvedSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(generatedSchema(t), &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// asJSON is a YAML document as the JSON values a schema validates.
func asJSON(t *testing.T, doc []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestConfigSchemaTakesTheExampleAndRefusesWhatTheLoaderRefuses(t *testing.T) {
	r := resolvedSchema(t)
	example, err := os.ReadFile("../workqueue.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(asJSON(t, example)); err != nil {
		t.Errorf("the example config does not validate: %v", err)
	}
	if !bytes.HasPrefix(example, []byte("# yaml-language-server: $schema=docs/config.schema.json\n")) {
		t.Errorf("the example config does not point editors at the schema on its first line")
	}
	for _, doc := range []string{
		"lisen: 127.0.0.1:8080",
		"processing: {lease: 30}",
		"processing: {workers: ten}",
		"handled_types: mr",
		"forges: [{name: g, tokn_env: T}]",
	} {
		if err := r.Validate(asJSON(t, []byte(doc))); err == nil {
			t.Errorf("the schema takes %q, which the loader refuses", doc)
		}
		if _, err := config.Parse(strings.NewReader(doc), known); err == nil {
			t.Errorf("the loader takes %q", doc)
		}
	}
}
