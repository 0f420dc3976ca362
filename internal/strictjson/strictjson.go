// Package strictjson decodes a JSON request body into exactly what the
// caller sent, or refuses it. encoding/json fixes up what it cannot
// represent (invalid UTF-8 and lone surrogate escapes become U+FFFD) and
// quietly merges member names given twice or in another case; a service
// that inspects what it stores must see the bytes the caller sent, so
// those are refused here, naming the member.
//
// Decode decodes a body strictly: known members only, each once and in
// its case (an unknown one with a "did you mean" from package suggest).
// CheckShape (shape.go), which Decode runs first, refuses without decoding
// a body nested too deep or too wide; TopLevelString reads one member, to
// route a body before it is decoded.
package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/suggest"
)

// RuleInvalidUTF8 refuses a body holding bytes that are not UTF-8, or a
// \u escape of a lone UTF-16 surrogate, anywhere in it.
const RuleInvalidUTF8 = "invalid_utf8"

// Decode decodes body into v, a pointer to a struct whose JSON member
// names are all lowercase ASCII, or refuses it. The raw bytes are checked
// first: text that would not survive decoding is a *wq.Refusal with rule
// invalid_utf8 naming the member where it can (its Index is the element of
// the top-level array member indexed, e.g. "file_actions", else -1). The
// body must be a single JSON object with known members only, each given
// once in its exact case, followed by nothing but whitespace; anything
// else is EINVALID, as is a body whose shape CheckShape refuses.
func Decode(body []byte, v any, indexed string) error {
	if err := checkType(reflect.TypeOf(v)); err != nil {
		return err
	}
	if err := CheckShape(body); err != nil {
		return err
	}
	if off, why := firstInvalidText(body); off >= 0 {
		return invalidTextRefusal(body, off, why, indexed)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := "body: " + err.Error()
		if path, name, near := unknownMember(body, reflect.TypeOf(v)); name != "" {
			// The decoder names an unknown member but not where it is
			// nor what was meant, as config check does for its keys
			// (issue 29).
			if path != "" {
				msg += " (in " + path + ")"
			}
			if near != "" {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
		}
		return wq.Errorf(wq.EINVALID, "%s", msg)
	}
	// Decoder.More misses a trailing ] or }, so the rest is checked here.
	end := dec.InputOffset()
	if rest := bytes.TrimLeft(body[end:], " \t\r\n"); len(rest) > 0 {
		return wq.Errorf(wq.EINVALID, "body: data after the JSON object at byte %d: want one JSON object", len(body)-len(rest))
	}
	return checkMemberNames(body, reflect.TypeOf(v))
}

// checked holds the types checkType passed.
var checked sync.Map

// checkType holds the assumption checkMemberNames rests on: a lowercase
// ASCII name the decoder knows is exactly a field's name only if every
// field's JSON name is lowercase ASCII, given explicitly (a map's keys are
// data: checkMemberNames leaves them free). A type that breaks it is a
// programming error, reported as internal.
func checkType(typ reflect.Type) error {
	if _, ok := checked.Load(typ); ok {
		return nil
	}
	var problem error
	var check func(reflect.Type)
	check = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		for f := range typ.Fields() {
			if f.Anonymous {
				check(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.IsExported() && (name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "") && problem == nil {
				problem = fmt.Errorf("strictjson: %s.%s: JSON name %q is not explicit lowercase ASCII", typ, f.Name, name)
			}
			check(f.Type)
		}
	}
	check(typ)
	if problem == nil {
		checked.Store(typ, true)
	}
	return problem
}

// firstInvalidText returns the byte offset of the first text in body that
// would not survive decoding unchanged, and why; -1 if there is none.
// Outside string literals any byte that is not UTF-8 counts; inside them
// also a \u escape of a high surrogate not directly followed by an escaped
// low surrogate, and an escaped low surrogate on its own. Anything else
// malformed is left to the JSON decoder, which refuses it.
func firstInvalidText(body []byte) (int, string) {
	inString := false
	for i := 0; i < len(body); {
		c := body[i]
		if c >= utf8.RuneSelf {
			if r, size := utf8.DecodeRune(body[i:]); r == utf8.RuneError && size <= 1 {
				return i, "is not valid UTF-8"
			} else {
				i += size
				continue
			}
		}
		switch {
		case c == '"':
			inString = !inString
		case c == '\\' && inString && i+1 < len(body):
			if body[i+1] != 'u' {
				i += 2 // a one-character escape, possibly \" or \\
				continue
			}
			u, ok := hex4(body, i+2)
			switch {
			case !ok:
				// A malformed escape is a syntax error the decoder names.
			case 0xDC00 <= u && u <= 0xDFFF:
				return i, fmt.Sprintf("is a lone low surrogate escape \\u%04X", u)
			case 0xD800 <= u && u <= 0xDBFF:
				low, ok := uint16(0), i+7 < len(body) && body[i+6] == '\\' && body[i+7] == 'u'
				if ok {
					low, ok = hex4(body, i+8)
				}
				if !ok || low < 0xDC00 || low > 0xDFFF {
					return i, fmt.Sprintf("is a high surrogate escape \\u%04X without a low surrogate after it", u)
				}
				i += 12
				continue
			}
			i += 2
			continue
		}
		i++
	}
	return -1, ""
}

// hex4 reads the four hexadecimal digits of a \u escape at b[at:].
func hex4(b []byte, at int) (uint16, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[at:at+4]), 16, 16)
	return uint16(v), err == nil
}

// invalidTextRefusal refuses the text at byte off, naming the member it
// is in (file_actions[1].file_path) when the document up to it parses.
func invalidTextRefusal(body []byte, off int, why, indexed string) *wq.Refusal {
	r := &wq.Refusal{Index: -1, Rule: RuleInvalidUTF8}
	field, index, isName, ok := memberAt(body, int64(off), indexed)
	switch {
	case !ok:
		r.Message = fmt.Sprintf("the text at byte %d %s", off, why)
	case isName:
		r.Field, r.Index = field, index
		r.Message = fmt.Sprintf("a member name at byte %d %s", off, why)
	default:
		r.Field, r.Index = field, index
		r.Message = fmt.Sprintf("the string at byte %d %s", off, why)
	}
	if r.Field == "" && ok {
		r.Field = "(body)" // a document that is one string
	}
	return r
}

// memberAt returns the path of the member whose value is the string
// literal holding byte off (source_branch, labels[0],
// file_actions[1].file_path), or of the object in which it is a member
// name (isName); index is the file action's index, else -1. ok is false
// when the document stops parsing before the token holding off.
func memberAt(body []byte, off int64, indexed string) (path string, index int, isName, ok bool) {
	walkStrings(body, func(s stringToken) bool {
		if s.end <= off {
			return true
		}
		path, index, isName, ok = s.path(), s.indexIn(indexed), s.isName, true
		if isName {
			path = s.objectPath()
		}
		return false
	})
	return path, index, isName, ok
}

// checkMemberNames refuses what encoding/json would quietly merge: a
// member name given twice in one object (the last would win) and a name
// that matches a field only case-insensitively ("Source_Branch", or
// "ſource_branch" with a long s, which Go's case folding maps to s).
// Every field of a submission is named in lowercase ASCII, so a name that
// is lowercase ASCII and known to the decoder is the field's exact name.
//
// The members a schema leaves free (a json.RawMessage, a map, an
// interface: evidence, capabilities, a pending mutation) hold the
// caller's own JSON: its member names are data ("Authorization",
// "Content-Type"), and only their text is checked, with the rest.
func checkMemberNames(body []byte, typ reflect.Type) error {
	if plainMemberNames(body) {
		return nil // nothing walkMemberNames could refuse
	}
	return walkMemberNames(body, typ)
}

// walkMemberNames is checkMemberNames on the body's tokens.
func walkMemberNames(body []byte, typ reflect.Type) error {
	var err error
	walkStrings(body, func(s stringToken) bool {
		if !s.isName || s.malformed || free(typ, s.levels[:len(s.levels)-1]) {
			return true
		}
		for _, c := range []byte(s.text) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
				err = wq.Errorf(wq.EINVALID, "%s: member name %q: names are case-sensitive lowercase, as documented", s.objectPath(), s.text)
				return false
			}
		}
		if s.duplicate {
			err = wq.Errorf(wq.EINVALID, "%s: member %q is given twice", s.objectPath(), s.text)
			return false
		}
		return true
	})
	return err
}

// plainNames bounds the members of one object plainMemberNames compares
// with each other; a wider object goes to the full walk.
const plainNames = 32

// plainMemberNames reports, for a body the decoder took (valid JSON),
// that every member name of every object in it, free or not, is
// lowercase ASCII written without escapes and given once in its object:
// then checkMemberNames has nothing to refuse. It is a scan of the bytes
// that allocates only its stack, where the full walk tokenises the body
// through encoding/json (a fifth of a submission's handling); false sends
// the body to the walk, which finds what is wrong, or that it is in a
// member the schema leaves free.
func plainMemberNames(body []byte) bool {
	type frame struct {
		object, wantName bool
		first            int // its first name in names
	}
	var (
		stackBuf [MaxDepth + 1]frame
		namesBuf [64][]byte
	)
	stack, names := stackBuf[:0], namesBuf[:0]
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{', '[':
			if len(stack) == cap(stack) {
				return false
			}
			stack = append(stack, frame{object: body[i] == '{', wantName: body[i] == '{', first: len(names)})
		case '}', ']':
			if len(stack) == 0 {
				return false
			}
			names = names[:stack[len(stack)-1].first]
			stack = stack[:len(stack)-1]
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantName = true
			}
		case '"':
			start, plain := i+1, true
			for i++; i < len(body) && body[i] != '"'; i++ {
				switch c := body[i]; {
				case c == '\\':
					plain = false
					i++ // the escaped byte, which may be a quote
				case !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_'):
					plain = false
				}
			}
			n := len(stack)
			if n == 0 || !stack[n-1].object || !stack[n-1].wantName {
				continue // a string value
			}
			if !plain || i >= len(body) || len(names)-stack[n-1].first >= plainNames {
				return false
			}
			name := body[start:i]
			for _, other := range names[stack[n-1].first:] {
				if bytes.Equal(other, name) {
					return false
				}
			}
			names = append(names, name)
			stack[n-1].wantName = false
		}
	}
	return true
}

// rawMessage is the type of a member holding free JSON.
var rawMessage = reflect.TypeOf(json.RawMessage(nil))

// free reports whether the object the levels lead to, in a document
// decoded into typ, is inside a member the schema leaves free.
func free(typ reflect.Type, levels []level) bool {
	t := typ
	for _, l := range levels {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == rawMessage || t.Kind() == reflect.Map || t.Kind() == reflect.Interface {
			return true
		}
		switch {
		case !l.object && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			t = t.Elem()
		case l.object && t.Kind() == reflect.Struct:
			f, ok := fieldByJSONName(t, l.name)
			if !ok {
				return false // an unknown member: the decoder refused it already
			}
			t = f
		default:
			return false
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t == rawMessage || t.Kind() == reflect.Map || t.Kind() == reflect.Interface
}

// fieldByJSONName is the type of typ's field (embedded ones included)
// named name in JSON.
func fieldByJSONName(typ reflect.Type, name string) (reflect.Type, bool) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" {
			t := f.Type
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if t.Kind() == reflect.Struct {
				if ft, ok := fieldByJSONName(t, name); ok {
					return ft, true
				}
			}
			continue
		}
		if f.IsExported() && tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

// stringToken is one string literal of a document, where it is.
type stringToken struct {
	text      string
	end       int64 // the byte after its closing quote
	isName    bool  // a member name, not a value
	duplicate bool  // a member name already given in the same object
	malformed bool  // the token where the document stops parsing; text is empty
	levels    []level
}

// level is one enclosing object or array.
type level struct {
	object  bool
	name    string          // object: the current member's name
	names   map[string]bool // object: the names given so far
	next    int             // array: the index of the current element
	wantKey bool            // object: the next string is a member name
}

// path renders where a value is: file_actions[1].file_path.
func (s stringToken) path() string {
	var b []byte
	for _, l := range s.levels {
		if l.object {
			if len(b) > 0 {
				b = append(b, '.')
			}
			b = append(b, l.name...)
		} else {
			b = fmt.Appendf(b, "[%d]", l.next)
		}
	}
	return string(b)
}

// objectPath is the path of the object a member name is in; "(body)" for
// the top level.
func (s stringToken) objectPath() string {
	if p := (stringToken{levels: s.levels[:len(s.levels)-1]}).path(); p != "" {
		return p
	}
	return "(body)"
}

// indexIn is the index of the element of the top-level array member
// named indexed that the string is in, else -1.
func (s stringToken) indexIn(indexed string) int {
	if indexed != "" && len(s.levels) >= 2 && s.levels[0].object && s.levels[0].name == indexed && !s.levels[1].object {
		return s.levels[1].next
	}
	return -1
}

// walkStrings calls visit with every string literal of body, in order,
// until visit returns false or the document stops parsing. The levels
// passed are only valid during the call.
func walkStrings(body []byte, visit func(stringToken) bool) {
	var stack []level
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		prevEnd := dec.InputOffset()
		tok, err := dec.Token()
		top := len(stack) - 1
		if err != nil {
			// The token being read when the document stops parsing still
			// has a place: a string that is also malformed (a raw control
			// character, a missing quote) can be named. The decoder's
			// error offset does not say where the token ends, so the raw
			// literal is measured here.
			if end, ok := malformedStringEnd(body, prevEnd); ok {
				visit(stringToken{end: end, levels: stack, malformed: true,
					isName: top >= 0 && stack[top].object && stack[top].wantKey})
			}
			return
		}
		// A value ends when it is a scalar or a closing delimiter; the
		// enclosing level then moves on to its next member or element.
		valueDone := true
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, level{object: t == '{', wantKey: t == '{'})
				valueDone = false
			default:
				stack = stack[:top]
			}
		case string:
			s := stringToken{text: t, end: dec.InputOffset(), levels: stack}
			if top >= 0 && stack[top].object && stack[top].wantKey {
				l := &stack[top]
				if l.names == nil {
					l.names = map[string]bool{}
				}
				s.isName, s.duplicate = true, l.names[t]
				l.names[t], l.name, l.wantKey = true, t, false
				valueDone = false
			}
			if !visit(s) {
				return
			}
		}
		if top = len(stack) - 1; valueDone && top >= 0 {
			if stack[top].object {
				stack[top].wantKey = true
			} else {
				stack[top].next++
			}
		}
	}
}

// malformedStringEnd is where the token after byte from ends when the
// decoder could not read it and it is a string literal: after its closing
// quote (escapes skipped), or at the end of the body if it has none. ok is
// false when the token is not a string.
func malformedStringEnd(body []byte, from int64) (end int64, ok bool) {
	i := from
	for i < int64(len(body)) && bytes.IndexByte([]byte(" \t\r\n,:"), body[i]) >= 0 {
		i++
	}
	if i >= int64(len(body)) || body[i] != '"' {
		return 0, false
	}
	for i++; i < int64(len(body)); i++ {
		switch body[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return int64(len(body)), true
}

// TopLevelString returns the string value of the top-level member name of
// body, "" if the body has none (or it is not a string), so that a caller
// can route a body by one member before decoding it strictly with Decode.
// A body without the member that holds text which would not survive
// decoding is refused as Decode refuses it.
func TopLevelString(body []byte, name string) (string, error) {
	if err := CheckShape(body); err != nil {
		return "", err
	}
	var value string
	found := false
	walkStrings(body, func(s stringToken) bool {
		if !s.isName && !s.malformed && len(s.levels) == 1 && s.levels[0].object && s.levels[0].name == name {
			value, found = s.text, true
			return false
		}
		return true
	})
	if !found {
		if off, why := firstInvalidText(body); off >= 0 {
			return "", invalidTextRefusal(body, off, why, "")
		}
	}
	return value, nil
}

// unknownMember finds a member of body's objects that typ has no field
// for (the first in name order at the shallowest depth where one is),
// with the path of the object holding it and the known name nearest to
// it; name is "" when every member is known.
func unknownMember(body []byte, typ reflect.Type) (path, name, near string) {
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return "", "", ""
	}
	var walk func(v any, typ reflect.Type, path string) bool
	walk = func(v any, typ reflect.Type, at string) bool {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if reflect.PointerTo(typ).Implements(reflect.TypeFor[json.Unmarshaler]()) {
			return false // it decodes itself
		}
		switch typ.Kind() {
		case reflect.Struct:
			obj, ok := v.(map[string]any)
			if !ok {
				return false
			}
			fields := jsonFields(typ)
			keys := slices.Sorted(maps.Keys(obj))
			for _, k := range keys {
				if _, ok := fields[k]; !ok {
					path, name, near = at, k, suggest.Nearest(k, slices.Collect(maps.Keys(fields)))
					return true
				}
			}
			for _, k := range keys {
				if walk(obj[k], fields[k], joinPath(at, k)) {
					return true
				}
			}
		case reflect.Slice, reflect.Array:
			arr, ok := v.([]any)
			if !ok {
				return false
			}
			for i, e := range arr {
				if walk(e, typ.Elem(), fmt.Sprintf("%s[%d]", at, i)) {
					return true
				}
			}
		case reflect.Map:
			obj, ok := v.(map[string]any)
			if !ok {
				return false
			}
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				if walk(obj[k], typ.Elem(), joinPath(at, k)) {
					return true
				}
			}
		}
		return false
	}
	walk(doc, typ, "")
	return path, name, near
}

// jsonFields are a struct type's JSON member names and their types,
// those of embedded structs included.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			t := f.Type
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if t.Kind() == reflect.Struct {
				maps.Copy(fields, jsonFields(t))
				continue
			}
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

func joinPath(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}
