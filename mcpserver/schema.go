package mcpserver

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The JSON Schema keywords whose values are one schema, a list of
// schemas, or a map of names to schemas: where a boolean schema may stand.
var (
	schemaKeywords = []string{"additionalProperties", "additionalItems", "items", "contains", "not", "if", "then", "else",
		"propertyNames", "unevaluatedProperties", "unevaluatedItems", "contentSchema"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

// objectMembers are the free members (json.RawMessage) whose value is
// always a JSON object: an item type's detail and summary, an event's
// detail, a session's capabilities (the API refuses any other). The
// other free members (a checkpoint's pending_mutation and evidence) may
// be any JSON value.
var objectMembers = map[string]bool{"capabilities": true, "detail": true, "summary": true}

// objectSchema is s as JSON in which every schema is an object that says
// what it admits. The inference library writes a schema that admits
// anything as true (a free member: json.RawMessage, any, a map's values),
// valid JSON Schema that the official TypeScript SDK's clients refuse:
// their listTools throws, so a host on it sees no tool at all. A free
// member becomes {"type": "object"} where its value is always one
// (objectMembers), {} otherwise. A nullable member's type ["null", T]
// becomes anyOf T and null: clients that map tool schemas onto a
// single-type dialect (Gemini's function declarations) drop or refuse a
// type list. false stays false where it refuses undeclared members
// (additionalProperties), the spelling the TypeScript SDK's own servers
// send; anywhere else it becomes {"not": {}}.
func objectSchema(s any) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: encode a schema: %v", err)) // a declaration error, found by any test
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		panic(fmt.Sprintf("mcpserver: decode a schema: %v", err))
	}
	out, err := json.Marshal(withObjectSchemas(doc, ""))
	if err != nil {
		panic(fmt.Sprintf("mcpserver: encode a schema: %v", err))
	}
	return out
}

// withObjectSchemas is the schema s, of the member named member (or ""),
// with its boolean and type-list schemas, its own and its subschemas',
// spelled as objectSchema says.
func withObjectSchemas(s any, member string) any {
	switch v := s.(type) {
	case bool:
		switch {
		case !v:
			return map[string]any{"not": map[string]any{}}
		case objectMembers[member]:
			return map[string]any{"type": "object"}
		}
		return map[string]any{}
	case map[string]any:
		if len(v) == 0 || len(v) == 1 && v["description"] != nil {
			if objectMembers[member] {
				v["type"] = "object"
			}
			return v
		}
		for _, k := range schemaKeywords {
			if sub, ok := v[k]; ok {
				if _, list := sub.([]any); list {
					continue
				}
				if refuses, _ := sub.(bool); k == "additionalProperties" && !refuses {
					continue // false: undeclared members are refused
				}
				v[k] = withObjectSchemas(sub, "")
			}
		}
		for _, k := range schemaListKeywords {
			if list, ok := v[k].([]any); ok {
				for i, sub := range list {
					list[i] = withObjectSchemas(sub, "")
				}
			}
		}
		for _, k := range schemaMapKeywords {
			if m, ok := v[k].(map[string]any); ok {
				for name, sub := range m {
					if k == "properties" {
						m[name] = withObjectSchemas(sub, name)
					} else {
						m[name] = withObjectSchemas(sub, "")
					}
				}
			}
		}
		if m, ok := v["dependencies"].(map[string]any); ok {
			for name, sub := range m {
				if _, names := sub.([]any); !names { // a list of names, not a schema
					m[name] = withObjectSchemas(sub, "")
				}
			}
		}
		return nullableAsAnyOf(v)
	}
	return s
}

// nullableAsAnyOf is s with a type of ["null", T] spelled as anyOf T (with
// everything s says of it) and null; its description stays on s.
func nullableAsAnyOf(s map[string]any) map[string]any {
	types, ok := s["type"].([]any)
	if !ok || len(types) != 2 || !slices.Contains(types, any("null")) {
		return s
	}
	nonNull := types[0]
	if nonNull == "null" {
		nonNull = types[1]
	}
	out := map[string]any{}
	if d, ok := s["description"]; ok {
		out["description"] = d
		delete(s, "description")
	}
	s["type"] = nonNull
	out["anyOf"] = []any{s, map[string]any{"type": "null"}}
	return out
}
