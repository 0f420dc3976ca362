package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

// RuleInvalidUTF8 refuses a submission body holding bytes that are not
// UTF-8, or a \u escape of a lone UTF-16 surrogate, anywhere in it.
const RuleInvalidUTF8 = "invalid_utf8"

// decodeSubmission decodes a POST /api/v1/items body into exactly what
// the caller sent, or refuses it. encoding/json fixes up what it cannot
// represent (invalid UTF-8 and lone surrogate escapes become U+FFFD), so
// the raw bytes are checked first: a refusal is an *mr.Refusal with rule
// invalid_utf8 naming the field where it can. The body must be a single
// JSON object with known members only, followed by nothing but
// whitespace; anything else is EINVALID.
func decodeSubmission(body []byte) (submitRequest, error) {
	var req submitRequest
	if off, why := firstInvalidText(body); off >= 0 {
		return req, invalidTextRefusal(body, off, why)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, wq.Errorf(wq.EINVALID, "body: %v", err)
	}
	// Decoder.More misses a trailing ] or }, so the rest is checked here.
	end := dec.InputOffset()
	if rest := bytes.TrimLeft(body[end:], " \t\r\n"); len(rest) > 0 {
		return req, wq.Errorf(wq.EINVALID, "body: data after the JSON object at byte %d: want one JSON object", len(body)-len(rest))
	}
	if err := checkMemberNames(body); err != nil {
		return req, err
	}
	return req, nil
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
func invalidTextRefusal(body []byte, off int, why string) *mr.Refusal {
	r := &mr.Refusal{Index: -1, Rule: RuleInvalidUTF8}
	field, index, isName, ok := memberAt(body, int64(off))
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
func memberAt(body []byte, off int64) (path string, index int, isName, ok bool) {
	walkStrings(body, func(s stringToken) bool {
		if s.end <= off {
			return true
		}
		path, index, isName, ok = s.path(), s.actionIndex(), s.isName, true
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
func checkMemberNames(body []byte) error {
	var err error
	walkStrings(body, func(s stringToken) bool {
		if !s.isName || s.malformed {
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

// actionIndex is the index of the file action the string is in, else -1.
func (s stringToken) actionIndex() int {
	if len(s.levels) >= 2 && s.levels[0].object && s.levels[0].name == "file_actions" && !s.levels[1].object {
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
