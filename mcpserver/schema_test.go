package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/mcpserver"
	"github.com/workqueue-dev/workqueue/mcpserver/mcptest"
)

// TestEverySchemaIsAnObject holds every tool's input and output schema,
// as a client reads them from tools/list, to what the official
// TypeScript SDK's client accepts: a schema is a JSON object at every
// level. A boolean schema (true for a free member) makes its listTools
// throw, and a host on it sees no tool at all. The one boolean allowed
// is additionalProperties false, the refusal of undeclared members that
// the TypeScript SDK's own servers send (and its client reads).
func TestEverySchemaIsAnObject(t *testing.T) {
	t.Parallel()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(mcpserver.Fixed(nil), testapi.Types.Faces()).Connect(t.Context(), serverSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs := mcptest.Connect(t, clientSide)

	var listed int
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed++
		for which, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			if schema == nil {
				if which == "input" {
					t.Errorf("%s: no input schema", tool.Name)
				}
				continue
			}
			b, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if m, ok := doc.(map[string]any); !ok || m["type"] != "object" {
				t.Errorf("%s: %s schema is not of type object: %s", tool.Name, which, b)
			}
			for _, where := range booleanSchemas(doc, "") {
				t.Errorf("%s: %s schema has a boolean schema at %s", tool.Name, which, where)
			}
		}
	}
	if listed < 20 {
		t.Errorf("listed %d tools, want every one (more than 20)", listed)
	}
}

// booleanSchemas are the JSON pointers of the boolean schemas in the
// schema s (at path), at every level where JSON Schema takes a schema.
func booleanSchemas(s any, path string) []string {
	if b, ok := s.(bool); ok {
		if !b && strings.HasSuffix(path, "/additionalProperties") {
			return nil
		}
		return []string{cmpOr(path, "/")}
	}
	m, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	var found []string
	for k, v := range m {
		switch {
		case slices.Contains([]string{"additionalProperties", "additionalItems", "items", "contains", "not", "if", "then", "else",
			"propertyNames", "unevaluatedProperties", "unevaluatedItems", "contentSchema"}, k):
			if list, ok := v.([]any); ok {
				for i, e := range list {
					found = append(found, booleanSchemas(e, fmt.Sprintf("%s/%s/%d", path, k, i))...)
				}
			} else {
				found = append(found, booleanSchemas(v, path+"/"+k)...)
			}
		case slices.Contains([]string{"allOf", "anyOf", "oneOf", "prefixItems"}, k):
			list, _ := v.([]any)
			for i, e := range list {
				found = append(found, booleanSchemas(e, fmt.Sprintf("%s/%s/%d", path, k, i))...)
			}
		case slices.Contains([]string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}, k):
			named, _ := v.(map[string]any)
			for name, e := range named {
				found = append(found, booleanSchemas(e, path+"/"+k+"/"+name)...)
			}
		}
	}
	return found
}

func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}
