package config

import (
	"reflect"
	"strings"
	"time"
)

// Schema is a JSON Schema (draft 2020-12) of the configuration file,
// made from the Go types by their yaml tags, so that it cannot say other
// than what the loader takes: every mapping closed to unknown keys,
// durations as strings with a unit, each field's default from Default().
// descriptions maps "Type.Field" to the field's documentation; the
// published docs/config.schema.json is made with the doc comments of
// this package (the schema test regenerates it and fails when it is
// stale). known names the item types handled_types may name and the
// kinds forges[].kind may, as the program that checks a file links them.
func Schema(descriptions map[string]string, known Known) map[string]any {
	g := schemaGen{descriptions: descriptions, defs: map[string]any{}}
	root := g.structSchema(reflect.TypeFor[Config](), reflect.ValueOf(Default()))
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "workqueue configuration"
	root["description"] = "The YAML configuration file of workqueue serve (workqueue.example.yaml). Check a file with: workqueue config check FILE"
	props := root["properties"].(map[string]any)
	for _, s := range known.sections() {
		v := reflect.ValueOf(s.Default())
		section := g.structSchema(v.Type().Elem(), v.Elem())
		section["description"] = "An item type's own section: the type declares its keys, defaults and checks."
		props[s.Key] = section
	}
	root["$defs"] = g.defs
	// handled_types names what this program can process (serve builds
	// exactly known's types); anything else would wait forever.
	types := root["properties"].(map[string]any)["handled_types"].(map[string]any)
	types["items"] = map[string]any{"type": "string", "enum": known.typeNames()}
	return root
}

type schemaGen struct {
	descriptions map[string]string
	defs         map[string]any
}

// durationPattern admits what time.ParseDuration does, as a YAML string.
const durationPattern = `^(0|-?([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+$`

// typeSchema is the schema of a value of type t; def is the default value
// (invalid for none).
func (g schemaGen) typeSchema(t reflect.Type, def reflect.Value) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if def.IsValid() {
			if def.IsNil() {
				def = reflect.Value{}
			} else {
				def = def.Elem()
			}
		}
	}
	var s map[string]any
	switch {
	case isDuration(t):
		s = map[string]any{"type": "string", "pattern": durationPattern}
		if def.IsValid() && def.Int() != 0 {
			s["default"] = time.Duration(def.Int()).String()
		}
		return s
	case t.Kind() == reflect.Struct:
		// Named structs are $defs, defaults kept at the use site.
		if _, ok := g.defs[t.Name()]; !ok {
			g.defs[t.Name()] = true // placeholder against recursion
			g.defs[t.Name()] = g.structSchema(t, reflect.Value{})
		}
		s = map[string]any{"$ref": "#/$defs/" + t.Name()}
		return s
	case t.Kind() == reflect.Slice:
		s = map[string]any{"type": "array", "items": g.typeSchema(t.Elem(), reflect.Value{})}
		if def.IsValid() && def.Len() > 0 && t.Elem().Kind() != reflect.Struct {
			s["default"] = def.Interface()
		}
		return s
	case t.Kind() == reflect.Map:
		return map[string]any{"type": "object"}
	case t.Kind() == reflect.Interface:
		return map[string]any{}
	case t.Kind() == reflect.String:
		s = map[string]any{"type": "string"}
		if def.IsValid() && def.String() != "" {
			s["default"] = def.String()
		}
	case t.Kind() == reflect.Bool:
		s = map[string]any{"type": "boolean"}
		if def.IsValid() {
			s["default"] = def.Bool()
		}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		s = map[string]any{"type": "integer"}
		if def.IsValid() && def.Int() != 0 {
			s["default"] = def.Int()
		}
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		s = map[string]any{"type": "integer", "minimum": 0}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		s = map[string]any{"type": "number"}
	default:
		s = map[string]any{}
	}
	return s
}

// structSchema is the schema of a struct, closed to unknown keys, with
// def's fields as the properties' defaults when def is valid.
func (g schemaGen) structSchema(t reflect.Type, def reflect.Value) map[string]any {
	props := map[string]any{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, ok := yamlName(f)
		if !ok {
			continue
		}
		var fdef reflect.Value
		if def.IsValid() {
			fdef = def.Field(i)
		}
		p := g.typeSchema(f.Type, fdef)
		if d := g.descriptions[t.Name()+"."+f.Name]; d != "" {
			// The comment's subject is the Go field; the file's reader
			// knows the key.
			if rest, ok := strings.CutPrefix(d, f.Name+" "); ok {
				d = name + " " + rest
			}
			p["description"] = d
		}
		if _, isRef := p["$ref"]; isRef && fdef.IsValid() && fdef.Kind() == reflect.Struct {
			// A nested struct's defaults: the whole section as Default() has it.
			if d := nonZeroDefaults(fdef); len(d) > 0 {
				p["default"] = d
			}
		}
		props[name] = p
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

// nonZeroDefaults is a section's default values by key, the zero ones left
// out (they say nothing).
func nonZeroDefaults(v reflect.Value) map[string]any {
	out := map[string]any{}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		fv := v.Field(i)
		if fv.IsZero() {
			continue
		}
		switch {
		case isDuration(f.Type):
			out[name] = time.Duration(fv.Int()).String()
		case fv.Kind() == reflect.Struct:
			if d := nonZeroDefaults(fv); len(d) > 0 {
				out[name] = d
			}
		case fv.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			// lists of sections: left to the example
		case fv.Kind() == reflect.Pointer:
		default:
			out[name] = fv.Interface()
		}
	}
	return out
}
